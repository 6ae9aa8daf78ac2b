"""``zskip.read`` and ``zskip.explain``: read only what can match, and say what was skipped and why."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession

from zskip.display import Displayed
from zskip.errors import InvalidOptionError
from zskip.expr import to_sql
from zskip.iceberg.predicates import filter_of, filtered_frame
from zskip.iceberg.scan_stats import measure_read
from zskip.iceberg.scan_types import IcebergScan
from zskip.iceberg.scans import QueryScans
from zskip.iceberg.spark_errors import reaching_storage
from zskip.iceberg.table import reads_other_state
from zskip.planning.fallback import falls_back, unplanned
from zskip.planning.metadata import read_ahead
from zskip.planning.pipeline import STAGES, plan_scan
from zskip.planning.plan import PLANNING_PROPERTIES, PlanInputs, ScanPlan, Stage, StageResult
from zskip.planning.row_group_statistics import statistics_allow_by_file
from zskip.planning.row_groups import byte_runs, run_count
from zskip.planning.staging import keep_staged
from zskip.planning.workload import RECORDER, WorkloadRecorder
from zskip.retries import counts as retry_counts
from zskip.units import format_bytes

__all__ = ["Explain", "explain", "explain_plan", "plan_table", "read", "staged_choice"]

log = logging.getLogger(__name__)


# what explain shows of each stage is what the pipeline recorded (the name is kept for callers)
StageCount = StageResult


@dataclass(frozen=True)
class Explain(Displayed):
    """What a filtered read of ``table`` reads, and how each planning stage narrowed it."""

    table: str
    where: str
    predicate: str  # the filter zskip reasons about (what Spark pushed to the scan), as Spark SQL
    files_total: int
    files_read: int
    row_groups_total: int
    row_groups_read: int  # those no stage ruled out; Iceberg's reader may skip more (dictionaries)
    rows_planned: int  # rows of the kept files and row groups: planned, not measured
    bytes_planned: int  # bytes of the kept files and row groups: planned, not measured
    planning_seconds: float  # Spark's analysis of the filter plus zskip's stages
    stages: tuple[StageResult, ...]
    analysis_seconds: float = 0.0  # Spark's part (the first query of a session also loads the catalog)
    notes: tuple[str, ...] = ()  # what to know about this plan (a subquery zskip did not prune by, ...)
    files: tuple[str, ...] = field(default=(), repr=False)  # the data files read, in path order
    # measured by running the read (explain(..., analyze=True)); None when it was only planned
    rows_scanned: int | None = None  # rows the Iceberg scan produced (Spark's numOutputRows)
    files_scanned: int | None = None  # files of the tasks the scan ran
    bytes_scanned: int | None = None  # bytes of those tasks' byte ranges
    row_groups_scanned: int | None = None  # row groups Iceberg's reader read for them (from the files)
    # zskip's requests to the table's store tried again while planning and running it (``zskip.retries``)
    requests_retried: int | None = None

    @property
    def rows_read(self) -> int:
        """The name ``rows_planned`` had before 0.4 (it was never a measurement)."""
        return self.rows_planned

    @property
    def bytes_read(self) -> int:
        """The name ``bytes_planned`` had before 0.4."""
        return self.bytes_planned

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, default=str)

    def display_title(self) -> str:
        return f"explain {self.table}"

    def display_rows(self) -> list[tuple[str, str]]:
        rows = [
            ("where", self.where),
            ("predicate", self.predicate),
            ("data files read", f"{self.files_read:,} of {self.files_total:,}"),
            ("row groups read", f"{self.row_groups_read:,} of {self.row_groups_total:,}"),
            ("rows, bytes planned", f"{self.rows_planned:,} rows, {format_bytes(self.bytes_planned)}"),
            (
                "planning",
                f"{self.planning_seconds * 1000:.1f} ms (Spark's analysis {self.analysis_seconds * 1000:.1f} ms)",
            ),
        ]
        if self.rows_scanned is not None:
            rows.append(
                (
                    "measured: scanned",
                    f"{self.rows_scanned:,} rows (numOutputRows), {self.files_scanned:,} files, "
                    f"{_count(self.row_groups_scanned)} row groups, "
                    f"{format_bytes(self.bytes_scanned or 0)} in the scan's tasks",
                )
            )
        if self.requests_retried:
            rows.append(("requests retried", f"{self.requests_retried:,} of zskip's, to the table's store"))
        for stage in self.stages:
            groups = "" if stage.row_groups_kept is None else f", {stage.row_groups_kept:,} row groups"
            ran = f"not run: {stage.skipped}" if stage.skipped else f"{stage.seconds * 1000:.1f} ms"
            rows.append((f"stage: {stage.name}", f"{stage.files_kept:,} files{groups} ({ran})"))
        rows.extend(("note", note) for note in self.notes)
        return rows


def explain_plan(plan: ScanPlan, where: str | Column) -> Explain:
    return Explain(
        table=plan.table,
        where=str(where),
        predicate=to_sql(plan.expr) if plan.scan is not None else "FALSE (Spark proved no row matches)",
        files_total=plan.files_total,
        files_read=len(plan.kept),
        row_groups_total=plan.row_groups_total,
        row_groups_read=plan.row_groups_kept(),
        rows_planned=plan.rows_planned(),
        bytes_planned=plan.bytes_planned(),
        planning_seconds=plan.planning_seconds,
        stages=plan.stages,
        analysis_seconds=plan.analysis_seconds,
        notes=plan.notes,
        files=tuple(sorted(plan.kept)),
    )


def plan_table(
    spark: SparkSession,
    table: str,
    where: str | Column,
    *,
    recorder: WorkloadRecorder | None = RECORDER,
    stages: tuple[Stage, ...] = STAGES,
) -> tuple[ScanPlan, QueryScans]:
    """Plan a read of ``table`` filtered by ``where``: Spark analyses and plans it once, zskip's
    ``stages`` narrow it; the plan goes to ``recorder`` (the table's workload log; ``None``: recorded
    nowhere)."""
    started = time.perf_counter()
    frame, scans, scan = filter_of(spark, table, where, PLANNING_PROPERTIES, ahead=read_ahead(spark))
    return _planned(spark, table, frame, scans, scan, started, recorder=recorder, stages=stages), scans


def _planned(
    spark: SparkSession,
    table: str,
    frame: DataFrame,
    scans: QueryScans,
    scan: IcebergScan | None,
    started: float,
    *,
    recorder: WorkloadRecorder | None = RECORDER,
    stages: tuple[Stage, ...] = STAGES,
) -> ScanPlan:
    analysed = time.perf_counter() - started
    plan = plan_scan(spark, frame, scan, table=table, analysis_seconds=analysed, stages=stages, settings=scans.settings)
    if recorder is not None:
        recorder.record(spark, plan, settings=scans.settings)  # never raises
    return plan


@reaching_storage
def explain(
    spark: SparkSession,
    table: str,
    where: str | Column,
    *,
    stages: tuple[Stage, ...] = STAGES,
    analyze: bool = False,
) -> Explain:
    """Plan a read of ``table`` filtered by ``where`` (SQL text or a Column) without reading anything.

    ``stages``: the planning stages to run, in order (``zskip.planning.STAGES`` by default; a tuple of
    ``zskip.planning.Stage`` to compare plans with a stage changed or left out).

    ``analyze``: also run the read (as ``zskip.read`` would; its rows are counted in the JVM) and
    report what its scan read, measured: ``rows_scanned`` (Spark's ``numOutputRows`` of the Iceberg
    scan), ``files_scanned`` and ``bytes_scanned`` (the files and byte ranges of the tasks it ran), and
    ``row_groups_scanned`` (the row groups Iceberg's reader read for those tasks: those their residual
    filter cannot rule out by statistics, dictionaries and bloom filters, counted from the files).

    >>> zskip.explain(spark, "lake.db.t", "a = 5 AND c > 3").files_read  # doctest: +SKIP
    3
    """
    if isinstance(table, str) and reads_other_state(table):
        raise InvalidOptionError(
            f"{table} names a branch, tag or snapshot; zskip plans a table's current snapshot only "
            "(zskip.read reads other states without pruning): explain the table itself"
        )
    retried = retry_counts.total()
    plan, scans = plan_table(spark, table, where, stages=stages)
    explained = explain_plan(plan, where)
    if not analyze:
        return explained
    measured = measure_read(_staged_read(spark, table, where, plan, scans))
    return replace(
        explained,
        rows_scanned=measured.rows,
        files_scanned=measured.files,
        bytes_scanned=measured.bytes,
        row_groups_scanned=measured.row_groups,
        requests_retried=retry_counts.total() - retried,
    )


@reaching_storage
def read(spark: SparkSession, table: str, where: str | Column) -> DataFrame:
    """Rows of ``table`` matching ``where``, reading only the files and row groups that can hold one.

    The result equals ``spark.table(table).where(where)``: zskip stages the Iceberg scan tasks of
    the files and row groups that survive its stages and Spark
    reads them with the filter applied again; delete files of the table still apply.  When only
    Iceberg's own pruning and row-group statistics ruled anything out, that plain DataFrame is
    returned as it is: Spark's scan reads the same.
    The staged tasks stay while later reads are few (see
    ``zskip.planning.staging``); ``zskip.planning.release_reads()`` releases them all.
    """
    if isinstance(table, str) and reads_other_state(table):
        # zskip's metadata describes the current snapshot; a branch, tag or older snapshot is read as it is
        return filtered_frame(spark, table, where)
    started = time.perf_counter()
    # the user's errors (no such table or column, a filter Spark refuses) are raised here, as Spark raises them
    frame, scans, scan = filter_of(spark, table, where, PLANNING_PROPERTIES, ahead=read_ahead(spark))
    try:
        return _staged_read(spark, table, where, _planned(spark, table, frame, scans, scan, started), scans)
    except Exception as exc:
        if not falls_back(exc):
            raise
        unplanned(f"the read of {table}", exc)
        return frame


def _staged_read(spark: SparkSession, table: str, where: str | Column, plan: ScanPlan, scans: QueryScans) -> DataFrame:
    if log.isEnabledFor(logging.INFO):  # the totals cost a listing of the snapshot: only when shown
        log.info(
            "read %s where %s: %d of %d files, %d of %d row groups",
            table,
            where,
            len(plan.kept),
            plan.files_total,
            plan.row_groups_kept(),
            plan.row_groups_total,
        )
    frame = plan.frame
    assert frame is not None
    if plan.scan is None:
        return frame.limit(0)  # Spark proved no row matches
    if not plan.beyond_spark:
        return frame  # staging would read exactly what Spark's own scan reads, at a cost
    relation = scans.relation_of(plan.scan)
    if relation is None:
        return frame
    staged = scans.staged([staged_choice(plan, relation.position)])
    keep_staged(spark, scans.staged_sets)
    return staged if staged is not None else frame


def staged_choice(plan: ScanPlan, relation: int) -> dict[str, Any]:
    """What ``QueryScans.staged`` needs to have ``relation`` read only ``plan``'s kept files and row
    groups (``kept_tasks``)."""
    assert plan.scan is not None
    return {"relation": relation, "scan": plan.scan.position, "files": kept_tasks(plan)}


def kept_tasks(plan: ScanPlan) -> list[list[Any]]:
    """The tasks of ``plan``'s scan to read: each kept file's task whole (``[task]``), or cut to byte
    ranges of its runs of kept row groups (``[task, [start, end, ...]]``; runs separated only by row
    groups the reader skips by their statistics make one, see ``zskip.planning.row_groups``)."""
    assert plan.scan is not None and plan.metadata is not None
    position = {path: i for i, path in enumerate(plan.scan.paths)}
    split = [path for path, groups in plan.kept.items() if groups is not None and run_count(groups) > 1]
    # which row groups between the runs the reader would read (the read-ranges stage asked the same of
    # these files; asking again, in one array call, keeps the plan free of per-stage scratch state)
    read_anyway = statistics_allow_by_file(PlanInputs.of(plan.scan, plan.metadata), split) if split else {}
    files: list[list[Any]] = []
    for path, groups in plan.kept.items():
        if groups is None:
            files.append([position[path]])
        else:
            runs = byte_runs(plan.metadata.footer(path), groups, read_anyway=read_anyway.get(path))
            files.append([position[path], [offset for run in runs for offset in run]])
    return files


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"
