"""Candidate layouts simulated on one sample of a table, and the current layout measured by zskip's
planner: what the advisor (``zskip.maintenance.advise``) ranks.  How one layout is simulated (cut
into files and row groups, checked by min/max, an index's chances) is ``zskip.maintenance.simulate``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from zskip.curves import DimensionMapping, bits_for_weights, bits_per_column
from zskip.display import Progress
from zskip.expr import Column, Expr, equality_values
from zskip.expr.arrow import matching_rows
from zskip.expr.nodes import LEAVES, And, Or
from zskip.expr.sql import to_sql
from zskip.fileindex.kinds import KINDS
from zskip.layout.dimensions import Dimension
from zskip.layout.sample_fit import spec_from_sample
from zskip.maintenance.axis_weights import axis_weights
from zskip.maintenance.forecasts import (
    CURRENT,
    IndexForecast,
    LayoutForecast,
    LayoutKey,
    QueryForecast,
    WorkloadQuery,
    layout_key,
)
from zskip.maintenance.simulate import (
    Cells,
    SampledValues,
    cut_sample,
    index_conjunct,
    kept_by_minmax,
    read_chances,
)
from zskip.maintenance.stars import (
    Axis,
    DimensionAxes,
    axis_column,
    curve_join_kept,
    group_key_ranges,
    join_kept,
    with_ranks,
)
from zskip.planning.plan import ScanPlan
from zskip.planning.read import plan_table

__all__ = ["INDEX_GAIN", "LayoutSimulator", "rows_per_value"]

INDEX_GAIN = 0.9  # an index is added when it leaves at most this share of the row groups read
EXACT_BELOW = 100  # a condition the sample matches fewer rows of is counted in the table (a Spark job)


class LayoutSimulator:
    """Candidate layouts simulated on one sample, and the current layout measured by the planner.

    Each layout is cut once (``Cells``), and which row groups each query reads under it is kept, so
    trying an index on a layout costs one pass over the sample per column and query.
    """

    def __init__(
        self,
        sample: pa.Table,
        workload: list[WorkloadQuery],
        files: int,
        rows_per_group: float,
        rows: int,
        dimensions: DimensionAxes,
    ) -> None:
        self.sample = sample
        self.dimensions = dimensions
        self.workload = workload
        self.files = files
        self.rows_per_group = rows_per_group
        self.rows = rows
        self.floats: frozenset[Column] = frozenset(
            name for name in sample.column_names if pa.types.is_floating(sample.schema.field(name).type)
        )
        self.weight = sum(q.weight for q in workload)
        self._cells: dict[LayoutKey, Cells] = {}
        self._kept: dict[LayoutKey, list[np.ndarray]] = {}  # per query: the row groups min/max keeps
        self._matches: dict[tuple[LayoutKey, str], list[np.ndarray | None]] = {}
        self._rows: dict[str, list[np.ndarray | None]] = {}
        self._expected: dict[str, list[float | None]] = {}
        self._exact: dict[tuple[str, int], int] = {}  # (column, query): the table rows its conditions match
        self._admitted_cache: dict[tuple[LayoutKey, str, int], np.ndarray] = {}
        self._now: list[tuple[int, int, int]] = []  # per query: files, row groups, rows read now
        self.fraction = sample.num_rows / max(rows, 1)  # of the table's rows, in the sample

    def count_rare_matches(self, spark: SparkSession, table: str, columns: Sequence[str]) -> int:
        """Count in the table, in one Spark job, the rows each query's conditions on each of ``columns``
        match where the sample holds fewer than ``EXACT_BELOW`` of them: a rare value's rows (an
        order's price) decide which files an index opens, and a sample of a few hundred thousand rows
        seldom holds one.  Returns how many conditions were counted."""
        wanted: list[tuple[str, int, Expr]] = []
        for column in columns:
            for number, (query, rows) in enumerate(zip(self.workload, self._matching_rows(column), strict=True)):
                part = index_conjunct(query.expr, column)
                if rows is not None and part is not None and np.count_nonzero(rows) < EXACT_BELOW:
                    wanted.append((column, number, part))
        if not wanted or self.fraction >= 1.0:
            return 0
        conditions = list(dict.fromkeys(to_sql(part) for _, _, part in wanted))  # queries share conditions
        counted = (
            spark.table(table)
            .agg(*[F.count_if(F.expr(condition)).alias(f"c{i}") for i, condition in enumerate(conditions)])
            .first()
        )
        assert counted is not None
        alias = {condition: f"c{i}" for i, condition in enumerate(conditions)}
        for column, number, part in wanted:
            self._exact[(column, number)] = int(counted[alias[to_sql(part)]] or 0)
        self._expected.clear()
        return len(wanted)

    def measure_current(
        self, spark: SparkSession, table: str, positions: pa.Table, report: Progress, plans: dict[str, ScanPlan]
    ) -> None:
        """What each query reads now, as zskip's planner plans it (``plans``: those already made of a
        workload of queries, their join stage included), and where the sample falls in the table's row
        groups (by each sampled row's file and position in it)."""
        kept_by_query = []
        metadata = None
        for done, query in enumerate(self.workload):
            plan = plans.get(query.predicate)
            if plan is None:  # the advisor's plans are not the workload: recorded nowhere
                plan, _ = plan_table(spark, table, to_sql(query.expr), recorder=None)
            metadata = plan.metadata or metadata
            kept_by_query.append(plan.kept)
            self._now.append((len(plan.kept), plan.row_groups_kept(), plan.rows_planned()))
            report("measuring the current layout", done + 1, len(self.workload))
        assert metadata is not None
        paths = metadata.files()["file_path"].to_pylist()
        metadata.prefetch_footers(paths)
        rows = [metadata.footer(path).rows for path in paths]
        first = np.cumsum([0, *(len(r) for r in rows)])
        groups = int(first[-1])
        number = {path: i for i, path in enumerate(paths)}
        sampled_file = np.array([number.get(p, -1) for p in positions["_file"].to_pylist()], dtype=np.int64)
        sampled_pos = positions["_pos"].to_numpy(zero_copy_only=False)
        group_of_row = np.full(len(sampled_file), groups, dtype=np.int64)  # a file gone since: no group
        for i, file_rows in enumerate(rows):
            mine = sampled_file == i
            group_of_row[mine] = first[i] + np.searchsorted(np.cumsum(file_rows), sampled_pos[mine], side="right")
        self._cells[(CURRENT,)] = Cells(
            files=len(paths),
            file_of=np.repeat(np.arange(len(paths)), [len(r) for r in rows]),
            sample_rows=np.bincount(group_of_row[group_of_row < groups], minlength=groups),
            real_rows=np.array([n for r in rows for n in r], dtype=float),
            group_of_row=group_of_row,
        )
        masks = []
        for kept in kept_by_query:
            mask = np.zeros(groups, dtype=bool)
            for path, chosen in kept.items():
                i = number[path]
                if chosen is None:
                    mask[first[i] : first[i + 1]] = True
                else:
                    mask[first[i] + np.asarray(chosen, dtype=np.int64)] = True
            masks.append(mask)
        self._kept[(CURRENT,)] = masks

    def current_layout(self) -> LayoutForecast:
        """The table as it is, no index added: what the planner reads now (its rows per row group as
        the footers say)."""
        return self.with_indexes((CURRENT,), (), CURRENT, "", ())

    def simulate(
        self,
        axes: Sequence[Axis],
        types: dict[str, DataType],
        curve: str,
        mapping: str,
        weights: tuple[float, ...] | None = None,
    ) -> LayoutForecast:
        """``axes`` along ``curve``, columns with ``mapping`` (``types``: theirs and the foreign keys'),
        dimensions through their recorded key order, each axis ``weights``' share of the curve (zorder),
        fitted and cut as optimize would."""
        widths = bits_for_weights(weights) if weights is not None else (bits_per_column(len(axes)),) * len(axes)
        bits = dict(zip((axis_column(a) for a in axes), widths, strict=True))
        through = {a: self.dimensions.mapping(a, bits[a.foreign_key]) for a in axes if isinstance(a, Dimension)}
        spec = spec_from_sample(
            self.sample,
            {axis_column(a): types[axis_column(a)] for a in axes},
            curve=curve,
            mapping=mapping,
            bits=bits,
            fixed={a.foreign_key: m for a, m in through.items()},
        )
        sample = with_ranks(self.sample, through)
        monotone = {  # the columns whose curve ranks follow their values (not those through a dimension)
            column.name: column.ranks for column in spec.columns if not isinstance(column.mapping, DimensionMapping)
        }
        keys = spec.keys(self.sample)
        cells = cut_sample(sample, keys, self.files, self.rows_per_group, self.rows, monotone, self._values)
        key = layout_key(axes, curve, mapping, weights)
        self._cells[key] = cells
        ranges = group_key_ranges(keys, cells.group_of_row, cells.row_groups) if through else None
        self._kept[key] = [
            kept_by_minmax(cells, q.expr, self.floats)
            & join_kept(cells.stats_columns, cells.row_groups, q.joins, through)
            & (curve_join_kept(spec, ranges, q.joins, through) if ranges is not None else True)
            for q in self.workload
        ]
        return self.with_indexes(key, tuple(axes), curve, mapping, (), weights)

    def with_indexes(
        self,
        key: LayoutKey,
        columns: tuple[Axis, ...],
        curve: str,
        mapping: str,
        indexes: tuple[IndexForecast, ...],
        weights: tuple[float, ...] | None = None,
    ) -> LayoutForecast:
        """The layout ``key`` with exact indexes on ``indexes``' columns: a query's row group is read
        with the least of the chances its indexed columns' conditions give (``read_chances``)."""
        cells = self._cells[key]
        forecasts = []
        plain = 0.0
        for number, query in enumerate(self.workload):
            kept = self._kept[key][number]
            chances = kept.astype(float)
            for index in indexes:
                matches = self._index_matches(key, index.column)[number]
                if matches is not None:
                    expected = self._expected_rows(index.column)[number]
                    admitted = self._admitted(key, index.column, number)
                    chances = np.minimum(chances, read_chances(cells, kept, matches, expected, admitted))
            files_now, groups_now, rows_now = self._now[number]
            forecasts.append(
                QueryForecast(
                    query.shown,
                    query.weight,
                    files_now,
                    groups_now,
                    rows_now,
                    cells.files_read(chances),
                    float(chances.sum()),
                    float(chances @ cells.real_rows),
                )
            )
            plain += query.weight * float(cells.real_rows[kept].sum())
        return LayoutForecast(
            columns=columns,
            curve=curve,
            mapping=mapping,
            files=sum(f.weight * f.files for f in forecasts) / self.weight,
            row_groups=sum(f.weight * f.row_groups for f in forecasts) / self.weight,
            rows=sum(f.weight * f.rows for f in forecasts) / self.weight,
            rows_minmax=plain / self.weight,
            queries=tuple(forecasts),
            indexes=indexes,
            weights=weights,
        )

    def add_indexes(self, layout: LayoutForecast, types: dict[str, DataType]) -> LayoutForecast:
        """``layout`` with indexes added one at a time, the one saving most row groups first, while
        each leaves at most ``INDEX_GAIN`` of the rows read before it."""
        key = layout.key
        best = layout
        while True:
            chosen = {i.column for i in best.indexes}
            tries = [
                self.with_indexes(
                    key,
                    layout.columns,
                    layout.curve,
                    layout.mapping,
                    (*best.indexes, self._index(key, column)),
                    layout.weights,
                )
                for column in types
                if column not in chosen and any(m is not None for m in self._index_matches(key, column))
            ]
            better = [t for t in tries if t.rows <= INDEX_GAIN * best.rows]
            if not better:
                return best
            best = min(better, key=lambda t: t.rows)

    def forget(self, key: LayoutKey) -> None:
        """Drop what was worked out for the simulated layout ``key`` once it is scored (its cells, row
        groups kept and index matches: at SSB scale factor 10 some 60 MB a layout); the current
        layout's stay, as every ranking ends with it."""
        if key == (CURRENT,):
            return
        self._cells.pop(key, None)
        self._kept.pop(key, None)
        for matched in [k for k in self._matches if k[0] == key]:
            del self._matches[matched]
        for admitted in [k for k in self._admitted_cache if k[0] == key]:
            del self._admitted_cache[admitted]

    def weights_for(self, axes: Sequence[Axis]) -> tuple[float, ...] | None:
        """Each of ``axes``' share of a weighted curve, from how narrowly the workload filters on it
        (``zskip.maintenance.axis_weights``); ``None``: alike."""
        shares = [[self._share(number, axis) for number in range(len(self.workload))] for axis in axes]
        groups = max(self.files, self.rows / self.rows_per_group)  # a rewritten table's, a file each at least
        prefix = max(1, math.ceil(math.log2(max(2.0, groups))))  # the bits that pick one of them
        return axis_weights(shares, [q.weight for q in self.workload], prefix)

    def _share(self, number: int, axis: Axis) -> float | None:
        """The share of the table's rows query ``number``'s conditions on ``axis`` keep (None: it sets none):
        for a column, its conditions' expected rows; through a dimension, the sampled rows whose
        foreign key is one of the keys the query's dimension filter matched."""
        if isinstance(axis, str):
            expected = self._expected_rows(axis)[number]
            return None if expected is None else min(1.0, expected / max(self.rows, 1))
        foreign = self.sample[axis.foreign_key]
        shares = []
        for join in self.workload[number].joins:
            if not join.reaches(axis) or join.keys is None:
                continue
            try:
                held = pc.is_in(foreign, value_set=join.keys.cast(foreign.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue  # keys the foreign key's type cannot hold: no share to tell
            shares.append((int(pc.sum(held).as_py() or 0) + 0.5) / max(self.sample.num_rows, 1))
        return min(shares, default=None)

    def _index_matches(self, key: LayoutKey, column: str) -> list[np.ndarray | None]:
        """Per query, the sample rows per row group matching its conditions on ``column`` (None: it
        has none an index could check)."""
        if (key, column) not in self._matches:
            cells = self._cells[key]
            found: list[np.ndarray | None] = []
            for rows in self._matching_rows(column):
                if rows is None:
                    found.append(None)
                    continue
                groups = cells.group_of_row[rows]
                found.append(np.bincount(groups[groups < cells.row_groups], minlength=cells.row_groups))
            self._matches[(key, column)] = found
        return self._matches[(key, column)]

    def _admitted(self, key: LayoutKey, column: str, number: int) -> np.ndarray | None:
        """The row groups of layout ``key`` whose min/max admits query ``number``'s conditions on
        ``column`` (None: the current layout, whose statistics the simulation does not hold)."""
        cells = self._cells[key]
        part = index_conjunct(self.workload[number].expr, column)
        if not cells.stats_columns or part is None:
            return None
        if (key, column, number) not in self._admitted_cache:
            self._admitted_cache[(key, column, number)] = kept_by_minmax(cells, part, self.floats)
        return self._admitted_cache[(key, column, number)]

    def _matching_rows(self, column: str) -> list[np.ndarray | None]:
        """Per query, the sample rows its conditions on ``column`` hold for (the same under any layout)."""
        if column not in self._rows:
            self._rows[column] = [
                None if (part := index_conjunct(q.expr, column)) is None else matching_rows(self.sample, part)
                for q in self.workload
            ]
        return self._rows[column]

    def _expected_rows(self, column: str) -> list[float | None]:
        """Per query, the table rows its conditions on ``column`` are expected to match (None: none).

        From the sample: its matches over the sampled fraction, half a match added when it saw none.
        An equality matches about as many rows per value as a value of the column holds
        (``rows_per_value``), so rare values (an order's price) are not spread over the table; only
        hits beyond one per value say a value is heavier than that.
        """
        if column not in self._expected:
            per_value = rows_per_value(self.sample[column], self.rows)
            found: list[float | None] = []
            for query, rows in zip(self.workload, self._matching_rows(column), strict=True):
                if rows is None:
                    found.append(None)
                    continue
                seen = int(np.count_nonzero(rows))
                if (column, len(found)) in self._exact:
                    found.append(float(self._exact[(column, len(found))]))
                    continue
                part = index_conjunct(query.expr, column)
                values = _equal_values(part) if part is not None else None
                estimate = (seen + 0.5) / self.fraction
                if values is not None:  # a value's hit in the sample is expected: only more says it is heavy
                    estimate = max((seen - values) / self.fraction, values * per_value)
                found.append(estimate)
            self._expected[column] = found
        return self._expected[column]

    def _index(self, key: LayoutKey, column: str) -> IndexForecast:
        """The first kind (``zskip.fileindex.kinds.KINDS``) that answers every condition the workload puts
        on ``column`` (a bloom filter for equalities only, else a bitmap); its size from the column's
        distinct values in the sample."""
        parts, values = self._column_facts(column)
        groups = self._cells[key].row_groups
        kind = next((k for k in KINDS.values() if all(k.answers(part) for part in parts)), None)
        if kind is None:  # no kind answers all: the exact one answers most
            kind = next(k for k in KINDS.values() if k.exact)
        return IndexForecast(column, kind.name, kind.forecast_bytes(self.rows, values, groups))

    @functools.cached_property
    def _values(self) -> dict[str, SampledValues]:
        """The sample's columns' values, worked out once for every layout (``SampledValues``)."""
        return {name: SampledValues.of(self.sample.column(name)) for name in self.sample.column_names}

    @functools.cache  # noqa: B019 (one simulator per advice: the cache goes with it)
    def _column_facts(self, column: str) -> tuple[tuple[Expr, ...], float]:
        """The workload's conditions on ``column`` and its estimated distinct values (the same under every
        layout, so worked out once)."""
        parts = tuple(part for q in self.workload if (part := index_conjunct(q.expr, column)) is not None)
        distinct = len(pc.unique(self.sample[column].drop_null()))
        share = distinct / max(1, self.sample.num_rows)
        return parts, self.rows * share if share > 0.5 else distinct  # mostly unique values grow with rows


def rows_per_value(column: pa.ChunkedArray, rows: int) -> float:
    """Rows a value of ``column`` holds in a table of ``rows`` rows, from a uniform sample of it: the
    ``k`` for which ``rows / k`` values of ``k`` rows each would show as many distinct values in a
    sample of this size (a value is seen with chance ``1 - (1 - f) ** k``).

    >>> round(rows_per_value(pa.chunked_array([list(range(1000))]), 1000), 1)
    1.0
    """
    sampled = len(column) - column.null_count
    distinct = len(pc.unique(column.drop_null()))
    if sampled == 0 or distinct == 0 or rows <= 0:
        return 1.0
    fraction = min(1.0, sampled / rows)
    if fraction >= 1.0:
        return sampled / distinct
    low, high = 1.0, float(rows)
    if (rows / low) * (1 - (1 - fraction) ** low) <= distinct:
        return 1.0  # as many distinct values as unique ones would show
    for _ in range(60):  # seen(k) falls as k grows: bisect for seen(k) = distinct
        middle = (low + high) / 2
        if (rows / middle) * (1 - (1 - fraction) ** middle) > distinct:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _equal_values(expr: Expr) -> int | None:
    """How many values ``expr`` holds its column equal to (None: not only equalities)."""
    if isinstance(expr, Or):
        counts = [_equal_values(c) for c in expr.children]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)
    if isinstance(expr, And):
        counts = [_equal_values(c) for c in expr.children]
        known = [c for c in counts if c is not None]
        return min(known) if known else None
    values = equality_values(expr) if isinstance(expr, LEAVES) else None
    return None if values is None else len(values)
