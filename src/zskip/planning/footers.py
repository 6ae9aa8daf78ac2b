"""Row-group facts from Parquet footers: rows, byte ranges and per-column min/max, keyed by field id.

Columns are matched by Iceberg field id (stored in the Parquet schema), not by name, so a renamed
column, or a new column that took an old name, never lends its statistics to another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from zskip.fileindex.build import leaf_ranges, top_level_field_ids
from zskip.storage import LOCAL, FileAccess

__all__ = ["ColumnStats", "Footer", "footer_from_copy", "footer_of", "read_footer"]


@dataclass(frozen=True, slots=True)
class ColumnStats:
    min: Any
    max: Any
    has_min_max: bool
    null_count: int | None
    values: int | None  # non-null values


class Footer:
    """One data file's row groups: rows (read at once), byte ranges and per-column statistics (each
    worked out from the Parquet metadata the first time it is asked for, since a plan needs the
    statistics of the few columns its filter names, and byte ranges only where it reads part of a file)."""

    def __init__(
        self,
        rows: tuple[int, ...],
        ranges: tuple[tuple[int, int], ...] | None = None,
        stats: tuple[dict[int, ColumnStats], ...] | None = None,  # per row group, by field id: given
        *,
        metadata: pq.FileMetaData | None = None,
        leaf_ids: dict[int, int] | None = None,
    ) -> None:
        self.rows = rows  # per row group
        self._ranges = ranges
        self._stats = stats
        self._metadata = metadata
        self._leaves = {field_id: leaf for leaf, field_id in (leaf_ids or {}).items()}  # field id -> leaf column

    @property
    def row_groups(self) -> int:
        return len(self.rows)

    @property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        """(first byte, length) per row group."""
        if self._ranges is None:  # two threads may both work it out: the same answer, once stored
            self._ranges = _byte_ranges(self._metadata) if self._metadata is not None else ()
        return self._ranges

    def column(self, field_id: int) -> tuple[ColumnStats | None, ...]:
        """The statistics of column ``field_id`` in each row group (``None`` where there are none usable)."""
        if self._stats is not None:
            return tuple(group.get(field_id) for group in self._stats)
        leaf = self._leaves.get(field_id)
        if leaf is None or self._metadata is None:
            return tuple(None for _ in self.rows)
        return tuple(_chunk_stats(self._metadata.row_group(g).column(leaf)) for g in range(len(self.rows)))


def read_footer(path: str, access: FileAccess = LOCAL, *, size: int | None = None) -> Footer:
    """The footer of data file ``path``; ``size``: its length as Iceberg records it (saves a request)."""
    return footer_of(access.parquet_metadata(path, size=size))


def footer_from_copy(data: bytes) -> Footer:
    """The footer a copy holds (a Parquet file's tail: footer, its length, PAR1; see ``zskip.fileindex.build``)."""
    return footer_of(pq.read_metadata(pa.BufferReader(data)))


def footer_of(metadata: pq.FileMetaData) -> Footer:
    schema = metadata.schema.to_arrow_schema()
    # the field id of each leaf column that is a whole top-level column (found by position: a name
    # may hold a dot, which Parquet's dotted paths cannot tell from nesting); nested leaves get none
    leaf_ids: dict[int, int] = {}
    leaves_of = leaf_ranges(schema)
    for field_id, position in top_level_field_ids(schema).items():
        leaves = leaves_of[position]
        if len(leaves) == 1 and not pa.types.is_nested(schema.field(position).type):
            leaf_ids[leaves[0]] = field_id
    rows = tuple(metadata.row_group(g).num_rows for g in range(metadata.num_row_groups))
    return Footer(rows, metadata=metadata, leaf_ids=leaf_ids)


def _byte_ranges(metadata: pq.FileMetaData) -> tuple[tuple[int, int], ...]:
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


def _chunk_stats(chunk: pq.ColumnChunkMetaData) -> ColumnStats | None:
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
