"""Reading only some row groups of a file, through Iceberg's own row-group filter.

Iceberg's staged scan splits every staged task again, and its row-group split tasks refuse a
second split, so a row group cannot be staged on its own.  But Iceberg's Parquet reader skips each
row group whose statistics prove the task's residual filter false.  So zskip stages the file with
a residual that holds for every row of every kept row group and for no row group it ruled out
where statistics can tell: "the row lies in the min/max box of some kept row group" (NULL allowed in
each column).  A ruled-out row group whose box overlaps a kept one in every column is still read
(correct, only slower); on a curve-clustered file the boxes of row groups barely overlap.  Float
and double columns take no part (statistics leave NaN out), nor do timestamps and binaries.
"""

from __future__ import annotations

import decimal
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql.types import (
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
)

from zskip.planning.footers import ColumnStats, Footer

__all__ = ["row_group_filter"]

MAX_COLUMNS = 4


def _json_value(value: Any, dtype: DataType) -> Any:
    if isinstance(dtype, (ByteType, ShortType, IntegerType, LongType)):
        return int(value)
    if isinstance(dtype, DateType):
        return value.isoformat()
    if isinstance(dtype, DecimalType):
        return str(decimal.Decimal(value))
    if isinstance(dtype, StringType):
        return str(value)
    raise TypeError(dtype)


def _usable(dtype: DataType) -> bool:
    return isinstance(dtype, (ByteType, ShortType, IntegerType, LongType, DateType, DecimalType, StringType))


def _box_term(column: str, stats: ColumnStats, dtype: DataType) -> dict[str, Any]:
    inside = {
        "type": "and",
        "left": {"type": "gt-eq", "term": column, "value": _json_value(stats.min, dtype)},
        "right": {"type": "lt-eq", "term": column, "value": _json_value(stats.max, dtype)},
    }
    return {"type": "or", "left": {"type": "is-null", "term": column}, "right": inside}


def _tree(kind: str, parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A balanced ``and``/``or`` tree (no deep recursion in the JVM's parser)."""
    if len(parts) == 1:
        return parts[0]
    middle = len(parts) // 2
    return {"type": kind, "left": _tree(kind, parts[:middle]), "right": _tree(kind, parts[middle:])}


def _overlap(a: ColumnStats, b: ColumnStats) -> bool:
    return not (a.max < b.min or b.max < a.min)


def row_group_filter(
    footer: Footer,
    kept: Sequence[int],
    columns: Mapping[str, tuple[int, DataType]],
    *,
    readable: Sequence[int] | None = None,
) -> tuple[str | None, tuple[int, ...]]:
    """The residual (Iceberg expression JSON) that keeps ``kept`` row groups, and the row groups read.

    ``columns`` maps a column name to its field id and Spark type.  ``readable`` are the row groups
    the reader keeps by its own statistics test of the query's filter (``None``: all of them); a
    row group outside it is never read, residual or not.  The residual is ``None`` when no column
    can tell the kept row groups apart, or when ``kept`` is all of ``readable`` (the reader's own
    test already skips the rest).
    """
    everything = tuple(range(footer.row_groups)) if readable is None else tuple(readable)
    if set(everything) <= set(kept):
        return None, everything
    usable = [(name, fid, dtype) for name, (fid, dtype) in columns.items() if _usable(dtype)][:MAX_COLUMNS]
    terms = []
    boxes: list[dict[str, ColumnStats]] = []
    for g in kept:
        box = {}
        for name, fid, _dtype in usable:
            stats = footer.stats[g].get(fid)
            if stats is not None and stats.has_min_max and stats.min is not None and stats.max is not None:
                box[name] = stats
        if not box:
            return None, everything  # a kept row group with no usable statistics: read the file
        boxes.append(box)
        try:
            terms.append(_tree("and", [_box_term(n, s, dict((u[0], u[2]) for u in usable)[n]) for n, s in box.items()]))
        except (TypeError, ValueError):
            return None, everything
    read = []
    for g in everything:
        if g in kept or any(_might_meet(footer.stats[g], box, usable) for box in boxes):
            read.append(g)
    return json.dumps(_tree("or", terms)), tuple(read)


def _might_meet(
    stats: Mapping[int, ColumnStats], box: Mapping[str, ColumnStats], usable: list[tuple[str, int, DataType]]
) -> bool:
    """Whether Iceberg's statistics filter could keep a row group for one kept row group's box."""
    for name, fid, _dtype in usable:
        if name not in box:
            continue
        mine = stats.get(fid)
        if mine is None or not mine.has_min_max or mine.min is None:
            continue  # unknown: might meet in this column
        if mine.null_count:
            continue  # a NULL satisfies the column's term
        try:
            if not _overlap(mine, box[name]):
                return False
        except TypeError:
            continue
    return True
