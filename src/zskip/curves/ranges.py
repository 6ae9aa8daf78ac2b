"""Curve-range decomposition: the key intervals whose cells lie in a query box.

A box in rank space (one inclusive ``[lo, hi]`` per column) is cut into aligned cubes by descending
the curve's hierarchy: at each level a cell is inside the box (its whole key range is emitted),
outside (dropped) or straddling (split into ``2**dims`` children).  On both the Z curve and the
Hilbert curve an aligned cube at level ``k`` holds one contiguous run of ``2**(dims*(bits-k))``
keys, so the result covers exactly the box's points.  That is the BIGMIN/LITMAX idea applied to
whole subtrees at once, and it works unchanged for Hilbert.  When the straddling cells outgrow a
budget they are emitted whole: the cover grows, never shrinks, so no matching key is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from zskip.curves.hilbert import hilbert_index
from zskip.curves.interleave import z_interleave

__all__ = ["cap_intervals", "curve_key_ranges", "linear_key", "merge_intervals"]

CurveIndex = Callable[[Sequence[np.ndarray], int], np.ndarray]


def linear_key(ranks: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Lexicographic key: first column's rank in the top bits, then the next column's, and so on."""
    key = np.zeros(len(ranks[0]), dtype=np.uint64)
    for column in ranks:
        key = (key << np.uint64(bits)) | np.asarray(column, dtype=np.uint64)
    return key


_INDEX: dict[str, CurveIndex] = {"zorder": z_interleave, "hilbert": hilbert_index, "linear": linear_key}


def curve_key_ranges(
    curve: str,
    lo: Sequence[int],
    hi: Sequence[int],
    bits: int,
    *,
    max_cells: int = 1 << 15,
    max_intervals: int | None = None,
    recorded: np.ndarray | None = None,
) -> np.ndarray:
    """Inclusive key intervals ``(k, 2)`` (``uint64``, sorted, disjoint) covering the box ``lo..hi``.

    Exact (every key in the intervals is a point of the box) unless ``max_cells`` straddling cells
    or ``max_intervals`` intervals force a coarser cover.  An empty box gives no intervals.

    ``recorded`` (``(n, 2)`` inclusive key ranges, e.g. of the row groups a query may still read)
    says what the cover is for: telling which of those ranges hold a key of the box.  A straddling
    cell that meets none of them is dropped, and one that lies inside one of them is emitted whole
    (that range meets the box whatever the cell's finer structure), so the descent only follows the
    cells that cross a range's boundary.  For disjoint ranges the answer per range stays exact, at a
    cost that grows with the number of ranges rather than with the box's surface.

    >>> curve_key_ranges("zorder", [0, 0], [1, 3], 2).tolist()
    [[0, 7]]
    """
    dims = len(lo)
    if len(hi) != dims or dims == 0:
        raise ValueError("lo and hi need one bound per column")
    if dims * bits > 64:
        raise ValueError(f"{dims} columns of {bits} bits do not fit a 64-bit key")
    top = (1 << bits) - 1
    lo_arr = np.asarray([max(0, int(v)) for v in lo], dtype=np.uint64)
    hi_arr = np.asarray([min(top, int(v)) for v in hi], dtype=np.uint64)
    if (lo_arr > hi_arr).any():
        return np.zeros((0, 2), dtype=np.uint64)
    if curve == "linear":
        index = _INDEX["linear"]
        first = index([np.asarray([v]) for v in lo_arr], bits)[0]
        last = index([np.asarray([v]) for v in hi_arr], bits)[0]
        return np.asarray([[first, last]], dtype=np.uint64)
    if curve not in _INDEX:
        raise ValueError(f"unknown curve {curve!r}: expected one of {sorted(_INDEX)}")
    index = _INDEX[curve]
    found: list[np.ndarray] = []
    corners = np.zeros((1, dims), dtype=np.uint64)
    offsets = ((np.arange(1 << dims)[:, None] >> np.arange(dims - 1, -1, -1)[None, :]) & 1).astype(np.uint64)
    ranges = _RecordedRanges(recorded) if recorded is not None else None
    for level in range(bits):
        side = np.uint64(1 << (bits - level - 1))
        children = (corners[:, None, :] + offsets[None, :, :] * side).reshape(-1, dims)
        child_hi = children + (side - np.uint64(1))
        overlaps = ((child_hi >= lo_arr) & (children <= hi_arr)).all(axis=1)
        children, child_hi = children[overlaps], child_hi[overlaps]
        inside = ((children >= lo_arr) & (child_hi <= hi_arr)).all(axis=1)
        run = dims * (bits - level - 1)
        if inside.any():
            found.append(_cell_intervals(index, children[inside], bits, run))
        corners = children[~inside]
        if ranges is not None and len(corners):
            cells = _cell_intervals(index, corners, bits, run)
            meets = ranges.meet(cells)
            settled = meets & ranges.contain(cells)
            found.append(cells[settled])
            corners = corners[meets & ~settled]
        if len(corners) == 0:
            break
        if len(corners) * (1 << dims) > max_cells and level < bits - 1:
            found.append(_cell_intervals(index, corners, bits, run))
            break
    if not found:
        return np.zeros((0, 2), dtype=np.uint64)
    intervals = merge_intervals(np.concatenate(found))
    return intervals if max_intervals is None else cap_intervals(intervals, max_intervals)


class _RecordedRanges:
    """Inclusive key ranges, arranged to answer two questions about many cells at once."""

    def __init__(self, ranges: np.ndarray) -> None:
        ranges = np.asarray(ranges, dtype=np.uint64).reshape(-1, 2)
        ranges = ranges[np.argsort(ranges[:, 0], kind="stable")]
        self.starts = ranges[:, 0]
        # reach[i]: the furthest end among the ranges starting at or before starts[i]
        self.reach = np.maximum.accumulate(ranges[:, 1]) if len(ranges) else ranges[:, 1]
        self.cover = merge_intervals(ranges)

    def meet(self, cells: np.ndarray) -> np.ndarray:
        """Whether each cell ``[start, end]`` shares a key with some range."""
        if len(self.cover) == 0:
            return np.zeros(len(cells), dtype=bool)
        # the last merged interval starting at or before the cell's end is the only one that can meet it
        last = np.searchsorted(self.cover[:, 0], cells[:, 1], side="right") - 1
        found = last >= 0
        found[found] = self.cover[last[found], 1] >= cells[found, 0]
        return found

    def contain(self, cells: np.ndarray) -> np.ndarray:
        """Whether each cell lies inside a single range."""
        if len(self.starts) == 0:
            return np.zeros(len(cells), dtype=bool)
        last = np.searchsorted(self.starts, cells[:, 0], side="right") - 1
        found = last >= 0
        found[found] = self.reach[last[found]] >= cells[found, 1]
        return found


def _cell_intervals(index: CurveIndex, corners: np.ndarray, bits: int, run: int) -> np.ndarray:
    keys = index([corners[:, d] for d in range(corners.shape[1])], bits)
    mask = np.uint64(((1 << 64) - 1) ^ ((1 << run) - 1))
    starts = keys & mask
    ends = starts + np.uint64((1 << run) - 1)
    return np.stack([starts, ends], axis=1)


def merge_intervals(intervals: np.ndarray) -> np.ndarray:
    """Sort inclusive intervals and join those that touch or overlap."""
    if len(intervals) == 0:
        return intervals.reshape(0, 2).astype(np.uint64)
    intervals = intervals[np.argsort(intervals[:, 0], kind="stable")]
    starts, ends = intervals[:, 0], np.maximum.accumulate(intervals[:, 1])
    # a new run starts where the interval begins after the previous end + 1
    new_run = np.ones(len(intervals), dtype=bool)
    new_run[1:] = starts[1:] > ends[:-1] + np.uint64(1)
    new_run[1:] &= ends[:-1] != np.uint64((1 << 64) - 1)
    run_id = np.cumsum(new_run) - 1
    out_start = starts[new_run]
    out_end = np.zeros(len(out_start), dtype=np.uint64)
    np.maximum.at(out_end, run_id, ends)
    return np.stack([out_start, out_end], axis=1)


def cap_intervals(intervals: np.ndarray, max_intervals: int) -> np.ndarray:
    """Close the smallest gaps until at most ``max_intervals`` remain (a superset of the input)."""
    if max_intervals < 1:
        raise ValueError("max_intervals must be at least 1")
    count = len(intervals)
    if count <= max_intervals:
        return intervals
    gaps = intervals[1:, 0] - intervals[:-1, 1]
    close = np.argpartition(gaps, count - max_intervals - 1)[: count - max_intervals]
    keep_start = np.ones(count, dtype=bool)
    keep_start[close + 1] = False
    keep_end = np.ones(count, dtype=bool)
    keep_end[close] = False
    return np.stack([intervals[keep_start, 0], intervals[keep_end, 1]], axis=1)
