"""Star joins in the advisor: clustering a fact table through the dimensions its workload filters.

A star query filters a dimension (``c_region = 'ASIA'``) and joins it to the fact table on a foreign
key; the planner's join-key stage then keeps the fact row groups that can hold one of the keys the
filter matches.  Only a layout clustered through that dimension (``zskip.Dimension``, the facts of one
region together) lets it keep few.  The advisor learns each query's joins from zskip's planner (the
dimension, its key, the foreign key, the columns its filter names and the keys it matches), proposes
a ``Dimension`` axis for each foreign key and dimension the workload filters, with the columns it
filters as the hierarchy, coarsest first (fewest distinct values), and mixes those axes with the fact
table's own columns in one curve.

A simulated layout answers a join as the join-key stage answers a real one: the keys' ranks on the
dimension's axis (when the layout has that axis) bound the row groups whose ranks meet them, and the
keys are looked up between each row group's min/max of the foreign key.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from zskip.curves import ClusteringSpec, DimensionMapping, order_key_u64, point_intervals
from zskip.expr import quoted
from zskip.layout.dimensions import Dimension, fit_dimension, resolve_dimension
from zskip.planning.curve import and_ranks, ranges_meet
from zskip.planning.joins import JoinFilter, row_groups_holding_keys
from zskip.planning.minmax_arrays import StatsColumn

__all__ = [
    "Axis",
    "DimensionAxes",
    "StarJoin",
    "axis_column",
    "axis_label",
    "curve_join_kept",
    "group_key_ranges",
    "hierarchy_order",
    "join_kept",
    "rank_column",
    "star_axes",
    "star_joins",
    "with_ranks",
]

Axis = str | Dimension  # a column of the fact table, or a foreign key through its dimension


@dataclass(frozen=True)
class StarJoin:
    """A fact scan's join to a filtered dimension, as a query of the workload ran it."""

    foreign_key: str  # the fact table's column
    dimension: str  # the dimension table
    key: str  # its key column
    filter: str  # the dimension side's conditions (Spark SQL)
    columns: tuple[str, ...]  # the dimension's columns they name
    keys: pa.Array | None  # the distinct keys they match (None: too many to prune by)
    # each dimension record's coordinates of ``keys`` (see ``key_ranks``): the same for every candidate
    _coordinates: dict[int, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @functools.cached_property
    def order_keys(self) -> np.ndarray:
        """``keys`` as order keys, distinct and sorted (empty without keys)."""
        return np.unique(order_key_u64(self.keys)) if self.keys is not None else np.zeros(0, dtype=np.uint64)

    def key_ranks(self, mapping: DimensionMapping) -> np.ndarray:
        """The ranks of ``keys`` along ``mapping``.  Their coordinates through the recorded dimension
        order are looked up once per record: every width the advisor tries for one axis shares the
        record (repeated per candidate, the lookup was a large share of profiles of a SF 10 advice)."""
        held = self._coordinates.get(id(mapping.keys))
        if held is None or held[0] is not mapping.keys:  # the record held too: its id names no other
            held = (mapping.keys, mapping.coordinates(self.order_keys))
            self._coordinates[id(mapping.keys)] = held
        return mapping.coordinate_ranks(held[1])

    def reaches(self, dimension: Dimension) -> bool:
        """Whether ``dimension``'s axis is this join's foreign key through this dimension's key."""
        return (
            dimension.foreign_key.lower() == self.foreign_key.lower()
            and dimension.table.lower() == self.dimension.lower()
            and dimension.key.lower() == self.key.lower()
        )


def star_joins(found: Iterable[JoinFilter]) -> tuple[StarJoin, ...]:
    """The planner's joins of one scan (with the keys each yields) as the advisor keeps them."""
    return tuple(
        StarJoin(f.join.column, f.join.dimension, f.join.key, f.join.filter, f.join.filter_columns, f.keys)
        for f in found
        if f.join.filter_columns
    )


def axis_column(axis: Axis) -> str:
    """The fact table's column an axis keys its rows by."""
    return axis.foreign_key if isinstance(axis, Dimension) else axis


def axis_label(axis: Axis) -> str:
    """``lo_custkey through customer (c_region, c_nation)``, or a column's name."""
    if isinstance(axis, Dimension):
        return f"{axis.foreign_key} through {axis.table.rsplit('.', 1)[-1]} ({', '.join(axis.by)})"
    return axis


def star_axes(spark: SparkSession, joins: Sequence[tuple[StarJoin, int]]) -> dict[Dimension, int]:
    """A ``Dimension`` axis for each foreign key and dimension the workload filters (``joins``: each
    with the scans that ran it), its hierarchy the columns the filters name, coarsest first, each
    level refining those before it where one does (``hierarchy_order``); with how many scans filter
    through it."""
    reached: dict[tuple[str, str, str], tuple[StarJoin, set[str], int]] = {}
    for join, weight in joins:
        at = (join.foreign_key.lower(), join.dimension.lower(), join.key.lower())
        first, columns, total = reached.get(at, (join, set(), 0))
        reached[at] = (first, columns | set(join.columns), total + weight)
    axes: dict[Dimension, int] = {}
    for join, columns, weight in reached.values():
        levels = [c for c in _coarsest_first(spark, join.dimension, sorted(columns)) if c.lower() != join.key.lower()]
        if levels:
            axes[Dimension(join.foreign_key, join.dimension, key=join.key, by=levels)] = weight
    return axes


def _coarsest_first(spark: SparkSession, table: str, columns: list[str]) -> list[str]:
    """``columns`` of ``table`` as a hierarchy (``hierarchy_order``), from their distinct values and
    their pairs' (one Spark job; approximate counts, within 1%)."""
    if len(columns) < 2:
        return columns
    pairs = list(itertools.combinations(range(len(columns)), 2))
    singles = [F.approx_count_distinct(quoted(c), rsd=0.01).alias(f"c{i}") for i, c in enumerate(columns)]
    joint = [
        F.approx_count_distinct(F.struct(quoted(columns[i]), quoted(columns[j])), rsd=0.01).alias(f"p{i}_{j}")
        for i, j in pairs
    ]
    row = spark.table(table).agg(*singles, *joint).first()
    assert row is not None
    counts = {c: int(row[f"c{i}"]) for i, c in enumerate(columns)}
    together = {(columns[i], columns[j]): int(row[f"p{i}_{j}"]) for i, j in pairs}
    return hierarchy_order(counts, together)


FD_SLACK = 1.03  # a pair with at most this many times the finer column's distinct values: it determines the other


def hierarchy_order(counts: Mapping[str, int], together: Mapping[tuple[str, str], int]) -> list[str]:
    """Columns as levels of a hierarchy, coarsest first: each next level is the column with the fewest
    distinct values among those that determine every level before it (``B`` determines ``A`` when
    the pair ``(A, B)`` has about as many distinct values as ``B`` alone: a month names its year),
    else, when none does, the column with the fewest.  ``together``: the pairs' distinct values.

    A filter on one level then reads a contiguous run of the dimension's key order: with dates
    ordered (year, month, week) a month is one run, where (year, week, month) scatters it.

    >>> hierarchy_order({"year": 7, "week": 53, "month": 84},
    ...                 {("year", "week"): 371, ("year", "month"): 84, ("week", "month"): 300})
    ['year', 'month', 'week']
    """

    def pair(a: str, b: str) -> int:
        return together.get((a, b), together.get((b, a), 0))

    def determines(finer: str, coarser: str) -> bool:
        return pair(finer, coarser) <= FD_SLACK * counts[finer]

    order: list[str] = []
    left = sorted(counts, key=lambda c: (counts[c], c))
    while left:
        refining = [c for c in left if order and all(determines(c, level) for level in order)]
        chosen = (refining or left)[0]
        order.append(chosen)
        left.remove(chosen)
    return order


class DimensionAxes:
    """The recorded order of each dimension axis's keys, read once per axis by Spark (as optimize reads
    it), then mapped into ranks of as many bits as each candidate gives the axis."""

    def __init__(self, spark: SparkSession, fact_types: Mapping[str, DataType]) -> None:
        self.spark = spark
        self.fact_types = fact_types
        self._fitted: dict[Dimension, DimensionMapping] = {}
        self._mappings: dict[tuple[Dimension, int], DimensionMapping] = {}

    def mapping(self, axis: Dimension, bits: int) -> DimensionMapping:
        """``axis``'s mapping into ranks of ``bits`` bits."""
        if axis not in self._fitted:
            resolved = resolve_dimension(self.spark, axis, self.fact_types[axis.foreign_key])
            self._fitted[axis] = fit_dimension(self.spark, resolved, bits)
        if (axis, bits) not in self._mappings:
            self._mappings[(axis, bits)] = replace(self._fitted[axis], bits=bits)  # the same order, other widths
        return self._mappings[(axis, bits)]


def rank_column(axis: Dimension) -> str:
    """The sample's column holding each row's rank on ``axis`` (not a column of the table)."""
    return f"__zskip_rank_{axis.foreign_key.lower()}_{axis.table.lower()}"


def with_ranks(sample: pa.Table, axes: Mapping[Dimension, DimensionMapping]) -> pa.Table:
    """``sample`` with each row's rank on each of ``axes`` (as optimize's curve keys rank it)."""
    for axis, mapping in axes.items():
        ranks = mapping.ranks(order_key_u64(sample[axis.foreign_key]))
        sample = sample.append_column(rank_column(axis), pa.array(ranks.astype(np.uint64)))
    return sample


def join_kept(
    stats: Mapping[str, StatsColumn], groups: int, joins: Sequence[StarJoin], axes: Mapping[Dimension, DimensionMapping]
) -> np.ndarray:
    """Which of ``groups`` row groups (their simulated statistics: ``stats``) the join-key stage keeps
    for a query with ``joins``, in a layout along ``axes``: a dimension filter matching no key keeps
    none; one matching some keeps the row groups whose ranks on the join's axis (if the layout has it)
    meet the keys' rank bounds, and whose min/max of the foreign key holds one of the keys."""
    kept = np.ones(groups, dtype=bool)
    for join in joins:
        if join.keys is None:
            continue  # too many keys: the stage does not prune by them
        if len(join.keys) == 0:
            return np.zeros(groups, dtype=bool)
        foreign = next((column for name, column in stats.items() if name.lower() == join.foreign_key.lower()), None)
        if foreign is not None:
            kept &= row_groups_holding_keys(foreign, join.keys, join.order_keys)
        axis = next((a for a in axes if join.reaches(a)), None)
        on_axis = stats.get(rank_column(axis)) if axis is not None else None
        if axis is None or on_axis is None or on_axis.low is None or on_axis.high is None:
            continue
        ranks = join.key_ranks(axes[axis])
        low = np.asarray(on_axis.low.to_numpy(zero_copy_only=False), dtype=np.uint64)
        high = np.asarray(on_axis.high.to_numpy(zero_copy_only=False), dtype=np.uint64)
        bounded = on_axis.known & on_axis.has_min_max
        meets = (high >= ranks.min()) & (low <= ranks.max())
        kept &= np.where(bounded, meets, ~(on_axis.known & (on_axis.values == 0)))
    return kept


def group_key_ranges(keys: np.ndarray, group_of_row: np.ndarray, groups: int) -> np.ndarray:
    """``(groups, 2)`` inclusive curve-key ranges of simulated row groups numbered in key order: each
    from its lowest sampled key to just below the next group's (or its own highest, where a heavy key
    spans both), the last to the top of the key space.  Real row groups split the key space between
    them, so a sample's few keys per group, taken as its range, would leave out most of it."""
    top = np.iinfo(np.uint64).max
    keys = np.asarray(keys, dtype=np.uint64)
    held = group_of_row < groups
    low = np.full(groups, top, dtype=np.uint64)
    own_high = np.zeros(groups, dtype=np.uint64)
    np.minimum.at(low, group_of_row[held], keys[held])
    np.maximum.at(own_high, group_of_row[held], keys[held])
    low = np.minimum.accumulate(low[::-1])[::-1]  # a group without sample rows starts where the next does
    high = np.full(groups, top, dtype=np.uint64)
    high[:-1] = np.maximum(np.maximum(low[1:], np.uint64(1)) - np.uint64(1), own_high[:-1])
    low[0] = 0
    return np.stack([low, np.maximum(low, high)], axis=1)


def curve_join_kept(
    spec: ClusteringSpec,
    ranges: np.ndarray,
    joins: Sequence[StarJoin],
    axes: Mapping[Dimension, DimensionMapping],
) -> np.ndarray:
    """Which row groups (their key ranges: ``group_key_ranges``) the join-key stage's curve test keeps:
    the ranks of the joins' keys on every dimension axis of the layout at once (each key's rank, merged
    only where they touch, as the stage takes them) make the cells it looks in, and a row group is kept
    when its key range meets one of their key intervals (as the stage narrows by the curve; a curve
    segment fills far less than its bounding box)."""
    sets: dict[str, np.ndarray] = {}
    for join in joins:
        axis = next((a for a in axes if join.reaches(a)), None)
        if axis is None or join.keys is None or len(join.keys) == 0:
            continue
        and_ranks(sets, axis.foreign_key, point_intervals(np.unique(join.key_ranks(axes[axis]))))
    if not sets:
        return np.ones(len(ranges), dtype=bool)
    if any(len(ranks) == 0 for ranks in sets.values()):
        return np.zeros(len(ranges), dtype=bool)
    return ranges_meet(spec.rank_set_ranges(sets, recorded=ranges), ranges[:, 0], ranges[:, 1])
