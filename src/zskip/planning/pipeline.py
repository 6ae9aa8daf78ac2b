"""Plan one Iceberg scan: which of its files and row groups can hold a matching row.

Planning is a pipeline: an explicit tuple of stages (``STAGES``, one module each under
``zskip.planning.stages``), each a function from an immutable candidate set (files, each with the
row groups still in play) to a smaller one, reading the snapshot's metadata as it needs (footers,
index blobs; the join stage runs a small Spark job per joined dimension, once per filter).  The
pipeline, not the stages, times each and records what it kept.  In order:

1. ``partition + min/max (Iceberg)`` (``iceberg_files``) — the files of the tasks Spark's own Iceberg
   scan planned (Iceberg's partition and file min/max pruning with the pushed filters);
2. ``join keys`` (``join_keys``) — only for a scan joined to filtered dimensions: files and row groups
   holding none of the keys the dimensions' filters match (recorded dimension coordinates on the
   curve, foreign-key min/max, key-set index lookups).  While the keys are read, the candidates'
   footers are read beside them, and, when the foreign key spans most of its range in most row groups
   of a table not clustered by it (the keys will rule little out), the index blobs the index stage
   will want (``index_reading.read_indexes_ahead``);
3. ``curve range`` (``curve_range``) — the query box as curve-key intervals against each file's and
   row group's recorded key range (files optimize did not write have none and stay); not run when
   bitmaps on every column of the predicate cover the few files left (at most 32: the index stage
   then decides every row), nor when min/max rule out as much (one clustered column bounded on one
   side, or any slab along Hilbert's curve).  The cover is exact per recorded range even where ranges
   overlap (``curves.ranges``: a cell is looked into wherever a range starts or ends in it);
4. ``indexes (<the kinds>)`` (``indexes``) — from the index manifest, each column's indexes through
   their kinds (unindexed files stay);
5. ``row-group min/max`` (``row_group_minmax``) — Parquet footer statistics of each row group left;
6. ``read ranges (runs joined)`` (``read_ranges``) — the one stage that adds: the row groups between
   two runs of a file's kept row groups, where reading them costs less than opening the file again.

This list is the one the project keeps (ARCHITECTURE.md and the docs point here).  Each stage is one
module under ``zskip.planning.stages``; none imports another (``tests/test_layers.py``): what several
share lives in planning modules that are not stages (``index_reading``, ``curve_narrowing``,
``row_group_statistics``).  ``zskip.explain(..., stages=...)`` runs another tuple.

Every stage sees the scan's predicate bound to field ids (``PlanInputs.of``).  A plan goes beyond
Spark when the join, curve or index stage ruled out a row group whose statistics might match:
Spark's own scan would read it.  Otherwise zskip hands back Spark's own DataFrame.

What the stages read is metadata of one table snapshot, loaded once and cached by immutable key
(file path, snapshot id, store and manifest path): see ``zskip.planning.metadata``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pyspark.sql import DataFrame, SparkSession

from zskip.expr import AlwaysFalse
from zskip.fileindex.kinds import FILTERING
from zskip.iceberg.scan_types import IcebergScan, JoinKeys
from zskip.iceberg.table import load_table
from zskip.planning.joins import JoinFilter, JoinKeysLoader
from zskip.planning.metadata import SnapshotMetadata, snapshot_metadata
from zskip.planning.plan import (
    ICEBERG_STAGE,
    JOIN_STAGE,
    READ_RANGES_STAGE,
    Candidates,
    PlanInputs,
    ScanPlan,
    Stage,
    StageResult,
)
from zskip.planning.ruled_out import RuledOut
from zskip.planning.stages import (
    curve_range,
    curve_unneeded,
    iceberg_files,
    indexes,
    indexes_unneeded,
    join_keys,
    read_ranges,
    row_group_minmax,
)
from zskip.tablefiles.clustering_store import STORE_PROPERTY
from zskip.tablefiles.index_manifest import MANIFEST_PROPERTY

__all__ = ["STAGES", "plan_scan", "run_stages"]


# Selective stages first: an index usually rules out most files at once, and the row-group
# statistics are then read only for the files left.  Every stage but the last only removes
# candidates, so their order changes what each stage reports, never the plan; the last adds back
# row groups of files already kept, so it comes after every stage that removes.
STAGES: tuple[Stage, ...] = (
    Stage(ICEBERG_STAGE, iceberg_files, beyond_spark=False, counts_row_groups=False),
    Stage(JOIN_STAGE, join_keys, beyond_spark=True, counts_row_groups=True),
    Stage("curve range", curve_range, beyond_spark=True, counts_row_groups=False, unneeded=curve_unneeded),
    Stage(
        f"indexes ({', '.join(FILTERING)})",
        indexes,
        beyond_spark=True,
        counts_row_groups=True,
        unneeded=indexes_unneeded,
    ),
    Stage("row-group min/max", row_group_minmax, beyond_spark=False, counts_row_groups=True),
    Stage(READ_RANGES_STAGE, read_ranges, beyond_spark=False, counts_row_groups=True),
)


# ---- the pipeline -------------------------------------------------------------------------------


@dataclass
class _Run:
    results: list[StageResult] = field(default_factory=list)
    beyond_spark: bool = False


def run_stages(stages: tuple[Stage, ...], inputs: PlanInputs) -> tuple[Candidates, _Run]:
    """Run ``stages`` in order from no candidates, timing each; then say whether the plan reads less
    than Spark's own scan would (see ``_spark_reads_more``)."""
    run = _Run()
    candidates = Candidates.of({})
    ruled_out = RuledOut()  # by the stages beyond Spark
    for stage in stages:
        clock = time.perf_counter()
        skipped = stage.unneeded(inputs, candidates) if stage.unneeded is not None else None
        after = candidates if skipped is not None else stage.run(inputs, candidates)
        seconds = time.perf_counter() - clock
        if stage.beyond_spark:
            ruled_out = ruled_out.adding(candidates, after, lambda path: inputs.metadata.row_groups(path))
        groups = None
        if stage.counts_row_groups:
            groups = sum(len(g) if g is not None else inputs.metadata.row_groups(p) for p, g in after.files.items())
        run.results.append(StageResult(stage.name, len(after.files), groups, seconds, skipped))
        candidates = after
    ruled_out = ruled_out.without(candidates, lambda path: inputs.metadata.row_groups(path))
    if ruled_out:
        clock = time.perf_counter()
        run.beyond_spark = _spark_reads_more(inputs, ruled_out)
        run.results.append(
            StageResult(
                "check: would Spark's own scan read more?", len(candidates.files), None, time.perf_counter() - clock
            )
        )
    return candidates, run


def _spark_reads_more(inputs: PlanInputs, ruled_out: RuledOut) -> bool:
    """Whether Spark's own scan would read a row group that zskip's curve or index stage ruled out.

    Spark's scan reads Iceberg's files and skips row groups by their statistics, so a ruled-out row
    group whose statistics might match is one Spark would read.  Files are checked a few at a time
    and the answer is usually known from the first.
    """
    pending = ruled_out.as_candidates()
    start, size = 0, 1
    while start < len(pending):
        chunk = Candidates.of(dict(pending[start : start + size]))
        if row_group_minmax(inputs, chunk).files:
            return True
        start, size = start + size, size * 8
    return False


def _join_note(join: JoinKeys, item: JoinFilter | None) -> str:
    if item is None:
        found = "not fetched (too little left to prune)"
    elif item.keys is None:
        found = "more keys than zskip searches: not used"
    else:
        found = f"{len(item.keys):,} keys"
    return f"join keys: {join.column} = {join.dimension}.{join.key} where {join.filter or 'TRUE'}: {found}"


def _table_metadata(spark: SparkSession, table: str) -> SnapshotMetadata:
    iceberg = load_table(spark, table, fresh=False)
    return SnapshotMetadata(
        spark=spark,
        table=table,
        location=iceberg.location(),
        snapshot_id=iceberg.current_snapshot_id(),
        store_path=iceberg.property(STORE_PROPERTY),
        manifest_path=iceberg.property(MANIFEST_PROPERTY),
        storage=iceberg.file_access(),
    )


def plan_scan(
    spark: SparkSession,
    frame: DataFrame | None,
    scan: IcebergScan | None,
    *,
    table: str,
    analysis_seconds: float = 0.0,
    stages: tuple[Stage, ...] = STAGES,
    joins: tuple[JoinKeys, ...] = (),
    join_filter: JoinKeysLoader | None = None,
    settings: Mapping[str, str] | None = None,
) -> ScanPlan:
    """Plan one Iceberg scan of ``frame`` (``scan`` ``None``: Spark proved no row of ``table`` matches).

    Planning records nothing: the entry points (``read``, ``explain``, ``sql``, ``explain_sql``) hand
    their plans to the workload log's recorder, and the advisor plans without one.  ``settings``: the
    session's ``spark.zskip.*`` settings (as the scans' description carries them)."""
    started = time.perf_counter()
    if scan is None:  # Spark proved no row matches: say what the table holds all the same
        metadata = _table_metadata(spark, table)
        return ScanPlan(
            table=table,
            frame=frame,
            scan=None,
            expr=AlwaysFalse(),
            snapshot_id=metadata.snapshot_id,
            kept=MappingProxyType({}),
            metadata=metadata,
            stage_results=(StageResult("Spark: the filter is never true", 0, 0, 0.0),),
            planning_seconds=analysis_seconds + time.perf_counter() - started,
            analysis_seconds=analysis_seconds,
        )
    metadata = snapshot_metadata(spark, scan)
    metadata.prefetch(scan.paths)
    inputs = PlanInputs.of(scan, metadata, joins=joins, join_filter=join_filter, settings=settings)
    if not joins:  # a scan joined to no filtered dimension: the join stage has nothing to say
        stages = tuple(stage for stage in stages if stage.run is not join_keys)
    candidates, run = run_stages(stages, inputs)
    notes = scan.notes + tuple(_join_note(j, join_filter.fetched(j)) for j in joins if join_filter is not None)
    plan = ScanPlan(
        table=table,
        frame=frame,
        scan=scan,
        expr=scan.expr,
        snapshot_id=scan.snapshot_id,
        kept=candidates.files,
        metadata=metadata,
        stage_results=tuple(run.results),
        planning_seconds=analysis_seconds + time.perf_counter() - started,
        analysis_seconds=analysis_seconds,
        notes=notes,
        beyond_spark=run.beyond_spark,
    )
    return plan
