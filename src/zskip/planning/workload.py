"""The workload log: every scan zskip plans, kept with the table for the advisor to learn from.

Each planned scan becomes one record (table, snapshot, the predicate as SQL, its columns, files and
row groups total and kept, planning time).  Records wait in memory and are written, as one small
Parquet file under ``<table location>/zskip/workload/``, once ``FLUSH_AFTER`` of a table have
gathered, on ``flush_workload()``, and when the process exits.  Past ``COMPACT_AFTER`` files a flush
merges them into one holding at most the newest ``MAX_RECORDS`` records: the log stays bounded.

Capturing never fails or slows a query: a record costs a few microseconds, and writing happens on a
thread of its own once per ``FLUSH_AFTER`` scans (the first batch of a snapshot lists its files for
the totals, a Spark job a query must not wait for); any error is logged as a warning and counted
(``RECORDER.errors``).  Turn it off per session with
``spark.conf.set("spark.zskip.workload.capture", "false")``.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import SparkSession

from zskip import settings as zskip_settings
from zskip.errors import StorageError
from zskip.expr import bind, columns_of, to_sql
from zskip.expr.rewrite import without_implied_not_null
from zskip.iceberg.hook import await_records
from zskip.iceberg.spark_errors import error_class, first_line, is_spark_error, reaching_storage
from zskip.iceberg.table import load_table
from zskip.settings import flag
from zskip.storage import LOCAL, FileAccess
from zskip.tablefiles.workload_log import (
    WORKLOAD_SCHEMA,
    append_records,
    predicate_for_schema,
    read_records,
    workload_dir,
)

if TYPE_CHECKING:
    from zskip.iceberg.scan_types import JoinKeys
    from zskip.planning.metadata import SnapshotMetadata
    from zskip.planning.plan import ScanPlan

__all__ = [
    "CAPTURE_CONF",
    "RECORDER",
    "WORKLOAD_SCHEMA",
    "WorkloadRecorder",
    "flush_workload",
    "predicate_for_schema",
    "read_workload",
    "workload",
    "workload_dir",
]

log = logging.getLogger(__name__)

CAPTURE_CONF = zskip_settings.CAPTURE.key
FLUSH_AFTER = 64


@dataclass
class _Pending:
    table: str
    # each record with the snapshot whose totals it records: those are asked for only when the records
    # are read or written, so a query never waits for a listing of its snapshot (cached once done)
    rows: list[tuple[dict[str, object], SnapshotMetadata]]
    storage: FileAccess

    def complete_rows(self, deadline: float | None = None) -> list[dict[str, object]]:
        """The records with their snapshots' totals.  Totals are tried once per snapshot and not at all
        past ``deadline`` (``time.monotonic()``): a record without them keeps the rest.  Raises
        ``TableGone`` when the table no longer exists (its records have nowhere to go)."""
        out = []
        tried: dict[int, tuple[int | None, int | None]] = {}
        for row, metadata in self.rows:
            totals = tried.get(id(metadata))
            if totals is None:
                totals = (None, None)
                if deadline is None or time.monotonic() < deadline:
                    if not tried and not _exists(metadata):
                        raise TableGone(self.table)  # asked first: a listing of a gone table logs Spark's error
                    try:
                        totals = metadata.totals()
                    except Exception as exc:  # the session may be gone at exit: the record keeps the rest
                        if is_spark_error(exc) and error_class(exc).startswith("TABLE_OR_VIEW_NOT_FOUND"):
                            raise TableGone(self.table) from None
                        log.debug("no totals for the workload records of %s: %s", self.table, first_line(exc))
                tried[id(metadata)] = totals
            out.append(row | {"files_total": totals[0], "row_groups_total": totals[1]})
        return out


def _exists(metadata: SnapshotMetadata) -> bool:
    """Whether the table is still there to list: in its catalog, and with its metadata files in place (a
    script's temporary warehouse may be deleted before it exits, while its catalog still caches the
    table: listing it then makes Spark log a failed task per manifest)."""
    try:
        if not metadata.storage.files_under(f"{metadata.location.rstrip('/')}/metadata"):
            return False
    except StorageError:  # its store is out of reach too: the records have nowhere to go
        return False
    except Exception:  # anything else says nothing of the table: the listing below decides
        pass
    try:
        return bool(metadata.spark.catalog.tableExists(metadata.table))
    except Exception:  # the session is gone: the listing below will say so, as before
        return True


class TableGone(Exception):
    """The table of some workload records was dropped before they were written."""


@dataclass(frozen=True)
class Recorded:
    """One scan's record as ``WorkloadRecorder.record`` made it, to be noted again by ``repeat``."""

    table: str
    row: dict[str, object]
    metadata: SnapshotMetadata


class WorkloadRecorder:
    """Collects scan records per table location and writes them in batches (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._writing: list[tuple[str, _Pending]] = []  # batches a flush took and has not written yet
        self._writes: set[Future[int]] = set()  # flushes started by record, on the writer thread
        # one thread writes, and the interpreter waits for it at exit (its threads are not daemons)
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zskip-workload")
        self.errors = 0  # records or writes that failed (each also logged as a warning)

    def record(
        self,
        spark: SparkSession,
        plan: ScanPlan,
        *,
        settings: Mapping[str, str] | None = None,
        joins: Sequence[JoinKeys] = (),
    ) -> Recorded | None:
        """Note one planned scan with the filtered dimensions it is joined to (``joins``); never raises.
        ``settings``: the session's ``spark.zskip.*`` settings when the caller already has them (``None``:
        asked of the session).  Returns the record, for ``repeat`` (``None``: nothing was recorded)."""
        try:
            if plan.metadata is None or plan.scan is None or not _capturing(spark, settings):
                return None
            bound = bind(plan.expr, {name: f.id for name, f in plan.scan.fields.items()})
            row: dict[str, object] = {
                "recorded_at": time.time_ns() // 1000,
                "table": plan.table,
                "snapshot_id": plan.snapshot_id,
                "predicate": to_sql(without_implied_not_null(plan.expr)),
                "columns": sorted(str(c) for c in columns_of(plan.expr)),
                "predicate_fields": to_sql(without_implied_not_null(bound)),
                "field_ids": sorted(c for c in columns_of(bound) if isinstance(c, int)),
                "files_read": len(plan.kept),
                "row_groups_read": plan.row_groups_kept(),
                "planning_seconds": plan.planning_seconds,
                "joins": [_join_record(j) for j in joins if j.filter_columns],
            }
            recorded = Recorded(plan.table, row, plan.metadata)
            self._add(recorded, row)
            return recorded
        except Exception as exc:
            self._failed("recording a scan", exc)
            return None

    def repeat(self, recorded: Recorded) -> None:
        """Note again a scan recorded before (the same plan of the same table state, asked for again), as
        of now; never raises."""
        try:
            self._add(recorded, recorded.row | {"recorded_at": time.time_ns() // 1000})
        except Exception as exc:
            self._failed("recording a scan", exc)

    def _add(self, recorded: Recorded, row: dict[str, object]) -> None:
        location = recorded.metadata.location
        with self._lock:
            pending = self._pending.setdefault(location, _Pending(recorded.table, [], recorded.metadata.storage))
            pending.rows.append((row, recorded.metadata))
            full = len(pending.rows) >= FLUSH_AFTER
        if full:
            write = self._writer.submit(self.flush, [location])
            with self._lock:
                self._writes.add(write)
            write.add_done_callback(self._written)

    def _written(self, write: Future[int]) -> None:
        with self._lock:
            self._writes.discard(write)

    def wait(self) -> None:
        """Until the writes ``record`` started have finished."""
        with self._lock:
            writes = list(self._writes)
        for write in writes:
            write.result()

    def flush(self, locations: Iterable[str] | None = None, *, deadline: float | None = None) -> int:
        """Write the records waiting for ``locations`` (default: all); how many were written.
        ``deadline`` (``time.monotonic()``): past it, records are written without their snapshots' totals."""
        with self._lock:
            chosen = list(self._pending) if locations is None else [x for x in locations if x in self._pending]
            batches = [(x, self._pending.pop(x)) for x in chosen]
            self._writing.extend(batches)
        written = 0
        for batch in batches:
            location, pending = batch
            try:
                append_records(location, pending.complete_rows(deadline), pending.storage)
                written += len(pending.rows)
            except TableGone:
                log.debug("zskip workload log: %s was dropped, or its files are gone; its %d records are not "
                          "written", pending.table, len(pending.rows))  # fmt: skip
            except Exception as exc:
                self._failed(f"writing the workload log of {pending.table}", exc)
            finally:
                with self._lock:
                    self._writing.remove(batch)
        return written

    def pending(self, location: str) -> list[dict[str, object]]:
        """The records of ``location`` not written yet (waiting, or being written), oldest first."""
        with self._lock:
            batches = [p for x, p in self._writing if x == location]
            waiting = self._pending.get(location)
            if waiting is not None:
                batches.append(waiting)
            if not batches:
                return []
            found = _Pending(batches[0].table, [row for p in batches for row in p.rows], batches[0].storage)
        try:
            return found.complete_rows()
        except TableGone:
            return []

    def _failed(self, what: str, exc: Exception) -> None:
        self.errors += 1
        log.warning("zskip workload log: %s failed (%s); queries are not affected", what, exc)


def _join_record(join: JoinKeys) -> dict[str, object]:
    return {
        "foreign_key_field": join.field.id,
        "dimension": join.dimension,
        "key_field": join.key_field_id,
        "filter": join.filter,
        "filter_fields": join.filter_by_fields,
        "column_fields": [i for i in join.filter_column_ids if i >= 0],
    }


RECORDER = WorkloadRecorder()
# at exit the records are written in at most this long, then without their totals (a listing each)
EXIT_SECONDS = 5.0


def _flush_at_exit() -> None:
    await_records(EXIT_SECONDS)
    RECORDER.flush(deadline=time.monotonic() + EXIT_SECONDS)


atexit.register(_flush_at_exit)


def flush_workload() -> int:
    """Write every record still in memory to its table's workload log (waiting for the writes already
    under way); how many this call wrote."""
    await_records()  # those zskip's rule decided alone are recorded on a thread of their own
    RECORDER.wait()
    return RECORDER.flush()


@reaching_storage
def workload(spark: SparkSession, table: str) -> pa.Table:
    """The workload log of ``table``: one row per scan zskip planned (``WORKLOAD_SCHEMA``), oldest first.

    >>> zskip.workload(spark, "lake.db.t").column("predicate").to_pylist()[:1]  # doctest: +SKIP
    ['a = 5 AND status = 4']
    """
    iceberg = load_table(spark, table)
    await_records()
    return read_workload(iceberg.location(), iceberg.file_access())


def read_workload(location: str, access: FileAccess = LOCAL) -> pa.Table:
    """Every record of the workload log of the table at ``location`` (written and still in memory),
    oldest first; its files are reached through ``access``."""
    return read_records(location, RECORDER.pending(location), access)


def _capturing(spark: SparkSession, settings: Mapping[str, str] | None = None) -> bool:
    value = settings.get(CAPTURE_CONF) if settings is not None else spark.conf.get(CAPTURE_CONF, None)
    return flag(value, default=True)
