"""Indexes probed with a set of keys at once (the join-key stage): bitmaps exact, blooms never wrong."""

from __future__ import annotations

import itertools

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from zskip.fileindex import bitmap
from zskip.fileindex.bitmap import BitmapIndex
from zskip.fileindex.bloom import BloomIndex
from zskip.fileindex.evaluate import FileIndexes, Match, key_sets_verdict
from zskip.fileindex.kinds.bitmap import BITMAP
from zskip.fileindex.kinds.bloom import BLOOM

values_strategy = st.lists(st.one_of(st.none(), st.integers(-20, 60)), min_size=1, max_size=120)
keys_strategy = st.lists(st.integers(-30, 70), max_size=40, unique=True)


def file_of(a: list[int | None], b: list[int | None], groups: int) -> tuple[FileIndexes, list[int]]:
    size = max(1, len(a) // groups)
    starts = [*list(range(0, len(a), size)), len(a)]
    bitmaps = {"a": BitmapIndex.build(pa.array(a, pa.int32())), "b": BitmapIndex.build(pa.array(b, pa.int64()))}
    bloom = BloomIndex.build([pa.array(b[s:e], pa.int64()) for s, e in itertools.pairwise(starts)])
    found = [("a", BITMAP, bitmaps["a"]), ("b", BITMAP, bitmaps["b"]), ("b", BLOOM, bloom)]
    return FileIndexes.of(starts, found), starts


@given(values_strategy, keys_strategy, keys_strategy, st.integers(1, 5), st.data())
def test_key_sets_keep_every_row_group_holding_a_row_with_a_key_of_each_set(
    a: list[int | None], keys_a: list[int], keys_b: list[int], groups: int, data: st.DataObject
) -> None:
    b = [data.draw(st.one_of(st.none(), st.integers(0, 30))) for _ in a]
    indexes, starts = file_of(a, b, groups)
    ka, kb = pa.array(keys_a, pa.int64()), pa.array(keys_b, pa.int64())
    exact = key_sets_verdict(indexes, [("a", ka), ("b", kb)])
    assert exact is not None
    for g, (start, end) in enumerate(itertools.pairwise(starts)):
        holds = any(a[r] in keys_a and b[r] in keys_b for r in range(start, end))
        # both columns have bitmaps: rows intersect exactly, so the verdict is exact
        assert (exact.row_groups[g] is Match.MIGHT_MATCH) == holds
    not_exact = {c: tuple(f for f in found if not f.kind.exact) for c, found in indexes.by_column.items()}
    bloom_only = FileIndexes(indexes.row_group_starts, not_exact)
    maybe = key_sets_verdict(bloom_only, [("a", ka), ("b", kb)])  # no index on a: b's bloom alone
    assert maybe is not None
    for g, (start, end) in enumerate(itertools.pairwise(starts)):
        if any(b[r] in keys_b for r in range(start, end)):
            assert maybe.row_groups[g] is Match.MIGHT_MATCH


def test_no_index_on_the_columns_gives_no_verdict_and_big_keys_never_break_a_narrow_type() -> None:
    indexes, _ = file_of([1, 2, 3], [4, 5, 6], 1)
    assert key_sets_verdict(FileIndexes.of(indexes.row_group_starts, []), [("a", pa.array([1], pa.int64()))]) is None
    small = BloomIndex.build([pa.array([1, 2, 3], pa.int32())])
    only_bloom = FileIndexes.of((0, 3), [("a", BLOOM, small)])
    verdict = key_sets_verdict(only_bloom, [("a", pa.array([2, 2**40], pa.int64()))])
    assert verdict is not None and verdict.file is Match.MIGHT_MATCH
    verdict = key_sets_verdict(only_bloom, [("a", pa.array([2**40], pa.int64()))])
    assert verdict is not None and verdict.file is Match.CANNOT_MATCH


@given(values_strategy, keys_strategy)
def test_rows_with_keys_are_exact_by_ranges_and_by_decoding_row_codes(
    values: list[int | None], keys: list[int]
) -> None:
    index = BitmapIndex.build(pa.array(values, pa.int64()))
    expected = [r for r, v in enumerate(values) if v is not None and v in keys]
    sorted_keys = pa.array(keys, pa.int64())
    saved = bitmap.RANGES_BEFORE_DECODING
    try:
        for threshold in (0, 10**9):  # every key set decoded, then every key set by ranges
            bitmap.RANGES_BEFORE_DECODING = threshold
            assert list(index.rows_with(sorted_keys)) == expected, threshold
    finally:
        bitmap.RANGES_BEFORE_DECODING = saved


@given(
    st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "ab", "ORD", "ORD2", "é", "LAX", "lax"])), min_size=1),
    st.lists(st.sampled_from(["a", "ORD", "ORD2", "lax", "SFO", "é"]), unique=True),
    st.integers(1, 4),
)
def test_text_and_date_keys_find_exactly_their_rows(values: list[str | None], keys: list[str], groups: int) -> None:
    size = max(1, len(values) // groups)
    starts = [*list(range(0, len(values), size)), len(values)]
    days = [None if v is None else len(v) * 400 for v in values]  # a date column beside the text one
    found = [
        ("s", BITMAP, BitmapIndex.build(pa.array(values, pa.string()))),
        ("t", BLOOM, BloomIndex.build([pa.array(values[s:e], pa.string()) for s, e in itertools.pairwise(starts)])),
        ("d", BITMAP, BitmapIndex.build(pa.array(days, pa.date32()))),
    ]
    indexes = FileIndexes.of(starts, found)
    wanted_days = sorted({len(k) * 400 for k in keys})
    for column, key_set, column_values in (
        ("s", pa.array(keys, pa.string()), values),
        ("t", pa.array(keys, pa.string()), values),
        ("d", pa.array(wanted_days, pa.int32()).cast(pa.date32()), [None if d is None else d for d in days]),
    ):
        verdict = key_sets_verdict(indexes, [(column, key_set)])
        assert verdict is not None
        wanted = set(keys) if column != "d" else set(wanted_days)
        for g, (start, end) in enumerate(itertools.pairwise(starts)):
            holds = any(column_values[r] in wanted for r in range(start, end))
            if column == "t":  # a bloom filter never loses a row group holding a key
                assert not holds or verdict.row_groups[g] is Match.MIGHT_MATCH
            else:
                assert (verdict.row_groups[g] is Match.MIGHT_MATCH) == holds, (column, g)
