"""``zskip.optimize``: rewrite a table's files along a space-filling curve, atomically and incrementally."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from zskip.curves import (
    ClusteringSpec,
    DimensionMapping,
    RankMapping,
    RawMapping,
    bits_for_weights,
    bits_per_column,
)
from zskip.display import Displayed, Progress
from zskip.errors import InvalidOptionError
from zskip.expr import quoted
from zskip.iceberg.files import data_files
from zskip.iceberg.frames import collect_arrow
from zskip.iceberg.predicates import filtered_frame
from zskip.iceberg.rewrite import StagedGroup, commit_rewrites, plan_file_tasks, stage_group
from zskip.iceberg.spark_errors import reaching_storage
from zskip.iceberg.table import IcebergTable, SchemaField, load_table, properties_update, swap_property
from zskip.layout.curve_keys import SIGN
from zskip.layout.cuts import FileCuts
from zskip.layout.dimensions import Dimension, ResolvedDimension, fit_dimension, resolve_dimension
from zskip.layout.groups import (
    DataFileInfo,
    FileGroup,
    Selection,
    batches,
    files_from_arrow,
    plan_groups,
    select_files,
)
from zskip.layout.java_keys import key_column
from zskip.layout.key_ranges import compute_key_ranges
from zskip.layout.options import OptimizeOptions
from zskip.layout.routing import keyed_route_column, partition_tokens
from zskip.layout.sample_fit import SAMPLE_ROWS, spec_from_sample
from zskip.layout.write_keys import write_keys
from zskip.retries import stage_retried
from zskip.storage import FileAccess
from zskip.tablefiles.build_leases import build_lease
from zskip.tablefiles.clustering_store import (
    RANGES_SCHEMA,
    STORE_PROPERTY,
    SUMMARY_PROPERTY,
    ClusteringStore,
    read_store,
    renamed,
    write_store,
)
from zskip.tablefiles.planning_fields import clustering_fields
from zskip.units import format_bytes

__all__ = ["DEFAULT_ROW_GROUP_SIZE", "STEPS", "OptimizeResult", "clustering_store", "optimize"]

log = logging.getLogger(__name__)

ROW_GROUP_PROPERTY = "write.parquet.row-group-size-bytes"
# Eight row groups per 128 MB file: fine enough for row-group skipping, large enough that Parquet's
# per-row-group overhead stays negligible.
DEFAULT_ROW_GROUP_SIZE = "16MB"
KEY_COLUMN = "__zskip_curve_key"
ROUTE_COLUMN = "__zskip_route"
FILE_COLUMN = "_file"  # Iceberg's metadata column: the data file a row is in
NO_ROLLING = 1 << 62
# Curve keys sampled per output file to place the cuts between files (see ``zskip.layout.cuts``).
SAMPLE_KEYS_PER_FILE = 300
MIN_SAMPLE_KEYS = 20_000
MAX_SAMPLE_KEYS = 500_000


@dataclass(frozen=True)
class OptimizeResult(Displayed):
    """What an optimize run did, measured from the table's metadata before and after."""

    table: str
    mode: str
    reason: str
    files_before: int
    files_after: int
    bytes_before: int
    bytes_after: int
    files_rewritten: int
    files_written: int
    rows_rewritten: int
    groups: int
    commits: int
    snapshot_id: int | None
    duration_seconds: float
    clustering: str = ""
    snapshot_ids: tuple[int, ...] = field(default_factory=tuple)
    # wall seconds of each step (see ``STEPS``), summed over groups and batches
    step_seconds: Mapping[str, float] = field(default_factory=dict)
    # the table's indexes after the run (``zskip.optimize`` refreshes them once it committed): their
    # labels, the data files indexed for them, the seconds it took, and what to know
    indexes: tuple[str, ...] = ()
    files_indexed: int = 0
    index_seconds: float = 0.0
    index_note: str = ""

    @property
    def noop(self) -> bool:
        return self.commits == 0

    def to_json(self) -> str:
        return json.dumps(
            self.__dict__ | {"snapshot_ids": list(self.snapshot_ids), "step_seconds": dict(self.step_seconds)},
            indent=2,
        )

    def display_title(self) -> str:
        return f"optimize {self.table} ({self.mode})"

    def display_rows(self) -> list[tuple[str, str]]:
        steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.step_seconds.items())
        return [
            ("result", self.reason),
            ("data files", f"{self.files_before:,} -> {self.files_after:,}"),
            ("bytes", f"{format_bytes(self.bytes_before)} -> {format_bytes(self.bytes_after)}"),
            ("rewritten", f"{self.files_rewritten:,} files, {self.rows_rewritten:,} rows"),
            ("written", f"{self.files_written:,} files in {self.groups:,} groups, {self.commits:,} commits"),
            ("snapshot", str(self.snapshot_id)),
            ("time", f"{self.duration_seconds:.1f} s" + (f" ({steps})" if steps else "")),
            *([("indexes", self.index_note)] if self.index_note else []),
        ]


# optimize's steps, in order, as ``OptimizeResult.step_seconds`` names them
STEPS = ("resolve", "select files", "fit spec", "rewrite", "key ranges", "commit")


@dataclass
class _Retried:
    """Requests to the store the key-range tasks tried again, so far (progress shows them)."""

    total: int = 0

    def add(self, n: int) -> None:
        self.total += n


class _StepClock:
    """Wall seconds per step, summed (a step that runs once per group or batch adds up)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started


@reaching_storage
def optimize(
    spark: SparkSession,
    table: str,
    *,
    by: Sequence[str | Dimension],
    curve: str = "hilbert",
    mapping: str = "rank",
    target_file_size: int | str = "128MB",
    row_group_size: int | str = DEFAULT_ROW_GROUP_SIZE,
    where: str | None = None,
    mode: str = "incremental",
    max_group_size: int | str = "100GB",
    partial_progress: bool = True,
    max_commits: int = 10,
    weights: Mapping[str, float] | None = None,
    progress: Progress | None = None,
) -> OptimizeResult:
    """Cluster ``table``'s data files along a curve over the columns ``by``.

    ``weights`` (``curve="zorder"`` or ``"linear"``): a column's share of the curve against the
    others' (1 where not named): ``{"price": 3}`` gives ``price`` three bits of every key prefix for
    each bit of another column, so files and row groups are narrower in ``price`` and wider in the
    rest.

    Files are rewritten per partition (groups never mix partitions) through Iceberg's rewrite
    mechanism and swapped in atomic ``replace`` commits (one per batch of groups with
    ``partial_progress``, at most ``max_commits``); appends that land meanwhile survive.  The
    clustering spec and each new file's and row group's curve-key range are recorded with the
    commit.  ``mode="incremental"`` rewrites only files no optimize under this spec wrote, and
    everything once those pass half the bytes or eight overlapping runs; ``"full"`` rewrites all.

    The steps, each a function below: check the options, resolve the table and its columns, select
    the files to rewrite, fit the spec (or keep the recorded one), then per batch of groups rewrite
    each group and commit the batch with its key ranges.  ``zskip.optimize`` then indexes the files
    written for the table's indexes (``zskip.indexing.upkeep``), so they cover every live file again.

    >>> zskip.optimize(spark, "lake.db.events", by=["user_id", "ts"])   # doctest: +SKIP
    OptimizeResult(table='lake.db.events', files_before=412, files_after=57, ...)
    """
    started = time.monotonic()
    clock = _StepClock()
    report = progress or (lambda stage, done, total: None)
    options = OptimizeOptions.check(
        by=by,
        curve=curve,
        mapping=mapping,
        target_file_size=target_file_size,
        row_group_size=row_group_size,
        where=where,
        mode=mode,
        max_group_size=max_group_size,
        partial_progress=partial_progress,
        max_commits=max_commits,
        weights=weights,
    )
    with clock.step("resolve"):
        target, files, start_snapshot = _resolve(spark, table, options)
    outcome = _Outcome(target.iceberg.name, options.mode, files, start_snapshot, clock, started)
    if start_snapshot is None or not files:
        return outcome("the table is empty: nothing to do")
    with clock.step("select files"):
        store, selection = _select(spark, target, files, options)
    if not selection.files:
        return outcome(selection.reason)
    with clock.step("fit spec"):
        fitted = fit_or_keep_spec(spark, target, options, files, selection, store, report)
    selected = list(selection.files)
    if fitted.table_sample is None and store is not None:  # going on under the recorded spec
        with clock.step("laid out on write"):
            selected, fitted, recorded = _keep_laid_out(spark, target, fitted, selected, options)
        if recorded and not selected:
            with clock.step("commit"):
                snapshot = record_laid_out(target, store, fitted, start_snapshot)
            reason = f"{recorded} new files were written in curve order: recorded as laid out, none rewritten"
            return outcome(reason, commits=1, snapshot_id=snapshot, snapshot_ids=(snapshot,))
    groups = plan_groups(
        selected, target_file_size_bytes=options.target_file_size, max_group_size_bytes=options.max_group_size
    )
    plan = batches(groups, max_commits=options.max_commits if options.partial_progress else 1)
    log.info("optimize %s: %s; %d groups in %d commits", target.iceberg.name, selection.reason, len(groups), len(plan))
    snapshots: list[int] = []
    with _row_group_size_set(target.iceberg, str(options.row_group_size), snapshots):
        written = _rewrite_batches(
            spark, target, options, plan, groups, fitted, start_snapshot, clock, report, snapshots
        )
    with clock.step("commit"):
        after = files_from_arrow(data_files(spark, target.iceberg.name))
    return outcome(
        selection.reason,
        files_after=len(after),
        bytes_after=sum(f.size_bytes for f in after),
        files_rewritten=len(selected),
        files_written=written,
        rows_rewritten=sum(f.record_count for f in selected),
        groups=len(groups),
        commits=len(snapshots),
        snapshot_id=snapshots[-1],
        snapshot_ids=tuple(snapshots),
        clustering=_summary(fitted.spec, target.columns, options.mapping, options.target_file_size, options.weights),
    )


class _Outcome:
    """The result of an optimize run from what its first steps found, and what the run did after them."""

    def __init__(
        self,
        table: str,
        mode: str,
        files: list[DataFileInfo],
        start_snapshot: int | None,
        clock: _StepClock,
        started: float,
    ) -> None:
        self.started = started  # time.monotonic() when the run began
        self.table, self.mode, self.files, self.start_snapshot, self.clock = table, mode, files, start_snapshot, clock
        self.bytes_before = sum(f.size_bytes for f in files)

    def __call__(self, reason: str, **done: Any) -> OptimizeResult:
        unchanged: dict[str, Any] = dict(
            table=self.table,
            mode=self.mode,
            reason=reason,
            files_before=len(self.files),
            files_after=len(self.files),
            bytes_before=self.bytes_before,
            bytes_after=self.bytes_before,
            files_rewritten=0,
            files_written=0,
            rows_rewritten=0,
            groups=0,
            commits=0,
            snapshot_id=self.start_snapshot,
            duration_seconds=time.monotonic() - self.started,
            step_seconds=dict(self.clock.seconds),
        )
        return OptimizeResult(**(unchanged | done))


def _resolve(
    spark: SparkSession, table: str, options: OptimizeOptions
) -> tuple[Target, list[DataFileInfo], int | None]:
    """The table and its columns, as the session resolves them, its current snapshot and live files."""
    target = resolve_target(spark, table, options)
    start_snapshot = target.iceberg.current_snapshot_id()
    files_meta = data_files(spark, target.iceberg.name, snapshot_id=start_snapshot) if start_snapshot else None
    return target, files_from_arrow(files_meta) if files_meta is not None else [], start_snapshot


def _select(
    spark: SparkSession, target: Target, files: list[DataFileInfo], options: OptimizeOptions
) -> tuple[ClusteringStore | None, Selection]:
    """The recorded store when the run goes on under its layout (its columns under today's names: rows
    are keyed by name), else ``None``; and the files to rewrite."""
    store = read_store(target.iceberg)
    if store is not None:
        names = {f.id: f.name for f in target.iceberg.schema() if not f.nested}
        store = dataclasses.replace(store, spec=renamed(store.spec, names))
    if store is not None and not _same_layout(store.spec, target, options.curve, options.mapping):
        store = None
    return store, select_rewrite(spark, target.iceberg.name, files, store, options)


def _keep_laid_out(
    spark: SparkSession, target: Target, fitted: FittedSpec, selected: list[DataFileInfo], options: OptimizeOptions
) -> tuple[list[DataFileInfo], FittedSpec, int]:
    """Of ``selected``, the files a clustered write already wrote in curve order are kept as they are:
    the files left to rewrite, the spec with their key ranges among the kept ones, and how many."""
    laid_out = laid_out_on_write(spark, target, fitted, selected, options.target_file_size)
    if not laid_out.num_rows:
        return selected, fitted, 0
    recorded = set(laid_out["file_path"].to_pylist())
    kept = laid_out if fitted.kept_ranges is None else pa.concat_tables([fitted.kept_ranges, laid_out])
    log.info("optimize %s: %d files written in curve order recorded as they are", target.iceberg.name, len(recorded))
    return [f for f in selected if f.path not in recorded], dataclasses.replace(fitted, kept_ranges=kept), len(recorded)


@contextlib.contextmanager
def _row_group_size_set(iceberg: IcebergTable, size: str, snapshots: list[int]) -> Iterator[None]:
    """The table's row-group size property set to ``size`` while the rewrite runs: Iceberg's writer
    takes it only from there.  A run that fails before its first commit (nothing in ``snapshots``) puts
    the old value back."""
    before = iceberg.property(ROW_GROUP_PROPERTY)
    if before != size:
        properties_update(iceberg, {ROW_GROUP_PROPERTY: size})
        iceberg.refresh()
    try:
        yield
    except BaseException:
        if before != size and not snapshots:
            _restore_row_group_size(iceberg, before, size)
        raise


def _restore_row_group_size(iceberg: IcebergTable, before: str | None, ours: str) -> None:
    """Put back the row-group size property a run that committed nothing set, unless someone changed
    it since (a run that committed a batch keeps the setting its files were written with)."""
    try:
        iceberg.refresh()
        if iceberg.property(ROW_GROUP_PROPERTY) == ours:
            properties_update(iceberg, {ROW_GROUP_PROPERTY: before})
    except Exception as exc:  # the run's own error matters more
        log.warning("could not restore %s of %s: %s", ROW_GROUP_PROPERTY, iceberg.name, exc)


def _rewrite_batches(
    spark: SparkSession,
    target: Target,
    options: OptimizeOptions,
    plan: list[list[FileGroup]],
    groups: list[FileGroup],
    fitted: FittedSpec,
    start_snapshot: int,
    clock: _StepClock,
    report: Progress,
    snapshots: list[int],
) -> int:
    """Rewrite and commit each batch of groups, adding each commit's snapshot id to ``snapshots``;
    how many files were written."""
    written = 0
    tasks = plan_file_tasks(target.iceberg, start_snapshot)
    summary_text = _summary(fitted.spec, target.columns, options.mapping, options.target_file_size, options.weights)
    ranges = fitted.kept_ranges
    done_groups = 0
    retried = _Retried()
    for batch in plan:
        staged: list[StagedGroup] = []
        try:
            for group in batch:
                staged.append(stage_group(target.iceberg, tasks, group.files))  # released below, whatever happens
                with clock.step("rewrite"):
                    rewrite_group(staged[-1], group, fitted, target.types)
                done_groups += 1
                report("rewriting", done_groups, len(groups))
            new_paths = [p for g in staged for p in g.new_file_paths()]
            report(stage_retried("recording key ranges", retried.total), 0, 1)
            with clock.step("key ranges"):
                batch_ranges = key_ranges_with(
                    spark, fitted, new_paths, ranges, target.iceberg.file_access(), retried=retried.add
                )
            with clock.step("commit"):
                snapshot = commit_batch(
                    target.iceberg,
                    staged,
                    fitted.spec,
                    batch_ranges,
                    start_snapshot,
                    summary_text,
                    write_keys(fitted.spec, target.types, batch_ranges),
                )
            snapshots.append(snapshot)
            ranges = batch_ranges
            written += len(new_paths)
            report(stage_retried("recording key ranges", retried.total), 1, 1)
        except BaseException:
            for staged_group in staged:
                staged_group.delete_new_files()
            raise
        finally:
            for staged_group in staged:
                staged_group.release()
    return written


@dataclass(frozen=True)
class Target:
    """The table to optimize, with the columns of ``by`` resolved against its schema."""

    name: str  # as the caller gave it
    iceberg: IcebergTable
    types: dict[str, DataType]  # the columns to cluster on, spelled as the table spells them, in order
    fields: Mapping[str, SchemaField]  # the same columns' field ids and Iceberg types
    dimensions: Mapping[str, ResolvedDimension]  # by the foreign key's name in the table
    bits: int  # per column of the curve (the widest, with ``widths``)
    widths: tuple[int, ...] | None = None  # each column's bits, when weights set them apart

    @property
    def columns(self) -> list[str]:
        return list(self.types)

    @property
    def column_bits(self) -> dict[str, int]:
        """Each column's rank width in bits."""
        return dict(zip(self.types, self.widths or (self.bits,) * len(self.types), strict=True))


def resolve_target(spark: SparkSession, table: str, options: OptimizeOptions) -> Target:
    """Load the table and resolve the columns and dimensions; refuse columns the table partitions by
    value (each new file holds one value of them) and more columns than the curve can hold."""
    iceberg = load_table(spark, table)
    resolved = iceberg.resolve(list(options.columns))
    twice = [f.name for i, f in enumerate(resolved) if f in resolved[:i]]
    if twice:
        raise InvalidOptionError(
            f"by names the column {twice[0]!r} twice (names resolve as the session does: "
            f"spark.sql.caseSensitive={str(iceberg.case_sensitive()).lower()}): list each column once"
        )
    types = iceberg.column_types(resolved)
    fields = {f.name: f for f in resolved}
    # a Dimension as given, under the name its foreign key resolved to
    given = dict(zip((f.name for f in resolved), options.columns, strict=True))
    dimensions = {
        column: resolve_dimension(spark, options.dimensions[given[column]], types[column])
        for column in types
        if given[column] in options.dimensions
    }
    # a bucket, truncate or time partition holds many values of its column: clustering by it still narrows files
    partition_columns = set(iceberg.identity_partition_columns())
    clash = [c for c in types if c in partition_columns]
    if clash:
        raise InvalidOptionError(
            f"{', '.join(clash)} partition{'s' if len(clash) == 1 else ''} {table} by value, so each partition "
            "holds one value of it and its files are clustered by it already: cluster by other columns"
        )
    try:
        widths = bits_for_weights(options.weights) if options.weights is not None else None
        bits = max(widths) if widths is not None else bits_per_column(len(types))
    except ValueError as exc:
        raise InvalidOptionError(str(exc)) from None
    return Target(
        name=table, iceberg=iceberg, types=types, fields=fields, dimensions=dimensions, bits=bits, widths=widths
    )


def select_rewrite(
    spark: SparkSession,
    table: str,
    files: list[DataFileInfo],
    store: ClusteringStore | None,
    options: OptimizeOptions,
) -> Selection:
    """Which files to rewrite, and why: incrementally, those no optimize under the same spec
    (``store``) wrote, or all of them past ``select_files``'s thresholds; with ``where``, only the
    files holding a matching row."""
    selection = select_files(files, store.file_generations() if store else None, mode=options.mode)
    if not options.where:
        return selection
    matching = _files_matching(spark, table, options.where)
    kept = tuple(f for f in selection.files if f.path in matching)
    reason = selection.reason if kept else f"no file holds rows matching {options.where!r}"
    return dataclasses.replace(selection, files=kept, reason=reason)


@dataclass(frozen=True)
class FittedSpec:
    """The spec the rewrite follows, with what each batch needs beside it."""

    spec: ClusteringSpec
    table_sample: pa.Table | None  # the sample a new spec was fitted on (None: the recorded spec is kept)
    generation: int  # recorded with the new files' key ranges
    kept_ranges: pa.Table | None  # key ranges of the files that stay clustered (None: none stay)


def fit_or_keep_spec(
    spark: SparkSession,
    target: Target,
    options: OptimizeOptions,
    files: list[DataFileInfo],
    selection: Selection,
    store: ClusteringStore | None,
    report: Progress,
) -> FittedSpec:
    """Keep the recorded spec (``store``, under the same layout) when optimize goes on incrementally;
    otherwise fit a new one on a sample of the table: new boundaries, so every recorded range goes."""
    if store is not None and not selection.full:
        kept = store.for_files({f.path for f in files} - {f.path for f in selection.files})
        return FittedSpec(store.spec, None, store.next_generation(), kept)
    report("sampling", 0, 1)
    fitted, sample = _fit_spec(
        spark,
        target.name,
        target.types,
        curve=options.curve,
        mapping=options.mapping,
        bits=target.column_bits,
        rows=sum(f.record_count for f in files),
        dimensions=target.dimensions,
    )
    report("sampling", 1, 1)
    spec = fitted.with_columns(
        [
            dataclasses.replace(c, field_id=target.fields[c.name].id, iceberg_type=target.fields[c.name].type)
            for c in fitted.columns
        ]
    )
    return FittedSpec(spec, sample, 0, None)


def ordered_rows(staged: StagedGroup, group: FileGroup, fitted: FittedSpec, types: dict[str, DataType]) -> DataFrame:
    """The group's rows routed to its output files (cut between curve cells), each sorted by curve key."""
    frame = staged.read()
    if group.output_files == 1:
        # One file needs no cuts, so no sample of keys and no shuffle: one task keys and sorts the rows
        # (the common case in a partitioned table's small partitions: a Spark job and a stage each saved)
        key = key_column(staged.table.spark, fitted.spec, types)
        return frame.withColumn(KEY_COLUMN, key).coalesce(1).sortWithinPartitions(KEY_COLUMN).drop(KEY_COLUMN)
    cuts = FileCuts.choose(_sample_keys(frame, group, fitted.spec, types, fitted.table_sample), group.output_files)
    tokens = partition_tokens(staged.table.spark, cuts.files)
    # A deterministic hash of the whole row splits the rows of a key too heavy for one file (a
    # low-cardinality column) in proportion, and the same way if a task is retried.
    tie = F.xxhash64(*[F.col(quoted(name)) for name in frame.columns])
    both = keyed_route_column(staged.table.spark, fitted.spec, types, cuts, tokens, tie)
    return (
        frame.withColumn(ROUTE_COLUMN, both)
        .withColumn(KEY_COLUMN, F.col(f"{ROUTE_COLUMN}.key"))
        .withColumn(ROUTE_COLUMN, F.col(f"{ROUTE_COLUMN}.token"))
        .repartition(cuts.files, ROUTE_COLUMN)
        .sortWithinPartitions(KEY_COLUMN)
        .drop(KEY_COLUMN, ROUTE_COLUMN)
    )


def laid_out_on_write(
    spark: SparkSession, target: Target, fitted: FittedSpec, selected: list[DataFileInfo], target_file_size: int
) -> pa.Table:
    """Key ranges of the selected files that a clustered write left in the recorded spec's curve order
    (``zskip.layout.write_keys``) and that are at least half the target size: they count as laid out
    as they are. Smaller ones are merged by the rewrite, with the files written in arrival order."""
    big = [f.path for f in selected if f.size_bytes >= target_file_size // 2]
    if not big:
        return RANGES_SCHEMA.empty_table()
    access = target.iceberg.file_access()
    return compute_key_ranges(spark, fitted.spec, big, generation=fitted.generation, only_sorted=True, access=access)


def record_laid_out(target: Target, store: ClusteringStore, fitted: FittedSpec, start_snapshot: int) -> int:
    """Point the table at a new clustering store holding ``fitted``'s ranges (the files recorded as laid
    out among them), in one compare-and-swap commit of its properties; the table's snapshot id."""
    assert fitted.kept_ranges is not None
    iceberg = target.iceberg
    with build_lease(iceberg, "clustering store"):  # vacuum keeps the store until it is published
        path = write_store(
            iceberg,
            fitted.spec,
            fitted.kept_ranges,
            snapshot_id=start_snapshot,
            write_keys=write_keys(fitted.spec, target.types, fitted.kept_ranges),
        )
        try:
            swap_property(
                iceberg,
                STORE_PROPERTY,
                expected=store.path,
                value=path,
                also=clustering_fields(fitted.spec, path) or None,
            )
        except BaseException:
            _delete_quietly(iceberg, path)
            raise
    iceberg.refresh()
    return iceberg.current_snapshot_id() or start_snapshot


def rewrite_group(staged: StagedGroup, group: FileGroup, fitted: FittedSpec, types: dict[str, DataType]) -> None:
    """Write the group's rows in curve order as new data files (not committed yet)."""
    # One task writes one file: the cuts already split the group into files of about the target
    # size, and Iceberg's own rolling (which estimates unflushed row groups uncompressed) would
    # split them into several small files.
    staged.write(ordered_rows(staged, group, fitted, types), target_file_size_bytes=NO_ROLLING)


def key_ranges_with(
    spark: SparkSession,
    fitted: FittedSpec,
    new_paths: list[str],
    ranges: pa.Table | None,
    access: FileAccess,
    *,
    retried: Callable[[int], None] | None = None,
) -> pa.Table:
    """``ranges`` and the curve-key range of each new file and row group (read from their footers);
    ``retried`` is told how many requests to the store were tried again."""
    new_ranges = compute_key_ranges(
        spark,
        fitted.spec,
        new_paths,
        generation=fitted.generation,
        sorted_by_key=True,
        access=access,
        retried=retried,
    )
    return new_ranges if ranges is None else pa.concat_tables([ranges, new_ranges])


def commit_batch(
    iceberg: IcebergTable,
    staged: list[StagedGroup],
    spec: ClusteringSpec,
    ranges: pa.Table,
    start_snapshot: int,
    summary_text: str,
    write_keys: bytes | None = None,
) -> int:
    """Write the clustering store (with the curve key clustered writes sort by), then swap the batch's
    files in one Iceberg commit that also points the table at the new store (the new snapshot's id); if
    the commit fails, the store file goes."""
    with build_lease(iceberg, "clustering store"):  # vacuum keeps the store until it is committed
        store_path = write_store(iceberg, spec, ranges, snapshot_id=start_snapshot, write_keys=write_keys)
        properties = {SUMMARY_PROPERTY: summary_text, STORE_PROPERTY: store_path}
        fields = clustering_fields(spec, store_path)  # for zskip's rule (zskip.tablefiles.planning_fields)
        try:
            return commit_rewrites(
                iceberg,
                staged,
                start_snapshot_id=start_snapshot,
                summary={SUMMARY_PROPERTY: summary_text, STORE_PROPERTY: store_path},
                properties=properties | fields,
            )
        except BaseException:
            _delete_quietly(iceberg, store_path)
            raise


def _sample_keys(
    frame: DataFrame,
    group: FileGroup,
    spec: ClusteringSpec,
    types: dict[str, DataType],
    table_sample: pa.Table | None,
) -> np.ndarray:
    """Curve keys of a sample of the group's rows: from the table sample optimize already took when
    it holds enough of the group's rows, else from a Bernoulli sample of the group (keyed in Spark)."""
    wanted = min(max(SAMPLE_KEYS_PER_FILE * group.output_files, MIN_SAMPLE_KEYS), MAX_SAMPLE_KEYS)
    if table_sample is not None:
        mine = table_sample.filter(pc.is_in(table_sample[FILE_COLUMN], value_set=pa.array(group.files, pa.string())))
        if mine.num_rows >= min(wanted // 2, group.record_count):
            return spec.keys(mine)
    fraction = min(1.0, 1.2 * wanted / max(group.record_count, 1))
    sampled = frame.sample(fraction=fraction, seed=11) if fraction < 1.0 else frame
    keys = collect_arrow(sampled.select(key_column(frame.sparkSession, spec, types).alias(KEY_COLUMN)))
    if not keys.num_columns:
        return np.zeros(0, np.uint64)
    signed = keys.column(0).to_numpy().astype(np.int64)
    return signed.view(np.uint64) ^ SIGN


def _fit_spec(
    spark: SparkSession,
    table: str,
    types: dict[str, DataType],
    *,
    curve: str,
    mapping: str,
    bits: Mapping[str, int],
    rows: int,
    dimensions: Mapping[str, ResolvedDimension] | None = None,
) -> tuple[ClusteringSpec, pa.Table]:
    """The spec, and the sample of the table (with each row's file) the rank boundaries came from.

    A column reached through a dimension (``dimensions``, by lower-cased foreign key) takes its
    mapping from the dimension's hierarchy order, not from the sample."""
    columns = list(types)
    dimensions = dimensions or {}
    fraction = min(1.0, 1.2 * SAMPLE_ROWS / max(rows, 1))
    frame = spark.table(table).select(*[quoted(c) for c in columns], FILE_COLUMN)
    if fraction < 1.0:
        frame = frame.sample(fraction=fraction, seed=7)
    sample = collect_arrow(frame.limit(SAMPLE_ROWS))
    fixed = {c: fit_dimension(spark, dimensions[c], bits[c]) for c in columns if c in dimensions}
    return spec_from_sample(sample, types, curve=curve, mapping=mapping, bits=bits, fixed=fixed), sample


def _same_layout(spec: ClusteringSpec, target: Target, curve: str, mapping: str) -> bool:
    """Whether ``spec`` clusters ``target``'s columns (the same fields, in order) the way this optimize
    asks (then it can go on incrementally)."""
    dimensions = target.dimensions
    wanted = RankMapping if mapping == "rank" else RawMapping
    if list(spec.field_ids) != [target.fields[c].id for c in target.columns] or spec.curve != curve:
        return False
    if spec.widths != target.widths:  # weighted otherwise
        return False
    for column in spec.columns:
        asked = dimensions.get(column.name)
        if isinstance(column.mapping, DimensionMapping):
            same = (
                column.mapping.same_dimension(
                    asked.table.name,
                    asked.key,
                    asked.by,
                    key_field_id=asked.key_field_id,
                    by_field_ids=asked.by_field_ids,
                )
                if asked is not None
                else False
            )
            if not same:
                return False
        elif asked is not None or type(column.mapping) is not wanted:
            return False
    return True


def _summary(
    spec: ClusteringSpec,
    columns: list[str],
    mapping: str,
    target_file_size: int,
    weights: tuple[float, ...] | None = None,
) -> str:
    """The layout as the table property ``zskip.clustering`` records it: what status shows and what
    ``zskip maintain`` repeats."""
    dimensions = {
        c.name: {"table": c.mapping.table, "key": c.mapping.key, "by": list(c.mapping.by)}
        | (
            {"key_field_id": c.mapping.key_field_id, "by_field_ids": list(c.mapping.by_field_ids)}
            if c.mapping.key_field_id is not None and c.mapping.by_field_ids is not None
            else {}
        )
        for c in spec.columns
        if isinstance(c.mapping, DimensionMapping)
    }
    return json.dumps(
        {
            "version": spec.version,
            "curve": spec.curve,
            "mapping": mapping,
            "columns": columns,
            "field_ids": list(spec.field_ids),
            "bits": spec.bits,
            "target_file_size": target_file_size,
        }
        | ({"dimensions": dimensions} if dimensions else {})
        | ({"weights": list(weights)} if weights is not None else {}),
        separators=(",", ":"),
    )


def _files_matching(spark: SparkSession, table: str, where: str) -> set[str]:
    rows = collect_arrow(filtered_frame(spark, table, where).selectExpr("_file").distinct())
    return set(rows.column(0).to_pylist()) if rows.num_columns else set()


def _delete_quietly(iceberg: IcebergTable, path: str) -> None:
    try:
        iceberg.file_access().delete(path)
    except Exception:
        log.warning("could not delete %s", path)


def clustering_store(spark: SparkSession, table: str) -> ClusteringStore | None:
    """The clustering spec and key ranges optimize recorded for ``table`` (``None`` if never optimized)."""
    return read_store(load_table(spark, table))
