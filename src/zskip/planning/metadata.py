"""The metadata of one table snapshot that planning reads, loaded once and cached by immutable key.

A snapshot's files never change, nor does a data file's footer, a clustering store or an index
manifest once written: every entry is keyed by what names it for good (table location and
snapshot id, file path, store or manifest path), so nothing cached here goes stale; entries only
fall out of the bounded cache (``zskip.planning.cache``).  Listing a snapshot's files (one Spark
query over ``<table>.files``) is paid only when its totals are shown or recorded, once per snapshot.

A cold plan reads in rounds, each issued at once (``storage.at_once``: 16 threads that live as long
as the process). The clustering store and the index manifest of every table the analysed query reads
start loading before Spark plans the scans (``Bridge.tables`` names them from the analysed plan,
``metadata.read_ahead`` hands them to the reading threads with ``storage.in_background``), so their
round trips overlap Spark's planning; the planning cache loads a key once however many threads ask
for it (``LruCache.get_or_load`` waits for a load in progress, and keeps no failure: a failed read
is tried again by whoever asks next). Then, on a table without indexes, the footers of the files
Iceberg kept, up to 256 (``SnapshotMetadata.prefetch``), then the index blobs of the candidates (for
a predicate of ranges only, only of the files whose footers, read first, leave a row group with few
matches expected, ``planning.selectivity``: conditions on one column holding the span between their
bounds, the columns independent of each other, a curve's too (bench/range_estimate.py measures why);
and whose blobs cost no more to read than the bytes of the scan's columns in those row groups, plus
the file's opening when they are all its row groups left: ``planning.index_reading.worth_reading``, from the
columns' bytes per row group in the footer copies and the fields the scan reads)
(``blob_reads.load_many``: blobs of one index file less than 256 KiB apart in one request). For an
equality the candidates' footer copies are read on another thread while the heads are, and kept as
bytes (``SnapshotMetadata.read_copies_ahead``, ``LruCache.load_many``: whoever asks for a footer
then waits for that read rather than reading it again, and decodes the footer from the bytes): the
heads rule out most candidates, whose footers are then never decoded, and decoding them on the
reading thread held Python's lock the index reads needed. A format 3 head's header records its
fences' keys and type (``fence_keys``, ``key_type``), so a head decodes without reading a Parquet
file; a footer copy's Arrow schema is parsed once per process (``footer_copy._facts_of``). Then the
footers of the files left: from their copies in the index files
(``SnapshotMetadata.prefetch_footers``, ``blob_reads.footer_copies``: copies of one index file in
one request; a copy's arrays become the statistics arrays the stages use, ``StatsColumn.of_arrays``;
only a copy's head, its facts, is read, and the rest, its Parquet footer, is read and parsed only
for a column the arrays lack: ``footers.Footer``'s tail loader), and of a file without a copy from
the file itself (one request: Iceberg's recorded file size saves asking the store for the length). A
footer's statistics are worked out per column when a stage first asks for that column. The
snapshot's totals (files and row groups in all, a listing of every live file) are worked out only
when ``explain`` shows them or the workload log writes its records, never while a query waits.
``bench/object_storage.py`` counts every request (a relay in front of the S3 server tells zskip's
pyarrow client from the JVM's SDK by user agent).
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from zskip import degraded
from zskip.fileindex.entries import FooterCopy
from zskip.fileindex.footer_copy import CopyRest, decode_rest
from zskip.fileindex.manifest import IndexManifest
from zskip.iceberg.files import data_files
from zskip.iceberg.scan_types import IcebergScan, TableState
from zskip.iceberg.table import load_table
from zskip.planning.cache import CACHE
from zskip.planning.curve import RecordedKeyRanges
from zskip.planning.footers import Footer, footer_from_copy, read_footer
from zskip.planning.minmax_arrays import StatsColumn
from zskip.storage import LOCAL, FileAccess, at_once, in_background
from zskip.tablefiles.blob_reads import footer_copies, footer_copy_rest
from zskip.tablefiles.clustering_store import STORE_ERRORS, STORE_PROPERTY, ClusteringStore, load_store
from zskip.tablefiles.index_manifest import MANIFEST_PROPERTY, resolved
from zskip.tablefiles.locations import manifest_inside, path_inside

__all__ = ["SnapshotMetadata", "read_ahead", "snapshot_metadata"]

log = logging.getLogger(__name__)
T = TypeVar("T")

BULK_FOOTERS = 256  # up to this many kept files, their footers are read with the store and manifest
# Index files opened while Spark plans (those the manifest names most): a merged table has a few, one
# per indexed column; a table indexed batch by batch has many, each read by fewer plans.
OPEN_AHEAD_FILES = 8


@dataclass(frozen=True)
class SnapshotMetadata:
    """Files, footers, clustering store and index manifest of the snapshot a scan reads."""

    spark: SparkSession
    table: str
    location: str
    snapshot_id: int | None
    store_path: str | None
    manifest_path: str | None
    storage: FileAccess = LOCAL  # how the table's files are reached
    sizes: Mapping[str, int] = field(default_factory=dict)  # bytes of the files the scan planned
    # row groups per file, as this plan's stages ask (each stage counts what it kept, file by file)
    _row_groups: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        # what the table's properties name outside its zskip folder is neither read nor trusted
        for name, what in (("store_path", "the clustering store"), ("manifest_path", "the index manifest")):
            object.__setattr__(self, name, path_inside(self.location, getattr(self, name), what, self.table))

    def files(self) -> pa.Table:
        """Every live data file of the snapshot (``zskip.iceberg.files.data_files``)."""
        key = ("files", self.location, self.snapshot_id)
        return CACHE.get_or_load(key, lambda: data_files(self.spark, self.table, snapshot_id=self.snapshot_id))

    def totals(self) -> tuple[int, int]:
        """Data files and row groups of the whole snapshot."""
        if self.snapshot_id is None:
            return 0, 0
        files = self.files()
        groups = CACHE.get_or_load(("row groups", self.location, self.snapshot_id), lambda: self._count_groups(files))
        return files.num_rows, groups

    def _count_groups(self, files: pa.Table) -> int:
        """Row groups of every live file without reading every footer: Iceberg's split offsets (one
        per row group) where the writer recorded them, the clustering store's per-row-group ranges,
        and only then the footer itself (read once, then cached)."""
        store = self.store()
        recorded: dict[str, int] = {}
        if store is not None:
            groups = store.ranges.filter(pc.greater_equal(store.ranges["row_group"], 0))
            for path in groups["file_path"].to_pylist():
                recorded[path] = recorded.get(path, 0) + 1
        total = 0
        for path, offsets in zip(files["file_path"].to_pylist(), files["split_offsets"].to_pylist(), strict=True):
            if offsets:
                total += len(offsets)
            elif path in recorded:
                total += recorded[path]
            else:
                total += self.footer(path).row_groups
        return total

    def footer(self, path: str) -> Footer:
        """Data file ``path``'s footer: from its copy in the index files when the manifest has one, else
        from the file itself."""
        return CACHE.get_or_load(("footer", path), lambda: self._load_footer(path))

    def _load_footer(self, path: str) -> Footer:
        copy = self._footer_copy(path)
        if copy is not None:
            loaded = self._footers_from_copies({path: copy}).get(path)
            if loaded is not None:
                return loaded
        return read_footer(path, self.storage, size=self.sizes.get(path))

    def _footer_copy(self, path: str) -> FooterCopy | None:
        """Where the index files hold a copy of ``path``'s footer, if they do (a copy of a file of
        another length than Iceberg records is not used)."""
        manifest = self.manifest() if self.manifest_path else None
        copy = manifest.footer_copies.get(path) if manifest is not None else None
        size = self.sizes.get(path)
        if copy is None or (size is not None and copy.file_size != size):
            return None
        return copy

    def _footers_from_copies(self, copies: Mapping[str, FooterCopy]) -> dict[str, Footer]:
        """The footers the copies ``copies`` hold (read together, but for those read ahead), by data
        file; one that cannot be read is left out, with a warning, and its data file's own footer is
        read instead."""
        found: dict[str, bytes | Exception] = {}
        for path in copies:
            if (ahead := self._copy_read_ahead(path)) is not None:
                found[path] = ahead
        to_read = [path for path in copies if path not in found]
        found.update(zip(to_read, footer_copies([copies[p] for p in to_read], self.storage), strict=True))
        out = {}
        for path in copies:
            data = found[path]
            if not isinstance(data, Exception):
                try:
                    out[path] = footer_from_copy(data, functools.partial(self._copy_rest, path, copies[path]))
                    continue
                except (ValueError, pa.ArrowException) as exc:
                    data = exc
            degraded.tolerate(data)
            log.warning("reading the footer of %s itself: its copy cannot be used: %s", path, data)
        return out

    def read_copies_ahead(self, paths: Sequence[str]) -> None:
        """Read the footer copies of ``paths`` (those whose footers are not cached) in one round, and
        keep their bytes undecoded: a footer is decoded from them when a stage asks for it.  For
        reading on another thread while something else is read: an equality's bitmap heads often rule
        out most candidate files, whose footers are then never needed, and decoding them meanwhile
        would hold Python's lock that the index reads need."""
        copies = {
            path: copy
            for path in dict.fromkeys(paths)
            if ("footer", path) not in CACHE and (copy := self._footer_copy(path)) is not None
        }

        def read(keys: list[Hashable]) -> dict[Hashable, bytes]:
            rows = [copies[key[1]] for key in keys]  # type: ignore[index]
            found = footer_copies(rows, self.storage)
            return {key: data for key, data in zip(keys, found, strict=True) if not isinstance(data, Exception)}

        if copies:
            CACHE.load_many([("footer copy", path) for path in copies], read)

    def _copy_read_ahead(self, path: str) -> bytes | None:
        """The bytes of ``path``'s footer copy ``read_copies_ahead`` read (waited for while it reads
        them), else ``None``; taken out of the cache: the footer decoded from them is kept instead."""
        data: bytes | None = CACHE.take(("footer copy", path))
        return data

    def _copy_rest(self, path: str, row: FooterCopy, rest: CopyRest) -> bytes:
        """The Parquet footer of ``path`` after its copy's head (``row``, the manifest's) was read: from
        the rest of the copy, or, when that cannot be read, from the data file itself."""
        try:
            return decode_rest(rest, footer_copy_rest(row, self.storage))
        except (OSError, ValueError) as exc:
            degraded.tolerate(exc)
            log.warning("reading the footer of %s itself: the rest of its copy cannot be used: %s", path, exc)
            return self.storage.parquet_footer(path)[0]

    def stats_column(self, path: str, field_id: int) -> StatsColumn:
        """The statistics of column ``field_id`` over every row group of ``path``, as arrays (built once)."""

        def load() -> StatsColumn:
            footer = self.footer(path)
            arrays = footer.arrays(field_id)
            if arrays is not None:
                return StatsColumn.of_arrays(functools.partial(footer.column, field_id), *arrays)
            return StatsColumn.of(list(footer.column(field_id)))

        return CACHE.get_or_load(("stats", path, field_id), load)

    def stats_columns(self, paths: Sequence[str], field_ids: Iterable[int]) -> dict[int, StatsColumn]:
        """Each column's statistics over every row group of ``paths``, one file after another, by field id."""
        return {field_id: self.stats_over(paths, field_id) for field_id in field_ids}

    def stats_over(self, paths: Sequence[str], field_id: int) -> StatsColumn:
        """Column ``field_id``'s statistics over every row group of ``paths``, one file after another
        (joined once per set of files: a query planned again keeps the same files)."""
        if len(paths) == 1:
            return self.stats_column(paths[0], field_id)
        return CACHE.get_or_load(
            ("stats over", tuple(paths), field_id),
            lambda: StatsColumn.concat([self.stats_column(path, field_id) for path in paths]),
        )

    def prefetch_footers(self, paths: Sequence[str]) -> None:
        """Read the footers of ``paths`` not cached yet: the copies the index files hold in one round
        (neighbours in one request), then the rest from the data files, several at a time."""
        todo = [path for path in dict.fromkeys(paths) if ("footer", path) not in CACHE]
        copies = {path: copy for path in todo if (copy := self._footer_copy(path)) is not None}
        if len(copies) > 1:

            def from_copies(keys: list[Hashable]) -> dict[Hashable, Footer]:
                wanted = {key[1]: copies[key[1]] for key in keys}  # type: ignore[index]
                return {("footer", path): footer for path, footer in self._footers_from_copies(wanted).items()}

            # the copies no other thread is reading already, in one round; the others are waited for below
            CACHE.load_many([("footer", path) for path in copies], from_copies)
        _at_once([functools.partial(self.footer, path) for path in todo if ("footer", path) not in CACHE])

    def prefetch(self, paths: Sequence[str]) -> None:
        """One round of cold reads before the stages run, all at once: the clustering store, the index
        manifest and, on a table without indexes, the footers of ``paths`` (the files Iceberg kept; up to
        ``BULK_FOOTERS`` of them).  With indexes, their verdicts come first and footers follow for the
        files they keep."""
        bulk = not self.manifest_path and len(paths) <= BULK_FOOTERS
        footers = [p for p in paths if ("footer", p) not in CACHE] if bulk else []
        reads: list[Callable[[], object]] = [functools.partial(self.footer, p) for p in footers]
        if self.store_path and ("store", self.store_path) not in CACHE:
            reads.append(self.store)
        if self.manifest_path and ("manifest", self.manifest_path) not in CACHE:
            reads.append(self.manifest)
        _at_once(reads)

    def row_groups(self, path: str) -> int:
        count = self._row_groups.get(path)
        if count is None:
            count = self._row_groups[path] = self.footer(path).row_groups
        return count

    def store(self) -> ClusteringStore | None:
        """The clustering store (``None``: the table has none, or it cannot be read, which is logged and
        not kept: the next plan reads it again)."""
        if not self.store_path:
            return None
        return _or_none(self._cached_store, STORE_ERRORS, f"the clustering store {self.store_path} of {self.table}")

    def _cached_store(self) -> ClusteringStore:
        assert self.store_path
        path = self.store_path
        table = functools.partial(load_table, self.spark, self.table, fresh=False)
        return CACHE.get_or_load(("store", path), lambda: load_store(self.storage, path, table))

    def curve_ranges(self) -> RecordedKeyRanges:
        """The store's recorded key ranges (per file and per row group) as arrays (built once per store)."""
        store = self.store()
        assert store is not None and self.store_path
        return CACHE.get_or_load(("curve ranges", self.store_path), lambda: RecordedKeyRanges.of(store.ranges))

    def manifest(self) -> IndexManifest | None:
        """The index manifest (``None``: the table has none, or it cannot be read, which is logged and
        not kept: the next plan reads it again)."""
        if not self.manifest_path:
            return None
        return _or_none(self._cached_manifest, (Exception,), f"the index manifest {self.manifest_path}")

    def _cached_manifest(self) -> IndexManifest:
        assert self.manifest_path
        path = self.manifest_path

        def load() -> IndexManifest:
            manifest = IndexManifest.from_bytes(self.storage.read(path), name=path)
            if manifest.entries["field_id"].null_count or any(d.field_id is None for d in manifest.definitions):
                manifest = resolved(manifest, load_table(self.spark, self.table, fresh=False))
            return manifest_inside(manifest, self.location, self.table)

        return CACHE.get_or_load(("manifest", path), load)

    def read_ahead(self) -> None:
        """Start reading the clustering store and the index manifest on the reading threads, without
        waiting (see ``read_ahead``)."""
        reads: list[Callable[[], object]] = []
        if self.store_path and ("store", self.store_path) not in CACHE:
            reads.append(self._cached_store)
        if self.manifest_path and ("manifest", self.manifest_path) not in CACHE:
            reads.append(self._open_index_files_ahead)
        in_background(reads)

    def _open_index_files_ahead(self) -> None:
        """Read the index manifest, then open (on object storage) the index files it names most often,
        all at once: the length each asks the store for is then known when the index stage reads
        it, one round trip off each of its rounds that reads an index file first."""
        manifest = self._cached_manifest()
        assert self.manifest_path
        if self.storage.settings_for(self.manifest_path) is None:
            return
        counts = Counter(manifest.entries["puffin_path"].to_pylist())
        counts.update(manifest.footers["puffin_path"].to_pylist())
        # each on a reading thread of its own (this runs on one: ``at_once`` would open them in turn); one
        # that fails is logged, and the read that needs the file reports it
        in_background(
            [functools.partial(self.storage.open_ahead, path) for path, _ in counts.most_common(OPEN_AHEAD_FILES)]
        )


def _or_none(load: Callable[[], T], errors: tuple[type[Exception], ...], what: str) -> T | None:
    """``load()``, or ``None`` with a warning when it raises one of ``errors`` (planning goes on without it)."""
    try:
        return load()
    except errors as exc:
        degraded.tolerate(exc)
        log.warning("ignoring %s: %s", what, (str(exc).splitlines() or [""])[0])
        return None


def _at_once(reads: Sequence[Callable[[], object]]) -> None:
    """Run ``reads`` several at a time (``zskip.storage.at_once``).  A read that fails is left for the
    stage that needs it to read again and report."""
    if len(reads) < 2:
        return
    for outcome in at_once(reads):
        if isinstance(outcome, Exception):
            log.debug("reading ahead: %s", outcome)


def read_ahead(spark: SparkSession) -> Callable[[Sequence[TableState]], None]:
    """For ``query_scans``'s ``ahead``: the clustering stores and index manifests of the tables a query
    reads start loading while Spark plans it.  On object storage each is a round trip or two, which
    then overlap with Spark's planning rather than follow it; planning asks for them by the same keys."""

    def start(tables: Sequence[TableState]) -> None:
        for state in tables:
            snapshot_metadata(spark, state).read_ahead()

    return start


def snapshot_metadata(spark: SparkSession, scan: IcebergScan | TableState) -> SnapshotMetadata:
    """The metadata of the snapshot ``scan`` reads (a table state before its scans are planned: no file sizes)."""
    return SnapshotMetadata(
        spark=spark,
        table=scan.table,
        location=scan.location,
        snapshot_id=scan.snapshot_id,
        store_path=scan.properties.get(STORE_PROPERTY),
        manifest_path=scan.properties.get(MANIFEST_PROPERTY),
        storage=scan.storage,
        sizes=dict(zip(scan.paths, scan.sizes, strict=True)) if isinstance(scan, IcebergScan) else {},
    )
