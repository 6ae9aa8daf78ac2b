"""A bitmap blob's head (dictionary and non-null rows) decides what it can alone, and never differently
from the whole blob; a cold plan reads the rest only for the files the heads leave undecided."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.fileindex.test_bitmap import file_indexes, predicates, tables

import zskip.fileindex.bitmap as bitmap_module
from zskip.expr import And, Between, Compare, Expr, In, Leaf, Or
from zskip.expr.nodes import equality_values
from zskip.fileindex.answers import RestNotRead
from zskip.fileindex.bitmap import BitmapIndex, head_length, in_blocks
from zskip.fileindex.bitmap_blocks import SlicesNotRead, keys_of
from zskip.fileindex.build import build_file_indexes, copy_blobs, read_stored
from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.evaluate import FileIndexes, Verdict, evaluate
from zskip.fileindex.kinds.bitmap import BITMAP
from zskip.fileindex.manifest import DEFINITIONS_BLOB, ENTRIES_BLOB, IndexManifest
from zskip.fileindex.puffin import PuffinWriter
from zskip.planning.cache import LruCache
from zskip.storage import FileAccess
from zskip.tablefiles.blob_reads import APART_HEAD_GAP, HEAD_GAP, PART_GAP
from zskip.tablefiles.index_blobs import index_verdicts, key_set_verdicts


def heads_of(whole: FileIndexes) -> FileIndexes:
    """``whole``'s bitmaps as a cold plan first loads them: from the head of each blob alone."""
    loaded = []
    for column, found in whole.by_column.items():
        for item in found:
            blob = item.index.to_bytes()
            loaded.append((column, item.kind, BITMAP.load(blob[: head_length(blob)])))
    return FileIndexes.of(whole.row_group_starts, loaded)


@settings(max_examples=300, deadline=None)
@given(tables(), predicates, st.integers(1, 4))
def test_heads_decide_only_what_the_whole_blobs_decide(data: dict[str, list[Any]], expr: Expr, groups: int) -> None:
    whole = file_indexes(data, groups)
    expected = evaluate(expr, whole)
    heads = heads_of(whole)
    try:
        assert evaluate(expr, heads) == expected
    except RestNotRead:
        completed = []
        for column, found in heads.by_column.items():
            for item in found:
                blob = whole.by_column[column][0].index.to_bytes()
                completed.append((column, item.kind, BITMAP.with_rest(item.index, blob[head_length(blob) :])))
        assert evaluate(expr, FileIndexes.of(heads.row_group_starts, completed)) == expected


def _probes(expr: Expr) -> dict[Any, list[Any]]:
    """The values a conjunct of ``expr`` (or an OR of them) holds each column equal to."""
    probes: dict[Any, list[Any]] = {}
    for conjunct in expr.children if isinstance(expr, And) else (expr,):
        for leaf in conjunct.children if isinstance(conjunct, Or) else (conjunct,):
            values = equality_values(leaf) if isinstance(leaf, Leaf) else None
            if values is not None:
                probes.setdefault(leaf.column, []).extend(v for v in values if v is not None)  # type: ignore[union-attr]
    return probes


@settings(max_examples=300, deadline=None)
@given(tables(), predicates, st.integers(1, 4), st.integers(1, 4))
def test_a_dictionary_in_blocks_decides_only_what_the_whole_blob_decides(
    data: dict[str, list[Any]], expr: Expr, groups: int, size: int
) -> None:
    whole = file_indexes(data, groups)
    expected = evaluate(expr, whole)
    with _blocks_of(size):
        blobs = {column: found[0].index.to_bytes() for column, found in whole.by_column.items()}
    probes = _probes(expr)
    # the head, the head with the blocks its equalities ask, the whole blob, and the head with those
    # blocks and the rest after the blocks (any other block read when a condition looks in it)
    steps: list[FileIndexes] = []
    for stage in ("head", "parts", "whole", "after parts"):
        loaded = []
        for column, blob in blobs.items():
            head = head_length(blob)
            assert head is not None
            index = BITMAP.load(blob[:head])
            if stage in ("parts", "after parts"):
                parts = BITMAP.parts_for(index, probes.get(column, []))
                index = BITMAP.with_parts(index, {n: blob[head + at : head + at + n_] for n, (at, n_) in parts.items()})
                assert not BITMAP.parts_for(index, probes.get(column, []))  # nothing more to read for them
            if stage == "whole":
                index = BITMAP.load(blob)
            elif stage == "after parts" and (span := BITMAP.parts_span(index)):

                def part(n: int, at: int, length: int, blob: bytes = blob, head: int = head) -> bytes:
                    return blob[head + at : head + at + length]

                index = BITMAP.with_rest_after_parts(index, blob[head + span :], part)
            elif stage == "after parts":
                index = BITMAP.load(blob)  # no block read with the head: the rest is read whole
            loaded.append((column, BITMAP, index))
        steps.append(FileIndexes.of(whole.row_group_starts, loaded))
    assert evaluate(expr, steps[2]) == expected
    assert evaluate(expr, steps[3]) == expected  # whatever it looks in
    for partial in steps[:2]:
        with contextlib.suppress(RestNotRead):  # else the whole blob decides it (above)
            assert evaluate(expr, partial) == expected
    int_blob = blobs.get("i")
    if int_blob is not None and len({v for v in data["i"] if v is not None}) > size:
        assert int_blob[:4] == b"ZBM3"  # whole numbers of more distinct values than a block holds: in blocks


@settings(max_examples=200, deadline=None)
@given(tables(), predicates, st.integers(1, 4), st.integers(1, 4))
def test_a_dictionary_put_in_blocks_when_merged_decides_what_it_decided_before(
    data: dict[str, list[Any]], expr: Expr, groups: int, size: int
) -> None:
    whole = file_indexes(data, groups)
    expected = evaluate(expr, whole)
    with _blocks_of(size):  # blocks of ``size`` values, whatever the dictionary's size
        blobs = {
            column: in_blocks(found[0].index.to_bytes(), larger_than=0) for column, found in whole.by_column.items()
        }
    probes = _probes(expr)
    for stage in ("whole", "head", "parts"):
        loaded = []
        for column, blob in blobs.items():
            head = head_length(blob)
            assert head is not None
            index = BITMAP.load(blob if stage == "whole" else blob[:head])
            if stage == "parts":  # each block as the merged file copies it (``stored_parts``)
                copies = [data for _, data in BITMAP.stored_parts(blob)]
                index = BITMAP.with_parts(
                    index, {n: copies[n] for n in BITMAP.parts_for(index, probes.get(column, []))}
                )
            loaded.append((column, BITMAP, index))
        with contextlib.suppress(RestNotRead):  # a head alone may not decide: the whole blob does (first)
            assert evaluate(expr, FileIndexes.of(whole.row_group_starts, loaded)) == expected
    for column, blob in blobs.items():
        distinct = {v for v in data[column] if v is not None}
        if column == "i" and len(distinct) > size:
            assert blob[:4] == b"ZBM3" and len(BITMAP.stored_parts(blob)) == -(-len(distinct) // size)
        assert in_blocks(blob, larger_than=0) == blob  # once in blocks, it stays as it is


@contextmanager
def _blocks_of(size: int) -> Iterator[None]:
    """Dictionaries of more than ``size`` whole numbers written in blocks of ``size``, however small."""
    saved = bitmap_module.BLOCK_VALUES, bitmap_module.BLOCKS_FROM
    bitmap_module.BLOCK_VALUES, bitmap_module.BLOCKS_FROM = size, 0
    try:
        yield
    finally:
        bitmap_module.BLOCK_VALUES, bitmap_module.BLOCKS_FROM = saved


def test_an_equality_on_a_dictionary_in_blocks_reads_one_block() -> None:
    values = pa.array(np.arange(0, 30_000, 3), pa.int64())  # 10,000 distinct values
    assert BitmapIndex.build(values).to_bytes()[:4] == b"ZBM2"  # a dictionary this small is read whole
    with _blocks_of(2048):
        blob = BitmapIndex.build(values).to_bytes()
    head = head_length(blob)
    assert blob[:4] == b"ZBM3" and head is not None and head < 2_000
    index = BITMAP.load(blob[:head])
    assert index.bounds(-3) == (0, 0) and index.bounds(40_000) == (10_000, 10_000)  # outside: the head says
    with pytest.raises(SlicesNotRead):
        index.bounds(3 * 5_000)
    parts = BITMAP.parts_for(index, [3 * 5_000, 3 * 5_000 + 1])  # one value, one absent beside it: one block
    assert len(parts) == 1 and sum(n for _, n in parts.values()) < len(blob) / 20
    read = BITMAP.with_parts(index, {n: blob[head + at : head + at + n_] for n, (at, n_) in parts.items()})
    assert read.bounds(3 * 5_000) == (5_000, 5_001) and read.bounds(3 * 5_000 + 1) == (5_001, 5_001)
    whole = BITMAP.load(blob)
    assert whole.values.equals(values) and BITMAP.with_rest(index, blob[head:]).values.equals(values)
    assert whole.bounds(3 * 5_000) == (5_000, 5_001)  # a whole blob decodes the block it looks in
    # a join's key set: the blocks its keys fall in, and the same rows as the whole index gives
    keys = pa.array([3, 4, 6_000, 29_997, 50_000], pa.int64())
    key_parts = BITMAP.parts_for(index, keys)
    assert sorted(key_parts) == [0, 4]  # 3, 4 and 6,000 are in the first block (codes 0-2047), 29,997 in the fifth
    with pytest.raises(SlicesNotRead):
        index.rows_with(keys)
    by_keys = BITMAP.with_parts(index, {n: blob[head + at : head + at + n_] for n, (at, n_) in key_parts.items()})
    with pytest.raises(SlicesNotRead):  # the rows themselves need the slices; which codes, only the blocks
        by_keys.rows_with(keys)
    assert BITMAP.with_rest(by_keys, blob[head:]).rows_with(keys) == whole.rows_with(keys)
    assert list(by_keys.blocks.codes_of(keys_of(keys))) == [1, 2_000, 9_999]  # type: ignore[union-attr]
    damaged = {n: b"x" + blob[head + at + 1 : head + at + n_] for n, (at, n_) in parts.items()}
    with pytest.raises(ValueError, match="damaged"):
        BITMAP.with_parts(index, damaged)


def _without_fence_keys(blob: bytes) -> bytes:
    """A format 3 blob as written before heads recorded their fences' keys and type in the header."""
    magic, size, _ = struct.unpack_from("<4sII", blob)
    (length,) = struct.unpack_from("<I", blob, 12)
    header = json.loads(blob[16 : 16 + length])
    assert "fence_keys" in header and "key_type" in header
    del header["fence_keys"], header["key_type"]
    encoded = json.dumps(header).encode()
    head = struct.pack("<I", len(encoded)) + encoded + blob[16 + length : size]
    return struct.pack("<4sII", magic, 12 + len(head), zlib.crc32(head)) + head + blob[size:]


@pytest.mark.parametrize(
    "values",
    [
        pa.array(np.arange(-9_000, 30_000, 3), pa.int64()),
        pa.array(np.arange(0, 4_000), pa.uint32()),
        pa.array(np.arange(-100, 100), pa.int8()),
        pa.array(np.arange(0, 6_000), pa.int32()).cast(pa.date32()),
        pa.array(np.arange(0, 6_000) * 1_000_003, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        pa.array(np.arange(0, 6_000) * 7, pa.int64()).cast(pa.timestamp("ns")),
    ],
    ids=["int64", "uint32", "int8", "date32", "timestamp-utc", "timestamp-ns"],
)
def test_a_head_reads_its_fences_from_its_header_as_the_parquet_fences_give_them(values: pa.Array) -> None:
    with _blocks_of(64):
        blob = BitmapIndex.build(values).to_bytes()
    older = _without_fence_keys(blob)
    new, old = (BitmapIndex.from_bytes(b[: head_length(b)]).blocks for b in (blob, older))
    assert new is not None and old is not None
    assert new.value_type == old.value_type == values.type
    assert new.fences.dtype == old.fences.dtype and list(new.fences) == list(old.fences) and new.last == old.last
    probe = values[len(values) // 2].as_py()
    for b in (blob, older):  # the same answers from either head, with the block read
        head = head_length(b)
        assert head is not None
        index = BITMAP.load(b[:head])
        parts = BITMAP.parts_for(index, [probe])
        read = BITMAP.with_parts(index, {n: b[head + at : head + at + n_] for n, (at, n_) in parts.items()})
        assert read.bounds(probe) == (len(values) // 2, len(values) // 2 + 1)
    assert BITMAP.load(older).rows_with(values.slice(5, 3)) == BITMAP.load(blob).rows_with(values.slice(5, 3))


def test_a_value_the_file_lacks_and_a_range_over_all_its_values_need_no_slices() -> None:
    values = pa.array([5, 7, None, 9, 7, 11], pa.int64())
    blob = BitmapIndex.build(values).to_bytes()
    head = BitmapIndex.from_bytes(blob[: head_length(blob)])
    assert not head.complete
    indexes = FileIndexes.of((0, 3, 6), [("x", BITMAP, head)])
    assert evaluate(Compare("x", "=", 6), indexes).row_groups_kept == 0
    assert evaluate(And((Compare("x", ">", 100), Between("x", 7, 9))), indexes).row_groups_kept == 0
    assert evaluate(Between("x", 0, 100), indexes).row_groups_kept == 2  # every non-null row
    with pytest.raises(SlicesNotRead):
        evaluate(Compare("x", "=", 7), indexes)
    whole = head.with_slices(blob[head_length(blob) :])
    assert sorted(whole.with_code(1)) == [1, 4]
    assert BitmapIndex.from_bytes(blob).clear_bits == whole.clear_bits


def format_1(index: BitmapIndex) -> bytes:
    """A blob as zskip wrote bitmaps before they had a head: header, dictionary, then every bitmap."""
    sink = io.BytesIO()
    pq.write_table(pa.table({"v": index.dictionary}), sink)
    blobs = [b.serialize() for b in (index.not_null, *index.clear_bits)]
    header = json.dumps({"rows": index.rows, "dictionary": len(sink.getvalue()), "bitmaps": [len(b) for b in blobs]})
    return struct.pack("<I", len(header)) + header.encode() + sink.getvalue() + b"".join(blobs)


def test_blobs_written_before_heads_still_load_whole() -> None:
    index = BitmapIndex.build(pa.array(["b", "a", None, "c", "a"]))
    old = format_1(index)
    assert head_length(old) is None
    loaded = BitmapIndex.from_bytes(old)
    assert loaded.complete and loaded.clear_bits == index.clear_bits and loaded.not_null == index.not_null


def test_a_damaged_head_or_slice_section_is_an_error_not_an_answer() -> None:
    blob = bytearray(BitmapIndex.build(pa.array(list(range(100)) * 3, pa.int64())).to_bytes())
    size = head_length(bytes(blob))
    assert size is not None
    for at in (size - 5, len(blob) - 5):
        damaged = bytes(blob[:at]) + bytes([blob[at] ^ 0xFF]) + bytes(blob[at + 1 :])
        with pytest.raises(ValueError, match="damaged bitmap index"):
            head = BitmapIndex.from_bytes(damaged[:size])
            head.with_slices(damaged[size:])


READS: list[tuple[str, int]] = []


class CountingAccess(FileAccess):
    """The local disk, counting the bytes each read asks for."""

    def read(self, location: str, *, offset: int = 0, length: int | None = None) -> bytes:
        data = FileAccess.read(self, location, offset=offset, length=length)
        READS.append((location, len(data)))
        return data


def indexed_files(tmp_path: Path, files: int, *, blocks: bool = False) -> tuple[IndexManifest, list[str]]:
    """``files`` Parquet files of 40,000 rows each, ``x`` in its own range per file (rows shuffled), with
    bitmaps (``blocks``: their dictionaries in blocks of 2,048 values)."""
    field = pa.field("x", pa.int64(), metadata={b"PARQUET:field_id": b"1"})
    definition = IndexDefinition("x", "bitmap", {}, 1)
    entries, paths = [], []
    for n in range(files):
        path = str(tmp_path / f"data-{n}.parquet")
        ordered = [(n * 1_000_000 + i * 7919) % 5_000_000 + n * 5_000_000 for i in range(40_000)]
        values = pa.array(np.random.default_rng(n).permutation(ordered), pa.int64())  # slices that hardly compress
        pq.write_table(pa.table([values], schema=pa.schema([field])), path, row_group_size=10_000)
        with _blocks_of(2048) if blocks else contextlib.nullcontext():
            entries += build_file_indexes(path, [definition], str(tmp_path / f"index-{n}.puffin")).entries
        paths.append(path)
    return IndexManifest.empty().with_definition(definition).with_entries(entries), paths


def verdicts(manifest: IndexManifest, paths: list[str], expr: Expr, *, cache: LruCache | None) -> dict[str, Verdict]:
    READS.clear()
    return index_verdicts(manifest, paths, expr, cache=cache, manifest_key="m", access=CountingAccess())


@pytest.mark.parametrize("blocks", [False, True])
def test_a_cold_plan_reads_only_the_heads_of_files_an_equality_rules_out(tmp_path: Path, blocks: bool) -> None:
    manifest, paths = indexed_files(tmp_path, 4, blocks=blocks)
    rows = manifest.entries.to_pylist()
    heads, lengths = sum(r["head"] for r in rows), sum(r["length"] for r in rows)
    assert all(r["head"] and r["codec"] is None for r in rows) and heads * 2 < lengths
    value = 2 * 5_000_000 + (2 * 1_000_000 + 3 * 7919) % 5_000_000  # row 3 of file 2
    expr = Compare(1, "=", value)
    whole = verdicts(manifest, paths, expr, cache=None)
    assert sum(n for _, n in READS) == lengths
    cache = LruCache(100)
    cold = verdicts(manifest, paths, expr, cache=cache)
    assert cold == whole and [cold[p].row_groups_kept for p in paths] == [0, 0, 1, 0]
    file_2 = rows[2]
    # the heads, then the rest of file 2's blob alone; with a dictionary in blocks, the one block of
    # file 2's that holds the value between them (the other files' heads put it beyond their values),
    # and of the rest only the slices after the blocks
    found = BITMAP.load(read_stored(file_2)[: file_2["head"]]).blocks
    assert (found is not None) == blocks
    block = found.lengths[found.block_of(value)] if found is not None else 0  # type: ignore[index]
    all_blocks = sum(found.lengths) if found is not None else 0
    assert sum(n for _, n in READS) == heads + block + file_2["length"] - file_2["head"] - all_blocks
    assert verdicts(manifest, paths, expr, cache=cache) == whole and READS == []  # warm: nothing read
    if found is not None:  # another value of file 2, in another block: that block alone is read
        other = next(v for v in pq.read_table(paths[2])["x"].to_pylist() if found.block_of(v) != found.block_of(value))
        expr = Compare(1, "=", other)
        warm = verdicts(manifest, [paths[2]], expr, cache=cache)
        assert [n for _, n in READS] == [found.lengths[found.block_of(other)]]  # type: ignore[index]
        assert warm == verdicts(manifest, [paths[2]], expr, cache=None) and warm[paths[2]].row_groups_kept
    wide = Between(1, 0, 30_000_000)
    assert verdicts(manifest, paths, wide, cache=cache) == verdicts(manifest, paths, wide, cache=None)
    # a range reaching the index stage overlaps each file's values: its heads could not rule a file
    # out, so the blobs are read whole in one round
    verdicts(manifest, paths, Between(1, 7, 30_000_000), cache=LruCache(100))
    assert sum(n for _, n in READS) == lengths


def test_a_join_key_set_reads_each_block_its_keys_fall_in_once(tmp_path: Path) -> None:
    manifest, paths = indexed_files(tmp_path, 4, blocks=True)
    rows = manifest.entries.to_pylist()
    file_2 = rows[2]
    index = BITMAP.load(read_stored(file_2))
    first, last = index.values[0].as_py(), index.values[-1].as_py()  # in its first and last blocks
    keys = pa.array([first, last], pa.int64())
    READS.clear()
    found = key_set_verdicts(manifest, paths, [(1, keys)], cache=LruCache(100), access=CountingAccess())
    assert found == key_set_verdicts(manifest, paths, [(1, keys)])  # read whole, without a cache
    assert [found[p].row_groups_kept for p in paths] == [0, 0, found[paths[2]].row_groups_kept, 0]
    head = BITMAP.load(read_stored(file_2)[: file_2["head"]])
    assert head.blocks is not None and len(head.blocks.lengths) > 2
    # the heads, both blocks in one request (the blocks between them are a smaller gap than a request
    # costs), then of the rest of file 2's blob the slices after its blocks alone
    span = sum(head.blocks.lengths)
    assert span < PART_GAP
    heads = sum(r["head"] for r in rows)
    assert [n for _, n in READS][-1] == file_2["length"] - file_2["head"] - span
    assert sum(n for _, n in READS) == heads + span + file_2["length"] - file_2["head"] - span


def test_a_manifest_written_before_heads_reads_its_blobs_whole(tmp_path: Path) -> None:
    manifest, paths = indexed_files(tmp_path, 2)
    sink = io.BytesIO()
    entries = manifest.entries.drop_columns(["head"])
    with pa.ipc.new_stream(sink, entries.schema) as stream:
        stream.write_table(entries)
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer)
    writer.add(DEFINITIONS_BLOB, json.dumps([d.to_json() for d in manifest.definitions]).encode())
    writer.add(ENTRIES_BLOB, sink.getvalue())
    writer.finish()
    old = IndexManifest.from_bytes(buffer.getvalue())
    assert old.entries["head"].null_count == old.entries.num_rows == 2
    expr = Compare(1, "=", 3)
    assert verdicts(old, paths, expr, cache=LruCache(100)) == verdicts(manifest, paths, expr, cache=None)
    assert sum(n for _, n in READS) == sum(manifest.entries["length"].to_pylist())


def test_heads_of_blobs_merged_into_one_index_file_are_read_without_the_slices_between(tmp_path: Path) -> None:
    manifest, paths = indexed_files(tmp_path, 4)
    merged, _ = copy_blobs(str(tmp_path / "merged.puffin"), manifest.entries.to_pylist())
    manifest = IndexManifest.empty().with_definition(manifest.definitions[0]).with_entries(merged)
    rows = manifest.entries.to_pylist()
    assert all(r["length"] - r["head"] > HEAD_GAP for r in rows[:-1])  # the slices between heads
    verdicts(manifest, paths, Compare(1, "=", -1), cache=LruCache(100))
    assert sum(n for _, n in READS) == sum(r["head"] for r in rows)


def test_a_merged_index_file_keeps_a_columns_heads_together_and_answers_as_before(tmp_path: Path) -> None:
    manifest, paths = indexed_files(tmp_path, 4)
    merged, _ = copy_blobs(str(tmp_path / "merged.puffin"), manifest.entries.to_pylist())
    moved = IndexManifest.empty().with_definition(manifest.definitions[0]).with_entries(merged)
    rows = sorted(moved.entries.to_pylist(), key=lambda r: r["offset"])
    # the heads one after another, then the rests
    assert [r["offset"] for r in rows[1:]] == [r["offset"] + r["head"] for r in rows[:-1]]
    assert min(r["rest_offset"] for r in rows) == rows[-1]["offset"] + rows[-1]["head"]
    value = 2 * 5_000_000 + (2 * 1_000_000 + 3 * 7919) % 5_000_000  # row 3 of file 2
    for expr in (Compare(1, "=", value), Compare(1, "=", -1), Between(1, 7, 30_000_000), Between(1, 0, value)):
        whole = verdicts(manifest, paths, expr, cache=None)
        assert verdicts(moved, paths, expr, cache=None) == whole, expr
        assert verdicts(moved, paths, expr, cache=LruCache(100)) == whole, expr
    verdicts(moved, paths, Compare(1, "=", -1), cache=LruCache(100))
    assert [(str(tmp_path / "merged.puffin"), sum(r["head"] for r in rows))] == READS  # every head, one request
    # two files' heads with another's between them: one request still
    assert rows[1]["head"] <= APART_HEAD_GAP
    READS.clear()
    index_verdicts(moved, [paths[0], paths[2]], Compare(1, "=", -1), cache=LruCache(100), access=CountingAccess())
    assert len(READS) == 1 and READS[0][1] == rows[0]["head"] + rows[1]["head"] + rows[2]["head"]
    # a range wants the blobs whole: heads and rests in one round (here one request: they adjoin)
    verdicts(moved, paths, Between(1, 7, 30_000_000), cache=LruCache(100))
    assert len(READS) == 1 and READS[0][1] == sum(r["length"] for r in rows)
    # merged again (with other small files, say), each blob comes back as stored
    again, _ = copy_blobs(str(tmp_path / "again.puffin"), moved.entries.to_pylist())
    originals = {r["data_file"]: read_stored(r) for r in manifest.entries.to_pylist()}
    assert {e.data_file: read_stored(dataclasses.asdict(e)) for e in again} == originals


@pytest.mark.parametrize("blocks", [False, True])
def test_a_range_conjunct_is_read_only_for_the_files_the_equalitys_heads_leave(tmp_path: Path, blocks: bool) -> None:
    field_x = pa.field("x", pa.int64(), metadata={b"PARQUET:field_id": b"1"})
    field_y = pa.field("y", pa.int64(), metadata={b"PARQUET:field_id": b"2"})
    definitions = [IndexDefinition("x", "bitmap", {}, 1), IndexDefinition("y", "bitmap", {}, 2)]
    entries, paths = [], []
    for n in range(4):
        path = str(tmp_path / f"data-{n}.parquet")
        rng = np.random.default_rng(n)
        x = pa.array(rng.permutation(np.arange(40_000) * 3 + n), pa.int64())  # the files interleave in x
        y = pa.array(rng.integers(0, 1_000_000, 40_000), pa.int64())
        pq.write_table(pa.table([x, y], schema=pa.schema([field_x, field_y])), path, row_group_size=10_000)
        with _blocks_of(2048) if blocks else contextlib.nullcontext():
            entries += build_file_indexes(path, definitions, str(tmp_path / f"index-{n}.puffin")).entries
        paths.append(path)
    manifest = IndexManifest.empty().with_definition(definitions[0]).with_definition(definitions[1])
    manifest = manifest.with_entries(entries)
    rows = manifest.entries.to_pylist()
    expr = And((Compare(1, "=", 3 * 17 + 2), Compare(2, ">=", 10)))  # x's value is in file 2 alone
    whole = verdicts(manifest, paths, expr, cache=None)
    cold = verdicts(manifest, paths, expr, cache=LruCache(100))
    assert cold == whole and [cold[p].row_groups_kept for p in paths] == [0, 0, 1, 0]
    x_rows = [r for r in rows if r["field_id"] == 1]
    y_of_file_2 = next(r for r in rows if r["field_id"] == 2 and r["data_file"] == paths[2])
    # every file's head of x (with a dictionary in blocks, and the one block of it that would hold the
    # value: the files interleave in x), the rest of file 2's x (with its blocks read: the slices after
    # them), and y's blob of file 2 alone
    heads = [BITMAP.load(read_stored(r)[: r["head"]]) for r in x_rows]
    assert all((h.dictionary is None) == blocks for h in heads)
    read = [h.blocks.lengths[h.blocks.block_of(3 * 17 + 2)] if blocks else 0 for h in heads]  # type: ignore[union-attr,index]
    after_blocks = sum(heads[2].blocks.lengths) if blocks else 0  # type: ignore[union-attr]
    expected = sum(r["head"] for r in x_rows) + sum(read) + x_rows[2]["length"] - x_rows[2]["head"] - after_blocks
    assert sum(n for _, n in READS) == expected + y_of_file_2["length"]
    if blocks:  # the heads and a block each: a small part of the dictionaries
        assert sum(r["head"] for r in x_rows) + sum(read) < sum(r["length"] for r in x_rows) / 10


def wide_indexed_files(tmp_path: Path, files: int) -> tuple[IndexManifest, list[str]]:
    """``files`` Parquet files of 40,000 rows, ``x`` spread over the same wide range in every file, so
    that each file's dictionary is tens of kilobytes (written whole: format 2), indexed with bitmaps."""
    field = pa.field("x", pa.int64(), metadata={b"PARQUET:field_id": b"1"})
    definition = IndexDefinition("x", "bitmap", {}, 1)
    entries, paths = [], []
    for n in range(files):
        path = str(tmp_path / f"wide-{n}.parquet")
        values = pa.array(np.random.default_rng(n).integers(0, 10**12, 40_000), pa.int64())
        pq.write_table(pa.table([values], schema=pa.schema([field])), path, row_group_size=10_000)
        entries += build_file_indexes(path, [definition], str(tmp_path / f"wide-{n}.puffin")).entries
        paths.append(path)
    return IndexManifest.empty().with_definition(definition).with_entries(entries), paths


def test_a_merged_index_file_reads_the_blocks_one_value_needs_of_every_file_in_one_request(tmp_path: Path) -> None:
    manifest, paths = wide_indexed_files(tmp_path, 6)
    before = manifest.entries.to_pylist()
    assert all(read_stored(r)[:4] == b"ZBM2" for r in before)  # written whole: under ``BLOCKS_FROM``
    merged_path = str(tmp_path / "merged.puffin")
    merged, _ = copy_blobs(merged_path, before)
    moved = IndexManifest.empty().with_definition(manifest.definitions[0]).with_entries(merged)
    rows = moved.entries.to_pylist()
    assert all(read_stored(r)[:4] == b"ZBM3" and r["part_offsets"] for r in rows)  # merged: in blocks
    assert sum(r["head"] for r in rows) * 20 < sum(r["head"] for r in before)  # heads of a few fences
    present = pq.read_table(paths[3])["x"][17].as_py()
    probes = [Compare(1, "=", present), Compare(1, "=", present + 1), In(1, (present, 5, 10**12 - 3))]
    probes += [Between(1, present - 10**9, present + 10**9), Compare(1, "<", 10**9)]
    for expr in probes:
        whole = verdicts(manifest, paths, expr, cache=None)
        assert verdicts(moved, paths, expr, cache=None) == whole, expr
        assert verdicts(moved, paths, expr, cache=LruCache(100)) == whole, expr
    verdicts(moved, paths, Compare(1, "=", present + 1), cache=LruCache(100))  # in no file
    blocks = [BITMAP.load(read_stored(r)[: r["head"]]).blocks for r in rows]
    needed = [b.lengths[b.block_of(present + 1)] for b in blocks]  # type: ignore[union-attr,index]
    assert len(READS) == 2  # every head in one request, then every file's block that would hold it in one
    assert READS[0][1] == sum(r["head"] for r in rows)
    assert sum(needed) <= READS[1][1] < sum(r["length"] - r["head"] for r in rows) / 5
    # the file holding the value: its rest too, and the verdict keeps its row group
    cold = verdicts(moved, paths, Compare(1, "=", present), cache=LruCache(100))
    assert [cold[p].row_groups_kept for p in paths] == [0, 0, 0, 1, 0, 0] and len(READS) == 3
    assert READS[2][1] == rows[3]["length"] - rows[3]["head"] - sum(blocks[3].lengths)  # type: ignore[union-attr]  # its slices alone
    # a join's key set reads through the copies the same way
    keys = pa.array([present, 7], pa.int64())
    assert key_set_verdicts(moved, paths, [(1, keys)], cache=LruCache(100)) == key_set_verdicts(
        manifest, paths, [(1, keys)]
    )
    # merged again (with other small files, say): the blobs stay in blocks as they are, copied anew
    again, _ = copy_blobs(str(tmp_path / "again.puffin"), rows)
    assert {e.data_file: read_stored(dataclasses.asdict(e)) for e in again} == {
        r["data_file"]: read_stored(r) for r in rows
    }
    assert all(e.part_offsets for e in again)
    # the manifest keeps where the copies are; one written before it knew them reads the blocks from the rests
    reloaded = IndexManifest.from_bytes(moved.to_bytes())
    assert reloaded.entries["part_offsets"].to_pylist() == moved.entries["part_offsets"].to_pylist()
    older = (
        IndexManifest.empty()
        .with_definition(manifest.definitions[0])
        .with_entries(
            moved.entries.drop_columns(["part_offsets"]).append_column(
                "part_offsets", pa.nulls(len(rows), pa.list_(pa.int64()))
            )
        )
    )
    assert verdicts(older, paths, Compare(1, "=", present), cache=LruCache(100)) == cold


def test_a_damaged_copied_block_leaves_its_file_to_the_whole_blob(tmp_path: Path) -> None:
    manifest, paths = wide_indexed_files(tmp_path, 3)
    merged_path = tmp_path / "merged.puffin"
    merged, _ = copy_blobs(str(merged_path), manifest.entries.to_pylist())
    moved = IndexManifest.empty().with_definition(manifest.definitions[0]).with_entries(merged)
    present = pq.read_table(paths[1])["x"][5].as_py()
    expr = Compare(1, "=", present)
    expected = verdicts(manifest, paths, expr, cache=None)
    data = bytearray(merged_path.read_bytes())
    for entry in merged:  # every copied block damaged: the rests still hold their own
        for at in entry.part_offsets or ():
            data[at + 3] ^= 0xFF
    merged_path.write_bytes(bytes(data))
    assert verdicts(moved, paths, expr, cache=LruCache(100)) == expected
