"""``zskip.create_index``, ``refresh_indexes``, ``drop_index``, ``list_indexes`` and ``vacuum``."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from zskip.display import Displayed, Progress
from zskip.errors import InvalidOptionError, StorageError, UnknownColumnError, UnknownIndexError, UnsupportedTypeError
from zskip.expr.sql import quoted
from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.kinds import kind_named
from zskip.fileindex.manifest import IndexManifest
from zskip.iceberg.files import data_files
from zskip.iceberg.spark_errors import reaching_storage
from zskip.iceberg.table import IcebergTable, load_table
from zskip.indexing.jobs import build_indexes, merge_puffins
from zskip.tablefiles.build_leases import build_lease, live_leases_since
from zskip.tablefiles.clustering_store import STORE_PROPERTY
from zskip.tablefiles.index_manifest import (
    MANIFEST_PROPERTY,
    index_dir,
    missing_files,
    new_puffin_path,
    publish,
    read_manifest,
)
from zskip.tablefiles.locations import another_tables_file, path_inside
from zskip.units import format_bytes, parse_duration

__all__ = [
    "IndexInfo",
    "IndexResult",
    "VacuumResult",
    "create_index",
    "drop_index",
    "index_coverage",
    "list_indexes",
    "refresh_indexes",
    "vacuum",
]

log = logging.getLogger(__name__)


# Index files under 4 MiB count as small; past 32 of them, refresh merges them into files of up
# to 64 MiB, so planning opens few files (one Puffin per data file per build would pile up).
SMALL_INDEX_FILE = 4 << 20
MERGE_AT = 32
MERGED_INDEX_FILE = 64 << 20


@dataclass(frozen=True)
class IndexResult(Displayed):
    """What a build did: data files indexed now, files already indexed, entries dropped, bytes written."""

    table: str
    indexes: tuple[str, ...]  # "column:kind"
    files_indexed: int
    files_already_indexed: int
    files_total: int
    entries_dropped: int
    index_bytes_written: int
    manifest: str | None
    duration_seconds: float
    index_files_merged: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def display_title(self) -> str:
        return f"indexes of {self.table}"

    def display_rows(self) -> list[tuple[str, str]]:
        return [
            ("indexes", ", ".join(self.indexes)),
            (
                "data files",
                f"{self.files_indexed:,} indexed now, {self.files_already_indexed:,} already, "
                f"{self.files_total:,} in all",
            ),
            ("entries dropped", f"{self.entries_dropped:,}"),
            ("written", f"{format_bytes(self.index_bytes_written)} ({self.index_files_merged:,} index files merged)"),
            ("manifest", self.manifest or "-"),
            ("time", f"{self.duration_seconds:.1f} s"),
        ]


@dataclass(frozen=True)
class IndexInfo:
    """One index of a table: data files it covers now, and entries whose index file has gone missing."""

    column: str
    kind: str
    options: dict[str, Any]
    files_indexed: int  # live data files with a readable entry
    files_total: int
    index_bytes: int
    files_missing: int = 0  # live data files whose entry points at an index file that no longer exists
    bytes_unindexed: int = 0  # bytes of the live data files without a readable entry
    field_id: int | None = None  # the column's Iceberg field id
    unused: str | None = None  # why the index is never used (its column was dropped), or None
    measures: tuple[str, ...] = ()  # a cube's measures, as the table names them now


@dataclass(frozen=True)
class VacuumResult:
    files_deleted: int
    bytes_deleted: int
    files_kept: int
    warnings: tuple[str, ...] = ()  # why some files were kept although nothing seemed to reference them


@reaching_storage
def create_index(
    spark: SparkSession,
    table: str,
    column: str,
    *,
    kind: str = "bloom",
    measures: Sequence[str] | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> IndexResult:
    """Index ``column`` of every data file of ``table`` (``kind``: "bloom" or "bitmap", which answer
    filters; "sums", which answers ``sum`` and ``avg`` of the row groups wholly inside a filter; or
    "cube", which answers aggregates of ``measures`` grouped by ``column`` there: the kinds
    ``zskip.fileindex.kinds.KINDS`` lists; bloom takes ``fpp``, cube ``max_groups``).

    Files already indexed the same way are left alone; the new manifest is published atomically.

    >>> zskip.create_index(spark, "lake.db.events", "user_id", kind="bloom", fpp=0.01)  # doctest: +SKIP
    >>> zskip.create_index(spark, "lake.ssb.lineorder", "lo_shipmode", kind="cube",
    ...                    measures=["lo_revenue", "lo_quantity"])  # doctest: +SKIP
    """
    if not isinstance(column, str):
        raise InvalidOptionError(f"column must be a column name, not {column!r}")
    if isinstance(measures, str) or not all(isinstance(m, str) for m in measures or ()):
        raise InvalidOptionError(f"measures must be a list of column names, not {measures!r}")
    measure_names = tuple(measures or ())
    IndexDefinition(
        column, kind, options, measure_columns=measure_names
    )  # bad options fail before the table is touched
    index_kind = kind_named(kind)
    iceberg = load_table(spark, table)
    (field,) = iceberg.resolve([column])
    spark_type = iceberg.column_types([field])[field.name]  # a column zskip can index
    refused = index_kind.refuses(spark_type.simpleString())
    if refused is not None:
        raise UnsupportedTypeError(f"{table}.{field.name}: {refused}")
    measure_fields = iceberg.resolve(list(measure_names)) if measure_names else []
    if len({f.id for f in measure_fields}) < len(measure_fields):
        raise InvalidOptionError(f"measures name a column twice: {', '.join(measure_names)}")
    for measure in measure_fields:
        refused = index_kind.refuses_measure(iceberg.column_types([measure])[measure.name].simpleString())
        if refused is not None:
            raise UnsupportedTypeError(f"{table}.{measure.name}: {refused}")
    definition = IndexDefinition(
        field.name,
        kind,
        options,
        field.id,
        tuple(f.id for f in measure_fields),
        tuple(f.name for f in measure_fields),
    )
    if index_kind.takes_measures:
        _check_groups(spark, iceberg, definition)
    return _update(spark, iceberg, add=definition, progress=progress)


def _check_groups(spark: SparkSession, iceberg: IcebergTable, definition: IndexDefinition) -> None:
    """Refuse a cube whose column holds more values in some data file than it may keep per row group:
    its size would grow with the rows (a file's values bound its row groups' from above)."""
    limit = int(definition.index_kind.option(definition.options, "max_groups"))
    value = F.col(quoted(definition.column))
    groups = F.count_distinct(value) + F.max(F.when(value.isNull(), 1).otherwise(0))
    found = (
        spark.table(iceberg.name).groupBy("_file").agg(groups.alias("n")).orderBy(F.col("n").desc()).limit(1).collect()
    )
    if found and int(found[0]["n"]) > limit:
        raise InvalidOptionError(
            f"{iceberg.name}.{definition.column} has {int(found[0]['n']):,} values in one data file "
            f"({found[0]['_file']}), and a cube keeps at most max_groups={limit:,} per row group: cube a "
            "column of fewer values, or give a larger max_groups"
        )


@reaching_storage
def refresh_indexes(spark: SparkSession, table: str, *, progress: Progress | None = None) -> IndexResult:
    """Index files added since the last build, forget files that left the table, merge small index files."""
    return _update(spark, load_table(spark, table), progress=progress)


@reaching_storage
def drop_index(spark: SparkSession, table: str, column: str, kind: str) -> IndexResult:
    """Remove the ``kind`` index of ``column`` from the manifest (``vacuum`` deletes its files later)."""
    started = time.monotonic()
    iceberg = load_table(spark, table)
    manifest, path = read_manifest(iceberg, strict=True)
    found = _definition_named(iceberg, manifest, column, kind)
    if found is None:
        raise UnknownIndexError(
            f"{table} has no {kind} index on {column!r}; `zskip index list {table}` shows its indexes"
        )
    smaller = manifest.without(found)
    dropped = manifest.entries.num_rows - smaller.entries.num_rows
    new_path = publish(iceberg, smaller, expected=path)
    return IndexResult(table, (), 0, 0, 0, dropped, 0, new_path, time.monotonic() - started)


def _definition_named(iceberg: IcebergTable, manifest: IndexManifest, column: str, kind: str) -> IndexDefinition | None:
    """The ``kind`` index on the column ``column`` names now, or else on a column that has left the
    schema and was called ``column`` when the index was defined."""
    try:
        (field,) = iceberg.resolve([column])
    except (UnknownColumnError, UnsupportedTypeError):
        field = None
    if field is not None and (found := manifest.definition(field.id, kind)) is not None:
        return found
    live = {f.id for f in iceberg.schema()}
    gone = [d for d in manifest.definitions if d.kind == kind and d.column == column and d.field_id not in live]
    return gone[0] if gone else None


@reaching_storage
def list_indexes(spark: SparkSession, table: str) -> list[IndexInfo]:
    """Each index of ``table``: the live data files it covers, and those whose index file is missing.

    >>> [(i.column, i.kind, i.files_indexed) for i in zskip.list_indexes(spark, "lake.db.t")]  # doctest: +SKIP
    [('status', 'bitmap', 12)]
    """
    iceberg = load_table(spark, table)
    return index_coverage(iceberg, _live_file_sizes(spark, iceberg))


def index_coverage(iceberg: IcebergTable, sizes: Mapping[str, int]) -> list[IndexInfo]:
    """``list_indexes`` for a loaded table whose live data files (path to bytes) are already known."""
    manifest, _ = read_manifest(iceberg, strict=True)
    names = {f.id: f.name for f in iceberg.schema()}
    live = set(sizes)
    current = manifest.only_files(live)
    missing = missing_files(iceberg, current.puffin_paths())
    out = []
    for d in manifest.definitions:
        entries = current.entries_of(d) if d.field_id in names else current.entries.slice(0, 0)
        gone = pc.is_in(entries["puffin_path"], value_set=pa.array(sorted(missing), pa.string()))
        present = entries.filter(pc.invert(gone))
        covered = set(present["data_file"].to_pylist())
        out.append(
            IndexInfo(
                names.get(d.field_id, d.column) if d.field_id is not None else d.column,
                d.kind,
                dict(d.options),
                len(covered),
                len(live),
                int(pc.sum(present["length"]).as_py() or 0),
                len(set(entries.filter(gone)["data_file"].to_pylist())),
                sum(size for path, size in sizes.items() if path not in covered),
                d.field_id,
                None if d.field_id in names else _why_unused(d),
                tuple(names.get(m, f"field {m} (dropped)") for m in d.measures),
            )
        )
    return out


def _why_unused(definition: IndexDefinition) -> str:
    if definition.field_id is None:
        return (
            f"written before 0.4 for a name ({definition.column!r}) that has meant more than one column: "
            "never used; refresh_indexes drops it"
        )
    return f"its column (field id {definition.field_id}) has left the table: never used; refresh_indexes drops it"


@reaching_storage
def vacuum(spark: SparkSession, table: str, *, older_than: timedelta | float | str = "1d") -> VacuumResult:
    """Delete zskip files of ``table`` that no state of the table has referenced for ``older_than``.

    A file's grace counts from when it stopped being referenced: every state of the table's metadata
    that was current at some time in the last ``older_than`` (its metadata log) keeps the manifest and
    clustering store it named and every index file that manifest lists.  A file written since the
    oldest build still under way started (its lease, ``zskip.tablefiles.build_leases``) is kept too,
    whatever ``older_than`` says: that build may be about to publish it.  A file named for another
    table (one sharing this table's location) is never deleted.  ``older_than`` is a
    ``timedelta``, seconds, or text like ``"12h"``, ``"3d"``, ``"0s"``.
    """
    age = parse_duration(older_than, name="older_than")
    iceberg = load_table(spark, table)
    warnings: list[str] = []
    now = time.time()
    cutoff = now - age
    referenced, protected = _referenced_since(iceberg, int(cutoff * 1000), warnings)
    access = iceberg.file_access()

    def path_of(location: str) -> str:  # where a location is, whichever form (URI or path) it was written in
        return access.resolve(location)[1]

    referenced_paths = {path_of(p) for p in referenced if p}
    protected_prefix = path_of(index_dir(iceberg)).rstrip("/") + "/" if protected else None
    building_since, expired = live_leases_since(iceberg, now)
    if building_since is not None:
        log.info(
            "vacuum %s: a build under way since %s: files written since are kept", table, time.ctime(building_since)
        )
    deleted = kept = size = 0
    own = iceberg.uuid()
    for location, file_size, modified in access.files_under(f"{iceberg.location().rstrip('/')}/zskip", recursive=True):
        if not location.endswith(".puffin"):
            continue
        path = path_of(location)
        if another_tables_file(location, own):  # a table sharing this location wrote it: never deleted here
            kept += 1
            continue
        in_use = path in referenced_paths or (protected_prefix is not None and path.startswith(protected_prefix))
        young = modified is None or not modified <= cutoff  # an unknown or odd time means "young": kept
        # a build's files are written after its lease (a minute's slack for clocks)
        building = building_since is not None and (modified is None or modified >= building_since - 60)
        if in_use or young or building:
            kept += 1
            continue
        access.delete(location)
        deleted += 1
        size += file_size
    for lease in expired:
        access.delete(lease)
        log.info("vacuum %s: removed the lease of a build that never ended: %s", table, lease)
    log.info("vacuum %s: deleted %d files (%d bytes), kept %d", table, deleted, size, kept)
    return VacuumResult(deleted, size, kept, tuple(warnings))


def _referenced_since(iceberg: IcebergTable, cutoff_ms: int, warnings: list[str]) -> tuple[set[str], bool]:
    """Every zskip file some state of ``iceberg`` current since ``cutoff_ms`` references, and whether
    every index file must be kept (a manifest of those states could not be read, or the metadata log
    does not reach back to the cutoff: then which files were referenced is not known)."""
    states, reaches_back = iceberg.properties_since((MANIFEST_PROPERTY, STORE_PROPERTY), cutoff_ms)
    referenced: set[str] = set()
    protected = False
    if not reaches_back:
        protected = True
        warnings.append(
            "kept every index file: the table's metadata log does not reach back as far as older_than, so "
            "which files its states referenced since then is not known (a shorter older_than, or a longer "
            "write.metadata.previous-versions-max, lets vacuum delete)"
        )
        log.warning("vacuum %s: %s", iceberg.name, warnings[-1])
    location = iceberg.location()
    for number, state in enumerate(states):  # the current state first
        referenced |= {state[key] for key in (MANIFEST_PROPERTY, STORE_PROPERTY) if key in state}
        manifest_path = state.get(MANIFEST_PROPERTY)
        if not manifest_path or not path_inside(location, manifest_path, "the index manifest", iceberg.name):
            continue  # none, or outside the table: never read, and nothing under the table is its
        try:
            if number == 0:  # the table's store out of reach is raised, as by every verb
                manifest, _ = read_manifest(iceberg, strict=True)
            else:
                manifest = IndexManifest.from_bytes(iceberg.file_access().read(manifest_path), name=manifest_path)
            referenced |= manifest.puffin_paths()
        except (OSError, ValueError) as exc:  # damaged (CorruptIndexError is one) or gone
            if number == 0 and isinstance(exc, StorageError):
                raise
            # which index files it references is unknown: every one counts as referenced
            if not protected:
                warnings.append(f"kept every index file: the index manifest {manifest_path} cannot be read: {exc}")
                log.warning("vacuum %s: %s", iceberg.name, warnings[-1])
            protected = True
    return referenced, protected


def _update(
    spark: SparkSession, iceberg: IcebergTable, *, add: IndexDefinition | None = None, progress: Progress | None = None
) -> IndexResult:
    """Build what the manifest (with ``add``) lacks and publish it, holding a build lease throughout."""
    with build_lease(iceberg, "index build"):
        return _build(spark, iceberg, add=add, progress=progress)


def _build(
    spark: SparkSession, iceberg: IcebergTable, *, add: IndexDefinition | None = None, progress: Progress | None = None
) -> IndexResult:
    started = time.monotonic()
    manifest, path = read_manifest(iceberg, strict=True)
    before = manifest
    schema = iceberg.schema()
    if add is not None:
        assert add.field_id is not None
        existing = manifest.definition(add.field_id, add.kind)
        if existing is not None and not existing.same_build(add):
            manifest = manifest.without(existing)  # new options or measures: rebuild every file
        manifest = manifest.with_definition(add)
    elif not manifest.definitions:
        return IndexResult(iceberg.name, (), 0, 0, 0, 0, 0, path, time.monotonic() - started)
    live = _live_files(spark, iceberg)
    # indexes of columns that left the schema (or were never tied to one) go; the rest take the
    # names the table gives their columns now
    names = {f.id: f.name for f in schema if not f.nested}
    gone = [d.label() for d in manifest.definitions if d.field_id not in names]
    if gone:
        log.warning("%s: dropping indexes whose column left the table: %s", iceberg.name, ", ".join(gone))
    manifest = manifest.only_fields(set(names))
    manifest = dataclasses.replace(
        manifest,
        definitions=tuple(
            dataclasses.replace(
                d, column=names[d.field_id], measure_columns=tuple(names.get(m, "?") for m in d.measures)
            )
            for d in manifest.definitions
            if d.field_id is not None
        ),
    )
    current = manifest.only_files(live)
    missing = missing_files(iceberg, current.puffin_paths())
    if missing:
        # entries whose index file is gone index nothing: drop them, and their data files are rebuilt below
        log.warning("%s: %d index files are missing; their data files are indexed again", iceberg.name, len(missing))
        current = current.without_puffins(missing)
    dropped = before.entries.num_rows - current.entries.num_rows
    work: dict[str, list[IndexDefinition]] = defaultdict(list)
    for definition in current.definitions:
        done = current.indexed_files(definition)
        for data_file in live - done:
            work[data_file].append(definition)
    indexed = len(work)  # data files lacking some index
    already = len(live) - indexed  # data files every index already covered
    # every indexed data file gets a copy of its footer (files indexed before copies were made too,
    # and a copy of format 1, which planning reads whole, is made again: reading a footer is all that
    # takes)
    copied = {path for path, row in current.footer_copies.items() if row.head is not None}
    copy_footers = frozenset(live - copied) if current.definitions else frozenset()
    for data_file in copy_footers:
        work.setdefault(data_file, [])
    snapshot = iceberg.current_snapshot_id() or -1
    puffins = {f: new_puffin_path(iceberg) for f in work}
    absent_is_null = frozenset(f.id for f in schema if not f.has_default)
    entries, footers = build_indexes(
        spark,
        work,
        puffins,
        snapshot_id=snapshot,
        absent_is_null=absent_is_null,
        copy_footers=copy_footers,
        access=iceberg.file_access(),
        progress=progress,
    )
    written = _puffin_bytes(entries) + _puffin_bytes(footers)
    updated = current.with_entries(entries).with_footers(footers)
    blobs = [table.select(["puffin_path", "length"]) for table in (updated.entries, updated.footers)]
    merges = _merge_plan(pa.concat_tables(blobs), iceberg)
    if merges:
        merged, merged_footers = merge_puffins(spark, updated.entries, updated.footers, merges, iceberg.file_access())
        updated = dataclasses.replace(updated, entries=merged, footers=merged_footers)
        log.info("merged %d small index files into %d", sum(len(m) for _, m in merges), len(merges))
    if (
        not work
        and dropped == 0
        and add is None
        and not merges
        and not gone
        and current.definitions == before.definitions
    ):
        return IndexResult(iceberg.name, _names(current), 0, already, len(live), 0, 0, path, time.monotonic() - started)
    new_path = publish(iceberg, updated, expected=path)
    log.info(
        "indexed %d files of %s (%d already indexed, %d entries dropped, %d footers copied)",
        indexed,
        iceberg.name,
        already,
        dropped,
        footers.num_rows,
    )
    return IndexResult(
        iceberg.name,
        _names(current),
        indexed,
        already,
        len(live),
        dropped,
        written,
        new_path,
        time.monotonic() - started,
        sum(len(m) for _, m in merges),
    )


def _merge_plan(entries: pa.Table, iceberg: IcebergTable) -> list[tuple[str, list[str]]]:
    """Groups of small index files to merge, once more than ``MERGE_AT`` of them have piled up
    (``entries``: the ``puffin_path`` and ``length`` of every blob and footer copy)."""
    if entries.num_rows == 0:
        return []
    sizes = entries.group_by("puffin_path").aggregate([("length", "sum")])
    small = sorted(
        (int(size), path)
        for path, size in zip(sizes["puffin_path"].to_pylist(), sizes["length_sum"].to_pylist(), strict=True)
        if size < SMALL_INDEX_FILE
    )
    if len(small) <= MERGE_AT:
        return []
    groups: list[tuple[str, list[str]]] = []
    members: list[str] = []
    total = 0
    for size, path in small:
        if members and total + size > MERGED_INDEX_FILE:
            groups.append((new_puffin_path(iceberg, "merged"), members))
            members, total = [], 0
        members.append(path)
        total += size
    if len(members) > 1:
        groups.append((new_puffin_path(iceberg, "merged"), members))
    return [g for g in groups if len(g[1]) > 1]


def _names(manifest: IndexManifest) -> tuple[str, ...]:
    return tuple(d.label() for d in manifest.definitions)


def _puffin_bytes(entries: pa.Table) -> int:
    return int(pc.sum(entries["length"]).as_py() or 0) if entries.num_rows else 0


def _live_files(spark: SparkSession, iceberg: IcebergTable) -> set[str]:
    return set(_live_file_sizes(spark, iceberg))


def _live_file_sizes(spark: SparkSession, iceberg: IcebergTable) -> dict[str, int]:
    """Each live data file of the current snapshot and its size in bytes."""
    snapshot = iceberg.current_snapshot_id()
    if snapshot is None:
        return {}
    files = data_files(spark, iceberg.name, snapshot_id=snapshot)
    return dict(zip(files["file_path"].to_pylist(), files["file_size_in_bytes"].to_pylist(), strict=True))
