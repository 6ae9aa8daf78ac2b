"""Plan one Iceberg scan: which of its files and row groups can hold a matching row.

Planning is a pipeline: an explicit tuple of stages, each a pure function from an immutable
candidate set (files, each with the row groups still in play) to a smaller one.  The pipeline,
not the stages, records how long each took and what it kept.

1. ``partition + min/max`` — the files of the tasks Spark's own Iceberg scan planned (Iceberg's
   partition and file min/max pruning with the pushed filters);
2. ``curve range`` — the query box as curve-key intervals against each file's and row group's
   recorded key range (files optimize did not write have none and stay); not run when bitmaps on
   every column of the predicate cover the few files left (the index stage then decides every row);
3. ``indexes`` — bloom filters and bitmaps from the index manifest (unindexed files stay);
4. ``row-group min/max`` — Parquet footer statistics of each row group left;
5. ``read ranges`` — the one stage that adds: the row groups between two runs of a file's kept row
   groups, where reading them costs less than opening the file again (``zskip.planning.row_groups``).

A plan goes beyond Spark when the curve or index stage ruled out a row group whose statistics
might match: Spark's own scan would read it.  Otherwise zskip hands back Spark's own DataFrame.

What the stages read is metadata of one table snapshot, loaded once and cached by immutable key
(file path, snapshot id, store and manifest path): see ``zskip.planning.metadata``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from zskip.expr import AlwaysFalse, Column, Expr, bind, columns_of
from zskip.iceberg.scans import Field, IcebergScan, JoinKeys
from zskip.iceberg.table import load_table
from zskip.index.evaluate import Match, Verdict, bitmaps_answer
from zskip.indexing.lookup import index_verdicts, key_set_verdicts
from zskip.indexing.store import MANIFEST_PROPERTY
from zskip.layout.store import STORE_PROPERTY
from zskip.planning.cache import CACHE
from zskip.planning.curve import curve_arrow_types, query_intervals, ranges_meet
from zskip.planning.joins import JoinFilter, join_rank_bounds, ranges_holding_keys
from zskip.planning.metadata import SnapshotMetadata, snapshot_metadata
from zskip.planning.minmax import push_not
from zskip.planning.minmax_arrays import StatsColumn, might_match_arrays
from zskip.planning.row_groups import joined_runs, run_count

__all__ = [
    "ICEBERG_STAGE",
    "JOIN_STAGE",
    "METADATA_STAGE",
    "PLANNING_PROPERTIES",
    "READ_RANGES_STAGE",
    "STAGES",
    "Candidates",
    "PlanInputs",
    "ScanPlan",
    "Stage",
    "StageResult",
    "plan_scan",
    "statistics_allow",
    "statistics_allow_by_file",
]

METADATA_STAGE = "table metadata (cached per snapshot)"
ICEBERG_STAGE = "partition + min/max (Iceberg)"
JOIN_STAGE = "join keys"
READ_RANGES_STAGE = "read ranges (runs joined)"
PLANNING_PROPERTIES = (MANIFEST_PROPERTY, STORE_PROPERTY)  # the table properties planning reads

Groups = tuple[int, ...] | None  # the row groups of a file still in play; None: all of them


@dataclass(frozen=True)
class Candidates:
    """Files that may hold a matching row, each with its row groups still in play (immutable)."""

    files: Mapping[str, Groups]

    @staticmethod
    def of(files: Mapping[str, Groups]) -> Candidates:
        return Candidates(MappingProxyType(dict(files)))

    def narrowed(self, keep: Mapping[str, tuple[int, ...]], totals: Mapping[str, int]) -> Candidates:
        """These candidates with each file in ``keep`` cut to the row groups given (none: the file goes)."""
        files = dict(self.files)
        for path, groups in keep.items():
            if not groups:
                files.pop(path, None)
            else:
                files[path] = None if len(groups) == totals[path] else tuple(groups)
        return Candidates.of(files)

    def dropped(self, paths: set[str]) -> Candidates:
        return Candidates.of({p: g for p, g in self.files.items() if p not in paths})


@dataclass(frozen=True)
class PlanInputs:
    """What every stage may read: the scan, its predicate bound to the table's fields, the snapshot's metadata.

    ``expr`` is bound (``zskip.expr.bind``): its columns are Iceberg field ids, and every stage
    compares them with what zskip stored by field id; build it with ``PlanInputs.of``.
    """

    scan: IcebergScan
    expr: Expr
    metadata: SnapshotMetadata
    joins: tuple[JoinKeys, ...] = ()  # equi-joins of the scan to filtered dimensions (zskip.sql only)
    join_filter: Callable[[JoinKeys], JoinFilter] | None = None  # the keys each join's dimension yields
    fields: Mapping[int, Field] = field(default_factory=dict)  # the filtered columns, by field id
    floats: frozenset[int] = frozenset()  # field ids of float and double columns
    pushed: Expr | None = None  # ``expr`` with NOT pushed to the leaves (``push_not``), once per plan

    @staticmethod
    def of(
        scan: IcebergScan,
        metadata: SnapshotMetadata,
        *,
        joins: tuple[JoinKeys, ...] = (),
        join_filter: Callable[[JoinKeys], JoinFilter] | None = None,
    ) -> PlanInputs:
        """The inputs of ``scan``'s plan, its predicate bound once to the fields the scan resolved."""
        by_id = {f.id: f for f in scan.fields.values()}
        bound = bind(scan.expr, {name: f.id for name, f in scan.fields.items()})
        return PlanInputs(
            scan=scan,
            expr=bound,
            pushed=push_not(bound),
            metadata=metadata,
            joins=joins,
            join_filter=join_filter,
            fields=MappingProxyType(by_id),
            floats=frozenset(i for i, f in by_id.items() if f.is_float),
        )


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[PlanInputs, Candidates], Candidates]
    beyond_spark: bool  # True: Spark's own scan does not skip what this stage rules out
    counts_row_groups: bool  # True: its result says which row groups stay (footers are read)
    # why the stages after this one will rule out all it could (then it is not run), or None
    unneeded: Callable[[PlanInputs, Candidates], str | None] | None = None


@dataclass(frozen=True)
class StageResult:
    name: str
    files_kept: int
    row_groups_kept: int | None  # None: not known without reading footers
    seconds: float
    skipped: str | None = None  # why the stage was not run (a later one rules out all it could)


@dataclass(frozen=True)
class ScanPlan:
    """What to read of one scan: each kept file with the row groups that can match (``None``: all of them)."""

    table: str
    frame: DataFrame  # the plain DataFrame the scan belongs to
    scan: IcebergScan | None  # None: Spark proved that no row matches
    expr: Expr
    snapshot_id: int | None
    files_total: int
    row_groups_total: int
    kept: Mapping[str, Groups]
    metadata: SnapshotMetadata | None
    stages: tuple[StageResult, ...]
    planning_seconds: float  # Spark's analysis of the filter and zskip's stages
    analysis_seconds: float = 0.0  # Spark's part: parsing, analysis and pushing the filter to the scan
    notes: tuple[str, ...] = ()
    # True when the curve or index stage ruled out a row group Spark's own scan would read (Iceberg's
    # file pruning and its Parquet reader's row-group statistics); otherwise it reads no more than this plan
    beyond_spark: bool = False

    def row_groups_kept(self) -> int:
        if self.metadata is None:
            return 0
        return sum(len(g) if g is not None else self.metadata.row_groups(p) for p, g in self.kept.items())

    def rows_read(self) -> int:
        assert self.scan is not None or not self.kept
        total = 0
        for path, groups in self.kept.items():
            if groups is None:
                total += self.scan.records[self.scan.paths.index(path)] if self.scan else 0
            else:
                footer = self.metadata.footer(path) if self.metadata else None
                total += sum(footer.rows[g] for g in groups) if footer else 0
        return total

    def bytes_read(self) -> int:
        total = 0
        for path, groups in self.kept.items():
            if groups is None:
                total += self.scan.sizes[self.scan.paths.index(path)] if self.scan else 0
            else:
                footer = self.metadata.footer(path) if self.metadata else None
                total += sum(footer.ranges[g][1] for g in groups) if footer else 0
        return total


# ---- the stages ---------------------------------------------------------------------------------


def iceberg_files(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """The files of the tasks Spark's scan planned (Iceberg pruned by partition and file min/max)."""
    return Candidates.of(dict.fromkeys(inputs.scan.paths))


def curve_range(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files and row groups whose recorded curve-key range meets none of the query box's intervals go."""
    return _curve_narrow(inputs, candidates, {})


EXACT_INDEX_FILES = 32  # at most this many files: exact bitmaps alone are cheaper than the curve first


def curve_unneeded(inputs: PlanInputs, candidates: Candidates) -> str | None:
    """Why the curve stage can rule out nothing the index stage will not, or ``None``.

    When every candidate file has a bitmap on every column of a predicate bitmaps answer whole, the
    index stage keeps exactly the row groups holding a matching row, which no sound stage removes; the
    curve stage (a query-box descent, 1-2 ms whatever the file count) would only save the index stage
    work on the files it drops, and for a few files that work costs less than the descent.
    """
    manifest = inputs.metadata.manifest() if candidates.files else None
    if manifest is None or len(candidates.files) > EXACT_INDEX_FILES or inputs.metadata.store() is None:
        return None
    columns = columns_of(inputs.expr)
    if not columns or not bitmaps_answer(inputs.expr, columns):
        return None
    by_file = manifest.entries_by_file
    for path in candidates.files:
        indexed = {row["field_id"] for row in by_file.get(path, ()) if row["kind"] == "bitmap"}
        if not columns <= indexed:
            return None
    names = sorted(inputs.fields[c].name if isinstance(c, int) and c in inputs.fields else str(c) for c in columns)
    return "bitmaps on " + ", ".join(names) + " decide every row of these files"


def join_keys(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files and row groups holding no key a joined dimension's filter matches go: by the keys' recorded
    coordinates on the curve (a fact table clustered through that dimension) and by each row group's
    min/max of the foreign key."""
    if not inputs.joins or inputs.join_filter is None or not candidates.files:
        return candidates
    filters = [f for f in map(inputs.join_filter, inputs.joins) if f.keys is not None]
    if any(f.keys is not None and len(f.keys) == 0 for f in filters):
        return Candidates.of({})  # a dimension with no matching row: the inner join is empty
    if not filters:
        return candidates
    store = inputs.metadata.store()
    if store is not None:
        extra = join_rank_bounds(store.spec, filters)
        if extra:
            candidates = _curve_narrow(inputs, candidates, extra)
    for item in filters:
        assert item.keys is not None
        candidates = _holding_keys(inputs, candidates, item.join.field.id, item.keys)
    manifest = inputs.metadata.manifest()
    if manifest is not None and candidates.files:
        key_sets: list[tuple[Column, np.ndarray]] = [(f.join.field.id, f.keys) for f in filters if f.keys is not None]
        candidates = _apply_verdicts(
            inputs, candidates, key_set_verdicts(manifest, list(candidates.files), key_sets, cache=CACHE)
        )
    return candidates


def _holding_keys(inputs: PlanInputs, candidates: Candidates, field_id: int, keys: np.ndarray) -> Candidates:
    """Row groups whose min/max of the column ``field_id`` holds one of ``keys`` (sorted), all searched at once."""
    paths = list(candidates.files)
    if not paths:
        return candidates
    counts = _row_group_counts(inputs, paths)
    column = StatsColumn.concat([inputs.metadata.stats_column(path, field_id) for path in paths])
    bounded = column.known & column.has_min_max
    only_nulls = column.known & (column.values == 0)  # only NULLs: never joins
    if column.low is not None and column.high is not None and column.low.type == pa.int64():
        low = np.where(bounded, column.low.fill_null(0).to_numpy(zero_copy_only=False), 0).astype(np.int64)
        high = np.where(bounded, column.high.fill_null(-1).to_numpy(zero_copy_only=False), -1).astype(np.int64)
    else:  # no whole-number bounds: none of them bounds anything
        bounded = np.zeros(len(column), dtype=bool)
        low, high = np.zeros(len(column), dtype=np.int64), np.full(len(column), -1, dtype=np.int64)
    holds = ranges_holding_keys(keys, low, high) | (~bounded & ~only_nulls)
    return _keep_row_groups(candidates, paths, counts, holds)


def _row_group_counts(inputs: PlanInputs, paths: list[str]) -> np.ndarray:
    """Row groups of each of ``paths`` (their footers read first, several at a time, where not cached)."""
    inputs.metadata.prefetch_footers(paths)
    return np.fromiter((inputs.metadata.row_groups(p) for p in paths), dtype=np.int64, count=len(paths))


def _keep_row_groups(candidates: Candidates, paths: list[str], counts: np.ndarray, mask: np.ndarray) -> Candidates:
    """``candidates`` cut to the row groups ``mask`` keeps: one flag per row group of ``paths``, file after file."""
    keep: dict[str, tuple[int, ...]] = {}
    totals: dict[str, int] = {}
    for path, total, end in zip(paths, counts.tolist(), np.cumsum(counts).tolist(), strict=True):
        mine = mask[end - total : end]
        current = candidates.files[path]
        totals[path] = total
        keep[path] = tuple(np.flatnonzero(mine).tolist()) if current is None else tuple(g for g in current if mine[g])
    return candidates.narrowed(keep, totals)


def _curve_narrow(inputs: PlanInputs, candidates: Candidates, extra_ranks: Mapping[str, tuple[int, int]]) -> Candidates:
    """The curve stage's work for the query box of the scan's predicate, tightened by ``extra_ranks``."""
    store = inputs.metadata.store()
    if store is None or not candidates.files:
        return candidates
    arrow_types = curve_arrow_types(store.spec, inputs.fields)
    recorded = inputs.metadata.curve_ranges()
    chosen = recorded.of_files(candidates.files)
    if not chosen.any():
        return candidates
    low, high = recorded.low[chosen], recorded.high[chosen]
    files, groups = recorded.file[chosen], recorded.group[chosen]
    finest = recorded.finest[chosen]
    intervals = query_intervals(
        inputs.expr,
        store.spec,
        arrow_types,
        recorded=np.stack([low[finest], high[finest]], axis=1),
        extra_ranks=extra_ranks,
    )
    if intervals is None:
        return candidates
    meets = ranges_meet(intervals, low, high)
    # per file: its whole range's verdict (row group -1) and its row groups that meet, file by file
    whole = groups == -1
    recorded_file = np.zeros(len(recorded.paths), dtype=bool)
    recorded_file[files[whole]] = True
    file_meets = np.zeros(len(recorded.paths), dtype=bool)
    file_meets[files[whole]] = meets[whole]
    met = ~whole & meets
    order = np.lexsort((groups[met], files[met]))
    met_files, met_groups = files[met][order], groups[met][order]
    bounds = np.searchsorted(met_files, np.arange(len(recorded.paths) + 1)).tolist()
    names = recorded.paths
    gone = {names[i] for i in np.flatnonzero(recorded_file & ~file_meets).tolist()}
    keep = {
        names[i]: tuple(met_groups[bounds[i] : bounds[i + 1]].tolist())
        for i in np.flatnonzero(recorded_file & file_meets).tolist()
    }
    inputs.metadata.prefetch_footers(list(keep))
    totals = {path: inputs.metadata.footer(path).row_groups for path in keep}
    narrowed = candidates.dropped(gone)
    return narrowed.narrowed({p: _within(g, narrowed.files[p]) for p, g in keep.items()}, totals)


def row_group_minmax(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Row groups whose Parquet statistics prove the predicate false go (files with none left too).

    Every candidate row group is answered at once, over the statistics as arrays
    (``zskip.planning.minmax_arrays``)."""
    if not columns_of(inputs.expr) or not candidates.files:
        return candidates
    paths = list(candidates.files)
    counts = _row_group_counts(inputs, paths)
    return _keep_row_groups(candidates, paths, counts, statistics_allow(inputs, paths, counts))


def statistics_allow(inputs: PlanInputs, paths: list[str], counts: np.ndarray | None = None) -> np.ndarray:
    """Per row group of ``paths``, file after file: whether its Parquet statistics leave the predicate
    possibly true (what Iceberg's reader reads of a range covering it).  ``counts``: row groups per file."""
    if counts is None:
        counts = _row_group_counts(inputs, paths)
    ids = [c for c in columns_of(inputs.expr) if isinstance(c, int)]
    columns = inputs.metadata.stats_columns(paths, ids)
    pushed = inputs.pushed if inputs.pushed is not None else push_not(inputs.expr)
    return might_match_arrays(pushed, columns, inputs.floats, int(counts.sum()))


def statistics_allow_by_file(inputs: PlanInputs, paths: list[str]) -> dict[str, np.ndarray]:
    """``statistics_allow`` of ``paths`` (one array call), cut into one array per file."""
    counts = _row_group_counts(inputs, paths)
    allowed = statistics_allow(inputs, paths, counts)
    ends = np.cumsum(counts).tolist()
    return {path: allowed[end - n : end] for path, n, end in zip(paths, counts.tolist(), ends, strict=True)}


def indexes(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files and row groups that bloom filters or bitmaps prove cannot match go (unindexed files stay)."""
    manifest = inputs.metadata.manifest()
    if manifest is None or not candidates.files:
        return candidates
    verdicts = index_verdicts(
        manifest, list(candidates.files), inputs.expr, cache=CACHE, manifest_key=inputs.metadata.manifest_path
    )
    return _apply_verdicts(inputs, candidates, verdicts)


def _apply_verdicts(inputs: PlanInputs, candidates: Candidates, verdicts: Mapping[str, Verdict]) -> Candidates:
    """Candidates without the files and row groups index verdicts rule out."""
    gone: set[str] = set()
    keep: dict[str, tuple[int, ...]] = {}
    totals: dict[str, int] = {}
    inputs.metadata.prefetch_footers([p for p, v in verdicts.items() if v.file is not Match.CANNOT_MATCH])
    for path, verdict in verdicts.items():
        if verdict.file is Match.CANNOT_MATCH:
            gone.add(path)
            continue
        footer = inputs.metadata.footer(path)
        if len(verdict.row_groups) != footer.row_groups:
            continue  # an index of a different row-group layout: ignore its row groups
        current = candidates.files[path]
        groups = range(footer.row_groups) if current is None else current
        keep[path] = tuple(g for g in groups if verdict.row_groups[g] is Match.MIGHT_MATCH)
        totals[path] = footer.row_groups
    return candidates.dropped(gone).narrowed(keep, totals)


def read_ranges(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files read in several ranges get the row groups between two of their runs that the reader
    would read anyway where those hold at most ``JOIN_GAP_BYTES``: one range instead of two."""
    split = [path for path, groups in candidates.files.items() if groups is not None and run_count(groups) > 1]
    if not split:
        return candidates
    keep: dict[str, tuple[int, ...]] = {}
    totals: dict[str, int] = {}
    for path, allowed in statistics_allow_by_file(inputs, split).items():
        groups = candidates.files[path]
        assert groups is not None
        keep[path] = joined_runs(inputs.metadata.footer(path), groups, allowed)
        totals[path] = len(allowed)
    return candidates.narrowed(keep, totals)


def _within(groups: tuple[int, ...], current: Groups) -> tuple[int, ...]:
    if current is None:
        return groups
    allowed = set(current)
    return tuple(g for g in groups if g in allowed)


# Selective stages first: an index usually rules out most files at once, and the row-group
# statistics are then read only for the files left.  Every stage but the last only removes
# candidates, so their order changes what each stage reports, never the plan; the last adds back
# row groups of files already kept, so it comes after every stage that removes.
STAGES: tuple[Stage, ...] = (
    Stage(ICEBERG_STAGE, iceberg_files, beyond_spark=False, counts_row_groups=False),
    Stage(JOIN_STAGE, join_keys, beyond_spark=True, counts_row_groups=True),
    Stage("curve range", curve_range, beyond_spark=True, counts_row_groups=False, unneeded=curve_unneeded),
    Stage("indexes (bloom, bitmap)", indexes, beyond_spark=True, counts_row_groups=True),
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
    removed: dict[str, set[int] | None] = {}  # what stages beyond Spark ruled out (None: a whole file)
    for stage in stages:
        clock = time.perf_counter()
        skipped = stage.unneeded(inputs, candidates) if stage.unneeded is not None else None
        after = candidates if skipped is not None else stage.run(inputs, candidates)
        seconds = time.perf_counter() - clock
        if stage.beyond_spark:
            _note_removed(inputs, candidates, after, removed)
        groups = None
        if stage.counts_row_groups:
            groups = sum(len(g) if g is not None else inputs.metadata.row_groups(p) for p, g in after.files.items())
        run.results.append(StageResult(stage.name, len(after.files), groups, seconds, skipped))
        candidates = after
    _forget_read(inputs, candidates, removed)
    if removed:
        clock = time.perf_counter()
        run.beyond_spark = _spark_reads_more(inputs, removed)
        run.results.append(
            StageResult(
                "check: would Spark's own scan read more?", len(candidates.files), None, time.perf_counter() - clock
            )
        )
    return candidates, run


def _note_removed(
    inputs: PlanInputs, before: Candidates, after: Candidates, removed: dict[str, set[int] | None]
) -> None:
    """Add what ``after`` lost against ``before`` to ``removed`` (``None``: a whole file)."""
    for path, groups in before.files.items():
        if path in after.files and after.files[path] == groups:
            continue
        if path not in after.files and groups is None:
            removed[path] = None
            continue
        if path in removed and removed[path] is None:
            continue
        had = set(groups) if groups is not None else set(range(inputs.metadata.row_groups(path)))
        kept = after.files.get(path, ())
        left = set(kept) if kept is not None else had
        lost = removed.setdefault(path, set())
        assert lost is not None
        lost.update(had - left)


def _forget_read(inputs: PlanInputs, final: Candidates, removed: dict[str, set[int] | None]) -> None:
    """Drop from ``removed`` what a later stage added back (the row groups joining two runs): read after all."""
    for path, groups in final.files.items():
        lost = removed.get(path)
        if not lost:
            continue
        lost.difference_update(range(inputs.metadata.row_groups(path)) if groups is None else groups)
        if not lost:
            del removed[path]


def _spark_reads_more(inputs: PlanInputs, removed: dict[str, set[int] | None]) -> bool:
    """Whether Spark's own scan would read a row group that zskip's curve or index stage ruled out.

    Spark's scan reads Iceberg's files and skips row groups by their statistics, so a ruled-out row
    group whose statistics might match is one Spark would read.  Files are checked a few at a time
    and the answer is usually known from the first.
    """
    pending = [(path, None if groups is None else tuple(sorted(groups))) for path, groups in removed.items()]
    start, size = 0, 1
    while start < len(pending):
        chunk = Candidates.of(dict(pending[start : start + size]))
        if row_group_minmax(inputs, chunk).files:
            return True
        start, size = start + size, size * 8
    return False


def _join_note(item: JoinFilter) -> str:
    join = item.join
    found = "more keys than zskip searches: not used" if item.keys is None else f"{len(item.keys):,} keys"
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
    )


def plan_scan(
    spark: SparkSession,
    frame: DataFrame,
    scan: IcebergScan | None,
    *,
    table: str,
    analysis_seconds: float = 0.0,
    stages: tuple[Stage, ...] = STAGES,
    joins: tuple[JoinKeys, ...] = (),
    join_filter: Callable[[JoinKeys], JoinFilter] | None = None,
) -> ScanPlan:
    """Plan one Iceberg scan of ``frame`` (``scan`` ``None``: Spark proved no row of ``table`` matches).

    Planning records nothing: the entry points (``read``, ``explain``, ``sql``, ``explain_sql``) hand
    their plans to the workload log's recorder, and the advisor plans without one."""
    started = time.perf_counter()
    if scan is None:  # Spark proved no row matches: say what the table holds all the same
        metadata = _table_metadata(spark, table)
        files_total, row_groups_total = metadata.totals()
        return ScanPlan(
            table=table,
            frame=frame,
            scan=None,
            expr=AlwaysFalse(),
            snapshot_id=metadata.snapshot_id,
            files_total=files_total,
            row_groups_total=row_groups_total,
            kept=MappingProxyType({}),
            metadata=metadata,
            stages=(StageResult("Spark: the filter is never true", 0, 0, 0.0),),
            planning_seconds=analysis_seconds + time.perf_counter() - started,
            analysis_seconds=analysis_seconds,
        )
    metadata = snapshot_metadata(spark, scan)
    files_total, row_groups_total = metadata.totals()
    listed = time.perf_counter() - started
    inputs = PlanInputs.of(scan, metadata, joins=joins, join_filter=join_filter)
    if not joins:  # a scan joined to no filtered dimension: the join stage has nothing to say
        stages = tuple(stage for stage in stages if stage.run is not join_keys)
    candidates, run = run_stages(stages, inputs)
    notes = scan.notes + tuple(_join_note(join_filter(j)) for j in joins if join_filter is not None)
    results = (StageResult(METADATA_STAGE, files_total, row_groups_total, listed), *run.results)
    plan = ScanPlan(
        table=table,
        frame=frame,
        scan=scan,
        expr=scan.expr,
        snapshot_id=scan.snapshot_id,
        files_total=files_total,
        row_groups_total=row_groups_total,
        kept=candidates.files,
        metadata=metadata,
        stages=results,
        planning_seconds=analysis_seconds + time.perf_counter() - started,
        analysis_seconds=analysis_seconds,
        notes=notes,
        beyond_spark=run.beyond_spark,
    )
    return plan
