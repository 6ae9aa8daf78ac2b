"""Grouped aggregates answered from cubes: a row group whose rows all match the filter, but whose
grouping column holds several values, gives one partial per value from a cube of that column
(``zskip.fileindex.cube``) without being read.

``zskip.planning.aggregate_answers`` asks this for the row groups its footer statistics leave
unanswered.  A row group is answered from one cube of a column (grouped by it, or by it and columns
whose footer bounds show one value there; or not grouped by it at all, its groups then merged) when
the cube holds every partial asked: ``count(*)``; ``count``, ``min`` and ``max`` of the cube's column;
``count``, ``sum``, ``min`` and ``max`` of its measures (``min`` and ``max`` not of floats); and
``count``, ``min`` and ``max`` of a grouping column of one value there.  A cube whose rows for a row
group are not the footer's (a file rewritten under the same name) answers nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from zskip.fileindex.cube import CubeIndex
from zskip.fileindex.kinds import KINDS
from zskip.fileindex.kinds.cube import CUBE
from zskip.iceberg.scan_types import AggregateColumn, AggregateItem, AggregateRequest
from zskip.planning.cache import CACHE
from zskip.planning.partial_values import exact_type, python_values, sum_as
from zskip.planning.plan import ScanPlan
from zskip.tablefiles.blob_reads import load_many

__all__ = ["Partials", "cube_partials"]

log = logging.getLogger(__name__)

# a row group's partials: per group (the grouping values, then one value per item)
Partials = list[tuple[tuple[Any, ...], list[Any]]]


def cube_partials(
    plan: ScanPlan,
    paths: Sequence[str],
    counts: np.ndarray,
    wanted: np.ndarray,
    request: AggregateRequest,
    rows: np.ndarray,
    constant: Sequence[tuple[np.ndarray, list[Any]]],
) -> dict[int, Partials]:
    """The partials of those row groups of ``paths`` (file after file) ``wanted`` marks that a cube
    answers, by row group.  ``constant``: per grouping column, whether its footer bounds show it one
    value in each row group, and that value."""
    if not wanted.any():
        return {}
    spans = [(p, first, n) for p, first, n in _spans(paths, counts) if wanted[first : first + n].any()]
    cubes = _cubes(plan, [p for p, _, _ in spans])
    out: dict[int, Partials] = {}
    for path, first, count in spans:
        for cube in cubes.get(path, ()):
            if len(cube.index) != count:
                continue  # a cube of another file of the same name
            for g in range(count):
                at = first + g
                if wanted[at] and at not in out and cube.index.cubed(g):
                    found = _answer(cube, g, request, int(rows[at]), [(k[at], v[at]) for k, v in constant])
                    if found is not None:
                        out[at] = found
    return out


def _spans(paths: Sequence[str], counts: np.ndarray) -> list[tuple[str, int, int]]:
    """Each path with where its row groups start among all, and how many it has."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist() if len(counts) else []
    return list(zip(paths, starts, counts.tolist(), strict=True))


@dataclass(frozen=True)
class _Cube:
    """A cube and the field id of its column."""

    field_id: int
    index: CubeIndex


def _cubes(plan: ScanPlan, paths: Sequence[str]) -> dict[str, list[_Cube]]:
    """The cubes of ``paths`` that load (a damaged one is left out, logged), by data file."""
    assert plan.metadata is not None
    manifest = plan.metadata.manifest()
    if manifest is None or not paths:
        return {}
    by_file = manifest.entries_by_file
    entries = [row for p in paths for row in by_file.get(p, ()) if KINDS.get(row.kind) is CUBE]
    out: dict[str, list[_Cube]] = {}
    for row, index in zip(entries, load_many(entries, CACHE, plan.metadata.storage, heads=False), strict=True):
        if isinstance(index, CubeIndex):
            out.setdefault(row.data_file, []).append(_Cube(row.field_id, index))
        else:
            log.warning("not answering from a damaged cube (its rows are read): %s", index)
    return out


def _answer(
    cube: _Cube, g: int, request: AggregateRequest, rows: int, constant: Sequence[tuple[bool, Any]]
) -> Partials | None:
    """Row group ``g``'s partials from ``cube``, or ``None`` where it does not hold them all."""
    field_id, index = cube.field_id, cube.index
    groups = index.groups(g)
    if int(np.asarray(groups["rows"]).sum()) != rows:
        return None  # not the footer's rows
    keys = _keys(groups, field_id, request.group, constant)
    if keys is None:
        return None
    values = []
    for item in request.items:
        found = _item(groups, index, field_id, item, request.group, constant)
        if found is None:
            return None
        values.append(found)
    return [(key, [v[r] for v in values]) for r, key in enumerate(keys)]


def _keys(
    groups: pa.Table, field_id: int, grouping: Sequence[AggregateColumn], constant: Sequence[tuple[bool, Any]]
) -> list[tuple[Any, ...]] | None:
    """Each cube row's grouping values, or ``None``: a grouping column has several values here, or the
    cube's values are not exact ones of the type asked."""
    columns: list[list[Any]] = []
    for column, (known, value) in zip(grouping, constant, strict=True):
        if column.field_id == field_id:
            cube_keys = _cube_values(groups["key"], column.type)
            if cube_keys is None:
                return None
            columns.append(cube_keys)
        elif known:
            columns.append([value] * groups.num_rows)
        else:
            return None
    return [tuple(c[r] for c in columns) for r in range(groups.num_rows)]


def _cube_values(keys: pa.ChunkedArray, spark_type: str) -> list[Any] | None:
    kind = keys.type
    if pa.types.is_null(kind):  # a column added since: NULL only
        return [None] * len(keys)
    return python_values(keys.combine_chunks()) if exact_type(kind, spark_type, grouping=True) else None


def _item(
    groups: pa.Table,
    index: CubeIndex,
    field_id: int,
    item: AggregateItem,
    grouping: Sequence[AggregateColumn],
    constant: Sequence[tuple[bool, Any]],
) -> list[Any] | None:
    """One item's partial in each cube row, or ``None``: the cube does not hold it."""
    n = groups.num_rows
    row_counts = groups["rows"].to_pylist()
    column = item.column
    if column is None:  # count(*)
        return row_counts
    if column.field_id == field_id:  # the cube's own column
        keys = groups["key"].to_pylist()
        if item.fn == "count":
            return [0 if k is None else r for k, r in zip(keys, row_counts, strict=True)]
        return _cube_values(groups["key"], column.type) if item.fn in ("min", "max") else None
    measure = index.measure(column.field_id) if column.field_id is not None else None
    if measure is not None:
        return _measure(groups, measure, item)
    for group, (known, value) in zip(grouping, constant, strict=True):  # a grouping column of one value here
        if group.field_id == column.field_id and known:
            if item.fn == "count":
                return [0 if value is None else r for r in row_counts]
            return [value] * n if item.fn in ("min", "max") else None
    return None


def _measure(groups: pa.Table, measure: int, item: AggregateItem) -> list[Any] | None:
    values = groups[f"values_{measure}"].to_pylist()
    if item.fn == "count":
        return values
    if item.fn == "sum":
        out = []
        for total, count in zip(groups[f"sum_{measure}"].to_pylist(), values, strict=True):
            value = sum_as(total, item.type) if count and total is not None else None
            if count and value is None:
                return None  # outside the result's type: Spark decides
            out.append(value)
        return out
    if item.fn in ("min", "max"):
        bounds = groups[f"{item.fn}_{measure}"]
        assert item.column is not None
        if not exact_type(bounds.type, item.column.type):
            return None  # a float's: a NaN among the values would change it
        out = python_values(bounds.combine_chunks())
        if any(v is None and c for v, c in zip(out, values, strict=True)):
            return None
        return out
    return None
