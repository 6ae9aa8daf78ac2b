"""Weighted curves: ranks of unequal widths on a Z curve (and the linear key), their key ranges and specs."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.curves.test_ranges import box_bounds, covered
from zskip.curves import ClusteringSpec, ColumnMapping, RankMapping, RawMapping, bits_for_weights, curve_key_ranges
from zskip.curves.interleave import weighted_bit_order, z_deinterleave_widths, z_interleave, z_interleave_widths
from zskip.curves.ranges import linear_key

WIDTHS = [(2, 1), (1, 3), (3, 1, 2), (2, 2, 1), (4, 2), (1, 1, 3)]


def grid(widths: tuple[int, ...]) -> np.ndarray:
    return np.array(list(itertools.product(*[range(1 << w) for w in widths])), dtype=np.uint64)


@pytest.mark.parametrize("widths", WIDTHS)
def test_a_weighted_z_key_is_a_bijection_onto_the_keys_of_its_width(widths: tuple[int, ...]) -> None:
    points = grid(widths)
    keys = z_interleave_widths([points[:, d] for d in range(len(widths))], widths)
    assert sorted(keys.tolist()) == list(range(1 << sum(widths)))
    back = z_deinterleave_widths(keys, widths)
    assert all((b == points[:, d]).all() for d, b in enumerate(back))


@given(dims=st.integers(1, 5), width=st.integers(1, 12), data=st.data())
def test_equal_widths_give_plain_z_order(dims: int, width: int, data: st.DataObject) -> None:
    if dims * width > 64:
        return
    ranks = [np.array(data.draw(st.lists(st.integers(0, (1 << width) - 1), min_size=3, max_size=3)), np.uint64)]
    ranks += [np.roll(ranks[0], d) ^ np.uint64(d) & np.uint64((1 << width) - 1) for d in range(1, dims)]
    # the bit order's positions, applied bit by bit, are z_interleave's
    key = np.zeros(3, dtype=np.uint64)
    total = dims * width
    for position, (column, bit) in enumerate(weighted_bit_order((width,) * dims)):
        key |= ((ranks[column] >> np.uint64(width - 1 - bit)) & np.uint64(1)) << np.uint64(total - 1 - position)
    assert (key == z_interleave(ranks, width)).all()


def test_a_wider_column_takes_more_of_every_key_prefix() -> None:
    order = weighted_bit_order((6, 2, 2))
    assert [c for c, _ in order[:5]] == [0, 0, 0, 1, 2]  # the prefix that picks among 32 files
    for prefix in range(1, len(order) + 1):  # at every scale, in proportion (within a bit of each)
        taken = [sum(1 for c, _ in order[:prefix] if c == column) for column in range(3)]
        assert abs(taken[0] - 3 * taken[1]) <= 3 and abs(taken[1] - taken[2]) <= 1


@pytest.mark.parametrize("widths", WIDTHS)
def test_every_box_of_a_weighted_z_curve_is_covered_exactly(widths: tuple[int, ...]) -> None:
    points = grid(widths)
    keys = z_interleave_widths([points[:, d] for d in range(len(widths))], widths)
    for lo, hi in box_bounds(widths, 300, seed=3):
        inside = ((points >= np.array(lo, np.uint64)) & (points <= np.array(hi, np.uint64))).all(axis=1)
        intervals = curve_key_ranges("zorder", lo, hi, widths)
        assert covered(intervals) == set(keys[inside].tolist()), (lo, hi)
        assert (intervals[1:, 0] > intervals[:-1, 1] + 1).all()
        capped = curve_key_ranges("zorder", lo, hi, widths, max_cells=2, max_intervals=2)
        assert covered(capped) >= covered(intervals) and len(capped) <= 2  # coarser, never smaller
        linear = curve_key_ranges("linear", lo, hi, widths)
        line = linear_key([points[:, d] for d in range(len(widths))], widths)
        assert covered(linear) >= set(line[inside].tolist())


@given(widths=st.sampled_from(WIDTHS), data=st.data())
def test_a_weighted_cover_for_recorded_ranges_keeps_every_range_holding_a_key_of_the_box(
    widths: tuple[int, ...], data: st.DataObject
) -> None:
    points = grid(widths)
    keys = z_interleave_widths([points[:, d] for d in range(len(widths))], widths)
    top = (1 << sum(widths)) - 1
    lo = [data.draw(st.integers(0, (1 << w) - 1)) for w in widths]
    hi = [data.draw(st.integers(v, (1 << w) - 1)) for v, w in zip(lo, widths, strict=True)]
    cuts = sorted(set(data.draw(st.lists(st.integers(0, top), max_size=8))))
    recorded = np.array([[a, b] for a, b in zip(cuts[::2], cuts[1::2], strict=False)], np.uint64).reshape(-1, 2)
    inside = ((points >= np.array(lo, np.uint64)) & (points <= np.array(hi, np.uint64))).all(axis=1)
    box_keys = set(keys[inside].tolist())
    cover = covered(curve_key_ranges("zorder", lo, hi, widths, recorded=recorded))
    for start, end in recorded.tolist():
        holds = set(range(start, end + 1))
        assert bool(holds & box_keys) == bool(holds & cover)


def test_weights_become_widths_in_proportion_within_the_key() -> None:
    assert bits_for_weights([1, 1]) == (32, 32)
    assert bits_for_weights([2, 1, 1]) == (32, 16, 16)
    assert bits_for_weights([100, 1]) == (32, 1)
    assert sum(bits_for_weights([1] * 63 + [5])) <= 64
    with pytest.raises(ValueError, match="positive"):
        bits_for_weights([1, 0])


def spec(curve: str, widths: tuple[int, ...]) -> ClusteringSpec:
    columns = tuple(ColumnMapping(f"c{i}", RawMapping(w, width=8)) for i, w in enumerate(widths))
    return ClusteringSpec(curve=curve, bits=max(widths), columns=columns, widths=widths)


def test_a_weighted_spec_keys_rows_and_boxes_alike_and_round_trips_as_version_3() -> None:
    weighted = spec("zorder", (6, 2))
    assert weighted.widths == (6, 2) and weighted.bits == 6 and weighted.version == 3
    again = ClusteringSpec.from_json(weighted.to_json())
    assert again == weighted and again.widths == (6, 2)
    table = {
        "c0": pa.array(np.arange(0, 120, 4, dtype=np.int8)),
        "c1": pa.array(np.arange(-120, 120, 8, dtype=np.int8)),
    }
    keys = weighted.keys(table)
    ranks = [c.ranks(table[c.name]) for c in weighted.columns]
    assert (keys == z_interleave_widths(ranks, (6, 2))).all()
    intervals = weighted.rank_ranges({"c0": (int(ranks[0][3]), int(ranks[0][3]))})
    assert any(lo <= keys[3] <= hi for lo, hi in intervals.tolist())
    # equal widths are the plain spec: written as version 2, so an older zskip still reads it
    plain = spec("zorder", (4, 4))
    assert plain.widths is None and plain.bits == 4 and '"version":2' in plain.to_json()


def test_a_weighted_spec_is_refused_on_hilbert_and_where_mappings_disagree() -> None:
    with pytest.raises(ValueError, match="zorder"):
        spec("hilbert", (6, 2))
    columns = (ColumnMapping("a", RankMapping(6, (1, 2))), ColumnMapping("b", RankMapping(6, (1,))))
    with pytest.raises(ValueError, match="mapped to 6 bits"):
        ClusteringSpec(curve="zorder", bits=6, columns=columns, widths=(6, 2))
    newer = spec("zorder", (6, 2)).to_json().replace('"version":3', '"version":4')
    with pytest.raises(ValueError, match="newer than this zskip"):
        ClusteringSpec.from_json(newer)
