"""A layout simulated on a sample of a table: what a query would read, without rewriting anything.

Optimize sorts a table's rows by curve key and cuts them into files of equal size and files into row
groups of equal size.  Sorting a sample by the same key and cutting it into as many pieces gives each
simulated row group the rows a real one would get, thinned out; the min/max of those rows is the
simulated row group's statistics, and a query's predicate checked against them (``might_match``, as
the planner checks real statistics) says whether it would read it.  A sample box is a little narrower
than the real one, so the figures lean low by a little; the advisor compares layouts on the same
sample, so they lean alike.

An exact index (bloom filter, bitmap) on a column also skips row groups whose statistics admit a value
they do not hold.  Rows of the sample matching the query's conditions on that column say which row
groups hold one; a row group whose few sample rows hold none may still hold one among its real rows,
with the chance a Poisson model of the matches' density gives (``read_chances``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from zskip.curves import order_key_u64
from zskip.expr import And, Expr, columns_of
from zskip.planning.footers import ColumnStats
from zskip.planning.minmax import might_match_pushed, push_not
from zskip.planning.workload import normalised

__all__ = ["Cells", "cut_sample", "index_conjunct", "kept_by_minmax", "read_chances"]


@dataclass(frozen=True)
class Cells:
    """The row groups of a layout, simulated or real, and where the sample's rows fall in them."""

    files: int
    file_of: np.ndarray  # the file of each row group
    sample_rows: np.ndarray  # sample rows in each row group
    real_rows: np.ndarray  # table rows in each row group (estimated for a simulated layout)
    group_of_row: np.ndarray  # the row group of each sample row (in the sample's order)
    # min/max of each row group's sample rows, by lower-cased column (simulated layouts only)
    stats: tuple[Mapping[str, ColumnStats], ...] = ()

    @property
    def row_groups(self) -> int:
        return len(self.file_of)

    def files_read(self, chances: np.ndarray) -> float:
        """Files expected to be opened when each row group is read with its chance in ``chances``."""
        unread = np.ones(self.files)
        np.multiply.at(unread, self.file_of, 1.0 - chances)
        return float(np.sum(1.0 - unread))


def cut_sample(sample: pa.Table, keys: np.ndarray, files: int, row_groups_per_file: int, rows: int) -> Cells:
    """``sample`` sorted by ``keys`` and cut into ``files`` files of ``row_groups_per_file`` row groups,
    as optimize cuts the table's ``rows`` rows."""
    sampled = sample.num_rows
    files = max(1, min(files, sampled))
    per_file = max(1, min(row_groups_per_file, sampled // files))
    groups = files * per_file
    order = np.argsort(keys, kind="stable")
    starts = (np.arange(groups, dtype=np.int64) * sampled) // groups
    sizes = np.diff(np.append(starts, sampled))
    group_of_row = np.empty(sampled, dtype=np.int64)
    group_of_row[order] = np.repeat(np.arange(groups), sizes)
    return Cells(
        files=files,
        file_of=np.arange(groups) // per_file,
        sample_rows=sizes,
        real_rows=np.full(groups, rows / groups),
        group_of_row=group_of_row,
        stats=group_stats(sample.take(pa.array(order)), starts),
    )


def group_stats(ordered: pa.Table, starts: np.ndarray) -> tuple[dict[str, ColumnStats], ...]:
    """Min/max, NULLs and values of every column over each run of rows ``starts[i]:starts[i+1]``."""
    groups = len(starts)
    per_group: list[dict[str, ColumnStats]] = [{} for _ in range(groups)]
    bounds = np.append(starts, ordered.num_rows)
    for name in ordered.column_names:
        column = ordered.column(name).combine_chunks()
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        if pa.types.is_floating(column.type):
            valid = valid & ~np.isnan(column.fill_null(0).to_numpy(zero_copy_only=False))  # NaN is in no bound
        values = np.add.reduceat(valid.astype(np.int64), starts) if len(valid) else np.zeros(groups, np.int64)
        nulls = np.add.reduceat((~column.is_valid().to_numpy(zero_copy_only=False)).astype(np.int64), starts)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type) or pa.types.is_binary(column.type):
            lows, highs = _slice_bounds(column, bounds, values)
        else:
            lows, highs = _key_bounds(column, starts, valid, values)
        for i in range(groups):
            per_group[i][name.lower()] = ColumnStats(lows[i], highs[i], bool(values[i]), int(nulls[i]), int(values[i]))
    return tuple(per_group)


def _key_bounds(
    column: pa.Array, starts: np.ndarray, valid: np.ndarray, values: np.ndarray
) -> tuple[list[Any], list[Any]]:
    """Per-run min and max of a fixed-width column, through its order-preserving keys."""
    keys = order_key_u64(column)
    low = np.minimum.reduceat(np.where(valid, keys, np.uint64(np.iinfo(np.uint64).max)), starts)
    high = np.maximum.reduceat(np.where(valid, keys, np.uint64(0)), starts)
    distinct, first = np.unique(keys[valid], return_index=True)
    positions = np.flatnonzero(valid)[first]
    python = column.take(pa.array(positions)).to_pylist()

    def value(key: np.uint64) -> object:
        return python[int(np.searchsorted(distinct, key))]

    lows = [value(low[i]) if values[i] else None for i in range(len(starts))]
    highs = [value(high[i]) if values[i] else None for i in range(len(starts))]
    return lows, highs


def _slice_bounds(column: pa.Array, bounds: np.ndarray, values: np.ndarray) -> tuple[list[Any], list[Any]]:
    lows: list[Any] = []
    highs: list[Any] = []
    for i in range(len(bounds) - 1):
        if not values[i]:
            lows.append(None)
            highs.append(None)
            continue
        found = pc.min_max(column.slice(bounds[i], bounds[i + 1] - bounds[i]))
        lows.append(found["min"].as_py())
        highs.append(found["max"].as_py())
    return lows, highs


def kept_by_minmax(stats: Sequence[Mapping[str, ColumnStats]], expr: Expr, floats: frozenset[str]) -> np.ndarray:
    """Whether each row group's statistics admit a row where ``expr`` is TRUE."""
    pushed = push_not(expr)
    return np.fromiter((might_match_pushed(pushed, s, floats) for s in stats), dtype=bool, count=len(stats))


def index_conjunct(expr: Expr, column: str) -> Expr | None:
    """The part of ``expr`` an index on ``column`` checks: its top-level conditions on that column
    alone, ``IS NOT NULL`` left out (None: none, so the index skips nothing for this query)."""
    expr = normalised(expr)
    parts = expr.children if isinstance(expr, And) else (expr,)
    mine = tuple(p for p in parts if {c.lower() for c in columns_of(p)} == {column.lower()})
    if not mine:
        return None
    return mine[0] if len(mine) == 1 else And(mine)


def read_chances(cells: Cells, kept: np.ndarray, matches: np.ndarray) -> np.ndarray:
    """The chance that each row group of ``cells`` is read under an exact index, of those ``kept`` by
    the other stages; ``matches``: the sample rows in each row group the index's condition holds for.

    A kept row group with a matching sample row is read; one without is read with the chance that
    one of its real rows matches, the matches' density taken over all kept row groups' sample rows
    (half a match added, so a value the sample missed still counts as likely somewhere; an upper bound
    where matches cluster).  A query is taken to match something: at least one row group in all.
    """
    kept_rows = cells.sample_rows[kept].sum()
    density = (matches[kept].sum() + 0.5) / kept_rows if kept_rows else 0.0
    chances = np.where(kept, np.where(matches > 0, 1.0, 1.0 - np.exp(-density * cells.real_rows)), 0.0)
    total = chances.sum()
    if 0 < total < 1:  # queries ask for values that exist: one row group at least holds a match
        chances = np.minimum(1.0, chances / total)
    return chances
