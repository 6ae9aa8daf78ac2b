"""Where along the curve one output file ends and the next begins.

Cutting a group's sorted keys into files of exactly equal size puts most cuts in the middle of a
curve cell, so a file ends with a sliver of one cell and starts with a sliver of the next, and each
sliver stretches the file's min/max box.  A cut at a coarse cell boundary does not: the keys on
either side of an aligned boundary ``c * 2**t`` fill whole blocks of ``2**t`` keys, and on the
Hilbert and Z curves such a block is a box.  So each cut moves, within ``tolerance`` of a file's
rows of its equal-size place, to the coarsest boundary the sample shows there; files then vary in
size a little (at most ``1 +/- 2 * tolerance``) and their boxes shrink.

Where one key holds more rows than the window (a low-cardinality column), there is no boundary to
move to; the cut then splits that key's rows by a hash of the row, in proportion to the sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CUT_TOLERANCE", "FileCuts"]

# A cut may move up to 0.3 of a file's rows: files of 0.4x-1.6x the target at worst (0.7x-1.45x
# measured on three uniform columns), and a third fewer files read by single-column filters than
# equal cuts there (docs/benchmarks/optimize.md).
CUT_TOLERANCE = 0.3


@dataclass(frozen=True)
class FileCuts:
    """``files - 1`` cuts: a row goes right of cut ``i`` when ``(key, u) >= (keys[i], fractions[i])``.

    ``u`` is the row's hash scaled to ``[0, 1)``; ``fractions`` are 0 except on cuts inside a key.
    """

    keys: np.ndarray  # uint64, ascending
    fractions: np.ndarray  # float64 in [0, 1), ascending within equal keys

    @property
    def files(self) -> int:
        return len(self.keys) + 1

    @classmethod
    def choose(cls, sample: np.ndarray, files: int, *, tolerance: float = CUT_TOLERANCE) -> FileCuts:
        """Cuts that split the rows ``sample`` stands for into ``files`` files near cell boundaries."""
        if files < 1:
            raise ValueError(f"files must be at least 1, got {files}")
        ordered = np.sort(np.asarray(sample, dtype=np.uint64))
        m = len(ordered)
        if files == 1 or m == 0:
            return cls(np.zeros(0, np.uint64), np.zeros(0, np.float64))
        window = int(tolerance * m / files)
        # Level of the boundary before position j: bit length of the highest bit where the keys at
        # j - 1 and j differ (0 where they are equal: no boundary).
        level = np.zeros(m, dtype=np.int64)
        differ = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
        level[differ] = _bit_length(ordered[differ - 1] ^ ordered[differ])
        keys: list[int] = []
        fractions: list[float] = []
        previous = 0
        for i in range(1, files):
            ideal = round(i * m / files)
            lo, hi = max(previous + 1, ideal - window, 1), min(ideal + window, m - 1)
            candidates = np.arange(lo, hi + 1)
            if len(candidates) and level[candidates].max() > 0:
                best = level[candidates].max()
                chosen = candidates[level[candidates] == best]
                j = int(chosen[np.argmin(np.abs(chosen - ideal))])
                shift = int(best) - 1
                # The aligned boundary itself (between ordered[j - 1] and ordered[j]), so keys the
                # sample missed fall on the side of the block they belong to.
                keys.append((int(ordered[j]) >> shift) << shift)
                fractions.append(0.0)
                previous = j
            else:
                position = min(max(ideal, previous + 1, 1), m - 1)
                key = ordered[position]
                first = int(np.searchsorted(ordered, key, "left"))
                last = int(np.searchsorted(ordered, key, "right"))
                keys.append(int(key))
                fractions.append((position - first) / (last - first))
                previous = position
        order = np.lexsort((np.asarray(fractions), np.asarray(keys, dtype=np.uint64)))
        return cls(np.asarray(keys, dtype=np.uint64)[order], np.asarray(fractions, dtype=np.float64)[order])

    def route(self, keys: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The file (``0 .. files - 1``) each row goes to, from its key and its ``u`` in ``[0, 1)``."""
        keys = np.asarray(keys, dtype=np.uint64)
        below = np.searchsorted(self.keys, keys, "left")
        through = np.searchsorted(self.keys, keys, "right")
        on_cut = through > below
        if not on_cut.any():
            return below
        # Rows whose key is a cut key: count that key's cuts with fraction <= u.  Cuts are numbered
        # by run of equal keys, so one searchsorted over ``run * 2 + fraction`` counts them all.
        run = self.runs()
        result = below.copy()
        result[on_cut] = np.searchsorted(self.scales(), run[below[on_cut]] * 2.0 + u[on_cut], "right")
        return result

    def runs(self) -> np.ndarray:
        """The number (``int64``, from 0) of the run of equal cut keys each cut belongs to."""
        if len(self.keys) == 0:
            return np.zeros(0, np.int64)
        return np.concatenate([[0], np.cumsum(self.keys[1:] != self.keys[:-1])]).astype(np.int64)

    def scales(self) -> np.ndarray:
        """``run * 2.0 + fraction`` of each cut: ascending, and a row on a cut key with ``u`` goes
        right of every cut whose scale is at most ``run * 2.0 + u``."""
        return self.runs() * 2.0 + self.fractions


def _bit_length(values: np.ndarray) -> np.ndarray:
    """Bit length of each positive ``uint64`` (exact: no float rounding near powers of two)."""
    length = np.zeros(len(values), dtype=np.int64)
    rest = values.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        big = rest >= (np.uint64(1) << np.uint64(shift))
        length[big] += shift
        rest[big] >>= np.uint64(shift)
    return length + (rest > 0)
