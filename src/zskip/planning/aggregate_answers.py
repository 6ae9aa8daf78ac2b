"""Aggregates answered from row-group statistics: the row groups a plan keeps where every row matches
give their counts, minima, maxima and sums without being read.

zskip's rule asks this for an aggregate over a filtered scan (``io.zskip.aggregate.AggregateShape``
says which: ``count(*)``, ``count(col)``, ``min``, ``max``, ``sum``, the sum and count of an ``avg``,
grouped by columns).  Each kept row group
is one of three: no row matches (the stages ruled it out already), every row does (its statistics
prove it, ``zskip.planning.all_rows``), or some may.  A row group of the second kind is answered when
its statistics also hold every value asked: its row count, the column's null count, its exact bounds
(integers, decimals, dates, timestamps and booleans: Parquet keeps them exactly), its sum (from the
column's sums index, ``zskip.fileindex.sums``; of a product of two whole-number columns, one of them
one value there), and one value of
each grouping column (bounds equal, no NULL; or only NULLs).  Of the others whose rows all match, a
cube answers what it holds (``zskip.planning.cube_answers``).  Answered row groups leave the plan and
their partials, merged per group, go back to the rule, which has Spark aggregate them with what the
scan still reads; everything else is read as before.

A file whose rows delete files change (position or equality deletes, deletion vectors) is never
answered: its footer counts rows that are gone.
"""

from __future__ import annotations

import dataclasses
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
from zskip.iceberg.scan_types import AggregateColumn, AggregateItem, AggregateRequest
from zskip.planning.all_rows import every_row_arrays
from zskip.planning.cache import CACHE
from zskip.planning.cube_answers import cube_partials
from zskip.planning.minmax_arrays import StatsColumn
from zskip.planning.partial_values import as_json, exact_type, exact_value, merge, python_values, sum_as
from zskip.planning.plan import PlanInputs, ScanPlan, row_group_counts
from zskip.tablefiles.blob_reads import load_many

__all__ = ["AggregateAnswer", "answer_aggregate", "answered_note", "boundary_rows", "every_kept_row_matches"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AggregateAnswer:
    """The partials of the answered row groups, one row per group: the grouping values, then one value
    per function, in the request's order, as the JVM reads them (dates as days, timestamps as
    microseconds since the epoch, decimals as text)."""

    rows: tuple[tuple[Any, ...], ...]
    row_groups: int  # answered
    rows_answered: int  # the rows those row groups hold
    from_cubes: int = 0  # of ``row_groups``: answered from a cube (the others from footers and sums)

    def as_json(self) -> dict[str, Any]:
        return {"rows": [list(r) for r in self.rows], "row_groups": self.row_groups, "from_cubes": self.from_cubes}


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
    every = every_kept_row_matches(plan, inputs, paths, counts, stats)
    answered = every.copy()
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
        elif item.fn == "sum_product":
            known, partials = _sum_products(plan, paths, counts, stats, item, rows)
        elif item.fn in ("min", "max"):
            known, partials = _bounds(stats[column.field_id], column, item.fn == "min")
        else:  # a partial this planner does not know: nothing answered
            return plan, None
        answered &= known
        values.append(partials)
    constant: list[tuple[np.ndarray, list[Any]]] = []  # per grouping column: one value in a row group, and it
    for group in request.group:
        assert group.field_id is not None
        known, partials = _group_values(stats[group.field_id], group, rows)
        answered &= known
        constant.append((known, partials))
    by_cube = cube_partials(plan, paths, counts, every & ~answered, request, rows, constant)
    if not answered.any() and not by_cube:
        return plan, None
    merged: dict[tuple[Any, ...], list[Any]] = {}

    def add(key: tuple[Any, ...], partial: list[Any]) -> None:
        before = merged.get(key)
        merged[key] = (
            partial
            if before is None
            else [merge(i.fn, a, b) for i, a, b in zip(request.items, before, partial, strict=True)]
        )

    for g in np.flatnonzero(answered).tolist():
        add(tuple(k[g] for _, k in constant), [v[g] for v in values])
    for partials in by_cube.values():
        for key, partial in partials:
            add(key, partial)
    out_rows = tuple(
        tuple(as_json(v, c) for v, c in zip(key, request.group, strict=True))
        + tuple(as_json(v, i.column) for v, i in zip(partial, request.items, strict=True))
        for key, partial in merged.items()
    )
    from_cubes = np.zeros(len(answered), dtype=bool)
    from_cubes[list(by_cube)] = True
    answer = AggregateAnswer(
        out_rows,
        int(answered.sum()) + len(by_cube),
        int(rows[answered | from_cubes].sum()),
        from_cubes=len(by_cube),
    )
    return _without(plan, paths, counts, answered | from_cubes), answer


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
    return (
        list(request.group)
        + [i.column for i in request.items if i.column is not None]
        + [i.other for i in request.items if i.other is not None]
    )


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
                value = sum_as(total, result) if values and total is not None else None
                if values == 0 or value is not None:
                    known[at], out[at] = True, value
        start += count
    return known, out


_WHOLE_BITS = {"tinyint": 7, "smallint": 15, "int": 31, "bigint": 63}


def _sum_products(
    plan: ScanPlan,
    paths: Sequence[str],
    counts: np.ndarray,
    stats: dict[int, StatsColumn],
    item: AggregateItem,
    rows: np.ndarray,
) -> tuple[np.ndarray, list[Any]]:
    """Per row group: ``sum(a * b)`` known, and its value, where one factor holds one value there (its
    bounds equal, no NULL) and the other has a sums index: that value times the other's sum.  Only where
    no row's product can leave its type (Spark would fail, or wrap, on that row), by the other's bounds."""
    assert item.column is not None and item.other is not None
    limit = 2 ** _WHOLE_BITS.get(item.product_type or "", 0)
    n = int(counts.sum())
    known = np.zeros(n, dtype=bool)
    out: list[Any] = [None] * n
    for summed, constant in ((item.column, item.other), (item.other, item.column)):
        if limit == 1 or summed.field_id is None or constant.field_id is None:
            break
        one, values = _group_values(stats[constant.field_id], constant, rows)
        sums_known, sums = _sums(plan, paths, counts, stats[summed.field_id], summed.field_id, "decimal(38,0)")
        lows = _bound_values(stats[summed.field_id], summed.type, True)
        highs = _bound_values(stats[summed.field_id], summed.type, False)
        for at in np.flatnonzero(one & sums_known & ~known).tolist():
            value, total = values[at], sums[at]
            if value is None:
                continue  # only NULLs: every product NULL, as a sum of none
            if total is None:  # the summed factor only NULLs: no product
                known[at], out[at] = True, None
                continue
            low, high = lows[at], highs[at]
            if low is None or high is None or abs(value) * max(abs(low), abs(high)) >= limit:
                continue
            partial = sum_as(total * value, item.type)
            if partial is not None:
                known[at], out[at] = True, partial
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
        if not exact_type(bound.type, spark_type, grouping=grouping):
            return [None] * len(stats)
        return python_values(bound)
    # no one array (decimals of several precisions, ...): the row groups' values one by one
    out: list[Any] = []
    for item in stats.stats:
        value = None if item is None or not item.has_min_max else (item.min if low else item.max)
        out.append(exact_value(value, spark_type, grouping=grouping))
    return out


def answered_note(rest: ScanPlan, answer: AggregateAnswer, *, ruled_out_by: str = "") -> str:
    """What ``explain`` says of a scan whose aggregate ``answer`` took some row groups: what it still
    reads (``rest``), which stages ruled out the rest (``ruled_out_by``), and what was answered."""
    assert rest.scan is not None
    planned = len(rest.scan.paths)
    by = f", ruled out by {ruled_out_by}" if ruled_out_by else ""
    by_statistics = answer.row_groups - answer.from_cubes
    if not answer.from_cubes:
        answered = f"{by_statistics:,} row groups ({answer.rows_answered:,} rows) answered from their statistics"
    elif not by_statistics:
        answered = f"{answer.from_cubes:,} row groups ({answer.rows_answered:,} rows) answered from cubes"
    else:
        answered = (
            f"{answer.row_groups:,} row groups ({answer.rows_answered:,} rows) answered: {by_statistics:,} "
            f"from their statistics, {answer.from_cubes:,} from cubes"
        )
    return (
        f"zskip: reads {len(rest.kept):,} of {planned:,} files, {rest.row_groups_kept():,} row groups{by}; {answered}"
    )
