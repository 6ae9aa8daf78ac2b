"""What the advisor asks of a layout besides the cheapest reads in all: no query slower than on a
reference (the table as it is now, or another table the user names, such as Iceberg's own zorder of
it).

"Slower" is judged by rows read, what a scan's time follows.  A simulated layout meets the bound on a
query when it is forecast to read no more rows than the reference, half a row group's rows aside
(where rows are cut into row groups differently, one more row group at a range's edge is a tie, not a
loss); the current layout, measured, when it reads no more.  The forecast is a simulation on a sample
(within 25% or 2 files of what is read in the advise reports): the bound is what the advisor aims at,
not a promise, and ``bench/advise.py --no-slower-than`` measures how it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from pyspark.sql import SparkSession

from zskip.errors import InvalidOptionError, ZskipError
from zskip.expr.sql import to_sql
from zskip.iceberg.table import load_table
from zskip.maintenance.forecasts import CURRENT, LayoutForecast, WorkloadQuery
from zskip.planning.read import plan_table

__all__ = ["SLACK_GROUPS", "Reference", "bounded", "measure_reference"]

SLACK_GROUPS = 0.5  # a simulated layout may read this many row groups' rows more than the reference


@dataclass(frozen=True)
class Reference:
    """The table every query must be no slower on, and the rows each query of the workload reads there."""

    name: str  # CURRENT: the table as it is now
    rows: tuple[float, ...]  # per workload query, as zskip's planner plans its own filter on the reference


def measure_reference(
    spark: SparkSession, table: str, reference: str, workload: Sequence[WorkloadQuery], rows_now: Sequence[float]
) -> Reference:
    """The rows each query reads on ``reference``: ``rows_now`` (measured on ``table``) for ``"current"``,
    else each query's filter on ``table`` planned on the named table (its joins aside: a table without
    zskip's star layout is read by its own filter)."""
    if reference == CURRENT:
        return Reference(CURRENT, tuple(float(r) for r in rows_now))
    other = load_table(spark, reference)
    if other.name == load_table(spark, table).name:
        return Reference(CURRENT, tuple(float(r) for r in rows_now))
    rows = []
    for query in workload:
        try:
            plan, _ = plan_table(spark, other.name, to_sql(query.expr), recorder=None)
        except ZskipError as exc:
            raise InvalidOptionError(
                f"no_slower_than={reference!r}: the workload's filter {query.shown!r} cannot be planned on "
                f"{other.name} ({exc}); name a table with the columns of {table}, or 'current'"
            ) from None
        rows.append(float(plan.rows_planned()))
    return Reference(other.name, tuple(rows))


def bounded(layout: LayoutForecast, reference: Reference | None, rows_per_group: float) -> LayoutForecast:
    """``layout`` with what it reads beyond the bound (``over_reference``, rows per scan; 0.0: no query
    slower) and the queries it would make slower (``slower``)."""
    if reference is None:
        return layout
    measured = not layout.rewrites
    over = 0.0
    slower = []
    for query, rows in zip(layout.queries, reference.rows, strict=True):
        if measured:
            allowed = rows if reference.name != CURRENT else float("inf")
        else:
            allowed = rows + SLACK_GROUPS * rows_per_group
        if query.rows > allowed:
            over += query.weight * (query.rows - allowed)
            slower.append(query.predicate)
    weight = sum(q.weight for q in layout.queries) or 1
    return replace(layout, over_reference=over / weight, slower=tuple(slower))
