"""A data file's footer as index files keep it: its row-group facts as Arrow arrays, then the footer.

Planning needs, per row group, its rows, byte range and each column's min, max, null count and
value count.  Parsing a Parquet footer and asking pyarrow for each column chunk's statistics costs
about a millisecond per file, and a quarter of one per file and column.  A copy carries those
facts already as Arrow arrays, one row per row group (worked out on the executor that builds the
file's indexes, by the code that would work them out from the footer on the driver), so a cold
plan reads the copies of many files in one request and builds its per-column arrays without a
Python step per row group.  The footer itself follows, parsed only for a column whose bounds are
not among the arrays: values that do not come back from one Arrow array exactly as the footer's
statistics give them (a float NaN, say).

Columns are named by Iceberg field id (stored in the Parquet schema): ``<id>.min``, ``<id>.max``,
``<id>.known`` (statistics recorded), ``<id>.has_min_max``, ``<id>.nulls``, ``<id>.values``, and
``<id>.bytes`` for every top-level column, nested ones too (its column chunks' compressed bytes: what
reading the column of that row group costs; copies written before it lack it).

A copy is written so that its start can be read alone (format 2), as a bitmap's head is: the
**head** (a prefix, then the facts compressed) comes before the **rest** (the footer compressed),
each with its own checksum.  Planning reads the heads of many files' copies in one request and the
rest of a copy only where it needs the footer itself, which is about three quarters of a copy's
bytes.  A copy of format 1 (the facts' length, the facts, then the footer, compressed together as
one Puffin blob) still loads whole.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from zskip.errors import CorruptIndexError
from zskip.fileindex.puffin import checked_size

__all__ = [
    "ColumnStats",
    "CopyRest",
    "byte_ranges",
    "chunk_stats",
    "column_bytes",
    "decode",
    "decode_head",
    "decode_rest",
    "encode",
    "head_length",
    "leaf_field_ids",
    "leaf_ranges",
    "top_level_field_ids",
]

_LENGTH = struct.Struct("<I")  # format 1: the facts' length, then the facts and the footer
MAGIC = b"ZFC2"  # format 2
# magic, head length (bytes from the copy's start), the facts' and the footer's lengths, the crc32 of
# the rest (the footer as stored), then the crc32 of the head (the prefix before it, and the facts)
_PREFIX = struct.Struct("<4sIIIII")
_CHECKED = _PREFIX.size - 4  # the prefix's bytes its head checksum covers
_CODEC = "zstd"


@dataclass(frozen=True, slots=True)
class CopyRest:
    """What a format 2 copy's head says of the rest after it: the footer's length once decompressed,
    and the rest's checksum."""

    footer: int
    checksum: int


@dataclass(frozen=True, slots=True)
class ColumnStats:
    min: Any
    max: Any
    has_min_max: bool
    null_count: int | None
    values: int | None  # non-null values


def top_level_field_ids(schema: pa.Schema) -> dict[int, int]:
    """Position of each top-level column of a Parquet file's schema, by the Iceberg field id it carries."""
    out: dict[int, int] = {}
    for position, item in enumerate(schema):
        raw = (item.metadata or {}).get(b"PARQUET:field_id")
        if raw is not None:
            out[int(raw)] = position
    return out


def leaf_ranges(schema: pa.Schema) -> list[range]:
    """The Parquet leaf columns of each top-level column of ``schema``, in order."""
    out: list[range] = []
    start = 0
    for item in schema:
        width = _leaf_count(item.type)
        out.append(range(start, start + width))
        start += width
    return out


def _leaf_count(kind: pa.DataType) -> int:
    if pa.types.is_struct(kind):
        return sum(_leaf_count(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _leaf_count(kind.value_type)
    if pa.types.is_map(kind):
        return _leaf_count(kind.key_type) + _leaf_count(kind.item_type)
    return 1


def leaf_field_ids(metadata: pq.FileMetaData) -> dict[int, int]:
    """The field id of each leaf column that is a whole top-level column, by leaf position (found by
    position: a name may hold a dot, which Parquet's dotted paths cannot tell from nesting); nested
    leaves get none."""
    schema = metadata.schema.to_arrow_schema()
    leaf_ids: dict[int, int] = {}
    leaves_of = leaf_ranges(schema)
    for field_id, position in top_level_field_ids(schema).items():
        leaves = leaves_of[position]
        if len(leaves) == 1 and not pa.types.is_nested(schema.field(position).type):
            leaf_ids[leaves[0]] = field_id
    return leaf_ids


def column_bytes(metadata: pq.FileMetaData) -> dict[int, list[int]]:
    """The compressed bytes of each top-level column in each row group (all its leaves), by field id."""
    schema = metadata.schema.to_arrow_schema()
    leaves_of = leaf_ranges(schema)
    out: dict[int, list[int]] = {}
    for field_id, position in top_level_field_ids(schema).items():
        leaves = leaves_of[position]
        out[field_id] = [
            sum(metadata.row_group(g).column(leaf).total_compressed_size for leaf in leaves)
            for g in range(metadata.num_row_groups)
        ]
    return out


def byte_ranges(metadata: pq.FileMetaData) -> tuple[tuple[int, int], ...]:
    """(first byte, length) of each row group."""
    ranges = []
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        first = None
        length = 0
        for c in range(group.num_columns):
            chunk = group.column(c)
            start = chunk.data_page_offset
            if (
                chunk.has_dictionary_page
                and chunk.dictionary_page_offset is not None
                and chunk.dictionary_page_offset > 0
            ):
                start = min(start, chunk.dictionary_page_offset)
            first = start if first is None else min(first, start)
            length += chunk.total_compressed_size
        ranges.append((int(first or 4), int(length)))
    return tuple(ranges)


def chunk_stats(chunk: pq.ColumnChunkMetaData) -> ColumnStats | None:
    s = chunk.statistics
    if s is None:
        return None
    try:
        return ColumnStats(
            s.min if s.has_min_max else None,
            s.max if s.has_min_max else None,
            bool(s.has_min_max),
            s.null_count if s.has_null_count else None,
            s.num_values,
        )
    except Exception:  # a logical type pyarrow cannot turn into Python values
        return None


def encode(footer: bytes) -> bytes:
    """The copy of a footer (format 2, stored as it is: its parts are compressed each on its own):
    ``footer`` is a Parquet file's tail (footer, its length, ``PAR1``)."""
    metadata = pq.read_metadata(pa.BufferReader(footer))
    groups = range(metadata.num_row_groups)
    ranges = byte_ranges(metadata)
    columns: dict[str, pa.Array] = {
        "rows": pa.array([metadata.row_group(g).num_rows for g in groups], pa.int64()),
        "start": pa.array([start for start, _ in ranges], pa.int64()),
        "length": pa.array([length for _, length in ranges], pa.int64()),
    }
    for field_id, chunks in column_bytes(metadata).items():
        columns[f"{field_id}.bytes"] = pa.array(chunks, pa.int64())
    for leaf, field_id in leaf_field_ids(metadata).items():
        stats = [chunk_stats(metadata.row_group(g).column(leaf)) for g in groups]
        columns[f"{field_id}.known"] = pa.array([s is not None for s in stats], pa.bool_())
        columns[f"{field_id}.has_min_max"] = pa.array([s is not None and s.has_min_max for s in stats], pa.bool_())
        columns[f"{field_id}.nulls"] = pa.array([s.null_count if s else None for s in stats], pa.int64())
        columns[f"{field_id}.values"] = pa.array([s.values if s else None for s in stats], pa.int64())
        low = _exactly([s.min if s is not None and s.has_min_max else None for s in stats])
        high = _exactly([s.max if s is not None and s.has_min_max else None for s in stats])
        if low is not None and high is not None and low.type == high.type:
            columns[f"{field_id}.min"], columns[f"{field_id}.max"] = low, high
    table = pa.table(columns)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    facts = sink.getvalue().to_pybytes()
    codec = pa.Codec(_CODEC)
    stored_facts = codec.compress(facts, asbytes=True)
    rest = codec.compress(footer, asbytes=True)
    head = _PREFIX.size + len(stored_facts)
    prefix = _PREFIX.pack(MAGIC, head, len(facts), len(footer), zlib.crc32(rest), 0)[:_CHECKED]
    checksum = zlib.crc32(stored_facts, zlib.crc32(prefix))
    return prefix + struct.pack("<I", checksum) + stored_facts + rest


def head_length(copy: bytes) -> int | None:
    """How many bytes at the start of a stored copy give its facts alone (``None``: format 1)."""
    if len(copy) < _PREFIX.size or copy[:4] != MAGIC:
        return None
    return int(_PREFIX.unpack_from(copy)[1])


def decode(copy: bytes) -> tuple[pa.RecordBatch | pa.Table, bytes]:
    """The row-group facts and the footer (a Parquet file's tail) a whole copy holds; ``ValueError``
    when it is not one."""
    facts, footer, _ = decode_head(copy)
    if footer is None:
        raise ValueError("not a footer copy: it ends before its footer")
    return facts, footer


def decode_head(copy: bytes) -> tuple[pa.RecordBatch | pa.Table, bytes | None, CopyRest | None]:
    """The facts a copy's head holds, with the footer when ``copy`` is the whole copy (format 1 copies
    are whole); else ``None`` and where the rest is (``decode_rest``).  ``ValueError`` when it is
    not a copy, or it is damaged."""
    if copy[:4] != MAGIC:
        return (*_decode_v1(copy), None)
    try:
        _, head, facts_length, footer_length, rest_crc, head_crc = _PREFIX.unpack_from(copy)
    except struct.error as exc:
        raise ValueError(f"not a footer copy: {exc}") from None
    stored = copy[_PREFIX.size : head]
    if len(stored) != head - _PREFIX.size or zlib.crc32(stored, zlib.crc32(copy[:_CHECKED])) != head_crc:
        raise ValueError("a damaged footer copy: its head's checksum does not match")
    try:
        size = checked_size(facts_length, len(stored), "a footer copy's head")
        raw = pa.Codec(_CODEC).decompress(stored, decompressed_size=size, asbytes=True)
        facts = _facts_of(raw)
    except (pa.ArrowException, StopIteration, CorruptIndexError) as exc:  # StopIteration: no schema in the stream
        raise ValueError(f"not a footer copy: {exc or 'its facts are empty'}") from None
    if any(facts.schema.get_field_index(name) < 0 for name in ("rows", "start", "length")):
        raise ValueError("not a footer copy: its facts lack rows and byte ranges")
    rest = CopyRest(footer_length, rest_crc)
    if len(copy) > head:
        return facts, decode_rest(rest, copy[head:]), None
    return facts, None, rest


def _facts_of(stream: bytes) -> pa.RecordBatch | pa.Table:
    """The facts' Arrow IPC stream: its one record batch (a table if it holds several).  Its schema (a
    field per column statistic: most of the stream's decoding) is parsed once per process: the copies
    of a table's files share it."""
    messages = pa.ipc.MessageReader.open_stream(pa.py_buffer(stream))
    first = messages.read_next_message()
    schema = _schema_of(first)
    if schema is None:  # dictionary-encoded columns: their batches need the dictionaries' messages
        return pa.ipc.open_stream(pa.py_buffer(stream)).read_all()
    batches = []
    while True:
        try:
            batches.append(pa.ipc.read_record_batch(messages.read_next_message(), schema))
        except StopIteration:
            break
    return batches[0] if len(batches) == 1 else pa.Table.from_batches(batches, schema)


_SCHEMAS: dict[bytes, pa.Schema | None] = {}  # by the schema message's bytes; None: it has dictionaries
_SCHEMAS_KEPT = 64


def _schema_of(message: pa.ipc.Message) -> pa.Schema | None:
    key = message.metadata.to_pybytes()
    if key not in _SCHEMAS:
        schema = pa.ipc.read_schema(message)
        if len(_SCHEMAS) >= _SCHEMAS_KEPT:
            _SCHEMAS.clear()
        _SCHEMAS[key] = None if any(pa.types.is_dictionary(f.type) for f in schema) else schema
    return _SCHEMAS[key]


def decode_rest(rest: CopyRest, stored: bytes) -> bytes:
    """The footer (a Parquet file's tail) from the stored rest of a format 2 copy."""
    if zlib.crc32(stored) != rest.checksum:
        raise ValueError("a damaged footer copy: its rest's checksum does not match")
    try:
        size = checked_size(rest.footer, len(stored), "a footer copy's rest")
        footer = pa.Codec(_CODEC).decompress(stored, decompressed_size=size, asbytes=True)
    except (pa.ArrowException, CorruptIndexError) as exc:
        raise ValueError(f"not a footer copy: its rest does not decompress: {exc}") from None
    if footer[-4:] != b"PAR1":
        raise ValueError("not a footer copy: no Parquet footer after its row-group facts")
    return footer


def _decode_v1(copy: bytes) -> tuple[pa.Table, bytes]:
    try:
        (length,) = _LENGTH.unpack_from(copy)
        facts = pa.ipc.open_stream(pa.py_buffer(copy[_LENGTH.size : _LENGTH.size + length])).read_all()
    except (struct.error, pa.ArrowException) as exc:
        raise ValueError(f"not a footer copy: {exc}") from None
    footer = copy[_LENGTH.size + length :]
    if footer[-4:] != b"PAR1" or not {"rows", "start", "length"} <= set(facts.column_names):
        raise ValueError("not a footer copy: no Parquet footer after its row-group facts")
    return facts, footer


def _exactly(values: list[Any]) -> pa.Array | None:
    """``values`` as one Arrow array, when it gives back exactly those values."""
    try:
        array = pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    return array if array.to_pylist() == values else None
