"""The index manifest's rows as frozen types: where one index of one data file lives (``BlobEntry``)
and where one data file's footer copy lives (``FooterCopy``).  The manifest stores them as Arrow
tables (``zskip.fileindex.manifest``); code reads them as these, by attribute."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BlobEntry", "FooterCopy", "Stored", "as_stored", "blob_entries", "footer_copies_of"]


@dataclass(frozen=True)
class BlobEntry:
    """Where one index of one data file lives (a row of the index manifest)."""

    data_file: str
    field_id: int
    column: str  # the name the table gave field ``field_id`` when the index was defined
    kind: str
    puffin_path: str
    offset: int
    length: int
    codec: str | None
    checksum: str
    rows: int
    row_group_rows: tuple[int, ...]
    head: int | None = None  # bytes at the blob's start that load alone (``IndexKind.head_length``)
    rest_offset: int | None = None  # where the rest after the head is, when not right after it
    # where a copy of each part of the rest is (``IndexKind.parts_for``), kept beside other data files'
    # parts of the column in a merged index file (``copy_blobs``); None: only in the rest
    part_offsets: tuple[int, ...] | None = None

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> BlobEntry:
        """An entry from a row of the manifest's entries table (as ``pa.Table.to_pylist`` gives it)."""
        return cls(
            data_file=row["data_file"],
            field_id=row["field_id"],
            column=row["column"],
            kind=row["kind"],
            puffin_path=row["puffin_path"],
            offset=int(row["offset"]),
            length=int(row["length"]),
            codec=row["codec"],
            checksum=row["checksum"],
            rows=int(row["rows"]),
            row_group_rows=tuple(row["row_group_rows"] or ()),
            head=row.get("head"),
            rest_offset=row.get("rest_offset"),
            part_offsets=None if row.get("part_offsets") is None else tuple(row["part_offsets"]),
        )


@dataclass(frozen=True)
class FooterCopy:
    """Where the copy of one data file's Parquet footer lives (a row of the manifest's footers)."""

    data_file: str
    file_size: int  # the data file's length when copied
    puffin_path: str
    offset: int
    length: int
    codec: str | None
    checksum: str
    head: int | None = None  # bytes at the copy's start that give its facts alone (None: format 1)
    rest_offset: int | None = None  # where the rest after the head is, when not right after it

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> FooterCopy:
        """A copy from a row of the manifest's footers table."""
        return cls(
            data_file=row["data_file"],
            file_size=int(row["file_size"]),
            puffin_path=row["puffin_path"],
            offset=int(row["offset"]),
            length=int(row["length"]),
            codec=row["codec"],
            checksum=row["checksum"],
            head=row.get("head"),
            rest_offset=row.get("rest_offset"),
        )


Stored = BlobEntry | FooterCopy  # anything whose bytes a Puffin file holds at an offset


def blob_entries(rows: Iterable[BlobEntry | Mapping[str, Any]]) -> list[BlobEntry]:
    """``rows`` as entries (rows of an entries table are converted; entries are kept)."""
    return [r if isinstance(r, BlobEntry) else BlobEntry.of_row(r) for r in rows]


def footer_copies_of(rows: Sequence[FooterCopy | Mapping[str, Any]]) -> list[FooterCopy]:
    """``rows`` as footer copies (rows of a footers table are converted; copies are kept)."""
    return [r if isinstance(r, FooterCopy) else FooterCopy.of_row(r) for r in rows]


def as_stored(row: Stored | Mapping[str, Any]) -> Stored:
    """``row`` as an entry or a footer copy (a row of the entries table names its index's kind)."""
    if isinstance(row, (BlobEntry, FooterCopy)):
        return row
    return BlobEntry.of_row(row) if "kind" in row else FooterCopy.of_row(row)
