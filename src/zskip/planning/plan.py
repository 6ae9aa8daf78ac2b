"""The plan's types: candidate sets, what every stage may read, a stage, its result, a scan's plan.

A stage is a function from an immutable candidate set (files, each with the row groups still in
play) to a smaller one; ``zskip.planning.pipeline`` runs a tuple of them.  The helpers at the end
cut candidates to row groups, for the stages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from pyspark.sql import DataFrame

from zskip.errors import InvalidOptionError
from zskip.expr import Expr, bind
from zskip.expr.rewrite import rewrite_not
from zskip.iceberg.scan_types import Field, IcebergScan, JoinKeys
from zskip.planning.joins import JoinKeysLoader
from zskip.planning.metadata import SnapshotMetadata
from zskip.planning.selectivity import DEFAULT_RANGE_ROWS, RANGE_ROWS_SETTING
from zskip.tablefiles.clustering_store import STORE_PROPERTY
from zskip.tablefiles.index_manifest import MANIFEST_PROPERTY

__all__ = [
    "DEFAULT_OPEN_FILE_COST",
    "ICEBERG_STAGE",
    "JOIN_STAGE",
    "METADATA_STAGE",
    "OPEN_FILE_COST_PROPERTY",
    "PLANNING_PROPERTIES",
    "READ_RANGES_STAGE",
    "Candidates",
    "Groups",
    "PlanInputs",
    "ScanPlan",
    "Stage",
    "StageResult",
    "keep_row_groups",
    "open_file_cost",
    "row_group_counts",
    "within",
]

METADATA_STAGE = "table metadata (cached per snapshot)"
ICEBERG_STAGE = "partition + min/max (Iceberg)"
JOIN_STAGE = "join keys"
READ_RANGES_STAGE = "read ranges (runs joined)"
# What Iceberg's split planning counts opening a file as costing, in bytes (its default unless the
# table sets it): the index stage weighs reading a file's indexes against it.
OPEN_FILE_COST_PROPERTY = "read.split.open-file-cost"
DEFAULT_OPEN_FILE_COST = 4 * 1024 * 1024
# the table properties planning reads
PLANNING_PROPERTIES = (MANIFEST_PROPERTY, STORE_PROPERTY, OPEN_FILE_COST_PROPERTY)

Groups = tuple[int, ...] | None  # the row groups of a file still in play; None: all of them


def open_file_cost(text: str | None) -> int:
    """What opening a file costs in bytes, from a table's ``read.split.open-file-cost`` (None or not a
    whole number: Iceberg's default)."""
    try:
        return max(0, int(text)) if text is not None else DEFAULT_OPEN_FILE_COST
    except ValueError:
        return DEFAULT_OPEN_FILE_COST


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


@dataclass(frozen=True, eq=False)
class PlanInputs:
    """What every stage may read: the scan, its predicate bound to the table's fields, the snapshot's metadata.

    ``expr`` is bound (``zskip.expr.bind``): its columns are Iceberg field ids, and every stage
    compares them with what zskip stored by field id; build it with ``PlanInputs.of``.  Nothing in it
    changes once built; one plan's inputs equal only themselves, so what is worked out from them
    (``zskip.planning.index_reading.worth_reading``) is remembered by identity while they live.
    """

    scan: IcebergScan
    expr: Expr
    metadata: SnapshotMetadata
    joins: tuple[JoinKeys, ...] = ()  # equi-joins of the scan to filtered dimensions (zskip.sql only)
    join_filter: JoinKeysLoader | None = None  # the keys each join's dimension yields
    fields: Mapping[int, Field] = field(default_factory=dict)  # the filtered columns, by field id
    floats: frozenset[int] = frozenset()  # field ids of float and double columns
    pushed: Expr | None = None  # ``expr`` with NOT pushed to the leaves (``rewrite_not``), once per plan
    # expected matches in every row group at which a range predicate's bitmaps are not read (0: always read)
    range_rows: float = DEFAULT_RANGE_ROWS

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", MappingProxyType(dict(self.fields)))

    @property
    def open_file_cost(self) -> int:
        """What opening one of the scan's files costs in bytes, as Iceberg's split planning counts it."""
        return open_file_cost(self.scan.properties.get(OPEN_FILE_COST_PROPERTY))

    @staticmethod
    def of(
        scan: IcebergScan,
        metadata: SnapshotMetadata,
        *,
        joins: tuple[JoinKeys, ...] = (),
        join_filter: JoinKeysLoader | None = None,
        settings: Mapping[str, str] | None = None,
    ) -> PlanInputs:
        """The inputs of ``scan``'s plan, its predicate bound once to the fields the scan resolved
        (``settings``: the session's ``spark.zskip.*`` settings)."""
        by_id = {f.id: f for f in scan.fields.values()}
        bound = bind(scan.expr, {name: f.id for name, f in scan.fields.items()})
        return PlanInputs(
            scan=scan,
            expr=bound,
            pushed=rewrite_not(bound),
            metadata=metadata,
            joins=joins,
            join_filter=join_filter,
            fields=MappingProxyType(by_id),
            floats=frozenset(i for i, f in by_id.items() if f.is_float),
            range_rows=_number_setting(settings or {}, RANGE_ROWS_SETTING, DEFAULT_RANGE_ROWS),
        )


def _number_setting(settings: Mapping[str, str], name: str, default: float) -> float:
    text = settings.get(name)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise InvalidOptionError(f"{name} must be a number, not {text!r}; unset it for {default:g}") from None
    if not value >= 0:
        raise InvalidOptionError(f"{name} must be 0 or more, not {text!r}; unset it for {default:g}")
    return value


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
    frame: DataFrame | None  # the plain DataFrame the scan belongs to (None: a scan zskip's optimizer rule planned)
    scan: IcebergScan | None  # None: Spark proved that no row matches
    expr: Expr
    snapshot_id: int | None
    kept: Mapping[str, Groups]
    metadata: SnapshotMetadata | None
    stage_results: tuple[StageResult, ...]  # what each stage kept (the snapshot's totals come first in ``stages``)
    planning_seconds: float  # Spark's analysis of the filter and zskip's stages
    analysis_seconds: float = 0.0  # Spark's part: parsing, analysis and pushing the filter to the scan
    notes: tuple[str, ...] = ()
    # True when the curve or index stage ruled out a row group Spark's own scan would read (Iceberg's
    # file pruning and its Parquet reader's row-group statistics); otherwise it reads no more than this plan
    beyond_spark: bool = False

    # The snapshot's totals are asked for only when shown or recorded: counting every file's row groups
    # costs a listing of the whole snapshot (once per snapshot, then cached), which running the query
    # does not need.
    @property
    def files_total(self) -> int:
        return self.metadata.totals()[0] if self.metadata is not None else 0

    @property
    def row_groups_total(self) -> int:
        return self.metadata.totals()[1] if self.metadata is not None else 0

    @property
    def stages(self) -> tuple[StageResult, ...]:
        """The snapshot's totals, then what each stage kept."""
        if self.scan is None:
            return self.stage_results
        return (StageResult(METADATA_STAGE, self.files_total, self.row_groups_total, 0.0), *self.stage_results)

    def row_groups_kept(self) -> int:
        if self.metadata is None:
            return 0
        return sum(len(g) if g is not None else self.metadata.row_groups(p) for p, g in self.kept.items())

    def rows_planned(self) -> int:
        """Rows of the kept files and row groups (what the plan will have Spark read; a measurement of
        what it did read comes from Spark's scan metrics)."""
        assert self.scan is not None or not self.kept
        total = 0
        for path, groups in self.kept.items():
            if groups is None:
                total += self.scan.records[self.scan.paths.index(path)] if self.scan else 0
            else:
                footer = self.metadata.footer(path) if self.metadata else None
                total += sum(footer.rows[g] for g in groups) if footer else 0
        return total

    def bytes_planned(self) -> int:
        """Bytes of the kept files and row groups (see ``rows_planned``)."""
        total = 0
        for path, groups in self.kept.items():
            if groups is None:
                total += self.scan.sizes[self.scan.paths.index(path)] if self.scan else 0
            else:
                footer = self.metadata.footer(path) if self.metadata else None
                total += sum(footer.ranges[g][1] for g in groups) if footer else 0
        return total


# ---- cutting candidates to row groups (for the stages) -------------------------------------------


def row_group_counts(inputs: PlanInputs, paths: list[str]) -> np.ndarray:
    """Row groups of each of ``paths`` (their footers read first, several at a time, where not cached)."""
    inputs.metadata.prefetch_footers(paths)
    return np.fromiter((inputs.metadata.row_groups(p) for p in paths), dtype=np.int64, count=len(paths))


def keep_row_groups(candidates: Candidates, paths: list[str], counts: np.ndarray, mask: np.ndarray) -> Candidates:
    """``candidates`` cut to the row groups ``mask`` keeps: one flag per row group of ``paths``, file after file."""
    keep: dict[str, tuple[int, ...]] = {}
    totals: dict[str, int] = {}
    for path, total, end in zip(paths, counts.tolist(), np.cumsum(counts).tolist(), strict=True):
        mine = mask[end - total : end]
        current = candidates.files[path]
        totals[path] = total
        keep[path] = tuple(np.flatnonzero(mine).tolist()) if current is None else tuple(g for g in current if mine[g])
    return candidates.narrowed(keep, totals)


def within(groups: tuple[int, ...], current: Groups) -> tuple[int, ...]:
    if current is None:
        return groups
    allowed = set(current)
    return tuple(g for g in groups if g in allowed)
