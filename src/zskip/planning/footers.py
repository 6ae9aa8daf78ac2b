"""Row-group facts from Parquet footers: rows, byte ranges and per-column min/max, keyed by field id.

Columns are matched by Iceberg field id (stored in the Parquet schema), not by name, so a renamed
column, or a new column that took an old name, never lends its statistics to another.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from zskip.fileindex.footer_copy import (
    ColumnStats,
    CopyRest,
    byte_ranges,
    chunk_stats,
    column_bytes,
    decode_head,
    leaf_field_ids,
)
from zskip.storage import LOCAL, FileAccess

__all__ = ["ColumnStats", "Footer", "footer_from_copy", "footer_of", "read_footer"]

# One column's statistics over a file's row groups as arrays: recorded, has min/max, nulls and values
# (NaN: unknown), min and max (Arrow arrays).
_PARTS = ("known", "has_min_max", "nulls", "values", "min", "max")
ColumnArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, pa.Array, pa.Array]


class Footer:
    """One data file's row groups: rows (read at once), byte ranges and per-column statistics (each
    worked out the first time it is asked for, since a plan needs the statistics of the few columns
    its filter names, and byte ranges only where it reads part of a file).

    From the file's own footer, they are worked out from its Parquet metadata; from a footer copy
    (``zskip.fileindex.footer_copy``), from the copy's arrays, and the Parquet footer the copy holds
    is parsed only for a column whose bounds the arrays lack (read then, when only the copy's head
    was: ``tail_loader``)."""

    def __init__(
        self,
        rows: tuple[int, ...],
        ranges: tuple[tuple[int, int], ...] | None = None,
        stats: tuple[dict[int, ColumnStats], ...] | None = None,  # per row group, by field id: given
        *,
        metadata: pq.FileMetaData | None = None,
        leaf_ids: dict[int, int] | None = None,
        facts: pa.RecordBatch | pa.Table | None = None,
        tail: bytes | None = None,
        tail_loader: Callable[[], bytes] | None = None,
    ) -> None:
        self.rows = rows  # per row group
        self._ranges = ranges
        self._stats = stats
        self._metadata = metadata
        self._leaves = {field_id: leaf for leaf, field_id in (leaf_ids or {}).items()}  # field id -> leaf column
        self._facts = facts
        self._schema = facts.schema if facts is not None else None
        self._tail = tail
        self._load_tail = tail_loader
        self._parsing = threading.Lock()

    @property
    def row_groups(self) -> int:
        return len(self.rows)

    @property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        """(first byte, length) per row group."""
        if self._ranges is None:  # two threads may both work it out: the same answer, once stored
            if self._facts is not None:
                starts, lengths = self._fact("start").to_pylist(), self._fact("length").to_pylist()
                self._ranges = tuple(zip(starts, lengths, strict=True))
            else:
                metadata = self._parsed()
                self._ranges = byte_ranges(metadata) if metadata is not None else ()
        return self._ranges

    def _parsed(self) -> pq.FileMetaData | None:
        """The Parquet metadata: given, or parsed from a copy's footer the first time it is needed (read
        then when only the copy's head was)."""
        if self._metadata is None and (self._tail is not None or self._load_tail is not None):
            with self._parsing:
                if self._metadata is None:
                    if self._tail is None:
                        assert self._load_tail is not None
                        self._tail = self._load_tail()
                    metadata = pq.read_metadata(pa.BufferReader(self._tail))
                    self._leaves = {field_id: leaf for leaf, field_id in leaf_field_ids(metadata).items()}
                    self._metadata = metadata
        return self._metadata

    def arrays(self, field_id: int) -> ColumnArrays | None:
        """Column ``field_id``'s statistics as arrays, when a footer copy holds them (bounds included)."""
        facts = self._facts
        if facts is None or not self._holds(f"{field_id}.min"):
            return None
        known, has, nulls, values, low, high = (self._fact(f"{field_id}.{part}") for part in _PARTS)
        return (
            known.to_numpy(zero_copy_only=False),
            has.to_numpy(zero_copy_only=False),
            nulls.to_numpy(zero_copy_only=False).astype(np.float64),
            values.to_numpy(zero_copy_only=False).astype(np.float64),
            _whole(low),
            _whole(high),
        )

    def _holds(self, name: str) -> bool:
        """Whether the copy has the column ``name`` (looked up in its schema: ``column_names`` builds a
        list of every column's name at each call, and a copy has a few per column of the table)."""
        return self._schema is not None and self._schema.get_field_index(name) >= 0

    def _fact(self, name: str) -> pa.Array | pa.ChunkedArray:
        assert self._facts is not None and self._schema is not None
        return self._facts.column(self._schema.get_field_index(name))

    def bytes_of(self, field_ids: Iterable[int]) -> np.ndarray | None:
        """The compressed bytes of the top-level columns ``field_ids`` in each row group (what reading them
        costs), or ``None`` when this footer does not say (a copy written before it recorded them: its
        Parquet footer is not parsed for this).  A field the file lacks costs nothing."""
        wanted = set(field_ids)
        total = np.zeros(len(self.rows), dtype=np.float64)
        if self._facts is not None:
            if not self._has_bytes:
                return None
            for field_id in wanted:
                if self._holds(f"{field_id}.bytes"):
                    total += self._fact(f"{field_id}.bytes").to_numpy(zero_copy_only=False)
            return total
        if self._metadata is None:
            return None
        for field_id, chunks in column_bytes(self._metadata).items():
            if field_id in wanted:
                total += np.asarray(chunks, dtype=np.float64)
        return total

    @functools.cached_property
    def _has_bytes(self) -> bool:
        return self._schema is not None and any(name.endswith(".bytes") for name in self._schema.names)

    def column(self, field_id: int) -> tuple[ColumnStats | None, ...]:
        """The statistics of column ``field_id`` in each row group (``None`` where there are none usable)."""
        if self._stats is not None:
            return tuple(group.get(field_id) for group in self._stats)
        facts = self._facts
        if facts is not None and not self._holds(f"{field_id}.known") and facts.num_columns > 3:
            # a copy records every column that is one leaf: the file lacks this one, or it is nested
            return tuple(None for _ in self.rows)
        if facts is not None and self._holds(f"{field_id}.min"):
            return tuple(
                ColumnStats(low, high, has, nulls, values) if known else None
                for known, has, nulls, values, low, high in zip(
                    *(self._fact(f"{field_id}.{part}").to_pylist() for part in _PARTS), strict=True
                )
            )
        metadata = self._parsed()
        leaf = self._leaves.get(field_id)
        if leaf is None or metadata is None:
            return tuple(None for _ in self.rows)
        return tuple(chunk_stats(metadata.row_group(g).column(leaf)) for g in range(len(self.rows)))


def _whole(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def read_footer(path: str, access: FileAccess = LOCAL, *, size: int | None = None) -> Footer:
    """The footer of data file ``path``; ``size``: its length as Iceberg records it (saves a request)."""
    return footer_of(access.parquet_metadata(path, size=size))


def footer_from_copy(copy: bytes, rest: Callable[[CopyRest], bytes] | None = None) -> Footer:
    """The footer a copy holds (``zskip.fileindex.footer_copy``), whole or its head alone; ``ValueError``
    when it is not one.  ``rest``: given what the head says of the rest, the footer itself, read the
    first time a column needs it (without: such a column has no statistics, so nothing is ruled out
    by them)."""
    facts, tail, layout = decode_head(copy)
    loader = None if layout is None or rest is None else functools.partial(rest, layout)
    return Footer(tuple(facts["rows"].to_pylist()), facts=facts, tail=tail, tail_loader=loader)


def footer_of(metadata: pq.FileMetaData) -> Footer:
    rows = tuple(metadata.row_group(g).num_rows for g in range(metadata.num_row_groups))
    return Footer(rows, metadata=metadata, leaf_ids=leaf_field_ids(metadata))
