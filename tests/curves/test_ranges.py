"""Curve-range decomposition covers exactly the query box (exhaustively on small grids)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zskip.curves import (
    cap_intervals,
    curve_key_ranges,
    curve_key_ranges_of_sets,
    hilbert_index,
    hilbert_inverse,
    intersect_intervals,
    linear_key,
    merge_intervals,
    point_intervals,
    z_interleave,
)

INDEX = {"zorder": z_interleave, "hilbert": hilbert_index, "linear": linear_key}
GRIDS = [(1, 4), (2, 1), (2, 3), (2, 4), (3, 2), (3, 3), (4, 2)]


def all_keys(curve: str, dims: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    points = np.array(list(itertools.product(range(1 << bits), repeat=dims)), dtype=np.uint64)
    return points, INDEX[curve]([points[:, d] for d in range(dims)], bits)


def covered(intervals: np.ndarray) -> set[int]:
    return {k for lo, hi in intervals.tolist() for k in range(lo, hi + 1)}


def box_bounds(widths: Sequence[int], limit: int, seed: int) -> Iterator[tuple[list[int], list[int]]]:
    """Every box of a grid of ``widths`` bits per column (``lo`` and ``hi`` corners), at most ``limit``
    of them drawn at random."""
    sides = [[(lo, hi) for lo in range(1 << w) for hi in range(lo, 1 << w)] for w in widths]
    boxes = list(itertools.product(*sides))
    if len(boxes) > limit:
        boxes = [boxes[i] for i in np.random.default_rng(seed).choice(len(boxes), limit, replace=False)]
    for box in boxes:
        yield [b[0] for b in box], [b[1] for b in box]


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
@pytest.mark.parametrize(("dims", "bits"), GRIDS)
def test_every_box_on_small_grids_is_covered_exactly(curve: str, dims: int, bits: int) -> None:
    points, keys = all_keys(curve, dims, bits)
    for lo, hi in box_bounds([bits] * dims, 400, seed=7):
        inside = ((points >= np.array(lo, np.uint64)) & (points <= np.array(hi, np.uint64))).all(axis=1)
        intervals = curve_key_ranges(curve, lo, hi, bits)
        assert covered(intervals) == set(keys[inside].tolist()), (lo, hi)
        assert (intervals[1:, 0] > intervals[:-1, 1] + 1).all()  # sorted, disjoint, not touching


@given(
    curve=st.sampled_from(["zorder", "hilbert", "linear"]),
    grid=st.sampled_from(GRIDS),
    data=st.data(),
    cap=st.integers(1, 4),
)
def test_caps_and_linear_covers_are_supersets(curve: str, grid: tuple[int, int], data: st.DataObject, cap: int) -> None:
    dims, bits = grid
    points, keys = all_keys(curve, dims, bits)
    lo = [data.draw(st.integers(0, (1 << bits) - 1)) for _ in range(dims)]
    hi = [data.draw(st.integers(v, (1 << bits) - 1)) for v in lo]
    inside = ((points >= np.array(lo, np.uint64)) & (points <= np.array(hi, np.uint64))).all(axis=1)
    intervals = curve_key_ranges(
        curve, lo, hi, bits, max_intervals=cap, max_cells=data.draw(st.sampled_from([4, 1 << 15]))
    )
    assert len(intervals) <= cap
    assert set(keys[inside].tolist()) <= covered(intervals)


def test_empty_box_and_clamped_bounds() -> None:
    assert curve_key_ranges("zorder", [3], [2], 4).shape == (0, 2)
    assert curve_key_ranges("hilbert", [-5, 0], [99, 99], 2).tolist() == [[0, 15]]


def test_wide_keys_decompose_quickly_and_stay_bounded() -> None:
    intervals = curve_key_ranges("hilbert", [1000, 5, 77], [900_000, 2_000_000, 78], 21, max_intervals=64)
    assert 1 <= len(intervals) <= 64


def test_merge_and_cap() -> None:
    merged = merge_intervals(np.array([[5, 6], [0, 1], [2, 3], [9, 9]], np.uint64))
    assert merged.tolist() == [[0, 3], [5, 6], [9, 9]]
    assert cap_intervals(merged, 2).tolist() == [[0, 6], [9, 9]]
    assert cap_intervals(merged, 1).tolist() == [[0, 9]]


def test_unknown_curve_is_named() -> None:
    with pytest.raises(ValueError, match="unknown curve 'peano'"):
        curve_key_ranges("peano", [0], [1], 2)


@given(
    curve=st.sampled_from(["zorder", "hilbert", "linear"]),
    grid=st.sampled_from(GRIDS),
    data=st.data(),
    disjoint=st.booleans(),
)
def test_a_cover_for_recorded_ranges_tells_exactly_which_of_them_meet_the_box(
    curve: str, grid: tuple[int, int], data: st.DataObject, disjoint: bool
) -> None:
    dims, bits = grid
    points, keys = all_keys(curve, dims, bits)
    top = (1 << (dims * bits)) - 1
    lo = [data.draw(st.integers(0, (1 << bits) - 1)) for _ in range(dims)]
    hi = [data.draw(st.integers(v, (1 << bits) - 1)) for v in lo]
    if disjoint:  # one generation's row groups: consecutive, non-overlapping runs of keys
        cuts = sorted(set(data.draw(st.lists(st.integers(0, top), max_size=8))))
        recorded = np.array([[a, b] for a, b in zip(cuts[::2], cuts[1::2], strict=False)], np.uint64).reshape(-1, 2)
    else:  # several generations: ranges may overlap
        pairs = data.draw(st.lists(st.tuples(st.integers(0, top), st.integers(0, top)), max_size=8))
        recorded = np.array([sorted(p) for p in pairs], np.uint64).reshape(-1, 2)
    inside = ((points >= np.array(lo, np.uint64)) & (points <= np.array(hi, np.uint64))).all(axis=1)
    box_keys = set(keys[inside].tolist())
    for max_cells in (1 << 15, 4):
        cover = covered(curve_key_ranges(curve, lo, hi, bits, recorded=recorded, max_cells=max_cells))
        for start, end in recorded.tolist():
            holds = set(range(start, end + 1))
            if holds & box_keys:  # never loses a range that holds a key of the box
                assert holds & cover
            elif max_cells > 4 and curve != "linear":  # and, exact, never keeps one that does not (overlapping too)
                assert not holds & cover


@pytest.mark.parametrize("curve", ["zorder", "hilbert"])
def test_a_narrow_range_inside_a_wide_one_is_still_told_apart(curve: str) -> None:
    """A small rewrite's row group spans most of the curve, over the narrow row groups of the files before:
    the wide one meets the box, and a narrow one beside the box must not be said to as well."""
    points, keys = all_keys(curve, 2, 4)
    at = {tuple(p): int(k) for p, k in zip(points.tolist(), keys.tolist(), strict=True)}
    box, beside = at[(0, 0)], at[(1, 1)]  # (1, 1) shares (0, 0)'s cells down to the last level
    recorded = np.array([[0, (1 << 8) - 1], [beside, beside], [box, box]], np.uint64)
    cover = covered(curve_key_ranges(curve, [0, 0], [0, 0], 4, recorded=recorded))
    assert box in cover and beside not in cover


@given(
    st.sampled_from(["zorder", "hilbert"]),
    st.integers(2, 4),
    st.data(),
)
def test_a_cells_key_prefix_is_the_index_of_its_corners_top_bits(curve: str, dims: int, data: st.DataObject) -> None:
    # what the descent relies on to key a cell from its corner's top bits alone, at full width too
    bits = 64 // dims
    shift = data.draw(st.integers(0, bits - 1))
    size = data.draw(st.integers(1, 5))
    column = st.lists(st.integers(0, (1 << bits) - 1), min_size=size, max_size=size)
    points = [np.asarray(data.draw(column), np.uint64) for _ in range(dims)]
    full = INDEX[curve](points, bits) >> np.uint64(dims * shift)
    assert (full == INDEX[curve]([p >> np.uint64(shift) for p in points], bits - shift)).all()


@given(st.integers(2, 3), st.integers(2, 5), st.data())
def test_a_hilbert_key_range_meeting_both_sides_of_a_one_column_slab_meets_the_slab(
    dims: int, bits: int, data: st.DataObject
) -> None:
    # why the planner leaves the curve out for a filter on one column of a Hilbert curve: consecutive keys
    # are neighbouring cells, so a file's key range that min/max keep (a point in the slab, or points on
    # both sides of it) meets the slab's intervals; the Z curve jumps, and its slabs have gaps min/max miss
    column = data.draw(st.integers(0, dims - 1))
    low = data.draw(st.integers(0, (1 << bits) - 1))
    high = data.draw(st.integers(low, (1 << bits) - 1))
    first = data.draw(st.integers(0, (1 << (dims * bits)) - 1))
    last = data.draw(st.integers(first, (1 << (dims * bits)) - 1))
    points = hilbert_inverse(np.asarray([first, last], np.uint64), dims, bits)[column].tolist()
    outside_both = min(points) < low and max(points) > high
    inside = any(low <= p <= high for p in points)
    lo, hi = [0] * dims, [(1 << bits) - 1] * dims
    lo[column], hi[column] = low, high
    intervals = curve_key_ranges("hilbert", lo, hi, bits)
    meets = bool(((intervals[:, 0] <= last) & (intervals[:, 1] >= first)).any())
    assert meets or not (outside_both or inside)


def _rank_sets(data: st.DataObject, dims: int, bits: int) -> list[np.ndarray]:
    """Per column: up to four inclusive rank intervals, with gaps between them, overlapping or touching."""
    top = (1 << bits) - 1
    pairs = st.tuples(st.integers(0, top), st.integers(0, top)).map(sorted)
    return [np.array(data.draw(st.lists(pairs, min_size=1, max_size=4)), np.uint64).reshape(-1, 2) for _ in range(dims)]


def _in_sets(points: np.ndarray, sets: list[np.ndarray]) -> np.ndarray:
    inside = np.ones(len(points), dtype=bool)
    for d, intervals in enumerate(sets):
        inside &= ((points[:, d, None] >= intervals[None, :, 0]) & (points[:, d, None] <= intervals[None, :, 1])).any(
            axis=1
        )
    return inside


@given(curve=st.sampled_from(["zorder", "hilbert"]), grid=st.sampled_from(GRIDS), data=st.data())
def test_a_set_of_rank_intervals_per_column_is_covered_exactly_never_by_its_hull(
    curve: str, grid: tuple[int, int], data: st.DataObject
) -> None:
    """An IN list or a dimension filter's keys: per column a set of intervals with gaps; the cover holds
    exactly the points whose every rank lies in its column's set (the gaps stay out)."""
    dims, bits = grid
    points, keys = all_keys(curve, dims, bits)
    sets = _rank_sets(data, dims, bits)
    intervals = curve_key_ranges_of_sets(curve, sets, bits)
    assert covered(intervals) == set(keys[_in_sets(points, sets)].tolist()), sets
    assert (intervals[1:, 0] > intervals[:-1, 1] + 1).all()


@given(curve=st.sampled_from(["zorder", "hilbert", "linear"]), grid=st.sampled_from(GRIDS), data=st.data())
def test_a_set_cover_for_recorded_ranges_tells_exactly_which_of_them_hold_a_point(
    curve: str, grid: tuple[int, int], data: st.DataObject
) -> None:
    dims, bits = grid
    points, keys = all_keys(curve, dims, bits)
    top = (1 << (dims * bits)) - 1
    sets = _rank_sets(data, dims, bits)
    pairs = data.draw(st.lists(st.tuples(st.integers(0, top), st.integers(0, top)), max_size=8))
    recorded = np.array([sorted(p) for p in pairs], np.uint64).reshape(-1, 2)
    wanted = set(keys[_in_sets(points, sets)].tolist())
    for max_cells in (1 << 15, 4):
        cover = covered(curve_key_ranges_of_sets(curve, sets, bits, recorded=recorded, max_cells=max_cells))
        for start, end in recorded.tolist():
            holds = set(range(start, end + 1))
            if holds & wanted:  # never loses a range holding a point
                assert holds & cover
            elif max_cells > 4 and curve != "linear":  # and, exact, keeps none that holds none
                assert not holds & cover


@given(st.data())
def test_interval_sets_intersect_and_points_merge_where_they_touch(data: st.DataObject) -> None:
    a, b = (merge_intervals(s) for s in _rank_sets(data, 2, 5))
    both = intersect_intervals(a, b)
    ranks = lambda s: {r for lo, hi in s.tolist() for r in range(lo, hi + 1)}  # noqa: E731
    assert ranks(both) == ranks(a) & ranks(b)
    points = np.array(sorted(data.draw(st.sets(st.integers(0, 40), max_size=10))), np.uint64)
    merged = point_intervals(points)
    assert ranks(merged) == set(points.tolist()) and (merged[1:, 0] > merged[:-1, 1] + 1).all()
