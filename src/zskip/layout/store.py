"""The clustering store: the spec and every clustered file's curve-key ranges, in one Puffin file.

Each optimize commit writes a new store file under ``<table location>/zskip/`` and points the
table property ``zskip.clustering.store`` at it in the same atomic commit as the rewrite, so a
reader sees the old store with the old files or the new store with the new files, never a mix.
Ranges are kept per file (``row_group = -1``) and per Parquet row group; files not in the store
(appends since the last optimize) simply have no range and are never skipped by it.
"""

from __future__ import annotations

import io
import logging
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from zskip.curves import ClusteringSpec
from zskip.iceberg.table import IcebergTable
from zskip.index.puffin import CorruptIndexError, PuffinWriter, read_puffin

__all__ = [
    "RANGES_SCHEMA",
    "STORE_PROPERTY",
    "SUMMARY_PROPERTY",
    "ClusteringStore",
    "read_store",
    "write_store",
]

log = logging.getLogger(__name__)

STORE_PROPERTY = "zskip.clustering.store"
SUMMARY_PROPERTY = "zskip.clustering"
SPEC_BLOB = "zskip-clustering-spec-v1"
RANGES_BLOB = "zskip-curve-range-v1"

RANGES_SCHEMA = pa.schema(
    [
        ("file_path", pa.string()),
        ("row_group", pa.int32()),
        ("min_key", pa.uint64()),
        ("max_key", pa.uint64()),
        ("rows", pa.int64()),
        ("generation", pa.int32()),
    ]
)


@dataclass(frozen=True)
class ClusteringStore:
    spec: ClusteringSpec
    ranges: pa.Table  # RANGES_SCHEMA
    path: str | None = None

    def file_generations(self) -> dict[str, int]:
        files = self.ranges.filter(pc.equal(self.ranges["row_group"], -1))
        return dict(zip(files["file_path"].to_pylist(), files["generation"].to_pylist(), strict=True))

    def next_generation(self) -> int:
        generations = self.ranges["generation"]
        return 0 if len(generations) == 0 else int(pc.max(generations).as_py()) + 1

    def for_files(self, live: set[str]) -> pa.Table:
        return self.ranges.filter(pc.is_in(self.ranges["file_path"], value_set=pa.array(sorted(live), pa.string())))


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def write_store(table: IcebergTable, spec: ClusteringSpec, ranges: pa.Table, *, snapshot_id: int) -> str:
    """Write a new store file through the table's FileIO; returns its location."""
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
    writer.add(SPEC_BLOB, spec.to_json().encode(), snapshot_id=snapshot_id)
    writer.add(RANGES_BLOB, _ipc(ranges.cast(RANGES_SCHEMA)), snapshot_id=snapshot_id)
    writer.finish()
    path = f"{table.location().rstrip('/')}/zskip/clustering-{uuid.uuid4()}.puffin"
    table.write_file(path, buffer.getvalue())
    return path


def read_store(table: IcebergTable, path: str | None = None) -> ClusteringStore | None:
    """The clustering store at ``path`` (the table's current one by default), or ``None`` (none yet, or
    unreadable: then a warning)."""
    path = path or table.property(STORE_PROPERTY)
    if not path:
        return None
    try:
        reader = read_puffin(table.read_file(path), name=path)
        blobs = {b.type: b for b in reader.blobs}
        spec = ClusteringSpec.from_json(reader.read(blobs[SPEC_BLOB]).decode())
        ranges = pa.ipc.open_stream(reader.read(blobs[RANGES_BLOB])).read_all()
    except (CorruptIndexError, KeyError, ValueError, OSError) as exc:
        log.warning("ignoring the clustering store %s of %s: %s", path, table.name, exc)
        return None
    except Exception as exc:  # a missing file surfaces as a py4j error
        log.warning("ignoring the clustering store %s of %s: %s", path, table.name, str(exc).splitlines()[0])
        return None
    return ClusteringStore(spec=spec, ranges=ranges, path=path)
