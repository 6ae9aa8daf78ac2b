"""Build the indexes of one data file: read it with pyarrow, write one Puffin file, describe its blobs.

Runs inside a Spark task (one per data file).  Bitmaps cover the whole file's rows; bloom filters
cover the file and each row group.  The same Puffin file holds a copy of the data file's Parquet
footer (compressed), which planning reads instead of the footer itself: footer copies of many
files sit together in a merged index file and come in one request.  What comes back to the driver
is one small entry per blob.
"""

from __future__ import annotations

import io
import logging
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from zskip.fileindex import footer_copy
from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.entries import BlobEntry, FooterCopy, Stored, as_stored, blob_entries, footer_copies_of
from zskip.fileindex.footer_copy import leaf_ranges, top_level_field_ids
from zskip.fileindex.kinds import kind_named
from zskip.fileindex.kinds.base import IndexKind
from zskip.fileindex.puffin import CHECKSUM, PuffinWriter
from zskip.storage import LOCAL, FileAccess

__all__ = [
    "FOOTER_BLOB",
    "BlobEntry",
    "BuiltIndexes",
    "FooterCopy",
    "build_file_indexes",
    "column_indices_of",
    "copy_blobs",
    "leaf_ranges",
    "read_stored",
    "top_level_field_ids",
]

log = logging.getLogger(__name__)


def column_indices_of(parquet: Any, positions: Sequence[int]) -> list[int]:
    """The Parquet leaf columns of the top-level columns at ``positions`` (names never parsed: a dot or
    a backtick in a name means nothing here)."""
    ranges = leaf_ranges(parquet.schema_arrow)
    return [leaf for position in sorted(set(positions)) for leaf in ranges[position]]


FOOTER_BLOB = "zskip-footer-v2"  # a data file's row-group facts, then its Parquet footer (``footer_copy``)
FOOTER_BLOB_V1 = "zskip-footer-v1"  # the same compressed together as one blob: loads only whole


@dataclass(frozen=True)
class BuiltIndexes:
    """What indexing one data file wrote: an entry per blob, and its footer copy when one was asked for."""

    entries: list[BlobEntry]
    footer: FooterCopy | None = None
    retries: int = 0  # requests to the store tried again while indexing it (``zskip.retries``)


def build_file_indexes(
    data_file: str,
    definitions: Sequence[IndexDefinition],
    puffin_path: str,
    *,
    snapshot_id: int = -1,
    absent_is_null: frozenset[int] = frozenset(),
    copy_footer: bool = False,
    access: FileAccess = LOCAL,
) -> BuiltIndexes:
    """Index ``data_file``'s columns as ``definitions`` say; write the blobs to ``puffin_path``, with a
    copy of the file's footer when ``copy_footer``.

    Columns are found in the file by field id, whatever they were called when it was written.  A
    field the file lacks (added to the table since) is indexed as NULL in every row when it is in
    ``absent_is_null`` (a field with no initial default), and not indexed otherwise."""
    parquet = access.open_parquet(data_file)
    positions = top_level_field_ids(parquet.schema_arrow)
    wanted = sorted({i for d in definitions if d.field_id is not None for i in (d.field_id, *d.measures)})
    present = sorted(positions[i] for i in wanted if i in positions)  # schema order, as a read returns them
    leaves = column_indices_of(parquet, present)
    groups = [
        parquet.reader.read_row_group(g, column_indices=leaves) if present else None
        for g in range(parquet.num_row_groups)
    ]
    row_group_rows = tuple(parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups))
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
    written = []
    for definition in definitions:
        if definition.field_id is None or (
            definition.field_id not in positions and definition.field_id not in absent_is_null
        ):
            continue
        kind = definition.index_kind

        def values_of(field_id: int, absent: pa.DataType) -> list[pa.ChunkedArray]:
            """The column ``field_id``'s values row group by row group (NULL where the file lacks it)."""
            if field_id not in positions:  # not in this file (added to the table since): NULL in every row
                nulls = [pa.chunked_array([pa.nulls(n, absent)], type=absent) for n in row_group_rows]
                return nulls or [pa.chunked_array([], type=absent)]
            where = present.index(positions[field_id])
            value_type = parquet.schema_arrow.field(positions[field_id]).type
            return [t.column(where) for t in groups if t is not None] or [pa.chunked_array([], type=value_type)]

        if any(m not in positions and m not in absent_is_null for m in definition.measures):
            continue  # a measure added with a default this file lacks: not built, the file's rows are read
        parts = values_of(definition.field_id, kind.absent_type)
        if kind.takes_measures:
            measures = [(m, values_of(m, pa.int64())) for m in definition.measures]
            payload = kind.build_with_measures(parts, measures, definition.options)
        else:
            payload = kind.build(parts, definition.options)
        meta = writer.add(
            kind.blob_type,
            payload,
            compress=kind.compressed_whole,
            snapshot_id=snapshot_id,
            # Puffin's own reference to the columns a blob is of: their field ids
            fields=(definition.field_id, *definition.measures),
            properties={"column": definition.column, "data-file": data_file},
        )
        head = None if kind.compressed_whole else kind.head_length(payload)
        written.append((definition, meta, head))
    footer = None
    if copy_footer:
        footer_bytes, file_size = access.parquet_footer(data_file)
        copy = footer_copy.encode(footer_bytes)  # its parts compressed each on its own
        meta = writer.add(
            FOOTER_BLOB, copy, compress=False, snapshot_id=snapshot_id, properties={"data-file": data_file}
        )
        footer = FooterCopy(
            data_file,
            file_size,
            puffin_path,
            meta.offset,
            meta.length,
            meta.compression_codec,
            meta.properties[CHECKSUM],
            head=footer_copy.head_length(copy),
        )
    writer.finish()
    access.write(puffin_path, buffer.getvalue())
    entries = [
        BlobEntry(
            data_file=data_file,
            field_id=int(definition.field_id),  # type: ignore[arg-type]
            column=definition.column,
            kind=definition.kind,
            puffin_path=puffin_path,
            offset=meta.offset,
            length=meta.length,
            codec=meta.compression_codec,
            checksum=meta.properties[CHECKSUM],
            rows=sum(row_group_rows),
            row_group_rows=row_group_rows,
            head=head,
        )
        for definition, meta, head in written
    ]
    return BuiltIndexes(entries, footer)


def read_stored(row: Stored | Mapping[str, Any], access: FileAccess = LOCAL) -> bytes:
    """The stored bytes of the blob a manifest entry (or footer copy) points at: its head and rest
    joined where they are stored apart (``rest_offset``)."""
    entry = as_stored(row)
    offset, length, head, rest_offset = entry.offset, entry.length, entry.head, entry.rest_offset
    if rest_offset is None or head is None:
        return access.read(entry.puffin_path, offset=offset, length=length)
    return access.read(entry.puffin_path, offset=offset, length=head) + access.read(
        entry.puffin_path, offset=rest_offset, length=length - head
    )


def copy_blobs(
    puffin_path: str,
    rows: Sequence[BlobEntry | Mapping[str, Any]],
    access: FileAccess = LOCAL,
    *,
    footers: Sequence[FooterCopy | Mapping[str, Any]] = (),
) -> tuple[list[BlobEntry], list[FooterCopy]]:
    """Write the blobs manifest ``entries`` point at into one new Puffin file, and the footer copies
    ``footers`` (rows of the manifest's footers) first, one after another, so that planning reads them
    in one request.  A damaged blob or copy is left out (its data file counts as unindexed, or its
    footer is read from the data file).

    A blob is stored in its kind's merged form (``IndexKind.merged_form``: a bitmap's dictionary in
    blocks), as its head with the heads of the column's other blobs and its rest after them, and the
    parts of every blob of a column and kind (``IndexKind.stored_parts``: a dictionary's blocks) are
    copied side by side in one more blob, ordered by their keys: the blocks that would hold a value, of
    every data file, then lie close together (``part_offsets`` says where each is)."""
    entries = blob_entries(rows)
    copies = footer_copies_of(footers)
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
    copied_footers = _copy_footers(writer, puffin_path, copies, access)
    stored_of, heads = {}, {}
    for n, entry in enumerate(entries):
        stored = read_stored(entry, access)
        if str(zlib.crc32(stored)) != entry.checksum:
            continue  # a damaged blob stays out of the merged file: its data file counts as unindexed
        kind = kind_named(entry.kind)
        stored_of[n] = _merged_form(kind, stored)
        heads[n] = None if entry.head is None else kind.head_length(stored_of[n])
    # blobs that load only whole, then the heads of the others, a column's one after another (a cold
    # plan reads the heads of many data files in one request), then their rests in the same order
    order = sorted(stored_of, key=lambda n: (heads[n] is not None, entries[n].field_id, n))
    placed: dict[int, tuple[int, int | None]] = {}  # entry -> (offset, rest offset)
    split = [n for n in order if heads[n] is not None]
    for n in order:
        entry, stored, head = entries[n], stored_of[n], heads[n]
        properties = {"column": entry.column, "data-file": entry.data_file}
        blob_type, fields = kind_named(entry.kind).blob_type, (int(entry.field_id),)
        if head is None:
            meta = writer.add_stored(blob_type, stored, codec=entry.codec, fields=fields, properties=properties)
            placed[n] = (meta.offset, None)
            continue
        meta = writer.add_stored(
            blob_type, stored[:head], codec=entry.codec, fields=fields, properties={**properties, "part": "head"}
        )
        placed[n] = (meta.offset, None)
    for n in split:
        entry, stored = entries[n], stored_of[n]
        meta = writer.add_stored(
            kind_named(entry.kind).blob_type,
            stored[heads[n] :],
            codec=entry.codec,
            fields=(int(entry.field_id),),
            properties={"column": entry.column, "data-file": entry.data_file, "part": "rest"},
        )
        placed[n] = (placed[n][0], meta.offset)
    part_offsets = _copy_parts(writer, [(entries[n], stored_of[n], n) for n in split])
    copied = [
        BlobEntry(
            data_file=entries[n].data_file,
            field_id=int(entries[n].field_id),
            column=entries[n].column,
            kind=entries[n].kind,
            puffin_path=puffin_path,
            offset=placed[n][0],
            length=len(stored_of[n]),
            codec=entries[n].codec,
            checksum=str(zlib.crc32(stored_of[n])),
            rows=entries[n].rows,
            row_group_rows=tuple(entries[n].row_group_rows),
            head=heads[n],
            rest_offset=placed[n][1],
            part_offsets=part_offsets.get(n),
        )
        for n in sorted(placed)
    ]
    writer.finish()
    access.write(puffin_path, buffer.getvalue())
    return copied, copied_footers


def _merged_form(kind: IndexKind, stored: bytes) -> bytes:
    """``stored`` in ``kind``'s merged form; as it is when that fails (it loads as it did)."""
    try:
        return kind.merged_form(stored)
    except Exception as exc:  # a blob whose checksum held but that does not parse: planning reports it
        log.debug("a %s blob stays as stored: %s", kind.name, exc)
        return stored


def _copy_parts(writer: PuffinWriter, blobs: Sequence[tuple[BlobEntry, bytes, int]]) -> dict[int, tuple[int, ...]]:
    """Write the parts of ``blobs`` (entry, stored blob, number) of each column and kind side by side,
    ordered by their keys, one Puffin blob per column and kind; where each blob's parts are, by number."""
    by_column: dict[tuple[int, str], list[tuple[int, int, int, bytes]]] = {}
    for entry, stored, n in blobs:
        try:
            found = kind_named(entry.kind).stored_parts(stored)
        except Exception as exc:  # as in ``_merged_form``: its rest still holds the parts
            log.debug("the parts of a %s blob are not copied: %s", entry.kind, exc)
            continue
        column = (int(entry.field_id), entry.kind)
        by_column.setdefault(column, []).extend((key, n, part, data) for part, (key, data) in enumerate(found))
    offsets: dict[int, dict[int, int]] = {}
    for (field_id, kind), parts in sorted(by_column.items(), key=lambda item: item[0]):
        parts.sort(key=lambda p: p[:3])
        at, positions = 0, []
        for _, _, _, data in parts:
            positions.append(at)
            at += len(data)
        meta = writer.add_stored(
            kind_named(kind).blob_type,
            b"".join(data for *_, data in parts),
            codec=None,
            fields=(field_id,),
            properties={"part": "parts of every data file's blob, by key"},
        )
        for (_, n, part, _), position in zip(parts, positions, strict=True):
            offsets.setdefault(n, {})[part] = meta.offset + position
    return {n: tuple(where[part] for part in range(len(where))) for n, where in offsets.items()}


def _copy_footers(
    writer: PuffinWriter, puffin_path: str, footers: Sequence[FooterCopy], access: FileAccess
) -> list[FooterCopy]:
    """Write the footer copies ``footers`` (rows of the manifest's footers): those that load only whole
    and the heads of the others one after another (a cold plan reads many in one request), then the
    rests of the others, in the same order.  A damaged copy stays out: planning reads that data
    file's own footer."""
    stored_of = {}
    for n, footer in enumerate(footers):
        stored = read_stored(footer, access)
        if str(zlib.crc32(stored)) == footer.checksum:
            stored_of[n] = stored
    placed: dict[int, tuple[int, int | None]] = {}
    for n, stored in stored_of.items():
        footer, head = footers[n], footers[n].head
        blob_type = FOOTER_BLOB_V1 if head is None else FOOTER_BLOB
        part = stored if head is None else stored[: int(head)]
        properties = {"data-file": footer.data_file} | ({} if head is None else {"part": "head"})
        placed[n] = (writer.add_stored(blob_type, part, codec=footer.codec, properties=properties).offset, None)
    for n, stored in stored_of.items():
        footer, head = footers[n], footers[n].head
        if head is not None:
            properties = {"data-file": footer.data_file, "part": "rest"}
            rest = writer.add_stored(FOOTER_BLOB, stored[int(head) :], codec=footer.codec, properties=properties)
            placed[n] = (placed[n][0], rest.offset)
    return [
        FooterCopy(
            footers[n].data_file,
            footers[n].file_size,
            puffin_path,
            offset,
            footers[n].length,
            footers[n].codec,
            footers[n].checksum,
            head=footers[n].head,
            rest_offset=rest_offset,
        )
        for n, (offset, rest_offset) in placed.items()
    ]
