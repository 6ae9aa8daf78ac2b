"""Index manifests written before footer copies had a head still load: each such copy loads whole."""

from __future__ import annotations

import io
import json

import pyarrow as pa

from zskip.fileindex.manifest import (
    DEFINITIONS_BLOB,
    ENTRIES_BLOB,
    ENTRY_SCHEMA,
    FOOTER_SCHEMA,
    FOOTERS_BLOB,
    IndexManifest,
)
from zskip.fileindex.puffin import PuffinWriter


def _stream(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return sink.getvalue()


def test_a_manifest_whose_footer_copies_have_no_head_loads_them_as_whole_copies() -> None:
    older = pa.schema([f for f in FOOTER_SCHEMA if f.name not in ("head", "rest_offset")])
    footers = pa.Table.from_pylist(
        [
            {
                "data_file": "s3://b/t/data/f.parquet",
                "file_size": 1000,
                "puffin_path": "s3://b/t/zskip/indexes/i.puffin",
                "offset": 4,
                "length": 300,
                "codec": "zstd",
                "checksum": "123",
            }
        ],
        schema=older,
    )
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
    writer.add(DEFINITIONS_BLOB, json.dumps([]).encode())
    writer.add(ENTRIES_BLOB, _stream(ENTRY_SCHEMA.empty_table()))
    writer.add(FOOTERS_BLOB, _stream(footers))
    writer.finish()
    manifest = IndexManifest.from_bytes(buffer.getvalue())
    assert manifest.footers.schema.equals(FOOTER_SCHEMA)
    copy = manifest.footer_copies["s3://b/t/data/f.parquet"]
    assert copy.head is None and copy.rest_offset is None and copy.length == 300
    assert IndexManifest.from_bytes(manifest.to_bytes()).footers.equals(manifest.footers)
