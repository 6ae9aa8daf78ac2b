"""Dimension mapping: foreign keys to coordinates through a recorded dimension order."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from zskip.curves import ClusteringSpec, ColumnMapping, DimensionMapping, RankMapping, RawMapping, order_key_u64
from zskip.curves.ranges import point_intervals
from zskip.expr import And, Compare, In, Or
from zskip.planning.curve import rank_bounds, rank_sets


def keys_of(values: list[int]) -> np.ndarray:
    return order_key_u64(pa.array(values, pa.int64()))


def mapping(values: list[int], bits: int = 8) -> DimensionMapping:
    return DimensionMapping(bits=bits, table="db.dim", key="k", by=("level",), keys=keys_of(values))


def test_coordinates_follow_the_recorded_order_and_unknown_keys_share_the_orphan_coordinate() -> None:
    m = mapping([30, 10, 20, 10])  # 10 listed twice: its first coordinate counts
    assert m.orphan == 4
    assert m.coordinates(keys_of([10, 20, 30, 40, -5])).tolist() == [1, 2, 0, 4, 4]
    assert mapping([]).coordinates(keys_of([1])).tolist() == [0]


def test_ranks_keep_coordinate_order_and_span_the_range() -> None:
    m = mapping(list(range(1000)), bits=4)
    ranks = m.coordinate_ranks(np.arange(m.orphan + 1))
    assert (np.diff(ranks.astype(np.int64)) >= 0).all()
    assert ranks[0] == 0 and ranks[-1] == 15  # the orphan coordinate takes the top rank
    big = mapping(list(range(10)), bits=60)  # coordinates * 2**bits overflow 64 bits: exact anyway
    assert big.coordinate_ranks(np.array([10], np.uint64))[0] == (10 << 60) // 11


def test_json_round_trip_in_a_spec() -> None:
    spec = ClusteringSpec(
        curve="hilbert",
        bits=8,
        columns=(ColumnMapping("a", RawMapping(8)), ColumnMapping("fk", mapping([5, 3, 9]))),
    )
    again = ClusteringSpec.from_json(spec.to_json())
    assert again == spec
    assert again.columns[1].mapping.coordinates(keys_of([9])).tolist() == [2]  # type: ignore[union-attr]
    assert again != ClusteringSpec(
        curve="hilbert", bits=8, columns=(spec.columns[0], ColumnMapping("fk", mapping([5, 9, 3])))
    )


def test_a_dimension_column_is_bounded_by_equality_and_in_only() -> None:
    m = mapping([30, 10, 20, 40], bits=8)
    spec = ClusteringSpec(curve="zorder", bits=8, columns=(ColumnMapping("fk", m),))
    types = {"fk": pa.int64()}
    r = {int(c): int(m.coordinate_ranks(np.array([c]))[0]) for c in range(5)}
    assert rank_bounds(Compare("fk", "=", 20), spec, types) == {"fk": (r[2], r[2])}
    assert rank_bounds(In("fk", (10, 40)), spec, types) == {"fk": (r[1], r[3])}
    assert rank_bounds(In("fk", (10, 99)), spec, types) == {"fk": (r[1], r[4])}  # 99: an orphan
    assert rank_bounds(Compare("fk", "<", 20), spec, types) == {}  # coordinates do not follow the key's order
    assert spec.key_ranges({"fk": (int(keys_of([10])[0]), int(keys_of([30])[0]))}).tolist() == [[0, 255]]


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(-1000, 1000)), min_size=1, max_size=60, unique_by=lambda t: t[1])
)
def test_each_level_of_the_hierarchy_is_one_run_of_coordinates(rows: list[tuple[int, int]]) -> None:
    ordered = sorted(rows)  # the dimension sorted by its hierarchy, then by key
    m = mapping([key for _, key in ordered])
    for level in {lvl for lvl, _ in rows}:
        coords = np.sort(m.coordinates(keys_of([key for lvl, key in rows if lvl == level])))
        assert (np.diff(coords) == 1).all()


def hierarchical(values: list[int], levels: list[list[int]], bits: int = 32) -> DimensionMapping:
    return DimensionMapping(
        bits=bits,
        table="db.dim",
        key="k",
        by=tuple(f"level{i}" for i in range(len(levels))),
        keys=keys_of(values),
        levels=tuple(np.array(starts) for starts in levels),
    )


@st.composite
def hierarchies(draw: st.DrawFn) -> tuple[int, list[list[int]]]:
    """Rows in hierarchy order and each level's group starts (a finer level's groups nest in the coarser's)."""
    rows = draw(st.integers(1, 80))
    levels: list[list[int]] = []
    starts = {0}
    for _ in range(draw(st.integers(1, 3))):
        starts = starts | set(draw(st.lists(st.integers(0, rows - 1), max_size=12)))
        levels.append(sorted(starts))
    return rows, levels


@given(hierarchies())
def test_every_group_of_every_level_fills_an_aligned_block_of_ranks(drawn: tuple[int, list[list[int]]]) -> None:
    rows, levels = drawn
    m = hierarchical(list(range(rows)), levels)
    ranks = m.coordinate_ranks(np.arange(rows + 1)).astype(object)
    assert all(a < b for a, b in itertools.pairwise(ranks))  # distinct, in coordinate order; orphan last
    for starts in levels:
        bounds = [*starts, rows]
        for lo, hi in itertools.pairwise(bounds):
            first, last = int(ranks[lo]), int(ranks[hi - 1])
            width = (first ^ last).bit_length()
            block = first >> width
            outside = [int(r) for i, r in enumerate(ranks) if not lo <= i < hi]
            assert all(r >> width != block for r in outside), (lo, hi, starts)


@given(hierarchies(), st.integers(1, 8))
def test_ranks_cut_to_few_bits_keep_the_order(drawn: tuple[int, list[list[int]]], bits: int) -> None:
    rows, levels = drawn
    ranks = hierarchical(list(range(rows)), levels, bits).coordinate_ranks(np.arange(rows + 1))
    assert (np.diff(ranks.astype(np.int64)) >= 0).all() and int(ranks.max()) < 2**bits


def test_a_region_is_one_cell_of_the_top_bits_not_a_run_straddling_two() -> None:
    # five regions of 20 rows: in proportion, region 1 spans ranks 20/101 .. 40/101 of the range and
    # shares its top three bits with regions 0 and 2; aligned, it owns the cell 001 of the top three bits
    levels = [[0, 20, 40, 60, 80]]
    linear = mapping(list(range(100)), bits=8).coordinate_ranks(np.arange(20, 40)) >> np.uint64(5)
    aligned = hierarchical(list(range(100)), levels, bits=8).coordinate_ranks(np.arange(20, 40)) >> np.uint64(5)
    assert set(linear.tolist()) == {1, 2, 3} and set(aligned.tolist()) == {1}


def test_json_round_trip_keeps_the_levels_and_old_specs_read_in_proportion() -> None:
    m = hierarchical([7, 3, 5, 1], [[0, 2], [0, 1, 2, 3]], bits=8)
    again = DimensionMapping.from_json(m.to_json())
    assert again == m and again.ranks(keys_of([3, 5, 99])).tolist() == m.ranks(keys_of([3, 5, 99])).tolist()
    old = m.to_json()
    del old["levels"]
    proportional = DimensionMapping.from_json(old)
    assert proportional != m and not proportional.levels
    coords = np.arange(5)
    assert proportional.coordinate_ranks(coords).tolist() == mapping([7, 3, 5, 1]).coordinate_ranks(coords).tolist()


def test_an_in_list_or_an_or_of_keys_is_each_keys_rank_never_the_hull_between() -> None:
    m = mapping([30, 10, 20, 40, 50], bits=8)
    spec = ClusteringSpec(curve="zorder", bits=8, columns=(ColumnMapping("fk", m),))
    types = {"fk": pa.int64()}
    r = {int(c): int(m.coordinate_ranks(np.array([c]))[0]) for c in range(6)}
    assert r[1] + 1 < r[3]  # 10 and 40 are not neighbours: 20 lies between
    apart = [[r[1], r[1]], [r[3], r[3]]]
    assert rank_sets(In("fk", (10, 40)), spec, types)["fk"].tolist() == apart
    assert rank_sets(Or((Compare("fk", "=", 10), Compare("fk", "=", 40))), spec, types)["fk"].tolist() == apart
    assert rank_sets(In("fk", (10, 99)), spec, types)["fk"].tolist() == [[r[1], r[1]], [r[5], r[5]]]  # 99: orphan
    both = And((In("fk", (10, 40, 20)), In("fk", (40, 50))))
    assert rank_sets(both, spec, types)["fk"].tolist() == [[r[3], r[3]]]
    assert rank_sets(Or((Compare("fk", "=", 10), Compare("other", "=", 1))), spec, types) == {}  # no box
    # the cover of the two keys is the union of each key's cover, and holds no key between them
    cover = spec.rank_set_ranges(rank_sets(In("fk", (10, 40)), spec, types))
    one = [spec.rank_set_ranges(rank_sets(Compare("fk", "=", k), spec, types)) for k in (10, 40)]
    assert cover.tolist() == sorted(np.concatenate(one).tolist())


def test_a_light_group_of_a_skewed_dimension_fills_few_row_groups_and_its_cover_reads_no_more() -> None:
    """A dimension of four groups holding 58%, 1.4%, 20% and 20.6% of a fact's rows, on a three-axis
    Hilbert curve cut into 600 row groups of equal rows: the light group's rows fill at most
    1.5 x (p + one cell's width) of them, and the cover of its keys' ranks, against the row groups'
    key ranges, keeps no row group that holds none of them.  (Its aligned block of ranks is mostly
    empty, so its row groups are wide but hold little else.)"""
    rng = np.random.default_rng(5)
    rows, groups, per_group = 120_000, 600, 25
    shares = np.array([0.58, 0.014, 0.20, 0.206])
    group_of_fact = rng.choice(len(shares), size=rows, p=shares)
    fk = group_of_fact * per_group + rng.integers(0, per_group, size=rows)
    dim = hierarchical(list(range(len(shares) * per_group)), [[g * per_group for g in range(len(shares))]], bits=16)
    fact = pa.table({"fk": pa.array(fk), "x": pa.array(rng.random(rows)), "y": pa.array(rng.random(rows))})
    spec = ClusteringSpec(
        curve="hilbert",
        bits=16,
        columns=(
            ColumnMapping("fk", dim),
            ColumnMapping("x", RankMapping.fit(order_key_u64(fact["x"]), 16)),
            ColumnMapping("y", RankMapping.fit(order_key_u64(fact["y"]), 16)),
        ),
    )
    keys = spec.keys(fact)
    order = np.argsort(keys, kind="stable")
    group_of_row = np.arange(rows) * groups // rows  # row groups of equal rows along the curve
    sorted_keys = keys[order]
    recorded = np.stack(
        [np.minimum.reduceat(sorted_keys, np.arange(0, rows, rows // groups)),
         np.maximum.reduceat(sorted_keys, np.arange(0, rows, rows // groups))], axis=1
    )  # fmt: skip
    light = (group_of_fact == 1)[order]
    holding = np.unique(group_of_row[light])
    cover = spec.rank_set_ranges(
        {"fk": point_intervals(np.unique(dim.ranks(keys_of(list(range(per_group, 2 * per_group))))))},
        recorded=recorded,
    )
    kept = np.flatnonzero([((cover[:, 0] <= high) & (cover[:, 1] >= low)).any() for low, high in recorded.tolist()])
    assert set(holding.tolist()) <= set(kept.tolist())  # never a row group holding a match left out
    assert len(kept) == len(holding) <= 1.5 * (shares[1] + groups ** (-1 / 3)) * groups, (len(kept), len(holding))
