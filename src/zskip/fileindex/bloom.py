"""Bloom filters in Parquet's split-block layout (SBBF), one per data file and one per row group.

Each filter is an array of 32-byte blocks of eight 32-bit words.  A value's 64-bit hash picks a
block with its upper half and sets one bit in each word with its lower half times eight odd salts
(the Parquet spec's).  Sized from the distinct count and the false-positive rate like Parquet:
``-8 * ndv / ln(1 - fpp ** (1 / 8))`` bits, rounded up to a power of two bytes.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from zskip.fileindex.hashing import plain_hashes

__all__ = ["DEFAULT_FPP", "BloomFilter", "BloomIndex", "FilterSet"]

DEFAULT_FPP = 0.01
SALT = np.array(
    [0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D, 0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31], dtype=np.uint32
)
MIN_BYTES = 32
MAX_BYTES = 128 * 1024 * 1024


def optimal_bytes(distinct: int, fpp: float) -> int:
    """Bytes of a filter for ``distinct`` values at false-positive rate ``fpp`` (a power of two)."""
    if not 0 < fpp < 1:
        raise ValueError(f"the false-positive rate must be between 0 and 1, got {fpp}")
    bits = -8 * max(distinct, 1) / math.log(1 - fpp ** (1 / 8))
    size = 1 << max(0, math.ceil(math.log2(bits / 8)))
    return min(max(size, MIN_BYTES), MAX_BYTES)


def _masks(hashes: np.ndarray) -> np.ndarray:
    """For each hash, its eight words' bits (shape ``(n, 8)``)."""
    low = hashes.astype(np.uint32)  # the lower 32 bits
    with np.errstate(over="ignore"):
        products = low[:, None] * SALT[None, :]
    return np.left_shift(np.uint32(1), products >> np.uint32(27))


@dataclass(frozen=True)
class BloomFilter:
    blocks: np.ndarray  # uint32, shape (blocks, 8)

    @classmethod
    def empty(cls, size_bytes: int) -> BloomFilter:
        return cls(np.zeros((size_bytes // 32, 8), dtype=np.uint32))

    def _block_of(self, hashes: np.ndarray) -> np.ndarray:
        upper = hashes >> np.uint64(32)
        return ((upper * np.uint64(len(self.blocks))) >> np.uint64(32)).astype(np.int64)

    def insert_hashes(self, hashes: np.ndarray) -> None:
        if len(hashes) == 0:
            return
        blocks = self._block_of(hashes)
        masks = _masks(hashes)
        for word in range(8):
            np.bitwise_or.at(self.blocks[:, word], blocks, masks[:, word])

    def might_contain_hashes(self, hashes: np.ndarray) -> np.ndarray:
        if len(hashes) == 0:
            return np.zeros(0, dtype=bool)
        stored = self.blocks[self._block_of(hashes)]
        masks = _masks(hashes)
        return np.all((stored & masks) == masks, axis=1)

    def to_bytes(self) -> bytes:
        return self.blocks.astype("<u4").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomFilter:
        if len(data) % 32 or not data:
            raise ValueError(f"a split-block bloom filter is whole 32-byte blocks, not {len(data)} bytes")
        return cls(np.frombuffer(data, dtype="<u4").astype(np.uint32).reshape(-1, 8))


@dataclass(frozen=True)
class BloomIndex:
    """A column's filters for one data file: the whole file, then each row group.

    Probes are hashed as ``value_type`` (the column's Arrow type), as the values were.
    """

    value_type: pa.DataType
    file: BloomFilter
    row_groups: tuple[BloomFilter, ...]

    @classmethod
    def build(cls, row_groups: list[pa.Array | pa.ChunkedArray], *, fpp: float = DEFAULT_FPP) -> BloomIndex:
        """Filters over the values of each row group of one column (nulls are not indexed)."""
        if not row_groups:
            raise ValueError("a bloom index needs the row groups of a file")
        value_type = row_groups[0].type
        hashes = [np.unique(plain_hashes(values)) for values in row_groups]
        every = np.unique(np.concatenate(hashes)) if hashes else np.zeros(0, np.uint64)
        whole = BloomFilter.empty(optimal_bytes(len(every), fpp))
        whole.insert_hashes(every)
        filters = []
        for part in hashes:
            bloom = BloomFilter.empty(optimal_bytes(len(part), fpp))
            bloom.insert_hashes(part)
            filters.append(bloom)
        return cls(value_type, whole, tuple(filters))

    def might_contain(self, values: pa.Array) -> tuple[bool, np.ndarray]:
        """Whether the file, and each row group, might hold any of ``values``."""
        return self.might_contain_hashes(plain_hashes(values))

    def might_contain_hashes(self, hashes: np.ndarray) -> tuple[bool, np.ndarray]:
        """``might_contain`` for values already hashed (a query hashes its literals once for every file)."""
        if len(hashes) == 0:
            return False, np.zeros(len(self.row_groups), dtype=bool)
        in_file = bool(self.file.might_contain_hashes(hashes).any())
        if not in_file:
            return False, np.zeros(len(self.row_groups), dtype=bool)
        groups = np.array([bool(f.might_contain_hashes(hashes).any()) for f in self.row_groups], dtype=bool)
        return True, groups

    def to_bytes(self) -> bytes:
        parts = [
            pa.schema([("v", self.value_type)]).serialize().to_pybytes(),
            self.file.to_bytes(),
            *(f.to_bytes() for f in self.row_groups),
        ]
        header = struct.pack(f"<I{len(parts)}I", len(parts), *(len(p) for p in parts))
        return header + b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> BloomIndex:
        try:
            (count,) = struct.unpack_from("<I", data)
            sizes = struct.unpack_from(f"<{count}I", data, 4)
            position = 4 + 4 * count
            value_type = pa.ipc.read_schema(pa.py_buffer(data[position : position + sizes[0]])).field("v").type
            position += sizes[0]
            filters = []
            for size in sizes[1:]:
                filters.append(BloomFilter.from_bytes(data[position : position + size]))
                position += size
        except (struct.error, ValueError, pa.ArrowException, KeyError) as exc:
            raise ValueError(f"damaged bloom index: {exc}") from None
        if position != len(data) or not filters:
            raise ValueError("damaged bloom index: sizes do not add up")
        return cls(value_type, filters[0], tuple(filters[1:]))

    def describe(self) -> dict[str, Any]:
        return {"file_bytes": self.file.blocks.nbytes, "row_groups": len(self.row_groups)}


@dataclass(frozen=True)
class FilterSet:
    """Many bloom filters in one array, probed together (one filter per data file of a column).

    ``blocks`` holds every filter's blocks back to back; filter ``i`` is ``sizes[i]`` blocks from
    ``offsets[i]``.  A query probes thousands of files' filters with a few numpy operations.
    """

    blocks: np.ndarray  # uint32, shape (total blocks, 8)
    offsets: np.ndarray  # int64 per filter
    sizes: np.ndarray  # uint64 per filter

    @classmethod
    def of(cls, filters: list[BloomFilter]) -> FilterSet:
        sizes = np.array([len(f.blocks) for f in filters], dtype=np.uint64)
        offsets = np.zeros(len(filters), dtype=np.int64)
        if len(filters) > 1:
            offsets[1:] = np.cumsum(sizes[:-1].astype(np.int64))
        blocks = np.concatenate([f.blocks for f in filters]) if filters else np.zeros((0, 8), np.uint32)
        return cls(blocks, offsets, sizes)

    def might_contain_hashes(self, which: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """For each filter in ``which`` (positions), whether it might hold any of ``hashes``."""
        found = np.zeros(len(which), dtype=bool)
        if len(which) == 0 or len(hashes) == 0:
            return found
        sizes, offsets = self.sizes[which], self.offsets[which]
        for value, mask in zip(hashes, _masks(hashes), strict=True):
            block = ((np.uint64(value) >> np.uint64(32)) * sizes) >> np.uint64(32)
            stored = self.blocks[offsets + block.astype(np.int64)]
            found |= np.all((stored & mask) == mask, axis=1)
        return found
