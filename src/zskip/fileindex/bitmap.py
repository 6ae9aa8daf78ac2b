"""Range-encoded bit-sliced bitmap index of one column of one data file (O'Neil & Quass).

Each row's value becomes a code: its position in the file's sorted dictionary of distinct values
(Spark's order: ``-0.0`` is ``0.0``, NaN above every number).  For each bit ``i`` of the codes the
index keeps the rows whose code has bit ``i`` clear (base-2 range encoding), plus the rows that are
not null.  "code <= c" then takes one bitmap operation per bit, so ``=``, ``<``, ``BETWEEN`` and
``IN`` cost O(log2 cardinality) operations whatever the cardinality; results are exact row sets,
which combine across columns with AND, OR and NOT.  Bitmaps are Roaring, in its portable format;
the dictionary is stored as a one-column Parquet file (delta-encoded integers compress well).
"""

from __future__ import annotations

import array
import functools
import io
import json
import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyroaring import BitMap

from zskip.fileindex.literals import exact_scalar

__all__ = ["RANGES_BEFORE_DECODING", "BitmapIndex", "bitmap_of"]

# A key set matching more separate runs of codes than this is answered by decoding every row's code
# (one pass over the bit slices) rather than by one range query per run.
RANGES_BEFORE_DECODING = 16


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
    dictionary: pa.Array  # distinct non-null values, ascending in Spark's order
    not_null: BitMap
    clear_bits: tuple[BitMap, ...]  # clear_bits[i]: non-null rows whose code has bit i == 0

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
        return len(self.dictionary)

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
        if high - low == 1:  # an equality: the most common condition an index answers
            return self.with_code(low)
        return self.at_most(high - 1) - self.at_most(low - 1)

    def rows_with(self, keys: pa.Array) -> BitMap:
        """Rows whose value is one of ``keys`` (of the dictionary's type): the dictionary is looked up in
        the keys at once.  A few runs of consecutive matching codes are taken as ranges of codes (each
        O(log2 cardinality) bitmap operations); many runs (the customers of a region are scattered
        over the key range) decode every row's code from the bit slices once instead."""
        if len(self.dictionary) == 0 or len(keys) == 0:
            return BitMap()
        hit = pc.is_in(self.dictionary, value_set=keys).to_numpy(zero_copy_only=False)
        codes = np.flatnonzero(hit)
        if len(codes) == 0:
            return BitMap()
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
        kind = self.dictionary.type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            return self.dictionary.to_numpy(zero_copy_only=False)
        return None

    def prefix_codes(self, prefix: str) -> tuple[int, int]:
        """Codes ``[first, end)`` of the dictionary's values starting with ``prefix`` (they are contiguous)."""
        starts = pc.starts_with(self.dictionary.cast(pa.string()), prefix).to_numpy(zero_copy_only=False)
        hits = np.flatnonzero(starts)
        return (int(hits[0]), int(hits[-1]) + 1) if len(hits) else (0, 0)

    def to_bytes(self) -> bytes:
        sink = io.BytesIO()
        encoding = {"v": "DELTA_BINARY_PACKED"} if _delta_friendly(self.dictionary.type) else None
        pq.write_table(
            pa.table({"v": self.dictionary}),
            sink,
            compression="zstd",
            use_dictionary=False,
            column_encoding=encoding,
            write_statistics=False,
        )
        bitmaps = [self.not_null, *self.clear_bits]
        blobs = [b.serialize() for b in bitmaps]
        header = json.dumps({"rows": self.rows, "dictionary": len(sink.getvalue()), "bitmaps": [len(b) for b in blobs]})
        encoded = header.encode()
        return struct.pack("<I", len(encoded)) + encoded + sink.getvalue() + b"".join(blobs)

    @classmethod
    def from_bytes(cls, data: bytes) -> BitmapIndex:
        try:
            (size,) = struct.unpack_from("<I", data)
            header = json.loads(data[4 : 4 + size])
            position = 4 + size
            dictionary = pq.read_table(io.BytesIO(data[position : position + header["dictionary"]]))["v"]
            position += header["dictionary"]
            bitmaps = []
            for length in header["bitmaps"]:
                bitmaps.append(BitMap.deserialize(data[position : position + length]))
                position += length
        except Exception as exc:  # any damage surfaces as one error type
            raise ValueError(f"damaged bitmap index: {exc}") from None
        return cls(int(header["rows"]), dictionary.combine_chunks(), bitmaps[0], tuple(bitmaps[1:]))


def _delta_friendly(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_date32(kind) or pa.types.is_timestamp(kind)
