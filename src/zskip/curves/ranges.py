"""Curve-range decomposition: the key intervals whose cells lie in a query box.

A box in rank space (one inclusive ``[lo, hi]`` per column) is cut into aligned cubes by descending
the curve's hierarchy: at each level a cell is inside the box (its whole key range is emitted),
outside (dropped) or straddling (split into ``2**dims`` children).  On both the Z curve and the
Hilbert curve an aligned cube at level ``k`` holds one contiguous run of ``2**(dims*(bits-k))``
keys, so the result covers exactly the box's points.  That is the BIGMIN/LITMAX idea applied to
whole subtrees at once, and it works unchanged for Hilbert.  A Z curve over ranks of unequal widths
(``weighted_bit_order``) descends one key bit at a time instead, each step halving the cells along
the column that bit belongs to: a cell with a fixed key prefix is still one run of keys.  When the
straddling cells outgrow a budget they are emitted whole: the cover grows, never shrinks, so no
matching key is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from zskip.curves.hilbert import hilbert_index
from zskip.curves.interleave import weighted_bit_order, z_interleave, z_interleave_widths

__all__ = [
    "cap_intervals",
    "curve_key_ranges",
    "curve_key_ranges_of_sets",
    "intersect_intervals",
    "linear_key",
    "merge_intervals",
    "point_intervals",
]

CurveIndex = Callable[[Sequence[np.ndarray], int], np.ndarray]


def linear_key(ranks: Sequence[np.ndarray], bits: int | Sequence[int]) -> np.ndarray:
    """Lexicographic key: first column's rank in the top bits, then the next column's, and so on
    (``bits``: every rank's width, or each one's)."""
    widths = [bits] * len(ranks) if isinstance(bits, int) else list(bits)
    key = np.zeros(len(ranks[0]), dtype=np.uint64)
    for column, width in zip(ranks, widths, strict=True):
        key = (key << np.uint64(width)) | np.asarray(column, dtype=np.uint64)
    return key


_INDEX: dict[str, CurveIndex] = {"zorder": z_interleave, "hilbert": hilbert_index, "linear": linear_key}


def curve_key_ranges(
    curve: str,
    lo: Sequence[int],
    hi: Sequence[int],
    bits: int | Sequence[int],
    *,
    max_cells: int = 1 << 15,
    max_intervals: int | None = None,
    recorded: np.ndarray | None = None,
) -> np.ndarray:
    """Inclusive key intervals ``(k, 2)`` (``uint64``, sorted, disjoint) covering the box ``lo..hi``.

    ``bits``: every column's rank width, or each one's (unequal widths: the Z curve or the linear
    key only, see ``weighted_bit_order``).  Exact (every key in the intervals is a point of the
    box) unless ``max_cells`` straddling cells or ``max_intervals`` intervals force a coarser
    cover.  An empty box gives no intervals.

    ``recorded`` (``(n, 2)`` inclusive key ranges, e.g. of the row groups a query may still read)
    says what the cover is for: telling which of those ranges hold a key of the box.  A straddling
    cell that meets none of them is dropped, and one that lies inside one of them is emitted whole
    (that range meets the box whatever the cell's finer structure), so the descent only follows the
    cells that cross a range's boundary.  The answer per range stays exact (overlapping ranges too: a
    cell inside a wide range is still looked into where a narrower one starts or ends in it), at a
    cost that grows with the number of ranges rather than with the box's surface.

    >>> curve_key_ranges("zorder", [0, 0], [1, 3], 2).tolist()
    [[0, 7]]
    >>> curve_key_ranges("zorder", [0, 0], [1, 0], (2, 1)).tolist()
    [[0, 0], [2, 2]]
    """
    if len(hi) != len(lo) or len(lo) == 0:
        raise ValueError("lo and hi need one bound per column")
    sets = [_interval(int(a), int(b)) for a, b in zip(lo, hi, strict=True)]
    return curve_key_ranges_of_sets(
        curve, sets, bits, max_cells=max_cells, max_intervals=max_intervals, recorded=recorded
    )


def curve_key_ranges_of_sets(
    curve: str,
    sets: Sequence[np.ndarray],
    bits: int | Sequence[int],
    *,
    max_cells: int = 1 << 15,
    max_intervals: int | None = None,
    recorded: np.ndarray | None = None,
) -> np.ndarray:
    """Inclusive key intervals ``(k, 2)`` covering the points whose rank in each column lies in one of
    that column's intervals: ``sets[d]`` is column ``d``'s inclusive rank intervals (``(m, 2)``, any
    order; they are merged where they touch).  A box is one interval per column; an IN list or a
    dimension filter's keys give several, and the cover then holds their cells only, never the hull
    between them.  Exact as ``curve_key_ranges`` is, the same budgets and ``recorded`` (the linear
    key: each interval of the first column with the others' hull).

    >>> curve_key_ranges_of_sets("zorder", [np.array([[0, 0], [3, 3]]), np.array([[0, 3]])], 2).tolist()
    [[0, 1], [4, 5], [10, 11], [14, 15]]
    """
    dims = len(sets)
    if dims == 0:
        raise ValueError("sets needs one set of intervals per column")
    widths = (int(bits),) * dims if isinstance(bits, int) else tuple(int(b) for b in bits)
    if len(widths) != dims:
        raise ValueError("bits needs one width per column")
    uniform = len(set(widths)) == 1
    if sum(widths) > 64:
        raise ValueError(
            f"{dims} columns of {widths[0]} bits do not fit a 64-bit key"
            if uniform
            else f"ranks of {list(widths)} bits do not fit a 64-bit key"
        )
    if curve not in _INDEX:
        raise ValueError(f"unknown curve {curve!r}: expected one of {sorted(_INDEX)}")
    if not uniform and curve == "hilbert":
        raise ValueError("columns of unequal widths need the zorder or linear curve (hilbert's cells are cubes)")
    columns = [_clipped(column, (1 << w) - 1) for column, w in zip(sets, widths, strict=True)]
    if any(len(column) == 0 for column in columns):
        return np.zeros((0, 2), dtype=np.uint64)
    lo_arr = np.asarray([column[0, 0] for column in columns], dtype=np.uint64)  # the sets' hull
    hi_arr = np.asarray([column[-1, 1] for column in columns], dtype=np.uint64)
    if curve == "linear":
        firsts = linear_key([columns[0][:, 0], *(np.full(len(columns[0]), v) for v in lo_arr[1:])], widths)
        lasts = linear_key([columns[0][:, 1], *(np.full(len(columns[0]), v) for v in hi_arr[1:])], widths)
        return merge_intervals(np.stack([firsts, lasts], axis=1))
    single = all(len(column) == 1 for column in columns)
    if uniform:
        plain = _INDEX[curve]
        width = widths[0]

        def index(ranks: Sequence[np.ndarray], run: int) -> np.ndarray:
            # a cell's key prefix from its corner's top bits alone: on both curves the top bits of a
            # point's index are the index of its top bits (Skilling's passes and the Gray code only carry
            # information downwards), and the descent's early cells have few of them
            shift = run // len(ranks)
            if shift >= width:
                return np.zeros(len(ranks[0]), dtype=np.uint64)
            top = plain([column >> np.uint64(shift) for column in ranks], width - shift)
            return top << np.uint64(run) if run else top

        steps = [tuple(range(dims))] * width  # each level halves every column
    else:

        def index(ranks: Sequence[np.ndarray], run: int) -> np.ndarray:  # unequal widths: the whole key
            return z_interleave_widths(ranks, widths)

        steps = [(column,) for column, _ in weighted_bit_order(widths)]  # each key bit halves one column
    found: list[np.ndarray] = []
    corners = np.zeros((1, dims), dtype=np.uint64)
    extent = np.asarray([1 << w for w in widths], dtype=np.uint64)  # a cell's side per column
    ranges = _RecordedRanges(recorded) if recorded is not None else None
    run = sum(widths)  # key bits below a cell's prefix
    for step, split in enumerate(steps):
        extent[list(split)] >>= np.uint64(1)
        offsets = np.zeros((1 << len(split), dims), dtype=np.uint64)
        for place, column in enumerate(split):
            offsets[:, column] = (np.arange(1 << len(split)) >> (len(split) - 1 - place)) & 1
        children = (corners[:, None, :] + offsets[None, :, :] * extent).reshape(-1, dims)
        child_hi = children + (extent - np.uint64(1))
        if single:
            overlaps = ((child_hi >= lo_arr) & (children <= hi_arr)).all(axis=1)
            children, child_hi = children[overlaps], child_hi[overlaps]
            inside = ((children >= lo_arr) & (child_hi <= hi_arr)).all(axis=1)
        else:
            overlaps = _all_columns(_meets_set, columns, children, child_hi)
            children, child_hi = children[overlaps], child_hi[overlaps]
            inside = _all_columns(_within_set, columns, children, child_hi)
        run -= len(split)
        if ranges is not None and len(children):
            # one curve index for this level's cells, those inside the box and the others alike (each
            # call runs a loop over bits and columns whatever the cells' number)
            every = _cell_intervals(index, children, run)
            found.append(every[inside])
            corners, cells = children[~inside], every[~inside]
        elif inside.any():
            found.append(_cell_intervals(index, children[inside], run))
            corners = children[~inside]
        else:
            corners = children
        if ranges is not None and len(corners):
            meets = ranges.meet(cells)
            settled = meets & ~ranges.cross(cells)
            found.append(cells[settled])
            corners = corners[meets & ~settled]
        if len(corners) == 0:
            break
        if step < len(steps) - 1 and len(corners) * (1 << len(steps[step + 1])) > max_cells:
            found.append(_cell_intervals(index, corners, run))
            break
    if not found:
        return np.zeros((0, 2), dtype=np.uint64)
    intervals = merge_intervals(np.concatenate(found))
    return intervals if max_intervals is None else cap_intervals(intervals, max_intervals)


def _interval(low: int, high: int) -> np.ndarray:
    """``low..high`` as a set of one interval of ranks (none when it holds no rank ``>= 0``)."""
    low, high = max(0, low), min(high, (1 << 64) - 1)
    return np.asarray([[low, high]], dtype=np.uint64) if high >= low else np.zeros((0, 2), dtype=np.uint64)


def _clipped(intervals: np.ndarray, top: int) -> np.ndarray:
    """``intervals`` (inclusive ranks ``>= 0``, any order) within ``0..top``, merged where they touch;
    empty ones dropped."""
    given = np.asarray(intervals).reshape(-1, 2).astype(np.uint64)
    given = given[given[:, 0] <= np.uint64(top)]
    given[:, 1] = np.minimum(given[:, 1], np.uint64(top))
    given = given[given[:, 0] <= given[:, 1]]
    return merge_intervals(given)


def _all_columns(test: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], columns: Sequence[np.ndarray],
                 low: np.ndarray, high: np.ndarray) -> np.ndarray:  # fmt: skip
    """``test`` of each cell's extent ``low..high`` along every column against that column's intervals."""
    result = np.ones(len(low), dtype=bool)
    for d, column in enumerate(columns):
        result &= test(column, low[:, d], high[:, d])
    return result


def _meets_set(intervals: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Whether each ``low..high`` shares a rank with one of the sorted, disjoint ``intervals``."""
    last = np.searchsorted(intervals[:, 0], high, side="right") - 1
    found = last >= 0
    found[found] = intervals[last[found], 1] >= low[found]
    return found


def _within_set(intervals: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Whether each ``low..high`` lies inside one of the sorted, disjoint ``intervals``."""
    at = np.searchsorted(intervals[:, 0], low, side="right") - 1
    found = at >= 0
    found[found] = intervals[at[found], 1] >= high[found]
    return found


def point_intervals(points: np.ndarray) -> np.ndarray:
    """Ranks ``points`` as inclusive intervals, merged where they touch (``[3, 4, 5, 9]``: 3-5 and 9)."""
    points = np.asarray(points, dtype=np.uint64)
    return merge_intervals(np.stack([points, points], axis=1)) if len(points) else np.zeros((0, 2), dtype=np.uint64)


def intersect_intervals(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The ranks in both sorted, disjoint inclusive interval sets ``a`` and ``b``, as such a set."""
    a, b = np.asarray(a, dtype=np.uint64).reshape(-1, 2), np.asarray(b, dtype=np.uint64).reshape(-1, 2)
    if len(a) == 0 or len(b) == 0:
        return np.zeros((0, 2), dtype=np.uint64)
    # for each interval of a, the intervals of b it overlaps: those ending at or after its start and
    # starting at or before its end
    first = np.searchsorted(b[:, 1], a[:, 0], side="left")
    last = np.searchsorted(b[:, 0], a[:, 1], side="right")
    counts = np.maximum(last - first, 0)
    which = np.repeat(np.arange(len(a)), counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    paired = np.repeat(first, counts) + offsets
    starts = np.maximum(a[which, 0], b[paired, 0])
    ends = np.minimum(a[which, 1], b[paired, 1])
    return np.stack([starts, ends], axis=1)[starts <= ends]


class _RecordedRanges:
    """Inclusive key ranges, arranged to answer two questions about many cells at once."""

    def __init__(self, ranges: np.ndarray) -> None:
        ranges = np.asarray(ranges, dtype=np.uint64).reshape(-1, 2)
        ranges = ranges[np.argsort(ranges[:, 0], kind="stable")]
        self.starts = ranges[:, 0]
        self.ends = np.sort(ranges[:, 1])
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

    def cross(self, cells: np.ndarray) -> np.ndarray:
        """Whether a range starts or ends inside each cell (a range beginning after the cell's first key,
        or ending before its last).  A cell no range crosses lies inside every range it meets, so each
        of those meets the box whatever the cell's finer structure; a cell inside one wide range that
        another, narrower range crosses must be looked into for that one (ranges of two generations of
        files overlap: a small rewrite's wide row groups over the narrow ones of the files before)."""
        begun = np.searchsorted(self.starts, cells[:, 1], side="right") - np.searchsorted(
            self.starts, cells[:, 0], side="right"
        )
        ended = np.searchsorted(self.ends, cells[:, 1], side="left") - np.searchsorted(
            self.ends, cells[:, 0], side="left"
        )
        return (begun > 0) | (ended > 0)


def _cell_intervals(index: CurveIndex, corners: np.ndarray, run: int) -> np.ndarray:
    """The key interval of each cell (its corner's row of ``corners``) with ``run`` key bits below its prefix."""
    keys = index([corners[:, d] for d in range(corners.shape[1])], run)
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
