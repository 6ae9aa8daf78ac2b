"""Runs of kept row groups become byte ranges that cover exactly their row groups."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.planning.footers import Footer
from zskip.planning.row_groups import byte_runs, joined_runs, run_count


def footer(lengths: list[int]) -> Footer:
    starts = [4 + sum(lengths[:i]) for i in range(len(lengths))]
    return Footer(tuple(10 for _ in lengths), tuple(zip(starts, lengths, strict=True)))


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


def test_runs_separated_only_by_row_groups_the_reader_skips_make_one_range() -> None:
    f = footer([100, 200, 50, 70, 30])
    read_anyway = [True, True, False, False, True]
    assert byte_runs(f, (1, 4), read_anyway=read_anyway) == [(104, 454)]
    assert byte_runs(f, (0, 4), read_anyway=read_anyway) == [(4, 104), (424, 454)]  # row group 1 would be read


def test_joined_runs_add_the_row_groups_the_reader_would_read_when_they_are_small() -> None:
    f = footer([100, 200, 50, 70, 30, 40, 60, 10])
    read_anyway = [True, True, True, False, True, True, True, True]
    assert joined_runs(f, (0, 2, 4), read_anyway, join_bytes=200) == (0, 1, 2, 4)  # 3 is skipped by the reader
    assert joined_runs(f, (0, 2, 4), read_anyway, join_bytes=199) == (0, 2, 4)
    assert joined_runs(f, (0, 7), read_anyway, join_bytes=380) == (0, 7)  # 5 row groups between runs of 1
    assert joined_runs(f, (0, 1, 2, 4, 5, 6, 7), read_anyway, join_bytes=0) == (0, 1, 2, 4, 5, 6, 7)
    assert joined_runs(f, (0, 1, 4, 5), read_anyway, join_bytes=1000) == (0, 1, 2, 4, 5)  # 2 (3 is skipped)
    assert joined_runs(f, (0, 4, 5), read_anyway, join_bytes=1000) == (0, 4, 5)  # 1 and 2: more than 1 kept
    assert joined_runs(f, (2, 4), read_anyway, join_bytes=0) == (2, 4)  # nothing to add: one range anyway
    assert byte_runs(f, (2, 4), read_anyway=read_anyway) == [(304, 454)]
    assert run_count((0, 1, 2, 4, 6, 7)) == 3 and run_count(()) == 0


def test_a_plan_of_scattered_row_groups_reads_at_most_twice_what_it_kept() -> None:
    f = footer([16] * 1000)  # small row groups: the byte bound alone would join gaps of 16
    kept = tuple(range(0, 1000, 9))
    joined = joined_runs(f, kept, [True] * 1000, join_bytes=256)
    assert joined == kept  # single row groups 8 apart stay apart
    assert joined_runs(f, (0, 2, 4, 6), [True] * 1000, join_bytes=256) == tuple(range(7))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 500), st.booleans(), st.booleans()), min_size=1, max_size=30),
    st.integers(0, 1500),
)
def test_the_reader_reads_exactly_the_joined_row_groups_in_as_few_ranges_as_the_gaps_allow(groups, join_bytes) -> None:
    lengths = [length for length, _, _ in groups]
    kept = tuple(g for g, (_, keep, _) in enumerate(groups) if keep)
    # a kept row group passed its statistics; the others may or may not
    read_anyway = [keep or allowed for _, keep, allowed in groups]
    f = footer(lengths)
    joined = joined_runs(f, kept, read_anyway, join_bytes)
    assert set(kept) <= set(joined) and all(read_anyway[g] for g in joined)
    ranges = byte_runs(f, joined, read_anyway=read_anyway)
    read = {g for g in midpoints_inside(f, ranges) if read_anyway[g]}
    assert read == set(joined)  # nothing the plan left out is read, nothing it kept is missed
    assert len(joined) <= 2 * len(kept)  # what is added is never more than what was kept
    runs: list[list[int]] = []  # the kept runs; a gap joins when small and no longer than either side
    for g in kept:
        runs.append([g]) if not runs or runs[-1][-1] != g - 1 else runs[-1].append(g)
    apart, left = 0, len(runs[0]) if runs else 0
    for before, after in itertools.pairwise(runs):
        gap = [b for b in range(before[-1] + 1, after[0]) if read_anyway[b]]
        if gap and (sum(lengths[b] for b in gap) > join_bytes or len(gap) > min(left, len(after))):
            apart, left = apart + 1, len(after)
        else:
            left += len(after)
    assert len(ranges) == (1 + apart if kept else 0)
