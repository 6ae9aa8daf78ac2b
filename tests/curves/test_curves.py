"""Interleaving round-trips, Hilbert is a bijection of neighbouring cells, and the Iceberg bit order."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zskip.curves import (
    hilbert_index,
    hilbert_inverse,
    interleave_bytes,
    z_deinterleave,
    z_interleave,
    zorder_raw,
)

SHAPES = [(1, 8), (2, 1), (2, 4), (3, 3), (4, 2), (2, 32), (3, 21), (8, 8)]


@st.composite
def rank_columns(draw: st.DrawFn) -> tuple[list[np.ndarray], int]:
    dims, bits = draw(st.sampled_from(SHAPES))
    rows = draw(st.integers(1, 40))
    columns = [
        np.asarray(draw(st.lists(st.integers(0, (1 << bits) - 1), min_size=rows, max_size=rows)), np.uint64)
        for _ in range(dims)
    ]
    return columns, bits


@given(rank_columns())
def test_z_interleave_round_trips(case: tuple[list[np.ndarray], int]) -> None:
    columns, bits = case
    back = z_deinterleave(z_interleave(columns, bits), len(columns), bits)
    assert all((a == b).all() for a, b in zip(columns, back, strict=True))


@given(rank_columns())
def test_hilbert_round_trips(case: tuple[list[np.ndarray], int]) -> None:
    columns, bits = case
    keys = hilbert_index(columns, bits)
    assert keys.max(initial=0) < 1 << (len(columns) * bits) or len(columns) * bits == 64
    back = hilbert_inverse(keys, len(columns), bits)
    assert all((a == b).all() for a, b in zip(columns, back, strict=True))


@pytest.mark.parametrize(("dims", "bits"), [(1, 5), (2, 1), (2, 4), (3, 3), (4, 2), (5, 2)])
def test_hilbert_visits_every_cell_once_stepping_to_a_neighbour(dims: int, bits: int) -> None:
    count = 1 << (dims * bits)
    cells = np.stack(hilbert_inverse(np.arange(count, dtype=np.uint64), dims, bits), axis=1).astype(np.int64)
    assert len({tuple(c) for c in cells}) == count
    steps = np.abs(np.diff(cells, axis=0)).sum(axis=1)
    assert (steps == 1).all()


def test_z_interleave_puts_the_first_column_in_the_top_bit() -> None:
    one, zero = np.array([1], np.uint64), np.array([0], np.uint64)
    assert z_interleave([one, zero], 1).tolist() == [0b10]
    assert z_interleave([zero, one], 1).tolist() == [0b01]


def reference_interleave(columns: list[bytes], size: int) -> bytes:
    """A bit-by-bit transcription of the interleave order Iceberg documents."""
    out = bytearray(size)
    position = 0
    for bit in range(8 * max(len(c) for c in columns)):
        for column in columns:
            if bit < 8 * len(column) and position < 8 * size:
                if column[bit // 8] >> (7 - bit % 8) & 1:
                    out[position // 8] |= 1 << (7 - position % 8)
                position += 1
    return bytes(out)


@given(st.lists(st.binary(min_size=1, max_size=5), min_size=1, max_size=4), st.integers(1, 3))
def test_interleave_bytes_matches_the_bit_by_bit_order(columns: list[bytes], rows: int) -> None:
    widths = [len(c) for c in columns]
    matrices = [np.frombuffer(c * rows, np.uint8).reshape(rows, len(c)) for c in columns]
    for size in {sum(widths), max(1, sum(widths) // 2)}:
        got = interleave_bytes(matrices, output_bytes=size)
        assert bytes(got[0]) == reference_interleave(columns, size)


@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=30))
def test_zorder_raw_of_one_column_sorts_like_the_column(longs: list[int]) -> None:
    keys = zorder_raw([pa.array(longs, pa.int64())]).to_pylist()
    by_value = sorted(range(len(longs)), key=lambda i: longs[i])
    for i, j in itertools.pairwise(by_value):
        assert (keys[i] < keys[j]) if longs[i] < longs[j] else (keys[i] == keys[j])


def test_zorder_raw_rejects_ragged_and_empty_input() -> None:
    with pytest.raises(ValueError, match="different lengths"):
        zorder_raw([pa.array([1]), pa.array([1, 2])])
    with pytest.raises(ValueError, match="at least one column"):
        zorder_raw([])


def _z_by_bits(ranks: list[np.ndarray], bits: int) -> list[int]:
    """The Z-order key bit by bit, as the definition reads."""
    out = []
    for row in zip(*(r.tolist() for r in ranks), strict=True):
        key = 0
        for bit in range(bits - 1, -1, -1):
            for value in row:
                key = (key << 1) | ((value >> bit) & 1)
        out.append(key)
    return out


@given(st.integers(1, 8).flatmap(lambda d: st.tuples(st.just(d), st.integers(1, 64 // d))), st.data())
def test_z_interleave_equals_the_bit_by_bit_definition(shape: tuple[int, int], data: st.DataObject) -> None:
    dims, bits = shape
    rows = data.draw(st.integers(0, 20))
    ranks = [
        np.array(data.draw(st.lists(st.integers(0, (1 << bits) - 1), min_size=rows, max_size=rows)), dtype=np.uint64)
        for _ in range(dims)
    ]
    assert z_interleave(ranks, bits).tolist() == _z_by_bits(ranks, bits)
