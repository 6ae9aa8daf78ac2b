"""Hilbert curve index of N-dimensional ranks (Skilling's transposed-axes algorithm), and its inverse.

J. Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707 (2004).  Coordinates are turned
in place into the "transposed" Hilbert index, whose bits interleaved (first axis most significant)
are the index.  Everything is vectorised over rows; the loops run over bits and axes only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zskip.curves.interleave import z_deinterleave, z_interleave

__all__ = ["hilbert_index", "hilbert_inverse", "hilbert_transpose", "hilbert_untranspose"]


def hilbert_transpose(ranks: Sequence[np.ndarray], bits: int) -> list[np.ndarray]:
    """Skilling's AxesToTranspose: the Hilbert index of each row, one ``bits``-bit word per axis."""
    x = [np.array(r, dtype=np.uint64) for r in ranks]
    dims = len(x)
    one = np.uint64(1)
    # branch-free form of "if bit q of x[i] is set: invert the low bits of x[0], else exchange them
    # with x[i]": `high` is all ones where the bit is set, so the two cases become masks
    for level in range(bits - 1, 0, -1):
        low = np.uint64((1 << level) - 1)
        for i in range(dims):
            high = np.uint64(0) - ((x[i] >> np.uint64(level)) & one)
            if i == 0:
                x[0] ^= low & high
                continue
            t = (x[0] ^ x[i]) & low
            keep = ~high
            x[0] ^= (low & high) | (t & keep)
            x[i] ^= t & keep
    for i in range(1, dims):
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    for level in range(bits - 1, 0, -1):
        high = np.uint64(0) - ((x[dims - 1] >> np.uint64(level)) & one)
        t ^= np.uint64((1 << level) - 1) & high
    for xi in x:
        xi ^= t
    return x


def hilbert_untranspose(words: Sequence[np.ndarray], bits: int) -> list[np.ndarray]:
    """Skilling's TransposeToAxes: coordinates from the transposed Hilbert index."""
    x = [np.asarray(w, dtype=np.uint64).copy() for w in words]
    dims = len(x)
    t = x[dims - 1] >> np.uint64(1)
    for i in range(dims - 1, 0, -1):
        x[i] ^= x[i - 1]
    x[0] ^= t
    q = np.uint64(2)
    end = 1 << bits
    while int(q) != end:
        p = q - np.uint64(1)
        for i in range(dims - 1, -1, -1):
            high = (x[i] & q) != 0
            x0 = x[0]
            t = (x0 ^ x[i]) & p
            if i:
                x[i] = np.where(high, x[i], x[i] ^ t)
            x[0] = np.where(high, x0 ^ p, x0 ^ t)
        q <<= np.uint64(1)
    return x


def hilbert_index(ranks: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Hilbert index (``uint64``) of rows whose coordinates are ``bits``-bit ranks, one array per axis.

    Needs ``len(ranks) * bits <= 64``.  Consecutive indexes are neighbouring cells.

    >>> hilbert_index([np.array([0, 0, 1, 1], np.uint64), np.array([0, 1, 1, 0], np.uint64)], 1).tolist()
    [0, 1, 2, 3]
    """
    if len(ranks) == 1:
        return np.asarray(ranks[0], dtype=np.uint64).copy()
    return z_interleave(hilbert_transpose(ranks, bits), bits)


def hilbert_inverse(keys: np.ndarray, dims: int, bits: int) -> list[np.ndarray]:
    """Coordinates of Hilbert indexes: the inverse of :func:`hilbert_index`."""
    if dims == 1:
        return [np.asarray(keys, dtype=np.uint64).copy()]
    return hilbert_untranspose(z_deinterleave(np.asarray(keys, dtype=np.uint64), dims, bits), bits)
