"""The index manifest: which indexes a table has, and where each data file's blobs are.

One Puffin file holds the definitions (JSON), the entries (an Arrow table, one row per data
file, column and kind) and where a copy of each indexed data file's Parquet footer is (an Arrow
table, one row per data file: planning reads the copies of many files in one request, where each
data file's own footer is one or two requests of its own).  A manifest is never changed: every
publish writes a new one and swaps the table property that points at it (see
``zskip.tablefiles.index_manifest``), so readers see a whole manifest, old or new.

Definitions and entries name their column by Iceberg field id (``field_id``); the name beside it
is how the table spelled the column then, for people.  Manifests written before 0.4 named columns
only: they load with ``field_id`` unknown (null), and ``resolved`` ties each name to the field
it meant, or to none (then its entries are never used).  Their blobs had other type names, so a
zskip that matched by name never reads a manifest of this version.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.entries import BlobEntry, FooterCopy
from zskip.fileindex.puffin import PuffinWriter, read_puffin

__all__ = ["ENTRY_SCHEMA", "FOOTER_SCHEMA", "IndexManifest", "entries_table", "footers_table"]

DEFINITIONS_BLOB = "zskip-index-definitions-v2"
ENTRIES_BLOB = "zskip-index-entries-v2"
FOOTERS_BLOB = "zskip-index-footers-v1"
LEGACY_BLOBS = ("zskip-index-definitions-v1", "zskip-index-entries-v1")  # 0.3: columns by name

ENTRY_SCHEMA = pa.schema(
    [
        ("data_file", pa.string()),
        ("field_id", pa.int32()),
        ("column", pa.string()),
        ("kind", pa.string()),
        ("puffin_path", pa.string()),
        ("offset", pa.int64()),
        ("length", pa.int64()),
        ("codec", pa.string()),
        ("checksum", pa.string()),
        ("rows", pa.int64()),
        ("row_group_rows", pa.list_(pa.int64())),
        ("head", pa.int64()),  # bytes at the blob's start that load alone; null: the blob loads only whole
        # where the rest after the head is stored when not right after it (a merged index file keeps a
        # column's heads together, so that one request reads many); null: right after the head
        ("rest_offset", pa.int64()),
        # where a merged index file keeps a copy of each part of the rest (a dictionary's blocks) beside
        # other data files' parts of the column; null: the parts are only in the rest
        ("part_offsets", pa.list_(pa.int64())),
    ]
)


FOOTER_SCHEMA = pa.schema(
    [
        ("data_file", pa.string()),
        ("file_size", pa.int64()),  # the data file's length: a copy is used only for a file of that length
        ("puffin_path", pa.string()),
        ("offset", pa.int64()),
        ("length", pa.int64()),
        ("codec", pa.string()),
        ("checksum", pa.string()),
        ("head", pa.int64()),  # bytes at the copy's start that give its facts alone; null: it loads only whole
        ("rest_offset", pa.int64()),  # where the rest after the head is when not right after it (merged files)
    ]
)


def footers_table(copies: Iterable[FooterCopy]) -> pa.Table:
    return _table_of(copies, FOOTER_SCHEMA)


def entries_table(entries: Iterable[BlobEntry]) -> pa.Table:
    return _table_of(entries, ENTRY_SCHEMA)


def _table_of(rows: Iterable[BlobEntry | FooterCopy], schema: pa.Schema) -> pa.Table:
    """``rows`` (dataclasses whose fields are ``schema``'s columns) as a table of ``schema``."""
    return pa.Table.from_pylist([{name: getattr(row, name) for name in schema.names} for row in rows], schema=schema)


class _EntriesByFile(Mapping[str, tuple[BlobEntry, ...]]):
    """An entries table's rows grouped by data file, each file's made into entries when first asked
    for: a cold plan asks for its candidate files' entries, often a small part of the manifest."""

    def __init__(self, table: pa.Table) -> None:
        self._names = table.column_names
        self._table = table
        self._positions: dict[str, list[int]] = {}
        for position, path in enumerate(table["data_file"].to_pylist()):
            self._positions.setdefault(path, []).append(position)
        self._rows: dict[str, tuple[BlobEntry, ...]] = {}

    @functools.cached_property
    def _columns(self) -> list[list[Any]]:
        return [column.to_pylist() for column in self._table.columns]

    def __getitem__(self, path: str) -> tuple[BlobEntry, ...]:
        rows = self._rows.get(path)
        if rows is None:  # two threads may both build it: the same rows
            columns = self._columns
            rows = tuple(
                BlobEntry.of_row({name: column[at] for name, column in zip(self._names, columns, strict=True)})
                for at in self._positions[path]
            )
            self._rows[path] = rows
        return rows

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)

    def __contains__(self, path: object) -> bool:
        return path in self._positions


@dataclass(frozen=True)
class IndexManifest:
    definitions: tuple[IndexDefinition, ...]
    entries: pa.Table  # ENTRY_SCHEMA
    footers: pa.Table = dataclasses.field(default_factory=FOOTER_SCHEMA.empty_table)  # FOOTER_SCHEMA, per data file

    @classmethod
    def empty(cls) -> IndexManifest:
        return cls((), ENTRY_SCHEMA.empty_table())

    def definition(self, field_id: int, kind: str) -> IndexDefinition | None:
        for d in self.definitions:
            if d.field_id == field_id and d.kind == kind:
                return d
        return None

    def _of(self, field_id: int | None, kind: str) -> pa.ChunkedArray:
        """A mask of the entries of ``(field_id, kind)``; none for an unknown field id."""
        if field_id is None:
            return pa.chunked_array([pa.array([False] * self.entries.num_rows, pa.bool_())])
        same = pc.fill_null(pc.equal(self.entries["field_id"], pa.scalar(field_id, pa.int32())), False)
        return pc.and_(same, pc.equal(self.entries["kind"], kind))

    @functools.cached_property
    def entries_by_file(self) -> Mapping[str, tuple[BlobEntry, ...]]:
        """Every entry, grouped by its data file (one per manifest: planning looks up a few
        files per query, and the manifest never changes)."""
        return _EntriesByFile(self.entries)

    @functools.cached_property
    def footer_copies(self) -> Mapping[str, FooterCopy]:
        """Where each data file's footer copy is, by data file (built once per manifest)."""
        return {row["data_file"]: FooterCopy.of_row(row) for row in self.footers.to_pylist()}

    def indexed_files(self, definition: IndexDefinition) -> set[str]:
        return set(self.entries.filter(self._of(definition.field_id, definition.kind))["data_file"].to_pylist())

    def entries_of(self, definition: IndexDefinition) -> pa.Table:
        return self.entries.filter(self._of(definition.field_id, definition.kind))

    def with_entries(self, entries: Sequence[BlobEntry] | pa.Table) -> IndexManifest:
        added = entries if isinstance(entries, pa.Table) else entries_table(entries)
        return dataclasses.replace(self, entries=pa.concat_tables([self.entries, added.cast(ENTRY_SCHEMA)]))

    def with_footers(self, footers: Sequence[FooterCopy] | pa.Table) -> IndexManifest:
        """This manifest with the footer copies ``footers`` (replacing any earlier copy of the same file)."""
        added = (footers if isinstance(footers, pa.Table) else footers_table(footers)).cast(FOOTER_SCHEMA)
        replaced = pc.is_in(self.footers["data_file"], value_set=added["data_file"].combine_chunks())
        return dataclasses.replace(self, footers=pa.concat_tables([self.footers.filter(pc.invert(replaced)), added]))

    def with_definition(self, definition: IndexDefinition) -> IndexManifest:
        others = tuple(d for d in self.definitions if (d.field_id, d.kind) != (definition.field_id, definition.kind))
        return dataclasses.replace(self, definitions=(*others, definition))

    def without(self, definition: IndexDefinition) -> IndexManifest:
        """This manifest without ``definition`` and its entries."""
        definitions = tuple(d for d in self.definitions if d != definition)
        return dataclasses.replace(
            self,
            definitions=definitions,
            entries=self.entries.filter(pc.invert(self._of(definition.field_id, definition.kind))),
        )

    def only_fields(self, field_ids: set[int]) -> IndexManifest:
        """Definitions and entries of the fields ``field_ids`` (others left the schema, or were never known)."""
        definitions = tuple(d for d in self.definitions if d.field_id in field_ids)
        ids = pa.array(sorted(field_ids), pa.int32())
        keep = pc.fill_null(pc.is_in(self.entries["field_id"], value_set=ids), False)
        return dataclasses.replace(self, definitions=definitions, entries=self.entries.filter(keep))

    def resolved(self, field_of: Callable[[str], int | None]) -> IndexManifest:
        """A manifest written before 0.4 (columns by name only) with each name tied to the field id
        ``field_of`` gives it; a name it gives none keeps an unknown id, and its entries are never used.
        A manifest that knows its field ids is returned as it is."""
        if all(d.field_id is not None for d in self.definitions) and self.entries["field_id"].null_count == 0:
            return self
        names = set(self.entries["column"].to_pylist()) | {d.column for d in self.definitions}
        ids = {name: field_of(name) for name in names}
        definitions = tuple(
            d if d.field_id is not None else IndexDefinition(d.column, d.kind, d.options, ids[d.column])
            for d in self.definitions
        )
        known = self.entries["field_id"].to_pylist()
        filled = [
            k if k is not None else ids[c] for k, c in zip(known, self.entries["column"].to_pylist(), strict=True)
        ]
        entries = self.entries.set_column(
            self.entries.schema.get_field_index("field_id"), "field_id", pa.array(filled, pa.int32())
        )
        return dataclasses.replace(self, definitions=definitions, entries=entries)

    def only_files(self, live: set[str]) -> IndexManifest:
        """Entries of data files still in the table (others left the current snapshot)."""
        value_set = pa.array(sorted(live), pa.string())
        keep = pc.is_in(self.entries["data_file"], value_set=value_set)
        footers = pc.is_in(self.footers["data_file"], value_set=value_set)
        return dataclasses.replace(self, entries=self.entries.filter(keep), footers=self.footers.filter(footers))

    def without_puffins(self, paths: set[str]) -> IndexManifest:
        """Entries whose blobs are not in any of ``paths`` (index files that went missing)."""
        if not paths:
            return self
        value_set = pa.array(sorted(paths), pa.string())
        keep = pc.invert(pc.is_in(self.entries["puffin_path"], value_set=value_set))
        footers = pc.invert(pc.is_in(self.footers["puffin_path"], value_set=value_set))
        return dataclasses.replace(self, entries=self.entries.filter(keep), footers=self.footers.filter(footers))

    def puffin_paths(self) -> set[str]:
        return set(self.entries["puffin_path"].to_pylist()) | set(self.footers["puffin_path"].to_pylist())

    def to_bytes(self) -> bytes:
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, ENTRY_SCHEMA) as stream:
            stream.write_table(self.entries.cast(ENTRY_SCHEMA))
        buffer = io.BytesIO()
        writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
        writer.add(DEFINITIONS_BLOB, json.dumps([d.to_json() for d in self.definitions]).encode())
        writer.add(ENTRIES_BLOB, sink.getvalue())
        if self.footers.num_rows:
            footers = io.BytesIO()
            with pa.ipc.new_stream(footers, FOOTER_SCHEMA) as stream:
                stream.write_table(self.footers.cast(FOOTER_SCHEMA))
            writer.add(FOOTERS_BLOB, footers.getvalue())
        writer.finish()
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str = "index manifest") -> IndexManifest:
        """A manifest as stored; one written before 0.4 loads with unknown field ids (see ``resolved``)."""
        reader = read_puffin(data, name=name)
        blobs = {b.type: b for b in reader.blobs}
        for definitions_blob, entries_blob in ((DEFINITIONS_BLOB, ENTRIES_BLOB), LEGACY_BLOBS):
            if definitions_blob in blobs and entries_blob in blobs:
                break
        else:
            raise ValueError(f"{name} is not a zskip index manifest")
        found = json.loads(reader.read(blobs[definitions_blob]))
        definitions = tuple(IndexDefinition.from_json(d) for d in found)
        entries = pa.ipc.open_stream(reader.read(blobs[entries_blob])).read_all()
        if "field_id" not in entries.column_names:  # 0.3: by name only
            entries = entries.add_column(1, "field_id", pa.nulls(entries.num_rows, pa.int32()))
        if "head" not in entries.column_names:  # written before blobs had a head: each loads only whole
            entries = entries.append_column("head", pa.nulls(entries.num_rows, pa.int64()))
        if "rest_offset" not in entries.column_names:  # written before heads were kept together
            entries = entries.append_column("rest_offset", pa.nulls(entries.num_rows, pa.int64()))
        if "part_offsets" not in entries.column_names:  # written before parts were copied side by side
            entries = entries.append_column("part_offsets", pa.nulls(entries.num_rows, pa.list_(pa.int64())))
        footers = FOOTER_SCHEMA.empty_table()
        if FOOTERS_BLOB in blobs:  # written since footers were copied: earlier manifests have none
            footers = pa.ipc.open_stream(reader.read(blobs[FOOTERS_BLOB])).read_all()
            for name in ("head", "rest_offset"):  # written before copies had a head: each loads only whole
                if name not in footers.column_names:
                    footers = footers.append_column(name, pa.nulls(footers.num_rows, pa.int64()))
            footers = footers.select(FOOTER_SCHEMA.names).cast(FOOTER_SCHEMA)
        return cls(definitions, entries.select(ENTRY_SCHEMA.names).cast(ENTRY_SCHEMA), footers)
