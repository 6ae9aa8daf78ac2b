"""``zskip.optimize``: rewrite a table's files along a space-filling curve, atomically and incrementally."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, ByteType, DataType, DateType, IntegerType, ShortType

from zskip.curves import (
    CURVES,
    MAPPINGS,
    ClusteringSpec,
    ColumnMapping,
    DimensionMapping,
    RankMapping,
    RawMapping,
    bits_per_column,
    order_key_u64,
)
from zskip.errors import InvalidOptionError
from zskip.iceberg.files import data_files
from zskip.iceberg.frames import collect_arrow
from zskip.iceberg.predicates import filtered_frame
from zskip.iceberg.rewrite import StagedGroup, commit_rewrites, plan_file_tasks, stage_group
from zskip.iceberg.table import IcebergTable, load_table, properties_update
from zskip.layout.curve_keys import SIGN, curve_key_column
from zskip.layout.cuts import FileCuts
from zskip.layout.dimensions import Dimension, ResolvedDimension, fit_dimension, resolve_dimension
from zskip.layout.groups import (
    FileGroup,
    batches,
    files_from_arrow,
    plan_groups,
    select_files,
)
from zskip.layout.key_ranges import compute_key_ranges
from zskip.layout.routing import partition_tokens, route_column
from zskip.layout.store import STORE_PROPERTY, SUMMARY_PROPERTY, ClusteringStore, read_store, write_store
from zskip.units import parse_size

__all__ = ["DEFAULT_ROW_GROUP_SIZE", "OptimizeResult", "clustering_store", "optimize"]

log = logging.getLogger(__name__)

ROW_GROUP_PROPERTY = "write.parquet.row-group-size-bytes"
# Eight row groups per 128 MB file: fine enough for row-group skipping, large enough that Parquet's
# per-row-group overhead stays negligible.
DEFAULT_ROW_GROUP_SIZE = "16MB"
SAMPLE_ROWS = 200_000
MAX_BOUNDARIES = 4096
KEY_COLUMN = "__zskip_curve_key"
ROUTE_COLUMN = "__zskip_route"
FILE_COLUMN = "_file"  # Iceberg's metadata column: the data file a row is in
NO_ROLLING = 1 << 62
# Curve keys sampled per output file to place the cuts between files (see ``zskip.layout.cuts``).
SAMPLE_KEYS_PER_FILE = 300
MIN_SAMPLE_KEYS = 20_000
MAX_SAMPLE_KEYS = 500_000

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class OptimizeResult:
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

    @property
    def noop(self) -> bool:
        return self.commits == 0

    def to_json(self) -> str:
        return json.dumps(self.__dict__ | {"snapshot_ids": list(self.snapshot_ids)}, indent=2)


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
    progress: Progress | None = None,
    _transform: Callable[[DataFrame], DataFrame] | None = None,
) -> OptimizeResult:
    """Cluster ``table``'s data files along a curve over the columns ``by``.

    Files are rewritten per partition (groups never mix partitions) through Iceberg's rewrite
    mechanism and swapped in atomic ``replace`` commits (one per batch of groups with
    ``partial_progress``, at most ``max_commits``); appends that land meanwhile survive.  The
    clustering spec and each new file's and row group's curve-key range are recorded with the
    commit.  ``mode="incremental"`` rewrites only files no optimize under this spec wrote, and
    everything once those pass half the bytes or eight overlapping runs; ``"full"`` rewrites all.

    >>> zskip.optimize(spark, "lake.db.events", by=["user_id", "ts"])   # doctest: +SKIP
    OptimizeResult(table='lake.db.events', files_before=412, files_after=57, ...)
    """
    started = time.monotonic()
    report = progress or (lambda stage, done, total: None)
    for name, value in (("curve", curve), ("mapping", mapping), ("mode", mode)):
        if not isinstance(value, str):
            raise InvalidOptionError(f"{name} must be text, not {type(value).__name__} ({value!r})")
    if not isinstance(max_commits, int) or isinstance(max_commits, bool):
        raise InvalidOptionError(f"max_commits must be a whole number, not {max_commits!r}")
    if not isinstance(partial_progress, bool):
        raise InvalidOptionError(f"partial_progress must be True or False, not {partial_progress!r}")
    if where is not None and (not isinstance(where, str) or not where.strip()):
        raise InvalidOptionError(f"where must be a SQL filter such as 'a > 5', not {where!r}")
    if curve not in CURVES:
        raise InvalidOptionError(f"curve must be one of {', '.join(CURVES)}, not {curve!r}")
    if mapping not in MAPPINGS:
        raise InvalidOptionError(f"mapping must be one of {', '.join(MAPPINGS)}, not {mapping!r}")
    if mode not in ("incremental", "full"):
        raise InvalidOptionError(f"mode must be 'incremental' or 'full', not {mode!r}")
    if max_commits < 1:
        raise InvalidOptionError(f"max_commits must be at least 1, got {max_commits}")
    target = parse_size(target_file_size, name="target_file_size")
    row_group = parse_size(row_group_size, name="row_group_size")
    max_group = parse_size(max_group_size, name="max_group_size")
    if isinstance(by, str):
        by = [c.strip() for c in by.split(",") if c.strip()]
    if not isinstance(by, Sequence) or not all(
        (isinstance(c, str) and c.strip()) or isinstance(c, Dimension) for c in by
    ):
        raise InvalidOptionError(
            f"by must be a list of column names and zskip.Dimension(...), such as ['a', 'b'], not {by!r}"
        )
    if not by:
        raise InvalidOptionError("by needs at least one column to cluster on")
    dimensions = {c.foreign_key.lower(): c for c in by if isinstance(c, Dimension)}
    names = [c.foreign_key if isinstance(c, Dimension) else c for c in by]
    seen: dict[str, str] = {}
    for column in names:
        if column.lower() in seen:
            raise InvalidOptionError(
                f"by names the column {seen[column.lower()]!r} twice ({column!r}; names are case-insensitive): "
                "list each column once"
            )
        seen[column.lower()] = column

    iceberg = load_table(spark, table)
    types = iceberg.column_types(names)
    columns = list(types)
    resolved = {
        column.lower(): resolve_dimension(spark, dimensions[column.lower()], types[column])
        for column in columns
        if column.lower() in dimensions
    }
    partition_columns = {c.lower() for c in iceberg.partition_source_columns()}
    clash = [c for c in columns if c.lower() in partition_columns]
    if clash:
        raise InvalidOptionError(
            f"{', '.join(clash)} partition{'s' if len(clash) == 1 else ''} {table}; files are clustered "
            "within each partition already, so cluster by other columns"
        )
    try:
        bits = bits_per_column(len(columns))
    except ValueError as exc:
        raise InvalidOptionError(str(exc)) from None

    start_snapshot = iceberg.current_snapshot_id()
    files_meta = data_files(spark, table, snapshot_id=start_snapshot) if start_snapshot else None
    files = files_from_arrow(files_meta) if files_meta is not None else []
    bytes_before = sum(f.size_bytes for f in files)

    def result(reason: str, **kw: Any) -> OptimizeResult:
        base = dict(
            table=table,
            mode=mode,
            reason=reason,
            files_before=len(files),
            files_after=len(files),
            bytes_before=bytes_before,
            bytes_after=bytes_before,
            files_rewritten=0,
            files_written=0,
            rows_rewritten=0,
            groups=0,
            commits=0,
            snapshot_id=start_snapshot,
            duration_seconds=time.monotonic() - started,
        )
        base.update(kw)
        return OptimizeResult(**base)  # type: ignore[arg-type]

    if start_snapshot is None or not files:
        return result("the table is empty: nothing to do")

    store = read_store(iceberg)
    same_spec = store is not None and _same_layout(store.spec, columns, curve, mapping, resolved)
    selection = select_files(files, store.file_generations() if store and same_spec else None, mode=mode)
    selected = list(selection.files)
    if where:
        matching = _files_matching(spark, table, where)
        selected = [f for f in selected if f.path in matching]
    if not selected:
        return result(selection.reason if not where else f"no file holds rows matching {where!r}")

    if store is not None and same_spec and not selection.full:
        spec = store.spec
        table_sample = None
        generation = store.next_generation()
        kept_ranges = store.for_files({f.path for f in files} - {f.path for f in selected})
    else:
        report("sampling", 0, 1)
        spec, table_sample = _fit_spec(
            spark,
            table,
            types,
            curve=curve,
            mapping=mapping,
            bits=bits,
            rows=sum(f.record_count for f in files),
            dimensions=resolved,
        )
        report("sampling", 1, 1)
        generation = 0
        kept_ranges = None  # a new spec (new boundaries) invalidates every recorded range
    groups = plan_groups(selected, target_file_size_bytes=target, max_group_size_bytes=max_group)
    plan = batches(groups, max_commits=max_commits if partial_progress else 1)
    log.info("optimize %s: %s; %d groups in %d commits", table, selection.reason, len(groups), len(plan))

    if iceberg.property(ROW_GROUP_PROPERTY) != str(row_group):
        # Iceberg's writer takes the row-group size only from this table property.
        properties_update(iceberg, {ROW_GROUP_PROPERTY: str(row_group)})
        iceberg.refresh()

    tasks = plan_file_tasks(iceberg, start_snapshot)
    summary_text = _summary(spec, columns, mapping)
    snapshots: list[int] = []
    written = 0
    ranges_so_far = kept_ranges
    done_groups = 0
    for batch in plan:
        staged: list[StagedGroup] = []
        store_path: str | None = None
        try:
            for group in batch:
                staged.append(stage_group(iceberg, tasks, group.files))  # released below, whatever happens
                _rewrite_group(staged[-1], group, spec, types, table_sample, _transform)
                done_groups += 1
                report("rewriting", done_groups, len(groups))
            new_paths = [p for g in staged for p in g.new_file_paths()]
            written += len(new_paths)
            report("recording key ranges", 0, 1)
            new_ranges = compute_key_ranges(spark, spec, new_paths, generation=generation, sorted_by_key=True)
            all_ranges = new_ranges if ranges_so_far is None else pa.concat_tables([ranges_so_far, new_ranges])
            store_path = write_store(iceberg, spec, all_ranges, snapshot_id=start_snapshot)
            snapshot = commit_rewrites(
                iceberg,
                staged,
                start_snapshot_id=start_snapshot,
                summary={SUMMARY_PROPERTY: summary_text, STORE_PROPERTY: store_path},
                properties={SUMMARY_PROPERTY: summary_text, STORE_PROPERTY: store_path},
            )
            snapshots.append(snapshot)
            ranges_so_far = all_ranges
            report("recording key ranges", 1, 1)
        except BaseException:
            for staged_group in staged:
                staged_group.delete_new_files()
            if store_path is not None:
                _delete_quietly(iceberg, store_path)
            raise
        finally:
            for staged_group in staged:
                staged_group.release()

    after = files_from_arrow(data_files(spark, table))
    return result(
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
        clustering=summary_text,
    )


def _rewrite_group(
    staged: StagedGroup,
    group: FileGroup,
    spec: ClusteringSpec,
    types: dict[str, DataType],
    table_sample: pa.Table | None,
    transform: Callable[[DataFrame], DataFrame] | None,
) -> None:
    frame = staged.read()
    cuts = FileCuts.choose(_sample_keys(frame, group, spec, types, table_sample), group.output_files)
    tokens = partition_tokens(staged.table.spark, cuts.files)
    # A deterministic hash of the whole row splits the rows of a key too heavy for one file (a
    # low-cardinality column) in proportion, and the same way if a task is retried.
    tie = F.xxhash64(*[F.col(f"`{name}`") for name in frame.columns])
    keyed = frame.withColumn(KEY_COLUMN, curve_key_column(spec, types))
    ordered = (
        keyed.withColumn(ROUTE_COLUMN, route_column(cuts, tokens, F.col(KEY_COLUMN), tie))
        .repartition(cuts.files, ROUTE_COLUMN)
        .sortWithinPartitions(KEY_COLUMN)
        .drop(KEY_COLUMN, ROUTE_COLUMN)
    )
    if transform is not None:
        ordered = transform(ordered)
    # One task writes one file: the cuts already split the group into files of about the target
    # size, and Iceberg's own rolling (which estimates unflushed row groups uncompressed) would
    # split them into several small files.
    staged.write(ordered, target_file_size_bytes=NO_ROLLING)


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
    keys = collect_arrow(sampled.select(curve_key_column(spec, types).alias(KEY_COLUMN)))
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
    bits: int,
    rows: int,
    dimensions: Mapping[str, ResolvedDimension] | None = None,
) -> tuple[ClusteringSpec, pa.Table]:
    """The spec, and the sample of the table (with each row's file) the rank boundaries came from.

    A column reached through a dimension (``dimensions``, by lower-cased foreign key) takes its
    mapping from the dimension's hierarchy order, not from the sample."""
    columns = list(types)
    dimensions = dimensions or {}
    fraction = min(1.0, 1.2 * SAMPLE_ROWS / max(rows, 1))
    frame = spark.table(table).select(*[f"`{c}`" for c in columns], FILE_COLUMN)
    if fraction < 1.0:
        frame = frame.sample(fraction=fraction, seed=7)
    sample = collect_arrow(frame.limit(SAMPLE_ROWS))
    mappings = []
    for column in columns:
        if column.lower() in dimensions:
            fitted: RankMapping | RawMapping | DimensionMapping = fit_dimension(spark, dimensions[column.lower()], bits)
        elif mapping == "raw":
            fitted = RawMapping.fit(
                order_key_u64(sample[column]) if sample.num_rows else np.zeros(0, np.uint64),
                sample[column].is_valid().to_numpy(zero_copy_only=False) if sample.num_rows else None,
                bits,
                raw_width(types[column]),
            )
        else:
            keys = order_key_u64(sample[column]) if sample.num_rows else np.zeros(0, np.uint64)
            fitted = RankMapping.fit(keys, bits, max_boundaries=MAX_BOUNDARIES)
        mappings.append(ColumnMapping(column, fitted))
    return ClusteringSpec(curve=curve, bits=bits, columns=tuple(mappings)), sample


def raw_width(dtype: DataType) -> int:
    """Bits a value of ``dtype`` really spans in its 64-bit key (see ``RawMapping``)."""
    if isinstance(dtype, BooleanType):
        return 1
    if isinstance(dtype, ByteType):
        return 8
    if isinstance(dtype, ShortType):
        return 16
    if isinstance(dtype, (IntegerType, DateType)):
        return 32
    return 64


def _same_layout(
    spec: ClusteringSpec,
    columns: list[str],
    curve: str,
    mapping: str,
    dimensions: Mapping[str, ResolvedDimension] | None = None,
) -> bool:
    """Whether ``spec`` clusters ``columns`` the way this optimize asks (then it can go on incrementally)."""
    dimensions = dimensions or {}
    wanted = RankMapping if mapping == "rank" else RawMapping
    if [c.lower() for c in spec.column_names] != [c.lower() for c in columns] or spec.curve != curve:
        return False
    for column in spec.columns:
        asked = dimensions.get(column.name.lower())
        if isinstance(column.mapping, DimensionMapping):
            if asked is None or not column.mapping.same_dimension(asked.table.name, asked.key, asked.by):
                return False
        elif asked is not None or type(column.mapping) is not wanted:
            return False
    return True


def _summary(spec: ClusteringSpec, columns: list[str], mapping: str) -> str:
    dimensions = {
        c.name: {"table": c.mapping.table, "key": c.mapping.key, "by": list(c.mapping.by)}
        for c in spec.columns
        if isinstance(c.mapping, DimensionMapping)
    }
    return json.dumps(
        {
            "version": spec.version,
            "curve": spec.curve,
            "mapping": mapping,
            "columns": columns,
            "bits": spec.bits,
        }
        | ({"dimensions": dimensions} if dimensions else {}),
        separators=(",", ":"),
    )


def _files_matching(spark: SparkSession, table: str, where: str) -> set[str]:
    rows = collect_arrow(filtered_frame(spark, table, where).selectExpr("_file").distinct())
    return set(rows.column(0).to_pylist()) if rows.num_columns else set()


def _delete_quietly(iceberg: IcebergTable, path: str) -> None:
    try:
        iceberg.delete_file(path)
    except Exception:
        log.warning("could not delete %s", path)


def clustering_store(spark: SparkSession, table: str) -> ClusteringStore | None:
    """The clustering spec and key ranges optimize recorded for ``table`` (``None`` if never optimized)."""
    return read_store(load_table(spark, table))
