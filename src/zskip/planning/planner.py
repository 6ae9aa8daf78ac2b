"""Plan a filtered read: which data files and row groups can hold a matching row.

Stages run in order, each over metadata only, each able only to remove candidates:

1. ``partition + min/max`` — Iceberg's own planning with the filters Spark pushed to the scan;
2. ``curve range`` — the query box as curve-key intervals against each file's and row group's
   recorded key range (files optimize did not write have none and stay);
3. ``row-group min/max`` — Parquet footer statistics of each row group;
4. ``indexes`` — bloom filters and bitmaps from the index manifest (unindexed files stay).

Everything a stage reads is cached by immutable key (file path, snapshot id, blob location).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import DataType, DoubleType, FloatType

from zskip.expr import Expr, columns_of
from zskip.iceberg.files import data_files
from zskip.iceberg.predicates import ScanFilter, filter_of
from zskip.iceberg.table import IcebergTable, load_table
from zskip.iceberg.tasks import TaskList, plan_tasks, scan_tasks
from zskip.index.evaluate import Match
from zskip.index.manifest import IndexManifest
from zskip.index.parquet_io import read_file
from zskip.indexing.lookup import index_verdicts
from zskip.indexing.store import MANIFEST_PROPERTY
from zskip.layout.store import STORE_PROPERTY, ClusteringStore, read_store
from zskip.planning.cache import CACHE
from zskip.planning.curve import query_intervals, ranges_meet
from zskip.planning.footers import Footer, read_footer
from zskip.planning.minmax import might_match

__all__ = ["ICEBERG_STAGE", "METADATA_STAGE", "ScanPlan", "StageResult", "plan_filter", "plan_scan"]

METADATA_STAGE = "table metadata (cached per snapshot)"
ICEBERG_STAGE = "partition + min/max (Iceberg)"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StageResult:
    name: str
    files_kept: int
    row_groups_kept: int | None  # None: not known without reading footers
    seconds: float


@dataclass
class ScanPlan:
    """What to read: each kept file with the row groups that can match (``None``: all of them).

    A file with some row groups ruled out is staged as one task per run of consecutive kept row
    groups, each reading only its bytes (``zskip.planning.row_groups``).
    """

    table: IcebergTable
    frame: DataFrame  # the plain filtered DataFrame
    expr: Expr | None  # None: Spark proved that no row matches
    snapshot_id: int | None
    files_total: int
    row_groups_total: int
    kept: dict[str, tuple[int, ...] | None] = field(default_factory=dict)
    tasks: TaskList | None = None
    footers: dict[str, Footer] = field(default_factory=dict)
    file_rows: dict[str, int] = field(default_factory=dict)
    file_bytes: dict[str, int] = field(default_factory=dict)
    stages: list[StageResult] = field(default_factory=list)
    planning_seconds: float = 0.0  # Spark's analysis of the filter and zskip's stages
    analysis_seconds: float = 0.0  # Spark's part: parsing, analysis and pushing the filter to the scan
    notes: tuple[str, ...] = ()
    # True when the curve or index stage ruled out something; otherwise Spark's own scan (Iceberg's
    # file pruning and its Parquet reader's row-group statistics) reads no more than this plan
    beyond_spark: bool = False

    def row_groups_kept(self) -> int:
        return sum(len(g) if g is not None else self._groups(p) for p, g in self.kept.items())

    def _groups(self, path: str) -> int:
        footer = self.footers.get(path)
        return footer.row_groups if footer is not None else 1

    def rows_read(self) -> int:
        total = 0
        for path, groups in self.kept.items():
            if groups is not None:
                total += sum(self.footers[path].rows[g] for g in groups)
            else:
                total += self.file_rows.get(path, 0)
        return total

    def bytes_read(self) -> int:
        total = 0
        for path, groups in self.kept.items():
            if groups is not None:
                total += sum(self.footers[path].ranges[g][1] for g in groups)
            else:
                total += self.file_bytes.get(path, 0)
        return total


def _snapshot_files(spark: SparkSession, iceberg: IcebergTable, snapshot_id: int) -> pa.Table:
    key = ("files", iceberg.location(), snapshot_id)
    return CACHE.get_or_load(key, lambda: data_files(spark, iceberg.name, snapshot_id=snapshot_id))


def _footer(path: str) -> Footer:
    return CACHE.get_or_load(("footer", path), lambda: read_footer(path))


def _manifest(iceberg: IcebergTable) -> IndexManifest | None:
    path = iceberg.property(MANIFEST_PROPERTY)
    if not path:
        return None

    def load() -> IndexManifest | None:
        try:
            return IndexManifest.from_bytes(read_file(path), name=path)
        except Exception as exc:
            log.warning("ignoring the index manifest %s: %s", path, str(exc).splitlines()[0])
            return None

    return CACHE.get_or_load(("manifest", path), load)


def _store(iceberg: IcebergTable) -> ClusteringStore | None:
    path = iceberg.property(STORE_PROPERTY)
    if not path:
        return None
    return CACHE.get_or_load(("store", path), lambda: read_store(iceberg))


def plan_scan(spark: SparkSession, table: str, where: str | Column) -> ScanPlan:
    """Plan a read of ``table`` filtered by ``where`` (SQL text or a Column)."""
    started = time.perf_counter()
    iceberg = load_table(spark, table)
    frame, scan = filter_of(spark, table, where)
    analysed = time.perf_counter()
    plan = plan_filter(spark, iceberg, frame, scan)
    plan.analysis_seconds = analysed - started
    plan.planning_seconds += plan.analysis_seconds
    return plan


def plan_filter(
    spark: SparkSession,
    iceberg: IcebergTable,
    frame: DataFrame,
    scan: ScanFilter | None,
) -> ScanPlan:
    """Plan one Iceberg scan given the filter Spark pushed to it (``None``: Spark proved it empty)."""
    started = time.perf_counter()
    snapshot = iceberg.current_snapshot_id()
    files = _snapshot_files(spark, iceberg, snapshot) if snapshot is not None else None
    paths = files["file_path"].to_pylist() if files is not None else []
    plan = ScanPlan(
        table=iceberg,
        frame=frame,
        expr=scan.expr if scan is not None else None,
        notes=scan.notes if scan is not None else (),
        snapshot_id=snapshot,
        files_total=len(paths),
        row_groups_total=0,
        file_rows=dict(zip(paths, files["record_count"].to_pylist(), strict=True)) if files is not None else {},
        file_bytes=dict(zip(paths, files["file_size_in_bytes"].to_pylist(), strict=True)) if files is not None else {},
    )
    if scan is None:
        plan.stages.append(StageResult("Spark: the filter is never true", 0, 0, 0.0))
    if snapshot is None or files is None:
        plan.planning_seconds = time.perf_counter() - started
        return plan
    listed = time.perf_counter() - started
    if scan is not None:
        _run_stages(spark, plan, scan)
    # a snapshot's files never change: count their row groups once per snapshot
    clock = time.perf_counter()
    plan.row_groups_total = CACHE.get_or_load(
        ("row groups", iceberg.location(), snapshot), lambda: _total_groups(plan, files)
    )
    counted = time.perf_counter() - clock
    # listing the snapshot's files and counting its row groups (cached per snapshot) is planning too
    plan.stages.insert(0, StageResult(METADATA_STAGE, plan.files_total, plan.row_groups_total, listed + counted))
    plan.planning_seconds = time.perf_counter() - started
    return plan


def _total_groups(plan: ScanPlan, files: pa.Table) -> int:
    """Row groups of every live file without reading every footer: footers already read, Iceberg's
    split offsets (one per row group) where the writer recorded them, the clustering store's
    per-row-group ranges, and only then the footer itself (read once, then cached)."""
    store = _store(plan.table)
    recorded: dict[str, int] = {}
    if store is not None:
        groups = store.ranges.filter(pc.greater_equal(store.ranges["row_group"], 0))
        for path in groups["file_path"].to_pylist():
            recorded[path] = recorded.get(path, 0) + 1
    total = 0
    for path, offsets in zip(files["file_path"].to_pylist(), files["split_offsets"].to_pylist(), strict=True):
        footer = plan.footers.get(path)
        if footer is not None:
            total += footer.row_groups
        elif offsets:
            total += len(offsets)
        elif path in recorded:
            total += recorded[path]
        else:
            total += _footer(path).row_groups
    return total


def _run_stages(spark: SparkSession, plan: ScanPlan, scan: ScanFilter) -> None:
    iceberg = plan.table
    expr = plan.expr
    assert expr is not None and plan.snapshot_id is not None
    types = _spark_types(iceberg)  # the table's, not the query's: its output may lack the filtered columns

    clock = time.perf_counter()
    # the tasks Spark's own scan plans (shared with its execution); Iceberg's planning otherwise
    tasks = scan_tasks(spark, scan.scan) or plan_tasks(iceberg, plan.snapshot_id, scan.java_filters)
    plan.tasks = tasks
    plan.kept = {p: None for p in tasks.paths}
    plan.stages.append(StageResult(ICEBERG_STAGE, len(plan.kept), None, time.perf_counter() - clock))

    clock = time.perf_counter()
    store = _store(iceberg)
    before = dict(plan.kept)
    if store is not None and plan.kept:
        _curve_stage(plan, store, expr, types)
    plan.beyond_spark = plan.kept != before
    plan.stages.append(StageResult("curve range", len(plan.kept), None, time.perf_counter() - clock))

    clock = time.perf_counter()
    names = {c.lower() for c in columns_of(expr)}
    ids = iceberg.field_ids(names)
    floats = frozenset(n for n, t in types.items() if isinstance(t, (FloatType, DoubleType)))
    for path in list(plan.kept) if names else []:
        footer = _footer(path)
        plan.footers[path] = footer
        candidates = plan.kept[path]
        groups = range(footer.row_groups) if candidates is None else candidates
        keep = tuple(
            g
            for g in groups
            if might_match(expr, {n: footer.stats[g].get(ids[n]) if n in ids else None for n in names}, floats)
        )
        _set_groups(plan, path, keep, footer.row_groups)
    plan.stages.append(
        StageResult("row-group min/max", len(plan.kept), plan.row_groups_kept(), time.perf_counter() - clock)
    )

    clock = time.perf_counter()
    manifest = _manifest(iceberg)
    before = dict(plan.kept)
    if manifest is not None and plan.kept:
        verdicts = index_verdicts(manifest, list(plan.kept), expr, cache=CACHE)
        for path, verdict in verdicts.items():
            footer = plan.footers[path]
            if verdict.file is Match.CANNOT_MATCH or len(verdict.row_groups) != footer.row_groups:
                if verdict.file is Match.CANNOT_MATCH:
                    del plan.kept[path]
                continue  # an index of a different row-group layout: ignore its row groups
            current = plan.kept[path]
            groups = range(footer.row_groups) if current is None else current
            keep = tuple(g for g in groups if verdict.row_groups[g] is Match.MIGHT_MATCH)
            _set_groups(plan, path, keep, footer.row_groups)
    plan.beyond_spark = plan.beyond_spark or plan.kept != before
    plan.stages.append(
        StageResult("indexes (bloom, bitmap)", len(plan.kept), plan.row_groups_kept(), time.perf_counter() - clock)
    )


def _set_groups(plan: ScanPlan, path: str, keep: tuple[int, ...], total: int) -> None:
    if not keep:
        del plan.kept[path]
    else:
        plan.kept[path] = None if len(keep) == total else keep


def _curve_stage(plan: ScanPlan, store: ClusteringStore, expr: Expr, types: dict[str, DataType]) -> None:
    spec = store.spec
    arrow_types = {}
    for column in spec.columns:
        dtype = types.get(column.name.lower())
        if dtype is not None:
            arrow_types[column.name] = to_arrow_type(dtype)
    intervals = query_intervals(expr, spec, arrow_types)
    if intervals is None:
        return
    ranges = store.ranges.filter(pc.is_in(store.ranges["file_path"], value_set=pa.array(list(plan.kept), pa.string())))
    if ranges.num_rows == 0:
        return
    meets = ranges_meet(intervals, ranges["min_key"].to_numpy(), ranges["max_key"].to_numpy())
    file_ok: dict[str, bool] = {}
    groups_ok: dict[str, list[int]] = {}
    for path, group, ok in zip(
        ranges["file_path"].to_pylist(), ranges["row_group"].to_pylist(), meets.tolist(), strict=True
    ):
        if group == -1:
            file_ok[path] = ok
        elif ok:
            groups_ok.setdefault(path, []).append(group)
    for path, ok in file_ok.items():
        if not ok:
            del plan.kept[path]
        elif path in plan.kept:
            footer = _footer(path)
            plan.footers[path] = footer
            _set_groups(plan, path, tuple(sorted(groups_ok.get(path, ()))), footer.row_groups)


def _spark_types(iceberg: IcebergTable) -> dict[str, DataType]:
    return {f.name.lower(): f.dataType for f in iceberg.spark_schema().fields}
