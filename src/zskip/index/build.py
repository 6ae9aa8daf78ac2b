"""Build the indexes of one data file: read it with pyarrow, write one Puffin file, describe its blobs.

Runs inside a Spark task (one per data file).  Bitmaps cover the whole file's rows; bloom filters
cover the file and each row group.  What comes back to the driver is one small entry per blob.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from zskip.index.bitmap import BitmapIndex
from zskip.index.bloom import BloomIndex
from zskip.index.kinds import IndexDefinition, blob_type
from zskip.index.parquet_io import open_parquet, read_file, write_file
from zskip.index.puffin import CHECKSUM, PuffinWriter

__all__ = ["BlobEntry", "build_file_indexes", "copy_blobs"]


@dataclass(frozen=True)
class BlobEntry:
    """Where one index of one data file lives (a row of the index manifest)."""

    data_file: str
    column: str
    kind: str
    puffin_path: str
    offset: int
    length: int
    codec: str | None
    checksum: str
    rows: int
    row_group_rows: tuple[int, ...]


def build_file_indexes(
    data_file: str, definitions: Sequence[IndexDefinition], puffin_path: str, *, snapshot_id: int = -1
) -> list[BlobEntry]:
    """Index ``data_file``'s columns as ``definitions`` say; write the blobs to ``puffin_path``."""
    parquet = open_parquet(data_file)
    names = {name.lower(): name for name in parquet.schema_arrow.names}
    columns = sorted({d.column for d in definitions})
    missing = [c for c in columns if c.lower() not in names]
    if missing:
        raise KeyError(f"{data_file} has no column {', '.join(missing)}")
    groups = [
        parquet.read_row_group(g, columns=[names[c.lower()] for c in columns]) for g in range(parquet.num_row_groups)
    ]
    row_group_rows = tuple(t.num_rows for t in groups)
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
    written = []
    for definition in definitions:
        name = names[definition.column.lower()]
        kind = parquet.schema_arrow.field(name).type
        parts = [t.column(name) for t in groups] or [pa.chunked_array([], type=kind)]
        if definition.kind == "bitmap":
            payload = BitmapIndex.build(pa.chunked_array([c for p in parts for c in p.chunks], type=kind)).to_bytes()
        else:
            payload = BloomIndex.build(list(parts), fpp=definition.fpp).to_bytes()
        meta = writer.add(
            blob_type(definition.kind),
            payload,
            snapshot_id=snapshot_id,
            properties={"column": definition.column, "data-file": data_file},
        )
        written.append((definition, meta))
    writer.finish()
    write_file(puffin_path, buffer.getvalue())
    return [
        BlobEntry(
            data_file=data_file,
            column=definition.column,
            kind=definition.kind,
            puffin_path=puffin_path,
            offset=meta.offset,
            length=meta.length,
            codec=meta.compression_codec,
            checksum=meta.properties[CHECKSUM],
            rows=sum(row_group_rows),
            row_group_rows=row_group_rows,
        )
        for definition, meta in written
    ]


def copy_blobs(puffin_path: str, entries: Sequence[dict[str, Any]]) -> list[BlobEntry]:
    """Write the blobs manifest ``entries`` point at into one new Puffin file, bytes as stored."""
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
    copied = []
    for entry in entries:
        stored = read_file(entry["puffin_path"], offset=entry["offset"], length=entry["length"])
        if str(zlib.crc32(stored)) != entry["checksum"]:
            continue  # a damaged blob stays out of the merged file: its data file counts as unindexed
        meta = writer.add_stored(
            blob_type(entry["kind"]),
            stored,
            codec=entry["codec"],
            properties={"column": entry["column"], "data-file": entry["data_file"]},
        )
        copied.append(
            BlobEntry(
                data_file=entry["data_file"],
                column=entry["column"],
                kind=entry["kind"],
                puffin_path=puffin_path,
                offset=meta.offset,
                length=meta.length,
                codec=entry["codec"],
                checksum=entry["checksum"],
                rows=entry["rows"],
                row_group_rows=tuple(entry["row_group_rows"]),
            )
        )
    writer.finish()
    write_file(puffin_path, buffer.getvalue())
    return copied
