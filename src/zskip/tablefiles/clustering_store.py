"""The clustering store: the spec and every clustered file's curve-key ranges, in one Puffin file.

Each optimize commit writes a new store file under ``<table location>/zskip/`` and points the
table property ``zskip.clustering.store`` at it in the same atomic commit as the rewrite, so a
reader sees the old store with the old files or the new store with the new files, never a mix.
Ranges are kept per file (``row_group = -1``) and per Parquet row group; files not in the store
(appends since the last optimize) simply have no range and are never skipped by it.
"""

from __future__ import annotations

import dataclasses
import io
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from zskip import settings
from zskip.curves import ClusteringSpec
from zskip.fileindex.puffin import CorruptIndexError, PuffinWriter, read_puffin
from zskip.iceberg.table import IcebergTable
from zskip.storage import FileAccess
from zskip.tablefiles.locations import file_name, path_inside

__all__ = [
    "RANGES_SCHEMA",
    "STORE_ERRORS",
    "STORE_PROPERTY",
    "SUMMARY_PROPERTY",
    "WRITE_KEYS_BLOB",
    "ClusteringStore",
    "load_store",
    "read_store",
    "renamed",
    "with_field_ids",
    "write_store",
]

log = logging.getLogger(__name__)

STORE_PROPERTY = settings.CLUSTERING_STORE.key
SUMMARY_PROPERTY = settings.CLUSTERING.key
SPEC_BLOB = "zskip-clustering-spec-v1"
RANGES_BLOB = "zskip-curve-range-v1"
WRITE_KEYS_BLOB = "zskip-write-keys-v1"  # what a clustered write keys rows by (zskip.layout.write_keys)

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
    has_write_keys: bool = False  # whether it records what clustered writes sort by (WRITE_KEYS_BLOB)

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


def write_store(
    table: IcebergTable, spec: ClusteringSpec, ranges: pa.Table, *, snapshot_id: int, write_keys: bytes | None = None
) -> str:
    """Write a new store file where the table's files live (``zskip.storage``); returns its location.
    ``write_keys``: the curve key clustered writes sort by (``zskip.layout.write_keys``), if any."""
    buffer = io.BytesIO()
    writer = PuffinWriter(buffer, properties={"created-by": "zskip"})
    writer.add(SPEC_BLOB, spec.to_json().encode(), snapshot_id=snapshot_id)
    writer.add(RANGES_BLOB, _ipc(ranges.cast(RANGES_SCHEMA)), snapshot_id=snapshot_id)
    if write_keys is not None:
        # stored plain: the JVM reads it with Iceberg's Puffin reader, whatever codecs its runtime has
        fields = [i for i in spec.field_ids if i is not None]
        writer.add(WRITE_KEYS_BLOB, write_keys, snapshot_id=snapshot_id, fields=fields, compress=False)
    writer.finish()
    path = f"{table.location().rstrip('/')}/zskip/{file_name(table.uuid(), 'clustering')}"
    table.file_access().write(path, buffer.getvalue())
    return path


def read_store(table: IcebergTable, path: str | None = None) -> ClusteringStore | None:
    """The clustering store at ``path`` (the table's current one by default), or ``None`` (none yet, or
    unreadable: then a warning)."""
    path = path_inside(table.location(), path or table.property(STORE_PROPERTY), "the clustering store", table.name)
    if not path:
        return None
    try:
        return load_store(table.file_access(), path, lambda: table)
    except STORE_ERRORS as exc:
        log.warning("ignoring the clustering store %s of %s: %s", path, table.name, exc)
        return None


STORE_ERRORS = (CorruptIndexError, KeyError, ValueError, OSError)  # what an unreadable store raises


def load_store(access: FileAccess, path: str, table: Callable[[], IcebergTable]) -> ClusteringStore:
    """The clustering store at ``path``, read through ``access``; one of ``STORE_ERRORS`` when it
    cannot be read.  ``table`` gives the table, asked for only by a spec written before field ids."""
    reader = read_puffin(access.read(path), name=path)
    blobs = {b.type: b for b in reader.blobs}
    spec = ClusteringSpec.from_json(reader.read(blobs[SPEC_BLOB]).decode())
    ranges = pa.ipc.open_stream(reader.read(blobs[RANGES_BLOB])).read_all()
    if not all(c.field_id is not None for c in spec.columns):
        spec = with_field_ids(spec, table())
    return ClusteringStore(spec=spec, ranges=ranges, path=path, has_write_keys=WRITE_KEYS_BLOB in blobs)


def with_field_ids(spec: ClusteringSpec, table: IcebergTable) -> ClusteringSpec:
    """A spec written before 0.4 (columns by name) with each column tied to the field it meant
    (``IcebergTable.old_names``); a column tied to none keeps no field id, and no query is bounded by it."""
    if all(c.field_id is not None for c in spec.columns):
        return spec
    find = table.old_names()
    columns = []
    for column in spec.columns:
        found = find(column.name) if column.field_id is None else None
        if column.field_id is None and found is None:
            log.warning(
                "%s: the clustering spec (written before zskip 0.4) names column %r, which has meant more than "
                "one column of the table: no query is bounded by it; optimize again to cluster anew",
                table.name,
                column.name,
            )
        columns.append(
            column if found is None else dataclasses.replace(column, field_id=found.id, iceberg_type=found.type)
        )
    return spec.with_columns(columns)


def renamed(spec: ClusteringSpec, names: Mapping[int, str]) -> ClusteringSpec:
    """``spec`` with each column under the name ``names`` gives its field id now (rows are keyed by
    name, so a spec kept across a rename must read the column under its new one)."""
    columns = [
        dataclasses.replace(c, name=names[c.field_id]) if c.field_id is not None and c.field_id in names else c
        for c in spec.columns
    ]
    return spec if columns == list(spec.columns) else spec.with_columns(columns)
