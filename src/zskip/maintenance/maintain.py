"""``zskip maintain``: keep a table's layout and indexes covering its new data, once or every interval.

One cycle clusters the files appended since the last optimize under the layout the table records
(``zskip.clustering``: columns, dimensions, curve, mapping, file size), incrementally, and then
refreshes every index, incrementally.  Both steps commit atomically and keep rows appended meanwhile,
so a cycle interrupted at any point leaves the table as it was or one step further.  A step that loses
a commit race with another writer (``ConcurrentChangeError``: nothing was committed) is tried again
after a pause; the next attempt starts from the newer snapshot, so no row is lost or rewritten twice.

``maintain_cycles`` repeats the cycle every ``interval`` until ``stop`` is set (the CLI sets it on
Ctrl-C or SIGTERM, so the cycle under way finishes); a cycle finding no snapshot newer than the one
the previous cycle left does nothing.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TypeVar

from pyspark.sql import SparkSession

from zskip.display import Displayed, Progress
from zskip.errors import ConcurrentChangeError, InvalidOptionError
from zskip.iceberg.spark_errors import reaching_storage
from zskip.iceberg.table import IcebergTable, SchemaField, load_table
from zskip.indexing.api import IndexResult, refresh_indexes
from zskip.layout.dimensions import Dimension
from zskip.layout.optimize import DEFAULT_ROW_GROUP_SIZE, ROW_GROUP_PROPERTY, OptimizeResult, optimize
from zskip.tablefiles.clustering_store import STORE_PROPERTY, SUMMARY_PROPERTY
from zskip.tablefiles.index_manifest import read_manifest
from zskip.units import parse_duration

__all__ = [
    "MaintainResult",
    "RecordedLayout",
    "layout_from_summary",
    "maintain",
    "maintain_cycles",
    "recorded_layout",
    "run_cycle",
]

log = logging.getLogger(__name__)

# optimize's default file size, for layouts recorded before the layout summary held the size
DEFAULT_TARGET_FILE_SIZE = 128 << 20
RETRY_PAUSE_SECONDS = 2.0

T = TypeVar("T")


@dataclass(frozen=True)
class RecordedLayout:
    """The layout the last full optimize chose, as ``zskip.optimize`` takes it back."""

    by: tuple[str | Dimension, ...]
    curve: str
    mapping: str
    target_file_size: int
    weights: tuple[float, ...] | None = None  # per column of ``by``; None: every column alike

    def without_value_partitions(self, partitioned: set[str]) -> tuple[RecordedLayout | None, str]:
        """The layout without the columns the table now partitions by value (a partition evolution since
        the last optimize: each new file holds one value of them, and optimize refuses them), and a line
        saying what changed ("" when nothing did; ``None``: no column is left to cluster by)."""
        names = [c.foreign_key if isinstance(c, Dimension) else c for c in self.by]
        gone = [n for n in names if n in partitioned]
        if not gone:
            return self, ""
        kept = [i for i, n in enumerate(names) if n not in partitioned]
        what = "is an identity partition column" if len(gone) == 1 else "are identity partition columns"
        said = f"{', '.join(gone)} {what} now"
        if not kept:
            return None, f"not clustered: {said} and no other column is clustered"
        weights = tuple(self.weights[i] for i in kept) if self.weights is not None else None
        left = dataclasses.replace(self, by=tuple(self.by[i] for i in kept), weights=weights)
        return left, f"clustering by {', '.join(names[i] for i in kept)} alone: {said}"

    def weights_by_column(self) -> dict[str, float] | None:
        """``weights`` as ``zskip.optimize`` takes them: by the name of each column of ``by``."""
        if self.weights is None:
            return None
        names = [c.foreign_key if isinstance(c, Dimension) else c for c in self.by]
        return dict(zip(names, self.weights, strict=True))


@dataclass(frozen=True)
class MaintainResult(Displayed):
    """One maintenance cycle: what optimize and the index refresh did, from which snapshot to which."""

    table: str
    cycle: int
    started_at: str  # UTC, ISO 8601
    snapshot_before: int | None
    snapshot_after: int | None
    optimize: OptimizeResult | None  # None: the table has no recorded layout, or nothing new
    indexes: IndexResult | None  # None: the table has no index, or nothing new
    retries: int  # steps tried again after losing a commit race to another writer
    duration_seconds: float
    reason: str

    @property
    def changed(self) -> bool:
        """Whether the cycle committed anything (a rewrite or an index publication)."""
        optimized = self.optimize is not None and not self.optimize.noop
        indexed = self.indexes is not None and (
            self.indexes.files_indexed > 0 or self.indexes.entries_dropped > 0 or self.indexes.index_files_merged > 0
        )
        return optimized or indexed

    def to_json(self) -> str:
        data = {
            name: getattr(self, name)
            for name in ("table", "cycle", "started_at", "snapshot_before", "snapshot_after", "retries", "reason")
        }
        data |= {
            "duration_seconds": round(self.duration_seconds, 3),
            "changed": self.changed,
            "optimize": json.loads(self.optimize.to_json()) if self.optimize else None,
            "indexes": json.loads(self.indexes.to_json()) if self.indexes else None,
        }
        return json.dumps(data)

    def display_title(self) -> str:
        return f"maintain {self.table}, cycle {self.cycle}"

    def display_rows(self) -> list[tuple[str, str]]:
        rows = [("result", self.reason), ("snapshot", f"{self.snapshot_before} -> {self.snapshot_after}")]
        if self.optimize is not None:
            o = self.optimize
            rows.append(("optimize", f"{o.reason}; {o.files_rewritten:,} files rewritten into {o.files_written:,}"))
        if self.indexes is not None:
            i = self.indexes
            rows.append(("indexes", f"{i.files_indexed:,} files indexed now, {i.files_total:,} in all"))
        retried = f" ({self.retries} commit race{'s' * (self.retries > 1)} lost and retried)" if self.retries else ""
        rows.append(("time", f"{self.duration_seconds:.1f} s{retried}"))
        return rows


def recorded_layout(iceberg: IcebergTable) -> RecordedLayout | None:
    """The layout ``iceberg`` records in ``zskip.clustering`` (None: it was never optimized), its
    columns under the names the table gives them now."""
    if iceberg.property(STORE_PROPERTY) is None:
        return None
    names = {f.id: f.name for f in iceberg.schema() if not f.nested}
    old_names: list[Callable[[str], SchemaField | None]] = []  # the schema history, read only if needed

    def current(field_id: int | None, recorded: str) -> str:
        if field_id is None:  # a summary written before 0.4: names only
            if not old_names:
                old_names.append(iceberg.old_names())
            found = old_names[0](recorded)
            field_id = None if found is None else found.id
        if field_id is None or field_id not in names:
            raise InvalidOptionError(
                f"{iceberg.name} is clustered by {recorded!r}, a column that has left the table (or that its "
                f"recorded layout cannot tell from another); run zskip optimize {iceberg.name} --by COLUMNS "
                "once, and maintain keeps that layout"
            )
        return names[field_id]

    layout = layout_from_summary(iceberg.property(SUMMARY_PROPERTY), iceberg.name, current)
    return dataclasses.replace(layout, by=tuple(_current_dimension(iceberg, c) for c in layout.by))


def _current_dimension(iceberg: IcebergTable, column: str | Dimension) -> str | Dimension:
    """A recorded dimension with its key and levels under the names its table gives their field ids now."""
    if not isinstance(column, Dimension) or column.key_field_id is None:
        return column
    names = {f.id: f.name for f in load_table(iceberg.spark, column.table).schema() if not f.nested}
    wanted = [column.key_field_id, *(column.by_field_ids or ())]
    gone = [i for i in wanted if i not in names]
    if gone:
        raise InvalidOptionError(
            f"{iceberg.name} is clustered through {column.table}, whose columns it was ordered by have left that "
            f"table (field ids {gone}); run zskip optimize {iceberg.name} --by ... once, and maintain keeps that layout"
        )
    return dataclasses.replace(
        column, key=names[column.key_field_id], by=tuple(names[i] for i in column.by_field_ids or ())
    )


def layout_from_summary(
    summary: str | None, table: str, current: Callable[[int | None, str], str] | None = None
) -> RecordedLayout:
    """The layout in a ``zskip.clustering`` summary (optimize's ``_summary``); ``InvalidOptionError``
    when it cannot be read, saying how to record it again.  ``current``: the name a recorded column
    (field id, or ``None`` before 0.4, and its recorded name) has now."""
    try:
        data = json.loads(summary or "")
        recorded = [str(c) for c in data["columns"]]
        ids = data.get("field_ids") or [None] * len(recorded)
        dimensions = {c: d for c, d in data.get("dimensions", {}).items()}
        for name, field_id in zip(recorded, ids, strict=True):
            if current is not None and name in dimensions:
                dimensions[current(field_id, name)] = dimensions.pop(name)
        columns = [current(i, c) if current is not None else c for c, i in zip(recorded, ids, strict=True)]
        by = tuple(
            Dimension(
                c,
                d["table"],
                key=d["key"],
                by=d["by"],
                key_field_id=d.get("key_field_id"),
                by_field_ids=d.get("by_field_ids"),
            )
            if (d := dimensions.get(c))
            else c
            for c in columns
        )
        return RecordedLayout(
            by=by,
            curve=str(data["curve"]),
            mapping=str(data["mapping"]),
            target_file_size=int(data.get("target_file_size", DEFAULT_TARGET_FILE_SIZE)),
            weights=tuple(float(w) for w in data["weights"]) if data.get("weights") is not None else None,
        )
    except InvalidOptionError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidOptionError(
            f"{table} records a clustering store but no readable layout in {SUMMARY_PROPERTY} ({exc!r}); "
            f"run zskip optimize {table} --by COLUMNS once, and maintain keeps that layout"
        ) from None


@reaching_storage
def maintain(
    spark: SparkSession,
    table: str,
    *,
    attempts: int = 3,
    progress: Progress | None = None,
) -> MaintainResult:
    """Cluster ``table``'s new files incrementally under its recorded layout, then refresh its indexes.

    A step that loses a commit race with another writer is tried again, up to ``attempts`` times.

    >>> zskip.maintain(spark, "lake.db.events").changed   # doctest: +SKIP
    True
    """
    _check_attempts(attempts)
    return run_cycle(spark, table, 1, attempts, progress)


def _check_attempts(attempts: int) -> None:
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        raise InvalidOptionError(f"attempts must be a whole number of at least 1, not {attempts!r}")


def run_cycle(spark: SparkSession, table: str, number: int, attempts: int, progress: Progress | None) -> MaintainResult:
    """Cycle ``number`` of maintenance: ``maintain``'s work, numbered for ``maintain_cycles``."""
    started = time.monotonic()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    iceberg = load_table(spark, table)
    before = iceberg.current_snapshot_id()
    layout = recorded_layout(iceberg)
    evolved = ""
    if layout is not None:
        layout, evolved = layout.without_value_partitions(set(iceberg.identity_partition_columns()))
        if evolved:
            log.warning("maintain %s: %s", table, evolved)
    has_indexes = bool(read_manifest(iceberg, strict=True)[0].definitions)
    retries = [0]

    def attempt(step: str, run: Callable[[], T]) -> T:
        for attempt_number in range(1, attempts + 1):
            try:
                return run()
            except ConcurrentChangeError as exc:
                if attempt_number == attempts:
                    raise
                retries[0] += 1
                log.warning("%s of %s lost a commit race (%s); trying again", step, table, exc)
                time.sleep(RETRY_PAUSE_SECONDS * attempt_number)
        raise AssertionError("unreachable")

    optimized = None
    if layout is not None:
        row_group_size = iceberg.property(ROW_GROUP_PROPERTY) or DEFAULT_ROW_GROUP_SIZE
        optimized = attempt(
            "optimize",
            lambda: optimize(
                spark,
                table,
                by=list(layout.by),
                curve=layout.curve,
                mapping=layout.mapping,
                target_file_size=layout.target_file_size,
                row_group_size=row_group_size,
                weights=layout.weights_by_column(),
                mode="incremental",
                progress=progress,
            ),
        )
    indexed = (
        attempt("index refresh", lambda: refresh_indexes(spark, table, progress=progress)) if has_indexes else None
    )
    iceberg.refresh()
    result = MaintainResult(
        table=iceberg.name,
        cycle=number,
        started_at=started_at,
        snapshot_before=before,
        snapshot_after=iceberg.current_snapshot_id(),
        optimize=optimized,
        indexes=indexed,
        retries=retries[0],
        duration_seconds=time.monotonic() - started,
        reason="; ".join(filter(None, (evolved, _reason(layout, optimized, indexed)))),
    )
    log.info("maintain %s cycle %d: %s (%.1f s)", table, number, result.reason, result.duration_seconds)
    return result


def maintain_cycles(
    spark: SparkSession,
    table: str,
    *,
    interval: float | str = "5m",
    cycles: int | None = None,
    stop: threading.Event | None = None,
    attempts: int = 3,
    progress: Progress | None = None,
) -> Iterator[MaintainResult]:
    """``maintain`` every ``interval`` (from the start of one cycle to the start of the next), yielding
    each cycle's result, until ``cycles`` have run or ``stop`` is set; a cycle under way when ``stop``
    is set finishes first.  A cycle that finds the snapshot the previous one left does nothing.

    >>> for cycle in zskip.maintain_cycles(spark, "lake.db.events", interval="1m", cycles=3):  # doctest: +SKIP
    ...     print(cycle.reason)
    """
    seconds = parse_duration(interval, name="interval")
    if cycles is not None and (not isinstance(cycles, int) or isinstance(cycles, bool) or cycles < 1):
        raise InvalidOptionError(
            f"cycles must be a whole number of at least 1, or None to run until stopped, not {cycles!r}"
        )
    _check_attempts(attempts)
    # options are checked here, at the call; the cycles run as the caller iterates
    return _cycles(spark, table, seconds, cycles, stop or threading.Event(), attempts, progress)


def _cycles(
    spark: SparkSession,
    table: str,
    seconds: float,
    cycles: int | None,
    stop: threading.Event,
    attempts: int,
    progress: Progress | None,
) -> Iterator[MaintainResult]:
    # The snapshot a cycle that changed nothing started from: every file in it is clustered and
    # indexed, so while it stays current there is nothing to do.  (A cycle that committed something
    # is followed by a full one, which also covers appends that landed between its steps.)
    settled: int | None = None
    number = 0
    while not stop.is_set() and (cycles is None or number < cycles):
        number += 1
        began = time.monotonic()
        iceberg = load_table(spark, table)
        current = iceberg.current_snapshot_id()
        if settled is not None and current == settled:
            yield MaintainResult(
                table=iceberg.name,
                cycle=number,
                started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                snapshot_before=current,
                snapshot_after=current,
                optimize=None,
                indexes=None,
                retries=0,
                duration_seconds=time.monotonic() - began,
                reason="no new snapshot since the last cycle: nothing to do",
            )
        else:
            result = run_cycle(spark, table, number, attempts, progress)
            settled = None if result.changed else result.snapshot_before
            yield result
        if cycles is not None and number >= cycles:
            break
        stop.wait(max(0.0, seconds - (time.monotonic() - began)))


def _reason(layout: RecordedLayout | None, optimized: OptimizeResult | None, indexed: IndexResult | None) -> str:
    parts = []
    if layout is None:
        parts.append("not clustered (run zskip optimize TABLE --by COLUMNS once to keep a layout)")
    elif optimized is not None:
        parts.append(
            f"clustered {_files(optimized.files_rewritten)} new since the last optimize"
            if not optimized.noop
            else "every file clustered"
        )
    if indexed is None:
        parts.append("no indexes")
    elif indexed.files_indexed or indexed.entries_dropped or indexed.index_files_merged:
        parts.append(f"indexed {_files(indexed.files_indexed)}")
    else:
        parts.append("every file indexed")
    return "; ".join(parts)


def _files(count: int) -> str:
    return f"{count:,} file{'s' * (count != 1)}"
