"""The index manifest: which indexes a table has, and where each data file's blobs are.

One Puffin file holds the definitions (JSON) and the entries (an Arrow table, one row per data
file, column and kind).  A manifest is never changed: every publish writes a new one and swaps
the table property that points at it (see ``zskip.indexing.store``), so readers see a whole
manifest, old or new.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from zskip.index.build import BlobEntry
from zskip.index.kinds import IndexDefinition
from zskip.index.puffin import PuffinWriter, read_puffin

__all__ = ["ENTRY_SCHEMA", "IndexManifest"]

DEFINITIONS_BLOB = "zskip-index-definitions-v1"
ENTRIES_BLOB = "zskip-index-entries-v1"

ENTRY_SCHEMA = pa.schema(
    [
        ("data_file", pa.string()),
        ("column", pa.string()),
        ("kind", pa.string()),
        ("puffin_path", pa.string()),
        ("offset", pa.int64()),
        ("length", pa.int64()),
        ("codec", pa.string()),
        ("checksum", pa.string()),
        ("rows", pa.int64()),
        ("row_group_rows", pa.list_(pa.int64())),
    ]
)


def entries_table(entries: Iterable[BlobEntry]) -> pa.Table:
    rows = list(entries)
    return pa.table(
        {
            "data_file": [e.data_file for e in rows],
            "column": [e.column for e in rows],
            "kind": [e.kind for e in rows],
            "puffin_path": [e.puffin_path for e in rows],
            "offset": [e.offset for e in rows],
            "length": [e.length for e in rows],
            "codec": [e.codec for e in rows],
            "checksum": [e.checksum for e in rows],
            "rows": [e.rows for e in rows],
            "row_group_rows": [list(e.row_group_rows) for e in rows],
        },
        schema=ENTRY_SCHEMA,
    )


@dataclass(frozen=True)
class IndexManifest:
    definitions: tuple[IndexDefinition, ...]
    entries: pa.Table  # ENTRY_SCHEMA

    @classmethod
    def empty(cls) -> IndexManifest:
        return cls((), ENTRY_SCHEMA.empty_table())

    def definition(self, column: str, kind: str) -> IndexDefinition | None:
        for d in self.definitions:
            if d.column.lower() == column.lower() and d.kind == kind:
                return d
        return None

    @functools.cached_property
    def entries_by_file(self) -> Mapping[str, tuple[dict[str, Any], ...]]:
        """Every entry as a row, grouped by its data file (built once per manifest: planning looks
        up a few files per query, and the manifest never changes)."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for row in self.entries.to_pylist():
            grouped.setdefault(row["data_file"], []).append(row)
        return {path: tuple(rows) for path, rows in grouped.items()}

    def indexed_files(self, definition: IndexDefinition) -> set[str]:
        mask = pc.and_(
            pc.equal(self.entries["column"], definition.column), pc.equal(self.entries["kind"], definition.kind)
        )
        return set(self.entries.filter(mask)["data_file"].to_pylist())

    def with_entries(self, entries: Sequence[BlobEntry] | pa.Table) -> IndexManifest:
        added = entries if isinstance(entries, pa.Table) else entries_table(entries)
        return IndexManifest(self.definitions, pa.concat_tables([self.entries, added.cast(ENTRY_SCHEMA)]))

    def with_definition(self, definition: IndexDefinition) -> IndexManifest:
        others = tuple(
            d for d in self.definitions if (d.column.lower(), d.kind) != (definition.column.lower(), definition.kind)
        )
        return IndexManifest((*others, definition), self.entries)

    def without(self, column: str, kind: str) -> IndexManifest:
        definitions = tuple(d for d in self.definitions if (d.column.lower(), d.kind) != (column.lower(), kind))
        keep = pc.invert(
            pc.and_(
                pc.equal(pc.utf8_lower(self.entries["column"]), column.lower()), pc.equal(self.entries["kind"], kind)
            )
        )
        return IndexManifest(definitions, self.entries.filter(keep))

    def only_files(self, live: set[str]) -> IndexManifest:
        """Entries of data files still in the table (others left the current snapshot)."""
        keep = pc.is_in(self.entries["data_file"], value_set=pa.array(sorted(live), pa.string()))
        return IndexManifest(self.definitions, self.entries.filter(keep))

    def without_puffins(self, paths: set[str]) -> IndexManifest:
        """Entries whose blobs are not in any of ``paths`` (index files that went missing)."""
        if not paths:
            return self
        keep = pc.invert(pc.is_in(self.entries["puffin_path"], value_set=pa.array(sorted(paths), pa.string())))
        return IndexManifest(self.definitions, self.entries.filter(keep))

    def puffin_paths(self) -> set[str]:
        return set(self.entries["puffin_path"].to_pylist())

    def to_bytes(self) -> bytes:
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, ENTRY_SCHEMA) as stream:
            stream.write_table(self.entries.cast(ENTRY_SCHEMA))
        buffer = io.BytesIO()
        writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
        writer.add(DEFINITIONS_BLOB, json.dumps([d.to_json() for d in self.definitions]).encode())
        writer.add(ENTRIES_BLOB, sink.getvalue())
        writer.finish()
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str = "index manifest") -> IndexManifest:
        reader = read_puffin(data, name=name)
        blobs = {b.type: b for b in reader.blobs}
        if DEFINITIONS_BLOB not in blobs or ENTRIES_BLOB not in blobs:
            raise ValueError(f"{name} is not a zskip index manifest")
        definitions = tuple(IndexDefinition.from_json(d) for d in json.loads(reader.read(blobs[DEFINITIONS_BLOB])))
        entries = pa.ipc.open_stream(reader.read(blobs[ENTRIES_BLOB])).read_all()
        return cls(definitions, entries)
