"""Runs of kept row groups become byte ranges that cover exactly their row groups."""

from __future__ import annotations

from zskip.planning.footers import Footer
from zskip.planning.row_groups import byte_runs


def footer(lengths: list[int]) -> Footer:
    starts = [4 + sum(lengths[:i]) for i in range(len(lengths))]
    return Footer(tuple(10 for _ in lengths), tuple(zip(starts, lengths, strict=True)), tuple({} for _ in lengths))


def midpoints_inside(f: Footer, runs: list[tuple[int, int]]) -> set[int]:
    """Row groups a Parquet reader given these ranges reads (midpoint rule)."""
    return {g for g, (start, length) in enumerate(f.ranges) if any(a <= start + length / 2 < b for a, b in runs)}


def test_consecutive_row_groups_make_one_range() -> None:
    f = footer([100, 200, 50, 70, 30])
    assert byte_runs(f, (1, 2, 4)) == [(104, 354), (424, 454)]
    assert byte_runs(f, (4, 2, 1, 2)) == [(104, 354), (424, 454)]  # any order, duplicates


def test_the_ranges_cover_exactly_the_kept_row_groups() -> None:
    f = footer([100, 3, 250, 1, 1, 80, 4000, 7])
    for kept in [(0,), (7,), (1, 3), (0, 2, 4, 6), tuple(range(8)), (2, 3, 4)]:
        assert midpoints_inside(f, byte_runs(f, kept)) == set(kept)
