"""Row-group facts from Parquet footers: rows, byte ranges and per-column min/max, keyed by field id.

Columns are matched by Iceberg field id (stored in the Parquet schema), not by name, so a renamed
column, or a new column that took an old name, never lends its statistics to another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from zskip.fileindex.build import leaf_ranges, top_level_field_ids
from zskip.storage import LOCAL, FileAccess

__all__ = ["ColumnStats", "Footer", "read_footer"]


@dataclass(frozen=True, slots=True)
class ColumnStats:
    min: Any
    max: Any
    has_min_max: bool
    null_count: int | None
    values: int | None  # non-null values


@dataclass(frozen=True)
class Footer:
    rows: tuple[int, ...]  # per row group
    ranges: tuple[tuple[int, int], ...]  # (first byte, length) per row group
    stats: tuple[dict[int, ColumnStats], ...]  # per row group, by field id

    @property
    def row_groups(self) -> int:
        return len(self.rows)


def read_footer(path: str, access: FileAccess = LOCAL) -> Footer:
    parquet = access.open_parquet(path)
    metadata = parquet.metadata
    # the field id of each leaf column that is a whole top-level column (found by position: a name
    # may hold a dot, which Parquet's dotted paths cannot tell from nesting); nested leaves get none
    leaf_ids: dict[int, int] = {}
    leaves_of = leaf_ranges(parquet.schema_arrow)
    for field_id, position in top_level_field_ids(parquet.schema_arrow).items():
        leaves = leaves_of[position]
        if len(leaves) == 1 and not pa.types.is_nested(parquet.schema_arrow.field(position).type):
            leaf_ids[leaves[0]] = field_id
    rows, ranges, stats = [], [], []
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        rows.append(group.num_rows)
        first = None
        length = 0
        by_id: dict[int, ColumnStats] = {}
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
            if c not in leaf_ids:
                continue  # nested or unidentified columns: no statistics used
            s = chunk.statistics
            if s is None:
                continue
            try:
                by_id[leaf_ids[c]] = ColumnStats(
                    s.min if s.has_min_max else None,
                    s.max if s.has_min_max else None,
                    bool(s.has_min_max),
                    s.null_count if s.has_null_count else None,
                    s.num_values,
                )
            except Exception:  # a logical type pyarrow cannot turn into Python values
                continue
        ranges.append((int(first or 4), int(length)))
        stats.append(by_id)
    return Footer(tuple(rows), tuple(ranges), tuple(stats))
