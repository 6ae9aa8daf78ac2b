"""The curve stage: files and row groups whose recorded curve-key range meets none of the query box's intervals go.

The box is the bound predicate's conjuncts on clustered columns (``zskip.planning.curve``), tightened by
the ranks known from elsewhere (the coordinates of a joined dimension's keys, from the join-keys stage).
"""

from __future__ import annotations

import pyarrow as pa

from zskip.curves import DimensionMapping
from zskip.expr import Column, columns_of
from zskip.fileindex.evaluate import exactly_answered
from zskip.fileindex.kinds import IndexKind, kind_named
from zskip.planning.curve import curve_arrow_types, rank_bounds
from zskip.planning.curve_narrowing import curve_narrow
from zskip.planning.index_reading import worth_reading
from zskip.planning.plan import Candidates, PlanInputs

__all__ = ["EXACT_INDEX_FILES", "curve_range", "curve_unneeded"]


def curve_range(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files and row groups whose recorded curve-key range meets none of the query box's intervals go."""
    return curve_narrow(inputs, candidates, {})


EXACT_INDEX_FILES = 32  # at most this many files: exact bitmaps alone are cheaper than the curve first


def curve_unneeded(inputs: PlanInputs, candidates: Candidates) -> str | None:
    """Why the curve stage can rule out nothing the index stage will not, or ``None``.

    When every candidate file has exact indexes (bitmaps) that answer every condition of the
    predicate, and the index stage will read them all (``worth_reading``: a range's bitmaps may cost
    more than they save), the index stage keeps exactly the row groups holding a matching row, which
    no sound stage removes; the curve stage (a query-box descent, 1-2 ms whatever the file count)
    would only save the index stage work on the files it drops, and for a few files that work costs
    less than the descent.
    """
    minmax_suffices = _minmax_suffices(inputs) if candidates.files else None
    if minmax_suffices is not None:
        return minmax_suffices
    manifest = inputs.metadata.manifest() if candidates.files else None
    if manifest is None or len(candidates.files) > EXACT_INDEX_FILES or inputs.metadata.store() is None:
        return None
    columns = columns_of(inputs.expr)
    if not columns:
        return None
    by_file = manifest.entries_by_file
    used: set[str] = set()
    for path in candidates.files:
        kinds: dict[Column, set[IndexKind]] = {}
        for row in by_file.get(path, ()):
            if row.field_id in columns and (kind := kind_named(row.kind)).exact:
                kinds.setdefault(row.field_id, set()).add(kind)
        if not exactly_answered(inputs.expr, kinds):
            return None
        used.update(kind.name for found in kinds.values() for kind in found)
    if len(worth_reading(inputs, candidates, manifest)) < len(candidates.files):
        return None  # the index stage leaves some files whole: the curve may rule them out
    names = sorted(inputs.fields[c].name if isinstance(c, int) and c in inputs.fields else str(c) for c in columns)
    return f"exact indexes ({', '.join(sorted(used))}) on " + ", ".join(names) + " decide every row of these files"


def _minmax_suffices(inputs: PlanInputs) -> str | None:
    """Why the curve stage can rule out nothing min/max statistics will not, when the query box bounds a
    single clustered column of a numeric or temporal type, on one side only (``k >= 100``), or on any
    side along the Hilbert curve; else ``None``.

    On one side: every file and row group min/max keep holds a row with the column on the bounded side
    (the one with the column's largest, or smallest, value), a point of the box, so the curve keeps it
    too.  Along the Hilbert curve: consecutive keys are neighbouring cells, so the keys between a file's
    least and greatest pass through every coordinate of the column between theirs; a file min/max keep
    holds a row in the slab or rows on both sides of it, and its key range meets the slab either way.
    So Iceberg's file min/max and the row-group stage rule out as much, and the descent into the curve
    (several milliseconds for a slab across most of the key space) is saved.  A bound on two columns, or
    a slab of the Z curve (whose key ranges jump over it), is a box whose gaps the curve can see and
    min/max cannot.
    """
    store = inputs.metadata.store()
    if store is None:
        return None
    arrow_types = curve_arrow_types(store.spec, inputs.fields)
    ranks = rank_bounds(inputs.expr, store.spec, arrow_types)
    if len(ranks) != 1:
        return None
    ((name, (low, high)),) = ranks.items()
    column = next((c for c in store.spec.columns if c.name == name), None)
    kind = arrow_types.get(name)
    if column is None or isinstance(column.mapping, DimensionMapping) or kind is None or not _ordered_stats(kind):
        return None
    if low is None or high is None:
        return f"the filter bounds one clustered column ({name}) on one side: min/max rule out as much"
    if store.spec.curve == "hilbert":
        return f"the filter bounds one clustered column ({name}) of a Hilbert curve: min/max rule out as much"
    return None


def _ordered_stats(kind: pa.DataType) -> bool:
    """Whether min/max statistics of a column of ``kind`` are exact (strings' may be truncated)."""
    return bool(
        pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_decimal(kind)
        or pa.types.is_date(kind)
        or pa.types.is_timestamp(kind)
    )
