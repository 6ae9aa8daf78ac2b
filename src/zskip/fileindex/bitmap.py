"""Range-encoded bit-sliced bitmap index of one column of one data file (O'Neil & Quass).

Each row's value becomes a code: its position in the file's sorted dictionary of distinct values
(Spark's order: ``-0.0`` is ``0.0``, NaN above every number).  For each bit ``i`` of the codes the
index keeps the rows whose code has bit ``i`` clear (base-2 range encoding), plus the rows that are
not null.  "code <= c" then takes one bitmap operation per bit, so ``=``, ``<``, ``BETWEEN`` and
``IN`` cost O(log2 cardinality) operations whatever the cardinality; results are exact row sets,
which combine across columns with AND, OR and NOT.  Bitmaps are Roaring, in its portable format;
the dictionary is stored as a one-column Parquet file (delta-encoded integers compress well).

A blob is written so that its start can be read alone (format 2): the **head** (the dictionary and
the non-null rows, with its own checksum) comes before the **bit slices** (compressed together).
A condition whose value is in no row of the file, or in every non-null row, is answered from the
head; so on a cold plan an equality rules out most files after reading a quarter of their blobs.
An index loaded from its head alone raises ``SlicesNotRead`` where it needs the slices.  Blobs of
format 1 (one header, the dictionary, then every bitmap) still load whole.

A large dictionary of whole numbers, dates or timestamps (past ``BLOCKS_FROM`` bytes: a column of
nearly unique values in a large file, whose sorted dictionary is about as large as the column) is
stored in blocks (format 3): the head keeps the first value of each block and the last value, and the blocks follow
it, each with its own checksum, before the slices.  An equality then needs the head and the one
block that would hold its value (``with_blocks``): a few kilobytes where the whole dictionary is
tens of kilobytes per file.  When index files are merged, smaller dictionaries (past ``REBLOCK_FROM``)
go in blocks too, and the merged file keeps a copy of each column's blocks of every data file side by
side, so that the blocks one value needs, of every file, come in one request.
"""

from __future__ import annotations

import array
import functools
import json
import math
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap

from zskip.fileindex.bitmap_blocks import (
    BLOCK_VALUES,
    BLOCKS_FROM,
    REBLOCK_FROM,
    DictionaryBlocks,
    SlicesNotRead,
    blockable,
    dictionary_of,
    fence_keys,
    keys_of,
    parquet_of,
    type_tag,
)
from zskip.fileindex.literals import exact_scalar
from zskip.fileindex.puffin import checked_size

__all__ = ["RANGES_BEFORE_DECODING", "BitmapIndex", "bitmap_of", "head_length", "in_blocks", "stored_blocks"]

# A key set matching more separate runs of codes than this is answered by decoding every row's code
# (one pass over the bit slices) rather than by one range query per run.
RANGES_BEFORE_DECODING = 16

MAGIC = b"ZBM2"  # format 2; a format 1 blob starts with its header's length, then "{"
MAGIC_BLOCKS = b"ZBM3"  # format 3: format 2 with the dictionary in blocks after the head
_PREFIX = struct.Struct("<4sII")  # magic, head length (bytes from the blob's start), crc32 of the head after it


def head_length(blob: bytes) -> int | None:
    """How many bytes at the start of a bitmap blob answer without its bit slices (``None``: format 1)."""
    if len(blob) < _PREFIX.size or blob[:4] not in (MAGIC, MAGIC_BLOCKS):
        return None
    return int(_PREFIX.unpack_from(blob)[1])


@dataclass(frozen=True)
class SliceLayout:
    """Where a format 2 blob's bit slices are, after its head: each one's length once decompressed
    together, the compressed section's length and checksum."""

    lengths: tuple[int, ...]
    stored: int
    checksum: int


def bitmap_of(positions: np.ndarray) -> BitMap:
    """A Roaring bitmap of sorted row positions."""
    buffer = array.array("I")
    buffer.frombytes(np.ascontiguousarray(positions, dtype=np.uint32).tobytes())
    return BitMap(buffer)


def _normalise(values: pa.Array) -> pa.Array:
    """Spark's equality on floats: ``-0.0`` equals ``0.0`` (NaN already sorts last and equals itself)."""
    if pa.types.is_floating(values.type):
        return pc.if_else(pc.equal(values, 0), pa.scalar(0.0, values.type), values)
    if pa.types.is_dictionary(values.type):
        return _normalise(values.cast(values.type.value_type))
    return values


@dataclass(frozen=True)
class BitmapIndex:
    rows: int
    dictionary: pa.Array | None  # distinct non-null values, ascending in Spark's order (None: in blocks)
    not_null: BitMap
    stored_bits: tuple[BitMap, ...] | None  # bit i: non-null rows whose code has bit i == 0 (None: not read)
    layout: SliceLayout | None = None  # where the slices are, when only the head was read
    blocks: DictionaryBlocks | None = None  # a dictionary stored in blocks, read from the head (``dictionary`` None)

    @property
    def clear_bits(self) -> tuple[BitMap, ...]:
        """The bit slices: ``clear_bits[i]`` holds the non-null rows whose code has bit ``i`` clear."""
        if self.stored_bits is None:
            raise SlicesNotRead("this bitmap index was read without its bit slices")
        return self.stored_bits

    @property
    def complete(self) -> bool:
        return self.stored_bits is not None

    @classmethod
    def build(cls, values: pa.Array | pa.ChunkedArray) -> BitmapIndex:
        """Index ``values`` (one column of a whole data file, rows in file order)."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        values = _normalise(values)
        valid = values.is_valid().to_numpy(zero_copy_only=False)
        present = values.filter(values.is_valid())
        dictionary = pc.unique(present)
        dictionary = dictionary.take(pc.sort_indices(dictionary))
        codes = pc.index_in(present, value_set=dictionary).to_numpy(zero_copy_only=False).astype(np.int64)
        positions = np.flatnonzero(valid)
        width = max(1, math.ceil(math.log2(len(dictionary)))) if len(dictionary) > 1 else 1
        clear = tuple(bitmap_of(positions[(codes >> bit) & 1 == 0]) for bit in range(width))
        return cls(len(values), dictionary, bitmap_of(positions), clear)

    @property
    def cardinality(self) -> int:
        return len(self.dictionary) if self.dictionary is not None else self._blocks.cardinality

    @property
    def value_type(self) -> pa.DataType:
        return self.dictionary.type if self.dictionary is not None else self._blocks.value_type

    @functools.cached_property
    def values(self) -> pa.Array:
        """The whole dictionary (``SlicesNotRead`` when it is stored in blocks and was read from the head)."""
        return self.dictionary if self.dictionary is not None else self._blocks.all_values()

    @property
    def _blocks(self) -> DictionaryBlocks:
        assert self.blocks is not None, "a bitmap index holds its dictionary or its blocks"
        return self.blocks

    def with_blocks(self, stored: Mapping[int, bytes]) -> BitmapIndex:
        """This index (read from its head) with the dictionary's blocks ``stored`` (each as stored)."""
        if self.dictionary is not None or not stored:
            return self
        try:
            return replace(self, blocks=self._blocks.with_blocks(stored))
        except Exception as exc:
            raise ValueError(f"damaged bitmap index: {exc}") from None

    def all_rows(self) -> BitMap:
        everything = BitMap()
        everything.add_range(0, self.rows)
        return everything

    def nulls(self) -> BitMap:
        return self.all_rows() - self.not_null

    def at_most(self, code: int) -> BitMap:
        """Rows whose code is ``<= code`` (RangeEval-Opt)."""
        if code < 0:
            return BitMap()
        if code >= self.cardinality - 1:
            return self.not_null.copy()
        result = self.clear_bits[0].copy() if code & 1 == 0 else self.not_null.copy()
        for bit in range(1, len(self.clear_bits)):
            if (code >> bit) & 1:
                result |= self.clear_bits[bit]
            else:
                result &= self.clear_bits[bit]
        return result

    def with_code(self, code: int) -> BitMap:
        """Rows whose code is ``code``: one operation per bit slice (``codes_between`` of one code
        would take two ``at_most``, twice as many)."""
        if not 0 <= code < self.cardinality:
            return BitMap()
        if self.cardinality == 1:  # one value in every non-null row: no slice needed
            return self.not_null.copy()
        result = self.not_null.copy()
        for bit, clear in enumerate(self.clear_bits):
            if (code >> bit) & 1:
                result -= clear
            else:
                result &= clear
        return result

    def codes_between(self, low: int, high: int) -> BitMap:
        """Rows whose code is in ``[low, high)``."""
        if high <= low:
            return BitMap()
        if low <= 0 and high >= self.cardinality:  # every value: no slice needed
            return self.not_null.copy()
        if high - low == 1:  # an equality: the most common condition an index answers
            return self.with_code(low)
        return self.at_most(high - 1) - self.at_most(low - 1)

    def rows_with(self, keys: pa.Array) -> BitMap:
        """Rows whose value is one of ``keys`` (of the dictionary's type): the dictionary is looked up in
        the keys at once.  A few runs of consecutive matching codes are taken as ranges of codes (each
        O(log2 cardinality) bitmap operations); many runs (the customers of a region are scattered
        over the key range) decode every row's code from the bit slices once instead."""
        if self.cardinality == 0 or len(keys) == 0:
            return BitMap()
        if self.dictionary is None:  # in blocks: each key looked up in the block that would hold it
            codes = self._blocks.codes_of(keys_of(keys))
            hit = np.zeros(self.cardinality, dtype=bool)
            hit[codes] = True
        else:
            hit = pc.is_in(self.dictionary, value_set=keys).to_numpy(zero_copy_only=False)
            codes = np.flatnonzero(hit)
        if len(codes) == 0:
            return BitMap()
        if len(codes) == self.cardinality:
            return self.not_null.copy()
        breaks = np.flatnonzero(np.diff(codes) != 1)
        if len(breaks) >= RANGES_BEFORE_DECODING:
            present, row_codes = self.row_codes()
            return bitmap_of(present[hit[row_codes]])
        starts = np.concatenate([[codes[0]], codes[breaks + 1]])
        ends = np.concatenate([codes[breaks], [codes[-1]]])
        rows = BitMap()
        for low, high in zip(starts.tolist(), ends.tolist(), strict=True):
            rows |= self.codes_between(low, high + 1)
        return rows

    def row_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """The non-null rows (ascending) and each one's code, rebuilt from the bit slices."""
        present = np.frombuffer(self.not_null.to_array(), dtype=np.uint32)
        codes = np.zeros(self.rows, dtype=np.int64)
        for bit, clear in enumerate(self.clear_bits):
            codes[np.frombuffer((self.not_null - clear).to_array(), dtype=np.uint32)] |= 1 << bit
        return present, codes[present]

    def bounds(self, value: Any) -> tuple[int, int]:
        """``(codes below value, codes at or below value)`` in Spark's order."""
        if self.dictionary is None:
            return self._blocks.bounds(value)
        scalar = exact_scalar(value, self.dictionary.type)
        if pa.types.is_floating(self.dictionary.type) and math.isnan(scalar.as_py()):
            numbers = int(pc.sum(pc.invert(pc.is_nan(self.dictionary))).as_py() or 0)
            return numbers, self.cardinality
        sorted_numbers = self._numbers
        if sorted_numbers is not None:  # a binary search (NaN sorts last in numpy too)
            number = scalar.as_py()
            return (
                int(np.searchsorted(sorted_numbers, number, side="left")),
                int(np.searchsorted(sorted_numbers, number, side="right")),
            )
        below = int(pc.sum(pc.less(self.dictionary, scalar)).as_py() or 0)
        at_or_below = int(pc.sum(pc.less_equal(self.dictionary, scalar)).as_py() or 0)
        return below, at_or_below

    @functools.cached_property
    def _numbers(self) -> np.ndarray | None:
        """The dictionary as a numpy array when it holds integers or floats (searched, not scanned)."""
        kind = self.values.type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            return self.values.to_numpy(zero_copy_only=False)
        return None

    def prefix_codes(self, prefix: str) -> tuple[int, int]:
        """Codes ``[first, end)`` of the dictionary's values starting with ``prefix`` (they are contiguous)."""
        starts = pc.starts_with(self.values.cast(pa.string()), prefix).to_numpy(zero_copy_only=False)
        hits = np.flatnonzero(starts)
        return (int(hits[0]), int(hits[-1]) + 1) if len(hits) else (0, 0)

    def to_bytes(self) -> bytes:
        """Format 2: the prefix, the head (header, non-null rows, dictionary), then the slices compressed;
        format 3 for a dictionary of whole numbers, dates or timestamps past ``BLOCKS_FROM`` bytes: the
        head holds the first value of each block and the last value, and the blocks come after it."""
        values = self.values
        present = BitMap(self.not_null)
        present.run_optimize()  # a file without nulls: one run
        not_null = present.serialize()
        slices = [b.serialize() for b in self.clear_bits]
        stored = pa.Codec("zstd").compress(b"".join(slices), asbytes=True)
        header: dict[str, Any] = {
            "rows": self.rows,
            "not_null": len(not_null),
            "slices": [len(b) for b in slices],
            "slices_stored": len(stored),
            "slices_crc32": zlib.crc32(stored),
        }
        size = BLOCK_VALUES
        dictionary = parquet_of(values)
        if len(dictionary) <= BLOCKS_FROM or len(values) <= size or not blockable(values.type):
            header["dictionary"] = len(dictionary)
            head = _with_header(header) + not_null + dictionary
            return _PREFIX.pack(MAGIC, _PREFIX.size + len(head), zlib.crc32(head)) + head + stored
        return _in_blocks(header, not_null, values, size) + stored

    @classmethod
    def from_bytes(cls, data: bytes) -> BitmapIndex:
        """A blob, whole or (format 2) its head alone: then the slices are read later (``with_slices``)."""
        try:
            if data[:4] in (MAGIC, MAGIC_BLOCKS):
                return cls._from_v2(data)
            return cls._from_v1(data)
        except SlicesNotRead:
            raise
        except Exception as exc:  # any damage surfaces as one error type
            raise ValueError(f"damaged bitmap index: {exc}") from None

    @classmethod
    def _from_v2(cls, data: bytes) -> BitmapIndex:
        _, size, checksum = _PREFIX.unpack_from(data)
        head = data[_PREFIX.size : size]
        if len(head) != size - _PREFIX.size or zlib.crc32(head) != checksum:
            raise ValueError("the head's checksum does not match")
        header, stored_not_null, stored_dictionary = _head_parts(head)
        not_null = BitMap.deserialize(stored_not_null)
        layout = SliceLayout(tuple(header["slices"]), int(header["slices_stored"]), int(header["slices_crc32"]))
        if data[:4] == MAGIC_BLOCKS:  # the head holds each block's first value, then the last value
            keys, kind = fence_keys(header, stored_dictionary)
            blocks = DictionaryBlocks(
                size=int(header["block_values"]),
                cardinality=int(header["cardinality"]),
                fences=keys[:-1],
                last=int(keys[-1]),
                lengths=tuple(int(n) for n in header["blocks"]),
                checksums=tuple(int(n) for n in header["blocks_crc32"]),
                value_type=kind,
            )
            index = cls(int(header["rows"]), None, not_null, None, layout, blocks)
        else:
            dictionary = dictionary_of(stored_dictionary).combine_chunks()
            index = cls(int(header["rows"]), dictionary, not_null, None, layout)
        return index.with_slices(data[size:]) if len(data) > size else index

    def with_slices(self, stored: bytes) -> BitmapIndex:
        """This index (read from its head) with the bit slices, given the bytes after the head (a
        dictionary in blocks: the blocks, then the slices)."""
        layout = self.layout
        if layout is None:
            return self
        index = self
        if self.dictionary is None:  # the blocks are kept as stored, each decoded where a condition looks in it
            blocks = self._blocks
            position = sum(blocks.lengths)
            try:
                index = replace(self, blocks=blocks.with_stored(stored[:position]))
            except Exception as exc:
                raise ValueError(f"damaged bitmap index: {exc}") from None
            stored = stored[position:]
        return index._with_slices(stored, layout)

    @property
    def blocks_span(self) -> int:
        """Bytes the dictionary's blocks take after the head, when some were read with the head (the
        slices after them complete this index: ``with_slices_after_blocks``); else 0."""
        blocks = self.blocks
        if self.layout is None or self.dictionary is not None or blocks is None or not blocks.loaded:
            return 0
        return sum(blocks.lengths)

    def with_slices_after_blocks(self, stored: bytes, fetch: Callable[[int], bytes]) -> BitmapIndex:
        """This index (read from its head, with some of its blocks) with the bit slices ``stored`` (the
        bytes after the blocks); ``fetch`` reads a block by number when a condition looks in another."""
        assert self.layout is not None and self.blocks is not None, "an index of a dictionary in blocks, from its head"
        return replace(self, blocks=replace(self.blocks, fetch=fetch))._with_slices(stored, self.layout)

    def _with_slices(self, stored: bytes, layout: SliceLayout) -> BitmapIndex:
        try:
            if len(stored) != layout.stored or zlib.crc32(stored) != layout.checksum:
                raise ValueError("the bit slices' checksum does not match")
            size = checked_size(sum(layout.lengths), len(stored), "a bitmap's bit slices")
            raw = pa.Codec("zstd").decompress(stored, decompressed_size=size, asbytes=True)
            bits, position = [], 0
            for length in layout.lengths:
                bits.append(BitMap.deserialize(raw[position : position + length]))
                position += length
        except Exception as exc:
            raise ValueError(f"damaged bitmap index: {exc}") from None
        return replace(self, stored_bits=tuple(bits), layout=None)

    @classmethod
    def _from_v1(cls, data: bytes) -> BitmapIndex:
        (size,) = struct.unpack_from("<I", data)
        header = json.loads(data[4 : 4 + size])
        position = 4 + size
        dictionary = dictionary_of(data[position : position + header["dictionary"]])
        position += header["dictionary"]
        bitmaps = []
        for length in header["bitmaps"]:
            bitmaps.append(BitMap.deserialize(data[position : position + length]))
            position += length
        return cls(int(header["rows"]), dictionary.combine_chunks(), bitmaps[0], tuple(bitmaps[1:]))


def _with_header(header: dict[str, Any]) -> bytes:
    encoded = json.dumps(header).encode()
    return struct.pack("<I", len(encoded)) + encoded


def _head_parts(head: bytes) -> tuple[dict[str, Any], bytes, bytes]:
    """A format 2 or 3 head (after the prefix) as its header, the stored non-null rows and the stored
    dictionary (of format 3: each block's first value and the last value)."""
    (length,) = struct.unpack_from("<I", head)
    header = json.loads(head[4 : 4 + length])
    at = 4 + length + header["not_null"]
    return header, head[4 + length : at], head[at : at + header["dictionary"]]


def _in_blocks(header: dict[str, Any], not_null: bytes, values: pa.Array, size: int) -> bytes:
    """The prefix, head and blocks of a format 3 blob of the dictionary ``values`` in blocks of ``size``
    (``header``: the slices' part of it; the slices follow what this returns)."""
    blocks = [parquet_of(values.slice(start, size)) for start in range(0, len(values), size)]
    fence_values = values.take(pa.array([*range(0, len(values), size), len(values) - 1]))
    fences = parquet_of(fence_values)
    header = header | {
        "dictionary": len(fences),
        # the fences' keys and type again, read without decoding the Parquet file (``fence_keys``)
        "fence_keys": keys_of(fence_values).tolist(),
        "key_type": type_tag(values.type),
        "cardinality": len(values),
        "block_values": size,
        "blocks": [len(b) for b in blocks],
        "blocks_crc32": [zlib.crc32(b) for b in blocks],
    }
    head = _with_header(header) + not_null + fences
    return _PREFIX.pack(MAGIC_BLOCKS, _PREFIX.size + len(head), zlib.crc32(head)) + head + b"".join(blocks)


def in_blocks(blob: bytes, *, larger_than: int | None = None) -> bytes:
    """``blob`` (a whole format 2 blob, checked) with its dictionary in blocks (format 3) when the
    dictionary is of whole numbers, dates or timestamps, past ``larger_than`` bytes (``REBLOCK_FROM``)
    and more than a block of values; else ``blob`` as it is.  The non-null rows and the bit slices are
    kept as stored."""
    larger_than = REBLOCK_FROM if larger_than is None else larger_than
    if blob[:4] != MAGIC:
        return blob
    _, size, _ = _PREFIX.unpack_from(blob)
    header, not_null, dictionary = _head_parts(blob[_PREFIX.size : size])
    if header["dictionary"] <= larger_than:
        return blob
    values = dictionary_of(dictionary).combine_chunks()
    if len(values) <= BLOCK_VALUES or not blockable(values.type):
        return blob
    slices = {key: header[key] for key in ("rows", "not_null", "slices", "slices_stored", "slices_crc32")}
    return _in_blocks(slices, not_null, values, BLOCK_VALUES) + blob[size:]


def stored_blocks(blob: bytes) -> list[tuple[int, bytes]]:
    """The key of the first value of each block of a format 3 blob's dictionary (``keys_of``) and the
    block as stored, in order (none for a blob of another format).  ``blob``: whole, or its head and blocks."""
    if blob[:4] != MAGIC_BLOCKS:
        return []
    size = head_length(blob)
    assert size is not None
    blocks = BitmapIndex.from_bytes(blob[:size]).blocks
    assert blocks is not None
    out, position = [], size
    for fence, length in zip(blocks.fences.tolist(), blocks.lengths, strict=True):
        out.append((int(fence), blob[position : position + length]))
        position += length
    return out
