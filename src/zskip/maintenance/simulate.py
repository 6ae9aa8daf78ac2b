"""A layout simulated on a sample of a table: what a query would read, without rewriting anything.

Optimize sorts a table's rows by curve key, cuts them into files near curve-cell boundaries
(``FileCuts``), and Parquet cuts each file into row groups of equal size.  Cutting a sample sorted by
the same key the same way gives each simulated row group the rows a real one would get, thinned out;
the min/max of those rows, widened to what the real row group's many more rows would reach
(``group_stats``: further along its distribution, and on a clustered column to the edges of the
curve cells it holds, which the real rows fill), is the simulated row group's statistics, and a
query's predicate checked against them (``might_match``, as the planner checks real statistics)
says whether it would read it.

An exact index (bloom filter, bitmap) on a column also skips row groups whose statistics admit a value
they do not hold.  Rows of the sample matching the query's conditions on that column say which row
groups hold one; a row group whose few sample rows hold none may still hold one among its real rows,
with the chance that how the sample's matches fall together in files and row groups gives
(``read_chances``: a layout that clusters a correlated column gathers them in a few).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from zskip.expr import And, Column, Expr, columns_of
from zskip.expr.rewrite import rewrite_not, without_implied_not_null
from zskip.layout.cuts import FileCuts
from zskip.planning.footers import ColumnStats
from zskip.planning.minmax_arrays import ARROW_ERRORS, StatsColumn, might_match_arrays

__all__ = ["Cells", "SampledValues", "cut_sample", "index_conjunct", "kept_by_minmax", "read_chances"]


@dataclass(frozen=True)
class Cells:
    """The row groups of a layout, simulated or real, and where the sample's rows fall in them."""

    files: int
    file_of: np.ndarray  # the file of each row group
    sample_rows: np.ndarray  # sample rows in each row group
    real_rows: np.ndarray  # table rows in each row group (estimated for a simulated layout)
    group_of_row: np.ndarray  # the row group of each sample row (in the sample's order)
    # min/max of each row group's sample rows, one set of arrays per column (simulated layouts only):
    # arrays, not an object per row group, as every query of the workload is checked on them at once
    # and an advice keeps every candidate's (objects took most of its memory and much of its time)
    stats_columns: Mapping[str, StatsColumn] = field(default_factory=dict)

    @property
    def row_groups(self) -> int:
        return len(self.file_of)

    @property
    def stats(self) -> tuple[dict[str, ColumnStats | None], ...]:
        """Each row group's statistics as objects, by column (built when asked: for checks one row
        group at a time; none for a layout that is not simulated)."""
        per_column = {name: column.stats for name, column in self.stats_columns.items()}
        groups = self.row_groups if per_column else 0
        return tuple({name: stats[i] for name, stats in per_column.items()} for i in range(groups))

    def files_read(self, chances: np.ndarray) -> float:
        """Files expected to be opened when each row group is read with its chance in ``chances``."""
        unread = np.ones(self.files)
        np.multiply.at(unread, self.file_of, 1.0 - chances)
        return float(np.sum(1.0 - unread))


@dataclass(frozen=True)
class SampledValues:
    """One sampled column's values, worked out once per sample: every layout draws its row groups'
    bounds from them, only the rows' order differs (the sort, distinct values and their Arrow
    typing took most of a simulated layout's time)."""

    present: np.ndarray  # the row is not NULL
    valid: np.ndarray  # not NULL nor NaN: a value bounds hold
    index: np.ndarray  # each row's place among ``distinct`` (0 where not valid)
    distinct: pa.Array  # ascending
    counts: np.ndarray  # the sample's rows of each
    typed: pa.Array  # ``distinct`` typed as Arrow types the Python values (a footer's bounds come so)

    @classmethod
    def of(cls, column: pa.Array | pa.ChunkedArray) -> SampledValues:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        present = column.is_valid().to_numpy(zero_copy_only=False)
        valid = present
        if pa.types.is_floating(column.type):
            valid = valid & ~np.isnan(column.fill_null(0).to_numpy(zero_copy_only=False))  # NaN is in no bound
        counted = pc.value_counts(column.filter(pa.array(valid)))
        order = pc.sort_indices(counted.field("values"))
        distinct = counted.field("values").take(order)
        counts = counted.field("counts").take(order).to_numpy(zero_copy_only=False).astype(float)
        index = pc.index_in(column, value_set=distinct).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        try:
            typed = pa.array(distinct.to_pylist())
        except ARROW_ERRORS:  # kept as sampled: arrays the planner may not order, objects it checks one by one
            typed = distinct
        return cls(present, valid, index, distinct, counts, typed)

    def ordered(self, order: np.ndarray) -> SampledValues:
        """The same values with the rows in ``order``."""
        return replace(self, present=self.present[order], valid=self.valid[order], index=self.index[order])


def cut_sample(
    sample: pa.Table,
    keys: np.ndarray,
    files: int,
    rows_per_group: float,
    rows: int,
    cells_of: Mapping[str, Callable[[pa.Array], np.ndarray]] | None = None,
    known: Mapping[str, SampledValues] | None = None,
) -> Cells:
    """``sample`` cut as optimize cuts the table's ``rows`` rows: into ``files`` files where
    ``FileCuts`` would end them (near curve-cell boundaries, heavy keys split by a row hash), each file
    sorted by key and cut into row groups of ``rows_per_group`` table rows.  ``cells_of``: for the
    columns the curve maps monotonically, each value's rank on it (see ``group_stats``); ``known``: the
    sample's columns' values already worked out (``SampledValues``), by name."""
    sampled = sample.num_rows
    files = max(1, min(files, sampled))
    u = np.random.default_rng(0).random(sampled)  # stands in for optimize's row hash
    file_of_row = FileCuts.choose(keys, files).route(keys, u)
    order = np.lexsort((u, keys))  # key order, ties as the route splits them: each file a run
    sizes = np.bincount(file_of_row, minlength=files)
    scale = rows / max(sampled, 1)
    per_file = np.minimum(np.maximum(1, np.round(sizes * scale / rows_per_group)), np.maximum(sizes, 1)).astype(int)
    per_file[sizes == 0] = 0
    file_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    starts = np.concatenate(
        [file_start[f] + (np.arange(per_file[f]) * sizes[f]) // per_file[f] for f in range(files) if per_file[f]]
    ).astype(np.int64)
    group_sizes = np.diff(np.append(starts, sampled))
    group_of_row = np.empty(sampled, dtype=np.int64)
    group_of_row[order] = np.repeat(np.arange(len(starts)), group_sizes)
    file_of = np.repeat(np.arange(files), per_file)
    values = {
        name: ((known or {}).get(name) or SampledValues.of(sample.column(name))).ordered(order)
        for name in sample.column_names
    }
    return Cells(
        files=files,
        file_of=file_of,
        sample_rows=group_sizes,
        real_rows=(sizes[file_of] * scale / per_file[file_of]).astype(float),
        group_of_row=group_of_row,
        stats_columns=_group_stats(values, starts, rows / max(len(starts), 1), cells_of),
    )


def group_stats(
    ordered: pa.Table,
    starts: np.ndarray,
    real_rows: float | None = None,
    cells_of: Mapping[str, Callable[[pa.Array], np.ndarray]] | None = None,
) -> dict[str, StatsColumn]:
    """Min/max, NULLs and values of every column over each run of rows ``starts[i]:starts[i+1]``.

    With ``real_rows`` (rows a real row group holds), each run's bounds are widened to what that many
    rows would likely reach: ``n`` sample rows spread over a share ``w`` of a column's distribution
    (its rows' quantiles in the whole sample) come from a share of about ``w (n + 1) / (n - 1)``, and
    ``real_rows`` rows from there span ``(real_rows - 1) / (real_rows + 1)`` of it.  A column the
    layout clusters keeps narrow bounds; one it does not reaches into its tails, as a real row group
    of thousands of rows does (a sample of a hundred seldom holds the top per mille). A run's NULLs
    (and NaNs) bound nothing: a real row group holds values in the share its run does.

    ``cells_of`` (with ``real_rows``) gives, for a column the curve maps monotonically, the rank of
    each of its values: a run's bounds then also reach the first and last sampled value of the ranks
    at its ends.  A row group holds every real row of the curve cells it spans, so its bounds on a
    clustered column end where a rank's values end, not where the sample's few rows in it happen to.
    """
    values = {name: SampledValues.of(ordered.column(name)) for name in ordered.column_names}
    return _group_stats(values, starts, real_rows, cells_of)


def _group_stats(
    values: Mapping[str, SampledValues],
    starts: np.ndarray,
    real_rows: float | None,
    cells_of: Mapping[str, Callable[[pa.Array], np.ndarray]] | None,
) -> dict[str, StatsColumn]:
    """``group_stats`` over columns whose rows are in the runs' order."""
    out: dict[str, StatsColumn] = {}
    for name, column in values.items():
        valid = column.valid
        if not len(valid):
            counted = nulls = np.zeros(len(starts), np.int64)
        else:
            counted = np.add.reduceat(valid.astype(np.int64), starts)
            nulls = np.add.reduceat((~column.present).astype(np.int64), starts)
        ranks = (cells_of or {}).get(name) if real_rows is not None else None
        lows, highs = _bounds(column, starts, counted, real_rows, ranks)
        out[name] = _stats_column(lows, highs, counted, nulls)
    return out


def _stats_column(lows: pa.Array, highs: pa.Array, values: np.ndarray, nulls: np.ndarray) -> StatsColumn:
    """One column's statistics over the runs, as the planner holds a footer's: arrays, and objects
    built only if a check asks for them (bounds Arrow cannot order)."""
    groups = len(values)
    held = values > 0

    def objects() -> tuple[ColumnStats, ...]:
        low, high = lows.to_pylist(), highs.to_pylist()
        return tuple(ColumnStats(low[i], high[i], bool(held[i]), int(nulls[i]), int(values[i])) for i in range(groups))

    known, null_count, counted = np.ones(groups, dtype=bool), nulls.astype(np.float64), values.astype(np.float64)
    return StatsColumn.of_arrays(objects, known, held, null_count, counted, lows, highs)


def _bounds(
    column: SampledValues,
    starts: np.ndarray,
    values: np.ndarray,
    real_rows: float | None,
    ranks: Callable[[pa.Array], np.ndarray] | None = None,
) -> tuple[pa.Array, pa.Array]:
    """Per-run min and max of ``column`` (widened for ``real_rows`` and to the edges of ``ranks``'
    cells, see ``group_stats``)."""
    distinct, counts, valid, index = column.distinct, column.counts, column.valid, column.index
    if len(distinct) == 0:
        return pa.nulls(len(starts)), pa.nulls(len(starts))
    low = np.minimum.reduceat(np.where(valid, index, len(distinct)), starts)
    high = np.maximum.reduceat(np.where(valid, index, -1), starts)
    if real_rows is not None and real_rows > 2:
        cumulative = np.cumsum(counts)
        position = (cumulative - counts / 2) / cumulative[-1]  # each distinct value's quantile
        n = values.astype(float)
        # a real row group holds values in the share its sampled run does: NULLs and NaNs bound nothing
        run_rows = np.diff(np.append(starts, len(valid))).astype(float)
        real_values = real_rows * n / np.maximum(run_rows, 1)
        stretchable = (n >= 2) & (real_values > 2)
        bottom = position[np.clip(low, 0, len(distinct) - 1)]
        top = position[np.clip(high, 0, len(distinct) - 1)]
        width = np.where(stretchable, top - bottom, 0.0)
        share = width * (n + 1) / np.maximum(n - 1, 1) * (real_values - 1) / (real_values + 1)
        grow = np.maximum(share - width, 0) / 2
        wider_low = np.searchsorted(position, bottom - grow, side="left")
        wider_high = np.searchsorted(position, top + grow, side="right") - 1
        low = np.where(stretchable, np.minimum(low, wider_low), low)
        high = np.where(stretchable, np.maximum(high, np.clip(wider_high, 0, len(distinct) - 1)), high)
    if ranks is not None:
        rank = np.asarray(ranks(distinct), dtype=np.uint64)  # ascending with the values: a monotone mapping
        held = values > 0
        first = np.searchsorted(rank, rank[np.clip(low, 0, len(distinct) - 1)], side="left")
        last = np.searchsorted(rank, rank[np.clip(high, 0, len(distinct) - 1)], side="right") - 1
        low = np.where(held, np.minimum(low, first), low)
        high = np.where(held, np.maximum(high, last), high)
    empty = values == 0
    last = len(distinct) - 1
    low_at = pa.array(np.clip(low, 0, last), mask=empty)  # a run without values has no bounds
    high_at = pa.array(np.clip(high, 0, last), mask=empty)
    return column.typed.take(low_at), column.typed.take(high_at)


def kept_by_minmax(cells: Cells, expr: Expr, floats: frozenset[Column]) -> np.ndarray:
    """Whether each simulated row group's statistics admit a row where ``expr`` is TRUE (all row
    groups at once, as the planner checks real ones; none without simulated statistics)."""
    return might_match_arrays(rewrite_not(expr), cells.stats_columns, floats, cells.row_groups)


def index_conjunct(expr: Expr, column: str) -> Expr | None:
    """The part of ``expr`` an index on ``column`` checks: its top-level conditions on that column
    alone, ``IS NOT NULL`` left out (None: none, so the index skips nothing for this query)."""
    expr = without_implied_not_null(expr)
    parts = expr.children if isinstance(expr, And) else (expr,)
    mine = tuple(p for p in parts if columns_of(p) == {column})
    if not mine:
        return None
    return mine[0] if len(mine) == 1 else And(mine)


def read_chances(
    cells: Cells,
    kept: np.ndarray,
    matches: np.ndarray,
    expected_rows: float | None = None,
    admitted: np.ndarray | None = None,
) -> np.ndarray:
    """The chance that each row group of ``cells`` is read under an exact index, of those ``kept`` by
    the other stages; ``matches``: the sample rows in each row group the index's condition holds for.

    A kept row group with a matching sample row is read.  One without is read with the chance that its
    file holds matches, times the chance that it does, times the Poisson chance that one of its unseen
    rows is one.  Matches seldom spread evenly: a layout clustering a column the condition correlates
    with puts them in a few files and row groups, and leaves the rest without any.  So each level
    (files; row groups in the files seen holding one) is taken to be either holding matches, at one
    density, or not (``_two_point``: fitted to how often the sample's hits fall together), and a file
    or row group without a hit holds some with the chance its sampled rows leave (``_held``): none in a
    file of hundreds of sampled rows when matches come a dozen to a file, nearly certainly when they
    come one in a thousand rows everywhere.  Where the sample holds no match, the expected matches (half
    a sampled match when not given) are spread over the kept rows, one row group each.

    With ``expected_rows`` (the table rows the condition is expected to match) the matches the unseen
    row groups are taken to hold add up to no more than the share of those rows the kept row groups
    hold: all of them, were every row group the condition's own min/max admits (``admitted``) kept,
    else in proportion to the kept ones' rows.  A query is taken to match something: at least one row
    group in all.
    """
    chances = np.where(kept & (matches > 0), 1.0, 0.0)
    unseen = kept & (matches == 0)
    real, sampled = cells.real_rows, cells.sample_rows.astype(float)
    total_rows = float(real.sum())
    fraction = min(1.0, float(sampled.sum()) / total_rows) if total_rows > 0 and sampled.sum() > 0 else 1.0
    within = None
    if expected_rows is not None:
        # of the rows the condition matches (all in row groups its own min/max admits), those in the
        # kept row groups, in proportion to their rows
        pool = total_rows if admitted is None else real[admitted | kept].sum()
        within = expected_rows * real[kept].sum() / max(pool, 1.0)
    if unseen.any() and matches[kept].sum() == 0:
        missed = within if within is not None else 0.5 / fraction
        chances[unseen] = 1.0 - np.exp(-missed * real[unseen] / max(real[unseen].sum(), 1.0))
    elif unseen.any():
        file_of = cells.file_of
        file_hits = np.bincount(file_of[kept], weights=matches[kept], minlength=cells.files)
        file_sampled = np.bincount(file_of[kept], weights=sampled[kept], minlength=cells.files)
        file_share, file_density = _two_point(file_sampled, file_hits)
        file_holds = np.where(file_hits > 0, 1.0, _held(file_share, file_density, file_sampled))
        in_seen_files = kept & (file_hits > 0)[file_of]
        share, density = _two_point(sampled[in_seen_files], matches[in_seen_files])
        holds = file_holds[file_of[unseen]] * _held(share, density, sampled[unseen])
        rest = np.maximum(real[unseen] - sampled[unseen], 0.0)
        if within is not None:
            seen_matches = float(np.count_nonzero(kept & (matches > 0)))  # one each at least
            taken = float(holds @ rest) * density
            if taken > 0 and seen_matches + taken > within:
                density *= max(within - seen_matches, 0.0) / taken
        chances[unseen] = holds * (1.0 - np.exp(-density * rest))
    total = chances.sum()
    if 0 < total < 1:
        chances = np.minimum(1.0, chances / total)
    return chances


def _two_point(sampled: np.ndarray, hits: np.ndarray) -> tuple[float, float]:
    """Units (files, row groups) as either holding matches at one density or none: the share holding
    them and their density per row, from the units' sampled rows and ``hits`` among them.

    Under an even spread the sampled hits fall together in a unit as often as ``d^2 s^2`` says; the
    more often they do, the smaller the share of units holding matches, and the denser those are
    (method of moments: ``sum h (h - 1)`` against ``d^2 sum s^2``, one pair added to each side so a
    lone repeat among few hits does not say much)."""
    total, rows = float(hits.sum()), float(sampled.sum())
    mean = total / rows if rows > 0 else 0.0
    even_pairs = mean * mean * float(np.sum(sampled * sampled))
    pairs = float(np.sum(hits * (hits - 1.0)))
    share = min(1.0, (even_pairs + 1.0) / (pairs + 1.0)) if total > 0 else 1.0
    return share, mean / share


def _held(share: float, density: float, sampled: np.ndarray) -> np.ndarray:
    """The chance that a unit whose ``sampled`` rows hold no match holds some (``_two_point``'s model)."""
    missed = share * np.exp(-density * sampled)
    return missed / np.maximum(missed + 1.0 - share, 1e-300)
