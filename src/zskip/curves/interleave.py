"""Bit interleaving: Iceberg-compatible z-values from raw keys, and Z-order of ranks."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pyarrow as pa

from zskip.curves.keys import order_key_bytes

__all__ = [
    "interleave_bytes",
    "weighted_bit_order",
    "z_deinterleave",
    "z_deinterleave_widths",
    "z_interleave",
    "z_interleave_widths",
    "zorder_raw",
]


def interleave_bytes(columns: Sequence[np.ndarray], *, output_bytes: int | None = None) -> np.ndarray:
    """Interleave the bits of per-column key matrices, most significant bit first.

    ``columns[i]`` is a ``(n, width_i)`` ``uint8`` matrix.  Bit ``j`` of every column that still
    has a bit ``j`` is taken in column order, then bit ``j + 1``, and so on, the same order as
    Iceberg's ``ZOrderByteUtils.interleaveBits`` (a column that runs out of bytes drops out).
    The result is ``(n, output_bytes)``; the default keeps every bit.
    """
    if not columns:
        raise ValueError("interleave_bytes needs at least one column")
    rows = columns[0].shape[0]
    widths = [c.shape[1] for c in columns]
    output_bytes = sum(widths) if output_bytes is None else output_bytes
    planes = np.concatenate([np.unpackbits(c, axis=1) for c in columns], axis=1)
    order = _interleave_order(widths)[: 8 * output_bytes]
    picked = planes[:, order]
    if picked.shape[1] < 8 * output_bytes:
        pad = np.zeros((rows, 8 * output_bytes - picked.shape[1]), dtype=np.uint8)
        picked = np.concatenate([picked, pad], axis=1)
    return np.packbits(picked, axis=1)


def _interleave_order(widths: Sequence[int]) -> np.ndarray:
    """Positions in the concatenated bit planes, in interleaved order."""
    starts = np.concatenate([[0], np.cumsum([8 * w for w in widths])[:-1]])
    order = [
        starts[column] + bit for bit in range(8 * max(widths)) for column, width in enumerate(widths) if bit < 8 * width
    ]
    return np.asarray(order, dtype=np.int64)


def zorder_raw(arrays: Sequence[pa.Array | pa.ChunkedArray], *, prefix_bytes: int = 8) -> pa.BinaryArray:
    """Z-values of the rows of ``arrays``, interleaving each column's order-preserving key.

    Fixed-width columns contribute 8 bytes and strings/binaries ``prefix_bytes``, as in Iceberg's
    ``zorder(...)`` sort; for int, long, string and binary columns the bytes equal Iceberg's.
    With one array the result is that column's key, so byte order equals value order.

    >>> zorder_raw([pa.array([1, 2]), pa.array([3, 0])]).to_pylist()[1].hex()
    'c0000000000000000000000000000008'
    """
    if not arrays:
        raise ValueError("zorder_raw needs at least one column")
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise ValueError(f"columns have different lengths: {sorted(lengths)}")
    matrices = [order_key_bytes(a, prefix_bytes=prefix_bytes) for a in arrays]
    keys = interleave_bytes(matrices)
    width = keys.shape[1]
    offsets = np.arange(0, width * (len(keys) + 1), width, dtype=np.int32)
    return pa.Array.from_buffers(pa.binary(), len(keys), [None, pa.py_buffer(offsets), pa.py_buffer(keys.tobytes())])


def z_interleave(ranks: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Z-order key of ``bits``-bit ranks, first column most significant, as ``uint64``.

    Needs ``len(ranks) * bits <= 64``.  Bit ``i`` of column ``c`` (of ``d``) lands at bit
    ``i * d + d - 1 - c`` of the key; each column's bits are spread a byte at a time through a
    table, so the cost is a few array operations per byte, not per bit (planning calls this on
    small arrays, where each array operation's fixed cost is what counts).

    >>> z_interleave([np.array([0b11], np.uint64), np.array([0b00], np.uint64)], 2).tolist()
    [10]
    """
    dims = len(ranks)
    _check_fits(dims, bits)
    stacked = np.stack([np.asarray(column, dtype=np.uint64) for column in ranks])
    if bits < 64:
        stacked &= np.uint64((1 << bits) - 1)
    table = _spread_table(dims)
    offsets = np.arange(dims - 1, -1, -1, dtype=np.uint64)[:, None]
    key = np.zeros(stacked.shape[1], dtype=np.uint64)
    for byte in range((bits + 7) // 8):
        spread = table[(stacked >> np.uint64(8 * byte)) & np.uint64(0xFF)] << offsets
        key |= np.bitwise_or.reduce(spread, axis=0) << np.uint64(8 * dims * byte)
    return key


@functools.lru_cache(maxsize=64)
def _spread_table(dims: int) -> np.ndarray:
    """For every byte value, its bit ``i`` moved to bit ``i * dims`` (as ``uint64``)."""
    table = np.zeros(256, dtype=np.uint64)
    values = np.arange(256, dtype=np.uint64)
    for bit in range(min(8, 64 // dims + (64 % dims > 0))):
        if bit * dims < 64:
            table |= ((values >> np.uint64(bit)) & np.uint64(1)) << np.uint64(bit * dims)
    return table


def z_deinterleave(keys: np.ndarray, dims: int, bits: int) -> list[np.ndarray]:
    """Inverse of :func:`z_interleave`."""
    _check_fits(dims, bits)
    out = [np.zeros(len(keys), dtype=np.uint64) for _ in range(dims)]
    one = np.uint64(1)
    position = dims * bits
    for _bit in range(bits):
        for column in range(dims):
            position -= 1
            out[column] = (out[column] << one) | ((keys >> np.uint64(position)) & one)
    return out


def _check_fits(dims: int, bits: int) -> None:
    if dims < 1 or bits < 1 or dims * bits > 64:
        raise ValueError(f"{dims} columns of {bits} bits do not fit a 64-bit key")


@functools.lru_cache(maxsize=64)
def weighted_bit_order(widths: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """``(column, bit)`` of each key bit, most significant first, for ranks of ``widths`` bits (``bit``
    counts from the rank's top, 0 first).

    Every column takes the key's bits in proportion to its width at every scale: bit ``j`` of a
    column of width ``w`` comes when ``(j + 1) / w`` of the column is taken, ties in column order.
    Equal widths give the plain Z-order of ``z_interleave``; a column of twice the width takes two
    bits for each one of the others, in a file's key prefix as in a row group's.

    >>> weighted_bit_order((2, 1))
    ((0, 0), (0, 1), (1, 0))
    """
    slots = [(column, bit) for column, width in enumerate(widths) for bit in range(width)]
    return tuple(sorted(slots, key=lambda s: (Fraction(s[1] + 1, widths[s[0]]), s[0])))


def z_interleave_widths(ranks: Sequence[np.ndarray], widths: Sequence[int]) -> np.ndarray:
    """Z-order key of ranks of unequal ``widths`` (see ``weighted_bit_order``), as ``uint64``.

    Needs ``sum(widths) <= 64``; with equal widths it is ``z_interleave``.

    >>> z_interleave_widths([np.array([0b10], np.uint64), np.array([0b1], np.uint64)], (2, 1)).tolist()
    [5]
    """
    widths = tuple(int(w) for w in widths)
    _check_widths(len(ranks), widths)
    if len(set(widths)) == 1:
        return z_interleave(ranks, widths[0])
    total = sum(widths)
    columns = [np.asarray(column, dtype=np.uint64) for column in ranks]
    one = np.uint64(1)
    key = np.zeros(len(columns[0]), dtype=np.uint64)
    for position, (column, bit) in enumerate(weighted_bit_order(widths)):
        taken = (columns[column] >> np.uint64(widths[column] - 1 - bit)) & one
        key |= taken << np.uint64(total - 1 - position)
    return key


def z_deinterleave_widths(keys: np.ndarray, widths: Sequence[int]) -> list[np.ndarray]:
    """Inverse of :func:`z_interleave_widths`."""
    widths = tuple(int(w) for w in widths)
    _check_widths(len(widths), widths)
    keys = np.asarray(keys, dtype=np.uint64)
    total = sum(widths)
    one = np.uint64(1)
    out = [np.zeros(len(keys), dtype=np.uint64) for _ in widths]
    for position, (column, bit) in enumerate(weighted_bit_order(widths)):
        out[column] |= ((keys >> np.uint64(total - 1 - position)) & one) << np.uint64(widths[column] - 1 - bit)
    return out


def _check_widths(dims: int, widths: tuple[int, ...]) -> None:
    if dims < 1 or len(widths) != dims or min(widths) < 1 or sum(widths) > 64:
        raise ValueError(f"ranks of {list(widths)} bits do not fit a 64-bit key")
