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
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "ColumnStats",
    "byte_ranges",
    "chunk_stats",
    "column_bytes",
    "decode",
    "encode",
    "leaf_field_ids",
    "leaf_ranges",
    "top_level_field_ids",
]

_LENGTH = struct.Struct("<I")


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
    """The copy of a footer: ``footer`` is a Parquet file's tail (footer, its length, ``PAR1``)."""
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
    return _LENGTH.pack(len(facts)) + facts + footer


def decode(copy: bytes) -> tuple[pa.Table, bytes]:
    """The row-group facts and the footer (a Parquet file's tail) a copy holds; ``ValueError`` when
    it is not one."""
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
