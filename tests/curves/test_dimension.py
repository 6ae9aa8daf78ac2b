"""Dimension mapping: foreign keys to coordinates through a recorded dimension order."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from zskip.curves import ClusteringSpec, ColumnMapping, DimensionMapping, RawMapping, order_key_u64
from zskip.expr import Compare, In
from zskip.planning.curve import rank_bounds


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
