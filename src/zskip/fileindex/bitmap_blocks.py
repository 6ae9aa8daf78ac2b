"""A bitmap index's dictionary in blocks (format 3): where each block is, the first value of each and
the last value, and the blocks read so far; a dictionary stored as a one-column Parquet file; the keys
a dictionary of whole numbers, dates or timestamps orders by.  ``zskip.fileindex.bitmap`` holds the
index and its blob's format."""

from __future__ import annotations

import functools
import io
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow._parquet import ParquetReader

from zskip.fileindex.answers import RestNotRead
from zskip.fileindex.literals import exact_scalar

__all__ = [
    "BLOCKS_FROM",
    "BLOCK_VALUES",
    "REBLOCK_FROM",
    "DictionaryBlocks",
    "SlicesNotRead",
    "blockable",
    "dictionary_of",
    "fence_keys",
    "keys_of",
    "parquet_of",
    "type_tag",
]

# A dictionary of whole numbers, dates or timestamps larger than ``BLOCKS_FROM`` bytes stored whole is
# stored in blocks of ``BLOCK_VALUES`` values.  Reading a block is one more request per file, and on an
# object store a request costs about what a few hundred kilobytes of transfer do (``zskip.tablefiles.
# index_blobs.BLOB_GAP``): a smaller dictionary is cheaper read whole with the heads of its neighbours.
BLOCK_VALUES = 2048
BLOCKS_FROM = 256 << 10
# A merged index file keeps a copy of every dictionary block of a column side by side, ordered by each
# block's first value (``zskip.fileindex.build.copy_blobs``): the blocks that would hold one value, of
# every data file, then lie close together and come in one request.  So when index files are merged,
# dictionaries past this many bytes are stored in blocks (``in_blocks``), where a file's own blocks
# would each have been a request of their own.
REBLOCK_FROM = 16 << 10


class SlicesNotRead(RestNotRead):
    """An index loaded from its head alone was asked something only its bit slices answer."""


@dataclass(frozen=True)
class DictionaryBlocks:
    """A dictionary stored in blocks (format 3): where each block is after the head, the first value of
    each and the last value (as whole-number keys, ``keys_of``), and the blocks read so far."""

    size: int  # values in each block (the last may hold fewer)
    cardinality: int
    fences: np.ndarray  # the key of each block's first value
    last: int  # the key of the dictionary's last value
    lengths: tuple[int, ...]  # stored bytes of each block, one after another after the head
    checksums: tuple[int, ...]
    value_type: pa.DataType
    loaded: tuple[tuple[int, np.ndarray], ...] = ()  # (block, its values' keys) read so far
    # every block as stored, checked (read with the slices): each is decoded when first needed, so a
    # whole blob costs a plan only the blocks its conditions look in
    stored: bytes | None = field(default=None, repr=False)
    # reads a block not read yet, by number (an index completed with its slices alone: the blocks
    # its first conditions needed were read, another condition may look in another)
    fetch: Callable[[int], bytes] | None = field(default=None, compare=False, repr=False)
    _decoded: dict[int, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def keys_in(self, block: int) -> np.ndarray:
        """The keys of ``block``'s values; ``SlicesNotRead`` when it was not read (and cannot be fetched)."""
        keys = dict(self.loaded).get(block)
        if keys is not None:
            return keys
        if block not in self._decoded:
            self._decoded[block] = keys_of(self.decode(block, self._stored_block(block)))
        return self._decoded[block]

    def _stored_block(self, block: int) -> bytes:
        if self.stored is not None:
            start = self.start_of(block)
            return self.stored[start : start + self.lengths[block]]
        if self.fetch is not None:
            return self.fetch(block)
        raise SlicesNotRead(f"block {block} of this bitmap index's dictionary was not read")

    def with_stored(self, stored: bytes) -> DictionaryBlocks:
        """These blocks with every block as stored (``stored``: the blocks one after another), checked."""
        if len(stored) != sum(self.lengths):
            raise ValueError("the dictionary's blocks are not as long as its head says")
        position = 0
        for block, length in enumerate(self.lengths):
            if zlib.crc32(stored[position : position + length]) != self.checksums[block]:
                raise ValueError(f"block {block} of the dictionary: its checksum does not match")
            position += length
        return replace(self, stored=stored, _decoded={})

    def all_values(self) -> pa.Array:
        """Every value of the dictionary (``SlicesNotRead`` unless every block was read or can be fetched)."""
        if self.stored is None and self.fetch is None:
            raise SlicesNotRead("this bitmap index's dictionary is in blocks, read from its head alone")
        return pa.concat_arrays([self.decode(block, self._stored_block(block)) for block in range(len(self.lengths))])

    def key(self, value: Any) -> int:
        """``value`` as a key (``InexactLiteral`` when no value of the dictionary's type is it exactly)."""
        try:
            return _cached_key(value, type(value).__qualname__, self.value_type)
        except TypeError:  # an unhashable literal: converted each time
            return _key(value, self.value_type)

    def block_of(self, key: int) -> int | None:
        """The block that holds ``key`` if any block does (``None``: beyond the first or last value)."""
        if key < int(self.fences[0]) or key > self.last:
            return None
        return int(np.searchsorted(self.fences, key, side="right")) - 1

    def start_of(self, block: int) -> int:
        """Where ``block`` starts, in bytes after the head."""
        return sum(self.lengths[:block])

    def bounds(self, value: Any) -> tuple[int, int]:
        """``(codes below value, codes at or below value)``; ``SlicesNotRead`` when the block that would
        hold it was not read."""
        key = self.key(value)
        block = self.block_of(key)
        if block is None:
            return (0, 0) if key < int(self.fences[0]) else (self.cardinality, self.cardinality)
        keys = self.keys_in(block)
        base = block * self.size
        return base + int(np.searchsorted(keys, key, side="left")), base + int(np.searchsorted(keys, key, side="right"))

    def blocks_of(self, keys: np.ndarray) -> set[int]:
        """The blocks that would hold ``keys`` (whole-number keys; those beyond the first or last value need none)."""
        inside = keys[(keys >= self.fences[0]) & (keys <= self.last)]
        return set(np.unique(np.searchsorted(self.fences, inside, side="right") - 1).tolist())

    def codes_of(self, keys: np.ndarray) -> np.ndarray:
        """The codes of those of ``keys`` the dictionary holds, ascending; ``SlicesNotRead`` when a block
        that would hold one was not read."""
        found = []
        inside = np.unique(keys[(keys >= self.fences[0]) & (keys <= self.last)])
        blocks = np.searchsorted(self.fences, inside, side="right") - 1
        for block in np.unique(blocks).tolist():
            values = self.keys_in(block)
            mine = inside[blocks == block]
            at = np.searchsorted(values, mine)
            hit = at < len(values)
            hit[hit] = values[at[hit]] == mine[hit]
            found.append(block * self.size + at[hit])
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def with_blocks(self, stored: Mapping[int, bytes]) -> DictionaryBlocks:
        """These blocks with the blocks ``stored`` (each as stored) read."""
        loaded = dict(self.loaded)
        for block, data in stored.items():
            loaded[block] = keys_of(self.decode(block, data))
        return replace(self, loaded=tuple(sorted(loaded.items(), key=lambda item: item[0])))

    def decode(self, block: int, data: bytes) -> pa.Array:
        if len(data) != self.lengths[block] or zlib.crc32(data) != self.checksums[block]:
            raise ValueError(f"block {block} of the dictionary: its checksum does not match")
        return dictionary_of(data).combine_chunks()


@functools.lru_cache(maxsize=1024)
def _cached_key(value: Any, value_type: str, kind: pa.DataType) -> int:
    # one query asks each file's dictionary for the same few values; value_type keeps 1, 1.0 and True
    # apart (they hash alike); exceptions are never cached
    return _key(value, kind)


def _key(value: Any, kind: pa.DataType) -> int:
    return int(keys_of(pa.array([exact_scalar(value, kind)], kind))[0])


def dictionary_of(stored: bytes) -> pa.ChunkedArray:
    """The dictionary a blob stores as a one-column Parquet file."""
    # pyarrow's reader without ``pq.ParquetFile``'s wrapping: a quarter less time on files this small,
    # of which a cold plan reads one or two per candidate file
    reader = ParquetReader()
    reader.open(pa.BufferReader(stored), pre_buffer=False)
    reader.set_use_threads(False)
    return reader.read_column(0)


def parquet_of(values: pa.Array) -> bytes:
    """``values`` as a one-column Parquet file (delta-encoded where they are whole numbers)."""
    sink = io.BytesIO()
    encoding = {"v": "DELTA_BINARY_PACKED"} if _delta_friendly(values.type) else None
    pq.write_table(
        pa.table({"v": values}),
        sink,
        compression="zstd",
        use_dictionary=False,
        column_encoding=encoding,
        write_statistics=False,
    )
    return sink.getvalue()


def fence_keys(header: dict[str, Any], stored: bytes) -> tuple[np.ndarray, pa.DataType]:
    """The keys of a format 3 head's fences and the dictionary's type: from its header when it
    records them (a cold plan reads a head per candidate file, and a Parquet file costs far more to
    read than a list of numbers), else from the Parquet file of fences (heads written before headers recorded them)."""
    keys, tag = header.get("fence_keys"), header.get("key_type")
    if keys is not None and tag is not None:
        return np.asarray(keys, dtype=np.int64), _type_of_tag(tag)
    fences = dictionary_of(stored).combine_chunks()
    return keys_of(fences), fences.type


def type_tag(kind: pa.DataType) -> dict[str, Any]:
    """A blockable type (``blockable``) as a header's value: its alias, and a timestamp's zone."""
    if pa.types.is_timestamp(kind):
        return {"alias": f"timestamp[{kind.unit}]", "tz": kind.tz}
    return {"alias": "date32" if pa.types.is_date32(kind) else str(kind)}


def _type_of_tag(tag: dict[str, Any]) -> pa.DataType:
    kind = pa.type_for_alias(tag["alias"])
    if pa.types.is_timestamp(kind) and tag.get("tz"):
        return pa.timestamp(kind.unit, tz=tag["tz"])
    if not blockable(kind):
        raise ValueError(f"a dictionary in blocks of type {kind}")
    return kind


def blockable(kind: pa.DataType) -> bool:
    """Whether a dictionary of ``kind`` may be stored in blocks: its values order as whole-number keys."""
    if pa.types.is_integer(kind):
        return not (pa.types.is_unsigned_integer(kind) and kind.bit_width == 64)  # beyond int64 keys
    return pa.types.is_date32(kind) or pa.types.is_timestamp(kind)


def keys_of(values: pa.Array) -> np.ndarray:
    """The values of a blockable dictionary as int64 keys in their order (days; a timestamp's units)."""
    if pa.types.is_date32(values.type):
        values = values.cast(pa.int32())
    elif pa.types.is_timestamp(values.type):
        values = values.cast(pa.int64())
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64)


def _delta_friendly(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_date32(kind) or pa.types.is_timestamp(kind)
