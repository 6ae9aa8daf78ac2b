"""The curve stage: the query's box in the clustered columns, as curve-key intervals, against recorded key ranges.

Only top-level conjuncts bound a column (``a = 5 AND b BETWEEN 1 AND 9``); OR, NOT and opaque
parts leave it unbounded, which only widens the box.  A literal bounds a column through the same
order key and rank mapping optimize used, so a value inside the literal bounds never maps outside
the box; a literal with no exact value of the column's type bounds nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from zskip.curves import (
    ClusteringSpec,
    ColumnMapping,
    DimensionMapping,
    intersect_intervals,
    merge_intervals,
    order_key_u64,
    point_intervals,
)
from zskip.expr import And, Between, Column, Compare, Expr, In, Or, equality_values
from zskip.fileindex.literals import InexactLiteral, exact_scalar
from zskip.iceberg.arrow_types import arrow_type
from zskip.iceberg.scan_types import Field

__all__ = [
    "RecordedKeyRanges",
    "and_ranks",
    "curve_arrow_types",
    "key_bounds",
    "keys_agree",
    "query_intervals",
    "ranges_meet",
    "rank_bounds",
    "rank_sets",
    "spec_column",
]


def _conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, And):
        return [leaf for child in expr.children for leaf in _conjuncts(child)]
    return [expr]


def _key(value: object, kind: pa.DataType) -> int:
    scalar = exact_scalar(value, kind)
    return int(order_key_u64(pa.array([scalar.as_py()], type=kind))[0])


@functools.singledispatch
def _key_bounds(leaf: Expr, kind: pa.DataType) -> tuple[int | None, int | None] | None:
    """Inclusive order-key bounds one conjunct puts on its column (``None``: it bounds nothing)."""
    return None


@_key_bounds.register
def _(leaf: Compare, kind: pa.DataType) -> tuple[int | None, int | None] | None:
    if leaf.op == "!=":
        return None
    key = _key(leaf.value, kind)
    return {"=": (key, key), "<": (None, key), "<=": (None, key), ">": (key, None), ">=": (key, None)}[leaf.op]


@_key_bounds.register
def _(leaf: Between, kind: pa.DataType) -> tuple[int | None, int | None] | None:
    return _key(leaf.low, kind), _key(leaf.high, kind)


@_key_bounds.register
def _(leaf: In, kind: pa.DataType) -> tuple[int | None, int | None] | None:
    if not leaf.values:
        return None
    keys = [_key(v, kind) for v in leaf.values]
    return min(keys), max(keys)


def key_bounds(
    expr: Expr, spec: ClusteringSpec, arrow_types: Mapping[str, pa.DataType]
) -> dict[str, tuple[int | None, int | None]]:
    """Inclusive order-key bounds per clustered column (by its name in ``spec``) implied by ``expr``'s
    conjuncts; ``expr`` names columns as ``spec`` identifies them (field ids, see ``spec_column``)."""
    names = {spec_column(c): c.name for c in spec.columns}
    through_dimension = {c.name for c in spec.columns if isinstance(c.mapping, DimensionMapping)}
    bounds: dict[str, tuple[int | None, int | None]] = {}

    def tighten(column: str, low: int | None, high: int | None) -> None:
        old_low, old_high = bounds.get(column, (None, None))
        if low is not None:
            old_low = low if old_low is None else max(old_low, low)
        if high is not None:
            old_high = high if old_high is None else min(old_high, high)
        bounds[column] = (old_low, old_high)

    for leaf in _conjuncts(expr):
        column = leaf_column(leaf)
        name = names.get(column) if column is not None else None
        if name is None or name not in arrow_types or name in through_dimension:
            continue
        try:
            found = _key_bounds(leaf, arrow_types[name])
        except (InexactLiteral, TypeError, ValueError, OverflowError):
            continue  # a literal with no exact value of the column's type bounds nothing
        if found is not None:
            tighten(name, *found)
    return bounds


def query_intervals(
    expr: Expr,
    spec: ClusteringSpec,
    arrow_types: Mapping[str, pa.DataType],
    *,
    recorded: np.ndarray | None = None,
    extra_ranks: Mapping[str, np.ndarray] | None = None,
) -> np.ndarray | None:
    """Curve-key intervals (``(k, 2)`` uint64) holding every row that can match; ``None`` when unbounded.

    ``extra_ranks``: per clustered column, rank intervals known from elsewhere (the coordinates of the
    keys a joined dimension's filter matches), ANDed in.

    ``recorded``: the key ranges the answer is for (the files and row groups still in play); the
    decomposition then looks only at cells crossing their boundaries.
    """
    sets = rank_sets(expr, spec, arrow_types)
    for name, extra in (extra_ranks or {}).items():
        and_ranks(sets, name, extra)
    if not sets:
        return None
    # with recorded ranges the cover is only searched, never stored: no need to coarsen it
    return spec.rank_set_ranges(sets, max_intervals=1024 if recorded is None else None, recorded=recorded)


def rank_sets(expr: Expr, spec: ClusteringSpec, arrow_types: Mapping[str, pa.DataType]) -> dict[str, np.ndarray]:
    """Per clustered column (by its name in ``spec``), the ranks a row matching ``expr`` can have there:
    sorted, disjoint inclusive intervals (``(m, 2)`` uint64), from ``expr``'s top-level conjuncts.

    A range (``<``, ``BETWEEN``) is one interval through the column's monotone mapping; ``IN`` is the
    rank of each value, and an ``OR`` of conditions on one column the union of theirs, merged only where
    they touch, never the hull between them.  A column mapped through a dimension is bounded by ``=``
    and ``IN`` only (the ranks of the literals' coordinates: its coordinates do not follow the key's
    order); a literal with no exact value of the column's type bounds nothing.
    """
    columns = {spec_column(c): (c, (1 << w) - 1) for c, w in zip(spec.columns, spec.column_widths, strict=True)}
    sets: dict[str, np.ndarray] = {}
    for leaf in _conjuncts(expr):
        found = _leaf_ranks(leaf, columns, arrow_types)
        if found is not None:
            and_ranks(sets, *found)
    return sets


def and_ranks(sets: dict[str, np.ndarray], name: str, ranks: np.ndarray) -> None:
    """Narrow column ``name``'s rank intervals in ``sets`` to ``ranks`` as well (ANDed in)."""
    sets[name] = ranks if name not in sets else intersect_intervals(sets[name], ranks)


def _leaf_ranks(
    leaf: Expr, columns: Mapping[Column, tuple[ColumnMapping, int]], arrow_types: Mapping[str, pa.DataType]
) -> tuple[str, np.ndarray] | None:
    """The clustered column ``leaf`` bounds and the ranks it leaves it, or ``None``."""
    if isinstance(leaf, Or | And):
        parts = [_leaf_ranks(child, columns, arrow_types) for child in leaf.children]
        names = {part[0] for part in parts if part is not None}
        if len(names) != 1 or (isinstance(leaf, Or) and any(part is None for part in parts)):
            return None  # an OR across columns is no box; an AND's other columns are left to the conjuncts
        known = [part[1] for part in parts if part is not None]
        if isinstance(leaf, Or):
            return names.pop(), merge_intervals(np.concatenate(known))
        ranks = known[0]
        for more in known[1:]:
            ranks = intersect_intervals(ranks, more)
        return names.pop(), ranks
    column = leaf_column(leaf)
    entry = columns.get(column) if column is not None else None
    if entry is None or entry[0].name not in arrow_types:
        return None
    mapping, top = entry[0].mapping, entry[1]
    kind = arrow_types[entry[0].name]
    try:
        if isinstance(mapping, DimensionMapping) or isinstance(leaf, In):
            values = equality_values(leaf)
            if not values:
                return None
            keys = np.array([_key(v, kind) for v in values], dtype=np.uint64)
            return entry[0].name, point_intervals(np.unique(mapping.ranks(keys)))
        found = _key_bounds(leaf, kind)
    except (InexactLiteral, TypeError, ValueError, OverflowError):
        return None  # a literal with no exact value of the column's type bounds nothing
    if found is None:
        return None
    low = 0 if found[0] is None else mapping.rank(found[0])
    high = top if found[1] is None else mapping.rank(found[1])
    if low > high:
        return entry[0].name, np.zeros((0, 2), dtype=np.uint64)
    return entry[0].name, np.array([[low, high]], dtype=np.uint64)


def rank_bounds(
    expr: Expr, spec: ClusteringSpec, arrow_types: Mapping[str, pa.DataType]
) -> dict[str, tuple[int | None, int | None]]:
    """Inclusive rank bounds per clustered column implied by ``expr``'s conjuncts.

    Key bounds pass through each column's (monotone) mapping.  A column mapped through a dimension
    is bounded only by ``=`` and ``IN``: the ranks of the literals' coordinates, lowest to highest.
    """
    ranks: dict[str, tuple[int | None, int | None]] = {}
    bounds = key_bounds(expr, spec, arrow_types)
    for column in spec.columns:
        if isinstance(column.mapping, DimensionMapping):
            continue
        low, high = bounds.get(column.name, (None, None))
        if low is not None or high is not None:
            ranks[column.name] = (
                None if low is None else column.mapping.rank(low),
                None if high is None else column.mapping.rank(high),
            )
    for column in spec.columns:
        if not isinstance(column.mapping, DimensionMapping) or column.name not in arrow_types:
            continue
        for leaf in _conjuncts(expr):
            if leaf_column(leaf) != spec_column(column):
                continue
            values = equality_values(leaf)
            if not values:
                continue
            try:
                keys = np.array([_key(v, arrow_types[column.name]) for v in values], dtype=np.uint64)
            except (InexactLiteral, TypeError, ValueError, OverflowError):
                continue
            found = column.mapping.ranks(keys)
            low, high = ranks.get(column.name, (None, None))
            ranks[column.name] = (
                int(found.min()) if low is None else max(low, int(found.min())),
                int(found.max()) if high is None else min(high, int(found.max())),
            )
    return ranks


def leaf_column(leaf: Expr) -> Column | None:
    return getattr(leaf, "column", None)


def spec_column(column: ColumnMapping) -> Column:
    """How a bound predicate names a clustered column: its field id (its name in a spec built outside a
    table, as unit tests build them)."""
    return column.field_id if column.field_id is not None else column.name


def keys_agree(recorded: str | None, current: str) -> bool:
    """Whether a value of Iceberg type ``current`` gets the order key it got as type ``recorded`` (the
    type optimize keyed the column as), so recorded key ranges still bound it.  Iceberg promotes int to
    long, float to double and widens decimals: whole numbers and floats keep their keys; a decimal keeps
    its unscaled-integer key up to precision 18 (``zskip.curves.keys``), and not past it."""
    if recorded is None or recorded == current:
        return True
    if {recorded, current} <= {"int", "long"} or {recorded, current} <= {"float", "double"}:
        return True
    old, new = _decimal(recorded), _decimal(current)
    return old is not None and new is not None and old[1] == new[1] and max(old[0], new[0]) <= 18


def _decimal(text: str) -> tuple[int, int] | None:
    if not (text.startswith("decimal(") and text.endswith(")")):
        return None
    precision, scale = (int(p) for p in text[len("decimal(") : -1].split(","))
    return precision, scale


def curve_arrow_types(spec: ClusteringSpec, fields: Mapping[int, Field]) -> dict[str, pa.DataType]:
    """The Arrow type of each clustered column a query filters (by its name in ``spec``): those whose
    field is still in the table with keys that agree with the recorded ones (``keys_agree``).  A column
    left out here bounds nothing, which only widens the query box."""
    out: dict[str, pa.DataType] = {}
    for column in spec.columns:
        found = fields.get(column.field_id) if column.field_id is not None else None
        if found is None or not keys_agree(column.iceberg_type, found.type):
            continue
        kind = arrow_type(found.type)
        if kind is not None:
            out[column.name] = kind
    return out


@dataclass(frozen=True)
class RecordedKeyRanges:
    """A clustering store's recorded key ranges as arrays, built once per store.

    One entry per file (``group`` -1: its whole range) and per row group; ``file`` numbers the
    entry's file in ``paths``.  ``finest`` marks the ranges a query box is decided on: a file's row
    groups where it has them, its whole range where it has none.
    """

    paths: tuple[str, ...]
    number: Mapping[str, int]  # path -> its index in ``paths``
    file: np.ndarray  # int64
    group: np.ndarray  # int64, -1: the whole file
    low: np.ndarray  # uint64
    high: np.ndarray  # uint64
    finest: np.ndarray  # bool

    @classmethod
    def of(cls, ranges: pa.Table) -> RecordedKeyRanges:
        encoded = pc.dictionary_encode(ranges["file_path"].combine_chunks())
        paths = tuple(encoded.dictionary.to_pylist())
        file = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        group = ranges["row_group"].to_numpy().astype(np.int64)
        has_groups = np.zeros(len(paths), dtype=bool)
        has_groups[file[group >= 0]] = True
        return cls(
            paths=paths,
            number={path: i for i, path in enumerate(paths)},
            file=file,
            group=group,
            low=ranges["min_key"].to_numpy().astype(np.uint64),
            high=ranges["max_key"].to_numpy().astype(np.uint64),
            finest=(group >= 0) | ~has_groups[file],
        )

    def of_files(self, paths: Iterable[str]) -> np.ndarray:
        """Which entries belong to one of ``paths`` (paths with no recorded range are skipped)."""
        wanted = np.zeros(len(self.paths), dtype=bool)
        wanted[[self.number[p] for p in paths if p in self.number]] = True
        return wanted[self.file]


def ranges_meet(intervals: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """For each recorded range ``[low, high]``, whether it meets any of the sorted, disjoint ``intervals``."""
    if len(intervals) == 0:
        return np.zeros(len(low), dtype=bool)
    starts, ends = intervals[:, 0], intervals[:, 1]
    # the last interval starting at or before the range's high end is the only one that can meet it
    last = np.searchsorted(starts, high, side="right") - 1
    ok = last >= 0
    result = np.zeros(len(low), dtype=bool)
    result[ok] = ends[last[ok]] >= low[ok]
    return result
