"""What ``zskip advise`` found: candidate layouts ranked by what the workload would read, and indexes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from zskip.display import Displayed
from zskip.expr import Expr
from zskip.expr.rewrite import without_implied_not_null
from zskip.expr.sql import to_sql
from zskip.maintenance.stars import Axis, StarJoin, axis_label
from zskip.units import format_bytes

__all__ = [
    "CURRENT",
    "Advice",
    "IndexForecast",
    "LayoutForecast",
    "LayoutKey",
    "QueryForecast",
    "WorkloadQuery",
    "layout_key",
]


@dataclass(frozen=True)
class WorkloadQuery:
    """One filter of the workload on the table, and how many scans used it."""

    predicate: str  # as Spark SQL
    expr: Expr
    weight: int
    joins: tuple[StarJoin, ...] = ()  # its joins to filtered dimensions

    @property
    def shown(self) -> str:
        """The filter as a user wrote it (without the ``IS NOT NULL`` Spark adds), and each dimension's."""
        own = to_sql(without_implied_not_null(self.expr))
        through = [f"{j.dimension.rsplit('.', 1)[-1]}: {j.filter}" for j in self.joins]
        return "; ".join([own, *through]) if through else own


@dataclass(frozen=True)
class QueryForecast:
    """One query under one layout: what it reads now (measured by zskip's planner) and would read
    (simulated)."""

    predicate: str
    weight: int
    files_now: int
    row_groups_now: int
    rows_now: int
    files: float
    row_groups: float
    rows: float  # rows in the row groups read (what reading costs, whatever the row-group size)


@dataclass(frozen=True)
class IndexForecast:
    """An index a layout is advised with, and its likely size."""

    column: str
    kind: str  # an index kind's name (zskip.fileindex.kinds)
    predicted_bytes: int

    @property
    def label(self) -> str:
        return f"{self.kind} on {self.column}"


CURRENT = "current"  # the curve of the candidate that keeps the table's layout as it is


LayoutKey = tuple[object, ...]  # a candidate layout's identity (see ``layout_key``)


def layout_key(axes: Sequence[Axis], curve: str, mapping: str, weights: Sequence[float] | None = None) -> LayoutKey:
    """A candidate layout's identity among the simulated ones (indexes aside)."""
    return (*axes, curve, mapping, *(("weights", tuple(weights)) if weights is not None else ()))


@dataclass(frozen=True)
class LayoutForecast:
    """A candidate: a layout (or the current one) with the indexes advised for it, and what the
    workload would read under it, per scan (weighted mean)."""

    columns: tuple[Axis, ...]  # the fact table's columns, and foreign keys through their dimensions
    curve: str  # CURRENT: keep the layout the table has
    mapping: str
    files: float  # with the indexes
    row_groups: float
    rows: float  # rows in the row groups read
    rows_minmax: float  # rows read without the indexes
    queries: tuple[QueryForecast, ...] = field(repr=False)
    indexes: tuple[IndexForecast, ...] = ()
    weights: tuple[float, ...] | None = None  # per axis of ``columns`` (a weighted zorder); None: alike
    # asked no query slower than a reference (zskip.maintenance.objectives): the rows per scan read
    # beyond that bound (0.0: it holds) and the queries it would make slower; None: nothing asked
    over_reference: float | None = None
    slower: tuple[str, ...] = ()

    @property
    def rewrites(self) -> bool:
        return self.curve != CURRENT

    @property
    def key(self) -> LayoutKey:
        """What tells this layout (without its indexes) from the other candidates."""
        if not self.rewrites:
            return (CURRENT,)
        return layout_key(self.columns, self.curve, self.mapping, self.weights)

    @property
    def label(self) -> str:
        weights = self.weights or (1.0,) * len(self.columns)
        axes = [axis_label(c) + (f" x{w:g}" if w != 1.0 else "") for c, w in zip(self.columns, weights, strict=True)]
        layout = f"{self.curve} over {', '.join(axes)} ({self.mapping})"
        if not self.rewrites:
            layout = "the current layout"
        return " + ".join([layout, *(i.label for i in self.indexes)])

    def gains(self, count: int = 3) -> list[QueryForecast]:
        """The queries this layout saves most rows on, weighted by how often they ran."""
        ranked = sorted(self.queries, key=lambda q: q.weight * (q.rows - q.rows_now))
        return [q for q in ranked[:count] if q.rows < q.rows_now]


@dataclass(frozen=True)
class Advice(Displayed):
    """Layouts for ``table`` ranked by what its workload's reads would cost (the rows read, and the
    files opened at ``file_rows`` each), best first."""

    table: str
    scans: int  # scans in the workload (queries weighted by how often they ran)
    distinct_queries: int
    sample_rows: int
    simulated_files: int
    simulated_row_groups: int
    files_now: float  # per scan, measured on the current layout
    row_groups_now: float
    rows_now: float
    table_rows: int
    layouts: tuple[LayoutForecast, ...]  # ranked, best first
    table_bytes: int  # what optimize to a new layout rewrites: the whole table
    seconds: float
    applied: tuple[str, ...] = ()  # what apply=True ran
    reference: str | None = None  # asked: no query slower than on this table ("current": as it is now)
    file_rows: float = 0.0  # the rows read a file opened costs as much as (the ranking counts both)

    @property
    def best(self) -> LayoutForecast:
        return self.layouts[0]

    @property
    def gain(self) -> float:
        """Rows read per scan now over rows read under the best candidate (rows, not row groups:
        candidates cut row groups of different sizes)."""
        return self.rows_now / self.best.rows if self.best.rows else float("inf")

    def _reads(self, files: float, groups: float, rows: float) -> str:
        share = rows / self.table_rows if self.table_rows else 0.0
        return f"{files:,.1f} files, {groups:,.1f} row groups, {share:.2%} of the rows per scan"

    def _bound(self) -> str:
        """Whether the best layout keeps every query as fast as on the reference."""
        where = "the current layout" if self.reference == CURRENT else self.reference
        if not self.best.slower:
            return f"no query slower than on {where}: #1 holds to it"
        named = ", ".join(self.best.slower[:3]) + (
            f" and {len(self.best.slower) - 3} more" if len(self.best.slower) > 3 else ""
        )
        return f"no query slower than on {where}: no layout tried holds to it; #1 is forecast slower on {named}"

    def to_json(self) -> str:
        data = asdict(self)
        data |= {"best": self.best.label, "gain": self.gain}
        return json.dumps(data, indent=2, default=str)

    def display_title(self) -> str:
        return f"zskip advise {self.table}"

    def display_rows(self) -> list[tuple[str, str]]:
        rows = [
            ("workload", f"{self.scans:,} scans, {self.distinct_queries:,} distinct filters"),
            (
                "simulated on",
                f"{self.sample_rows:,} sampled rows cut into {self.simulated_files:,} files, "
                f"{self.simulated_row_groups:,} row groups",
            ),
            ("now", self._reads(self.files_now, self.row_groups_now, self.rows_now)),
            ("ranked by", f"rows read, and {self.file_rows:,.0f} rows for each file opened"),
        ]
        for rank, layout in enumerate(self.layouts, 1):
            rows.append((f"#{rank}", f"{layout.label}: {self._reads(layout.files, layout.row_groups, layout.rows)}"))
        if self.reference is not None:
            rows.append(("bound", self._bound()))
        cost = f"optimize rewrites {format_bytes(self.table_bytes)}" if self.best.rewrites else "no rewrite"
        rows.append(("gain", f"{self.gain:,.1f}x fewer rows read than now; {cost}"))
        for query in self.best.gains():
            rows.append(
                (
                    "why",
                    f"{query.predicate} ({query.weight:,}x): "
                    f"{query.row_groups_now:,} -> {query.row_groups:,.0f} row groups, "
                    f"{query.rows_now:,} -> {query.rows:,.0f} rows",
                )
            )
        rows.append(("took", f"{self.seconds:.1f} s"))
        rows.extend(("applied", step) for step in self.applied)
        return rows
