"""Laying one table out several ways, timed fairly: copies of the same data, repeated, order rotated.

The first job of a Spark session pays for warming the JVM (JIT of the Parquet reader and writer)
and for starting Python workers; whichever layout runs first would look several seconds slower.
So every layout runs ``repeats`` times, each round in a rotated order, and its time is the median.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.common import timed
from zskip import optimize
from zskip.layout.compare import copy_table, iceberg_rewrite

Recipe = Callable[[str], Any]  # lays the table named out in place; may return an OptimizeResult


@dataclass
class Laid:
    """One layout: the table of its last run, the wall seconds of every run, zskip's step times."""

    table: str
    runs: list[float] = field(default_factory=list)
    steps: list[dict[str, float]] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return statistics.median(self.runs) if self.runs else 0.0

    def median_steps(self) -> dict[str, float]:
        names = {name for run in self.steps for name in run}
        return {name: statistics.median(run.get(name, 0.0) for run in self.steps) for name in names}


def iceberg_sort(spark: Any, order: str, target: int, row_group: int) -> Recipe:
    """Iceberg's own ``rewrite_data_files`` with ``strategy => 'sort'`` (``order`` may be ``zorder(a,b)``)."""

    def lay(table: str) -> None:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('write.parquet.row-group-size-bytes'='{row_group}')")
        iceberg_rewrite(spark, table, sort_order=order, target_file_size_bytes=target)

    return lay


def zskip_layout(spark: Any, by: list[str], curve: str, mapping: str, target: int, row_group: int) -> Recipe:
    def lay(table: str) -> Any:
        return optimize(
            spark,
            table,
            by=by,
            curve=curve,
            mapping=mapping,
            mode="full",
            target_file_size=target,
            row_group_size=row_group,
        )

    return lay


def lay_out(spark: Any, base: str, recipes: dict[str, Recipe], prefix: str, *, repeats: int = 3) -> dict[str, Laid]:
    """Each recipe applied to a fresh copy of ``base`` (``{prefix}_{n}``), ``repeats`` rounds, rotated."""
    laid = {label: Laid(f"{prefix}_{n}") for n, label in enumerate(recipes)}
    labels = list(recipes)
    for round_ in range(repeats):
        shift = round_ % len(labels)
        for label in labels[shift:] + labels[:shift]:
            table = laid[label].table
            copy_table(spark, base, table)
            seconds, result = timed(lambda r=recipes[label], t=table: r(t))
            laid[label].runs.append(seconds)
            if hasattr(result, "step_seconds"):
                laid[label].steps.append(dict(result.step_seconds))
            print(f"{label}: {seconds:.1f}s (round {round_ + 1} of {repeats})", flush=True)
    return laid
