"""Aggregates answered from row-group statistics: the row groups a plan keeps where every row matches
give their counts, minima, maxima and sums without being read.

zskip's rule asks this for an aggregate over a filtered scan (``io.zskip.aggregate.AggregateShape``
says which: ``count(*)``, ``count(col)``, ``min``, ``max``, ``sum``, the sum and count of an ``avg``,
grouped by columns).  Each kept row group
is one of three: no row matches (the stages ruled it out already), every row does (its statistics
prove it, ``zskip.planning.all_rows``), or some may.  A row group of the second kind is answered when
its statistics also hold every value asked: its row count, the column's null count, its exact bounds
(integers, decimals, dates, timestamps and booleans: Parquet keeps them exactly), its sum (from the
column's sums index, ``zskip.fileindex.sums``), and one value of
each grouping column (bounds equal, no NULL; or only NULLs).  Answered row groups leave the plan and
their partials, merged per group, go back to the rule, which has Spark aggregate them with what the
scan still reads; everything else is read as before.

A file whose rows delete files change (position or equality deletes, deletion vectors) is never
answered: its footer counts rows that are gone.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from zskip.expr import columns_of
from zskip.fileindex.kinds import KINDS
from zskip.fileindex.kinds.sums import SUMS
from zskip.fileindex.sums import SumsIndex
from zskip.iceberg.scan_types import AggregateColumn, AggregateRequest
from zskip.planning.all_rows import every_row_arrays
from zskip.planning.cache import CACHE
from zskip.planning.minmax_arrays import StatsColumn
from zskip.planning.plan import PlanInputs, ScanPlan, row_group_counts
from zskip.tablefiles.blob_reads import load_many

__all__ = ["AggregateAnswer", "answer_aggregate", "answered_note", "boundary_rows", "every_kept_row_matches"]

log = logging.getLogger(__name__)

# Spark types whose row-group bounds Parquet holds exactly, by the Arrow types a footer gives them in
_INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_EPOCH_DAY = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class AggregateAnswer:
    """The partials of the answered row groups, one row per group: the grouping values, then one value
    per function, in the request's order, as the JVM reads them (dates as days, timestamps as
    microseconds since the epoch, decimals as text)."""

    rows: tuple[tuple[Any, ...], ...]
    row_groups: int  # answered
    rows_answered: int  # the rows those row groups hold

    def as_json(self) -> dict[str, Any]:
        return {"rows": [list(r) for r in self.rows], "row_groups": self.row_groups}


def answer_aggregate(plan: ScanPlan, request: AggregateRequest) -> tuple[ScanPlan, AggregateAnswer | None]:
    """``plan`` without the row groups whose statistics answer ``request``, and their partials
    (``None``, and ``plan`` unchanged: none answered)."""
    if plan.scan is None or plan.metadata is None or not plan.kept:
        return plan, None
    asked = [c.field_id for c in _columns(request)]
    if any(i is None for i in asked):
        return plan, None
    deleted = {plan.scan.paths[i] for i in request.deleted if i < len(plan.scan.paths)}
    paths = [path for path in plan.kept if path not in deleted]
    if not paths:
        return plan, None
    inputs = PlanInputs.of(plan.scan, plan.metadata)
    filtered = columns_of(inputs.expr)
    if any(not isinstance(c, int) for c in filtered):
        return plan, None
    counts = row_group_counts(inputs, paths)
    ids = sorted({c for c in filtered if isinstance(c, int)} | {i for i in asked if i is not None})
    stats = plan.metadata.stats_columns(paths, ids)
    rows = _rows(plan, paths)
    answered = every_kept_row_matches(plan, inputs, paths, counts, stats)
    values: list[list[Any]] = []  # per item, each row group's partial
    for item in request.items:
        column = item.column
        if column is None:  # count(*)
            values.append(rows.tolist())
            continue
        assert column.field_id is not None
        if item.fn == "count":
            known, partials = _counts(stats[column.field_id], rows)
        elif item.fn == "sum":
            known, partials = _sums(plan, paths, counts, stats[column.field_id], column.field_id, item.type)
        else:
            known, partials = _bounds(stats[column.field_id], column, item.fn == "min")
        answered &= known
        values.append(partials)
    keys: list[list[Any]] = []
    for group in request.group:
        assert group.field_id is not None
        known, partials = _group_values(stats[group.field_id], group, rows)
        answered &= known
        keys.append(partials)
    if not answered.any():
        return plan, None
    merged: dict[tuple[Any, ...], list[Any]] = {}
    for g in np.flatnonzero(answered).tolist():
        key = tuple(k[g] for k in keys)
        partial = [v[g] for v in values]
        if key not in merged:
            merged[key] = partial
        else:
            before = merged[key]
            merged[key] = [_merge(i.fn, a, b) for i, a, b in zip(request.items, before, partial, strict=True)]
    out_rows = tuple(
        tuple(_json(v, c) for v, c in zip(key, request.group, strict=True))
        + tuple(_json(v, i.column) for v, i in zip(partial, request.items, strict=True))
        for key, partial in merged.items()
    )
    answer = AggregateAnswer(out_rows, int(answered.sum()), int(rows[answered].sum()))
    return _without(plan, paths, counts, answered), answer


def every_kept_row_matches(
    plan: ScanPlan,
    inputs: PlanInputs,
    paths: Sequence[str],
    counts: np.ndarray,
    stats: dict[int, StatsColumn] | None = None,
) -> np.ndarray:
    """Per row group of ``paths`` (file after file): kept by ``plan`` and, by its statistics, every row
    matching the filter.  ``stats``: the filter's columns' statistics over ``paths``, if read already."""
    if stats is None:
        ids = [c for c in columns_of(inputs.expr) if isinstance(c, int)]
        stats = plan.metadata.stats_columns(paths, ids) if plan.metadata is not None else {}
    return _kept_mask(plan, paths, counts) & every_row_arrays(inputs.expr, stats, inputs.floats, int(counts.sum()))


def boundary_rows(plan: ScanPlan) -> tuple[int, int]:
    """Of the row groups ``plan`` keeps: the rows of those the filter's boundary cuts through (their
    statistics do not prove every row matches: what any reader must decode), and the rows of all."""
    if plan.scan is None or plan.metadata is None or not plan.kept:
        return 0, 0
    inputs = PlanInputs.of(plan.scan, plan.metadata)
    paths = list(plan.kept)
    counts = row_group_counts(inputs, paths)
    kept = _kept_mask(plan, paths, counts)
    every = every_kept_row_matches(plan, inputs, paths, counts)
    rows = _rows(plan, paths)
    return int(rows[kept & ~every].sum()), int(rows[kept].sum())


def _rows(plan: ScanPlan, paths: Sequence[str]) -> np.ndarray:
    assert plan.metadata is not None
    return np.concatenate([np.asarray(plan.metadata.footer(p).rows, dtype=np.int64) for p in paths])


def _columns(request: AggregateRequest) -> list[AggregateColumn]:
    return list(request.group) + [i.column for i in request.items if i.column is not None]


def _kept_mask(plan: ScanPlan, paths: Sequence[str], counts: np.ndarray) -> np.ndarray:
    mask = np.zeros(int(counts.sum()), dtype=bool)
    start = 0
    for path, count in zip(paths, counts.tolist(), strict=True):
        groups = plan.kept[path]
        if groups is None:
            mask[start : start + count] = True
        else:
            mask[[start + g for g in groups if g < count]] = True
        start += count
    return mask


def _without(plan: ScanPlan, paths: Sequence[str], counts: np.ndarray, answered: np.ndarray) -> ScanPlan:
    """``plan`` keeping, of ``paths``, only the row groups not answered (a file with none left goes)."""
    kept: dict[str, tuple[int, ...] | None] = {}
    start = {}
    offset = 0
    for path, count in zip(paths, counts.tolist(), strict=True):
        start[path] = (offset, count)
        offset += count
    for path, groups in plan.kept.items():
        if path not in start:
            kept[path] = groups
            continue
        first, count = start[path]
        mine = answered[first : first + count]
        if not mine.any():
            kept[path] = groups
            continue
        left = tuple(g for g in (range(count) if groups is None else groups) if not mine[g])
        if left:
            kept[path] = left
    return dataclasses.replace(plan, kept=kept)


def _counts(stats: StatsColumn, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Per row group: ``count(col)`` known, and its value (rows less NULLs)."""
    nulls = stats.null_count
    known = stats.known & ~np.isnan(nulls)
    counts = np.where(known, rows - np.nan_to_num(nulls).astype(np.int64), 0)
    return known, counts.tolist()


def _sums(
    plan: ScanPlan, paths: Sequence[str], counts: np.ndarray, stats: StatsColumn, field_id: int, result: str
) -> tuple[np.ndarray, list[Any]]:
    """Per row group: its sum known (from the column's sums index), and its value as a partial of Spark
    type ``result`` (``None``: only NULLs; a sum outside ``result`` is not known: Spark decides)."""
    n = int(counts.sum())
    known = np.zeros(n, dtype=bool)
    out: list[Any] = [None] * n
    indexes = _sums_indexes(plan, paths, field_id)
    start = 0
    for path, count in zip(paths, counts.tolist(), strict=True):
        index = indexes.get(path)
        if index is not None and len(index) == count:
            for g in range(count):
                at = start + g
                values = int(index.values[g])
                if stats.known[at] and not math.isnan(stats.values[at]) and stats.values[at] != values:
                    continue  # an index of other rows than the footer's: not used
                total = index.sums[g]
                value = _sum_as(total, result) if values and total is not None else None
                if values == 0 or value is not None:
                    known[at], out[at] = True, value
        start += count
    return known, out


def _sums_indexes(plan: ScanPlan, paths: Sequence[str], field_id: int) -> dict[str, SumsIndex]:
    """The sums indexes of column ``field_id`` of ``paths`` that load (a damaged one is left out, logged)."""
    assert plan.metadata is not None
    manifest = plan.metadata.manifest()
    if manifest is None:
        return {}
    by_file = manifest.entries_by_file
    entries = (row for p in paths for row in by_file.get(p, ()))
    rows = [row for row in entries if row.field_id == field_id and KINDS.get(row.kind) is SUMS]
    out: dict[str, SumsIndex] = {}
    for row, index in zip(rows, load_many(rows, CACHE, plan.metadata.storage, heads=False), strict=True):
        if isinstance(index, SumsIndex):
            out[row.data_file] = index
        else:
            log.warning("not answering sums from a damaged index (its rows are read): %s", index)
    return out


_LONG = 2**63


def _sum_as(value: Any, result: str) -> Any:
    """A row group's sum as a partial of Spark type ``result``, or ``None`` where it does not fit."""
    if result == "double":
        return float(value)
    if isinstance(value, float):
        return None  # a double's sum as anything else: not asked by Spark
    if result == "bigint":
        whole = int(value)
        return whole if -_LONG <= whole < _LONG and whole == value else None
    if result.startswith("decimal("):
        precision, scale = (int(x) for x in result[len("decimal(") : -1].split(","))
        exact = value.quantize(decimal.Decimal(1).scaleb(-scale))
        if exact != value or len(exact.as_tuple().digits) > precision:
            return None
        return exact
    return None


def _bounds(stats: StatsColumn, column: AggregateColumn, low: bool) -> tuple[np.ndarray, list[Any]]:
    """Per row group: its minimum (``low``) or maximum known exactly, and its value (``None``: only NULLs)."""
    none = stats.known & (stats.values == 0)
    values = _bound_values(stats, column.type, low)
    present = np.fromiter((v is not None for v in values), dtype=bool, count=len(values))
    known = none | (stats.known & stats.has_min_max & (stats.values > 0) & present)
    return known, [None if z else v for v, z in zip(values, none.tolist(), strict=True)]


def _group_values(stats: StatsColumn, column: AggregateColumn, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Per row group: whether the column holds one value only (or only NULLs), and that value."""
    only_nulls = stats.known & (stats.null_count == rows)
    lows = _bound_values(stats, column.type, True, grouping=True)
    highs = _bound_values(stats, column.type, False, grouping=True)
    same = np.fromiter(
        (a is not None and a == b for a, b in zip(lows, highs, strict=True)), dtype=bool, count=len(lows)
    )
    one_value = stats.known & stats.has_min_max & (stats.null_count == 0) & same
    known = one_value | only_nulls
    return known, [v if one else None for v, one in zip(lows, one_value.tolist(), strict=True)]


def _bound_values(stats: StatsColumn, spark_type: str, low: bool, *, grouping: bool = False) -> list[Any]:
    """Each row group's minimum (``low``) or maximum as an exact value of ``spark_type`` in the form
    the JVM reads (``None``: none, or not exact): from the bounds' Arrow array where there is one."""
    bound = stats.low if low else stats.high
    if bound is not None and not pa.types.is_null(bound.type):
        if not _exact_type(bound.type, spark_type, grouping=grouping):
            return [None] * len(stats)
        return _python_values(bound)
    # no one array (decimals of several precisions, ...): the row groups' values one by one
    out: list[Any] = []
    for item in stats.stats:
        value = None if item is None or not item.has_min_max else (item.min if low else item.max)
        out.append(_exact_value(value, spark_type, grouping=grouping))
    return out


def _exact_value(value: Any, spark_type: str, *, grouping: bool) -> Any:
    """``value`` (a bound as pyarrow gives it) in the JVM's form for ``spark_type``, or ``None``."""
    if value is None:
        return None
    if spark_type in _INTEGRAL:
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if spark_type.startswith("decimal"):
        return value if isinstance(value, decimal.Decimal) and value.is_finite() else None
    if spark_type == "date":
        return (value - _EPOCH_DAY).days if type(value) is datetime.date else None
    if spark_type in ("timestamp", "timestamp_ntz") and isinstance(value, datetime.datetime):
        if (value.tzinfo is not None) != (spark_type == "timestamp"):
            return None
        epoch = _EPOCH_UTC if value.tzinfo is not None else _EPOCH
        return (value - epoch) // datetime.timedelta(microseconds=1)
    if spark_type == "boolean":
        return value if isinstance(value, bool) else None
    if spark_type == "string" and grouping:
        return value if isinstance(value, str) else None
    return None


def _exact_type(kind: pa.DataType, spark_type: str, *, grouping: bool = False) -> bool:
    """Whether bounds of Arrow type ``kind`` are exact values of the Spark type asked."""
    t = pa.types
    if spark_type in _INTEGRAL:
        return t.is_integer(kind)
    if spark_type.startswith("decimal"):
        return t.is_decimal(kind)
    if spark_type == "date":
        return t.is_date32(kind)
    if spark_type in ("timestamp", "timestamp_ntz"):
        # microseconds, as Iceberg writes them (and Spark reads them)
        return t.is_timestamp(kind) and kind.unit == "us" and (kind.tz is not None) == (spark_type == "timestamp")
    if spark_type == "boolean":
        return t.is_boolean(kind)
    if spark_type == "string":
        # bounds may be cut; only equal bounds (every value the same) say a value exactly
        return grouping and (t.is_string(kind) or t.is_large_string(kind))
    return False


def _python_values(bounds: pa.Array) -> list[Any]:
    """The bounds as the values Python merges: timestamps as microseconds, dates as days, the rest as
    Arrow gives them."""
    kind = bounds.type
    if pa.types.is_timestamp(kind):  # microseconds (``_exact_type``)
        return bounds.cast(pa.int64()).to_pylist()
    if pa.types.is_date32(kind):
        return bounds.cast(pa.int32()).to_pylist()
    return bounds.to_pylist()


def _merge(fn: str, a: Any, b: Any) -> Any:
    if fn == "count":
        return a + b
    if a is None:
        return b
    if b is None:
        return a
    if fn == "sum":
        return a + b
    return min(a, b) if fn == "min" else max(a, b)


def _json(value: Any, column: AggregateColumn | None) -> Any:
    if value is None:
        return None
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, (datetime.date, datetime.datetime)):
        raise TypeError(f"an unconverted {type(value).__name__} for {column}")
    return value


def answered_note(rest: ScanPlan, answer: AggregateAnswer, *, ruled_out_by: str = "") -> str:
    """What ``explain`` says of a scan whose aggregate ``answer`` took some row groups: what it still
    reads (``rest``), which stages ruled out the rest (``ruled_out_by``), and what was answered."""
    assert rest.scan is not None
    planned = len(rest.scan.paths)
    by = f", ruled out by {ruled_out_by}" if ruled_out_by else ""
    return (
        f"zskip: reads {len(rest.kept):,} of {planned:,} files, {rest.row_groups_kept():,} row groups{by}; "
        f"{answer.row_groups:,} row groups ({answer.rows_answered:,} rows) answered from their statistics"
    )
