"""The curve stage's pure parts: query boxes from conjuncts, and ranges against intervals."""

from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa

from zskip.curves import ClusteringSpec, ColumnMapping, RankMapping, order_key_u64
from zskip.expr import And, Between, Compare, In, Not, Or
from zskip.planning.curve import RecordedKeyRanges, key_bounds, query_intervals, ranges_meet

TYPES = {"a": pa.int32(), "d": pa.date32()}


def spec() -> ClusteringSpec:
    rng = np.random.default_rng(1)
    a = order_key_u64(pa.array(rng.integers(0, 1000, 5000), pa.int32()))
    days = pa.array(rng.integers(0, 3000, 5000).astype("int32"), pa.int32()).cast(pa.date32())
    return ClusteringSpec(
        curve="hilbert",
        bits=21,
        columns=(
            ColumnMapping("a", RankMapping.fit(a, 21, max_boundaries=256)),
            ColumnMapping("d", RankMapping.fit(order_key_u64(days), 21, max_boundaries=256)),
        ),
    )


def key(value, kind) -> int:
    return int(order_key_u64(pa.array([value], kind))[0])


def test_only_top_level_conjuncts_bound_a_column() -> None:
    s = spec()
    expr = And((Compare("a", ">=", 10), Between("a", 5, 20), Compare("d", "<", datetime.date(1975, 1, 1))))
    bounds = key_bounds(expr, s, TYPES)
    assert bounds["a"] == (key(10, pa.int32()), key(20, pa.int32()))
    assert bounds["d"] == (None, key(datetime.date(1975, 1, 1), pa.date32()))
    assert key_bounds(Or((Compare("a", "=", 1), Compare("a", "=", 2))), s, TYPES) == {}
    assert key_bounds(Not(Compare("a", "=", 1)), s, TYPES) == {}
    assert key_bounds(In("a", (3, 9, 4)), s, TYPES)["a"] == (key(3, pa.int32()), key(9, pa.int32()))
    assert key_bounds(Compare("a", "=", 2.5), s, TYPES) == {}  # no int equals 2.5: no bound
    assert query_intervals(Compare("x", "=", 1), s, TYPES) is None


def test_every_row_inside_the_box_falls_in_an_interval() -> None:
    s = spec()
    rng = np.random.default_rng(2)
    table = pa.table(
        {
            "a": pa.array(rng.integers(0, 1000, 20_000), pa.int32()),
            "d": pa.array(rng.integers(0, 3000, 20_000).astype("int32"), pa.int32()).cast(pa.date32()),
        }
    )
    expr = And((Between("a", 100, 180), Compare("d", ">=", datetime.date(1972, 6, 1))))
    intervals = query_intervals(expr, s, TYPES)
    assert intervals is not None and len(intervals) > 0
    keys = s.keys(table)
    a = table["a"].to_numpy()
    d = table["d"].cast(pa.int32()).to_numpy()
    inside = (a >= 100) & (a <= 180) & (d >= (datetime.date(1972, 6, 1) - datetime.date(1970, 1, 1)).days)
    assert ranges_meet(intervals, keys[inside], keys[inside]).all()
    assert not ranges_meet(intervals, keys[~inside], keys[~inside]).all()  # the box prunes something


def test_ranges_meet() -> None:
    intervals = np.array([[10, 20], [40, 50]], dtype=np.uint64)
    low = np.array([0, 0, 21, 21, 51, 45, 15], dtype=np.uint64)
    high = np.array([9, 10, 39, 40, 60, 46, 45], dtype=np.uint64)
    assert ranges_meet(intervals, low, high).tolist() == [False, True, False, True, False, True, True]
    assert ranges_meet(np.zeros((0, 2), np.uint64), low, high).tolist() == [False] * 7


def test_recorded_key_ranges_decide_on_row_groups_where_a_file_has_them() -> None:
    ranges = pa.table(
        {
            "file_path": ["f1", "f1", "f1", "f2", "f3", "f3"],
            "row_group": [-1, 0, 1, -1, -1, 0],
            "min_key": pa.array([0, 0, 6, 20, 40, 41], pa.uint64()),
            "max_key": pa.array([9, 5, 9, 29, 2**64 - 1, 2**64 - 2], pa.uint64()),
        }
    )
    recorded = RecordedKeyRanges.of(ranges)
    assert recorded.paths == ("f1", "f2", "f3")
    # f1 and f3 are decided on their row groups, f2 (no row-group ranges) on its whole range
    assert recorded.finest.tolist() == [False, True, True, True, False, True]
    assert recorded.high[4] == np.uint64(2**64 - 1)  # keys above 2**63 stay unsigned
    assert recorded.of_files(["f2", "f3", "not recorded"]).tolist() == [False, False, False, True, True, True]
    assert not recorded.of_files([]).any()
    empty = RecordedKeyRanges.of(ranges.slice(0, 0))
    assert empty.paths == () and not empty.of_files(["f1"]).any()


def test_an_in_list_on_a_ranked_column_covers_its_values_cells_only() -> None:
    s = spec()
    rng = np.random.default_rng(3)
    table = pa.table(
        {
            "a": pa.array(rng.integers(0, 1000, 20_000), pa.int32()),
            "d": pa.array(rng.integers(0, 3000, 20_000).astype("int32"), pa.int32()).cast(pa.date32()),
        }
    )
    listed = query_intervals(In("a", (5, 990)), s, TYPES)
    hull = query_intervals(Between("a", 5, 990), s, TYPES)
    assert listed is not None and hull is not None
    keys, a = s.keys(table), table["a"].to_numpy()
    held = (a == 5) | (a == 990)
    assert ranges_meet(listed, keys[held], keys[held]).all()  # every matching row's key is covered
    kept = ranges_meet(listed, keys, keys).mean()
    assert kept < 0.05 < ranges_meet(hull, keys, keys).mean()  # two values' cells, not the 98% between
