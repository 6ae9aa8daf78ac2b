"""What ``zskip advise`` found: candidate layouts ranked by what the workload would read, and indexes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from zskip.display import Displayed
from zskip.expr import Expr
from zskip.units import format_bytes

__all__ = ["CURRENT", "Advice", "IndexForecast", "LayoutForecast", "QueryForecast", "WorkloadQuery"]


@dataclass(frozen=True)
class WorkloadQuery:
    """One filter of the workload on the table, and how many scans used it."""

    predicate: str  # as Spark SQL
    expr: Expr
    weight: int


@dataclass(frozen=True)
class QueryForecast:
    """One query under one layout: what it reads now (measured by zskip's planner) and would read
    (simulated)."""

    predicate: str
    weight: int
    files_now: int
    row_groups_now: int
    files: float
    row_groups: float


@dataclass(frozen=True)
class IndexForecast:
    """An index a layout is advised with, and its likely size."""

    column: str
    kind: str  # bloom or bitmap
    predicted_bytes: int

    @property
    def label(self) -> str:
        return f"{self.kind} on {self.column}"


CURRENT = "current"  # the curve of the candidate that keeps the table's layout as it is


@dataclass(frozen=True)
class LayoutForecast:
    """A candidate: a layout (or the current one) with the indexes advised for it, and what the
    workload would read under it, per scan (weighted mean)."""

    columns: tuple[str, ...]
    curve: str  # CURRENT: keep the layout the table has
    mapping: str
    files: float  # with the indexes
    row_groups: float
    row_groups_minmax: float  # without them
    queries: tuple[QueryForecast, ...] = field(repr=False)
    indexes: tuple[IndexForecast, ...] = ()

    @property
    def rewrites(self) -> bool:
        return self.curve != CURRENT

    @property
    def label(self) -> str:
        layout = f"{self.curve} over {', '.join(self.columns)} ({self.mapping})"
        if not self.rewrites:
            layout = "the current layout"
        return " + ".join([layout, *(i.label for i in self.indexes)])

    def gains(self, count: int = 3) -> list[QueryForecast]:
        """The queries this layout saves most row groups on, weighted by how often they ran."""
        ranked = sorted(self.queries, key=lambda q: q.weight * (q.row_groups - q.row_groups_now))
        return [q for q in ranked[:count] if q.row_groups < q.row_groups_now]


@dataclass(frozen=True)
class Advice(Displayed):
    """Layouts for ``table`` ranked by the row groups its workload would read, best first."""

    table: str
    scans: int  # scans in the workload (queries weighted by how often they ran)
    distinct_queries: int
    sample_rows: int
    simulated_files: int
    simulated_row_groups: int
    files_now: float  # per scan, measured on the current layout
    row_groups_now: float
    layouts: tuple[LayoutForecast, ...]  # ranked, best first
    table_bytes: int  # what optimize to a new layout rewrites: the whole table
    seconds: float
    applied: tuple[str, ...] = ()  # what apply=True ran

    @property
    def best(self) -> LayoutForecast:
        return self.layouts[0]

    @property
    def gain(self) -> float:
        """Row groups per scan now over those under the best candidate."""
        return self.row_groups_now / self.best.row_groups if self.best.row_groups else float("inf")

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
            ("now", f"{self.files_now:,.1f} files, {self.row_groups_now:,.1f} row groups per scan"),
        ]
        for rank, layout in enumerate(self.layouts, 1):
            rows.append(
                (f"#{rank}", f"{layout.label}: {layout.files:,.1f} files, {layout.row_groups:,.1f} row groups per scan")
            )
        cost = f"optimize rewrites {format_bytes(self.table_bytes)}" if self.best.rewrites else "no rewrite"
        rows.append(("gain", f"{self.gain:,.1f}x fewer row groups than now; {cost}"))
        for query in self.best.gains():
            rows.append(
                (
                    "why",
                    f"{query.predicate} ({query.weight:,}x): "
                    f"{query.row_groups_now:,} -> {query.row_groups:,.0f} row groups",
                )
            )
        rows.append(("took", f"{self.seconds:.1f} s"))
        rows.extend(("applied", step) for step in self.applied)
        return rows
