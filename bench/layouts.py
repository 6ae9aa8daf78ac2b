"""Laying one table out several ways, timed fairly: copies of the same data, repeated, order rotated.

The layouts themselves come from ``zskip.layout.compare`` (``iceberg_layout``, ``zskip_layout``).

The first job of a Spark session pays for warming the JVM (JIT of the Parquet reader and writer)
and for starting Python workers; whichever layout runs first would look several seconds slower.
So every layout runs ``repeats`` times, each round in a rotated order, and its time is the median.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from zskip.layout.compare import Layout, copy_and_lay_out


@dataclass
class Laid:
    """One layout: the table of its last run, the wall seconds of every run, zskip's step times."""

    table: str
    runs: list[float] = field(default_factory=list)
    steps: list[dict[str, float]] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)  # what the recipe returned, run by run

    @property
    def seconds(self) -> float:
        return statistics.median(self.runs) if self.runs else 0.0

    def median_steps(self) -> dict[str, float]:
        names = {name for run in self.steps for name in run}
        return {name: statistics.median(run.get(name, 0.0) for run in self.steps) for name in names}


def lay_out(
    spark: Any,
    base: str,
    recipes: dict[str, Layout],
    prefix: str,
    *,
    repeats: int = 3,
    tables: dict[str, str] | None = None,
    properties: dict[str, str] | None = None,
) -> dict[str, Laid]:
    """Each recipe applied to a fresh copy of ``base`` (``tables[label]``, else ``{prefix}_{n}``, created
    with ``properties``), ``repeats`` rounds, rotated."""
    names = tables or {}
    laid = {label: Laid(names.get(label, f"{prefix}_{n}")) for n, label in enumerate(recipes)}
    labels = list(recipes)
    for round_ in range(repeats):
        shift = round_ % len(labels)
        for label in labels[shift:] + labels[:shift]:
            table = laid[label].table
            seconds, result = copy_and_lay_out(spark, base, table, recipes[label], properties=properties)
            laid[label].runs.append(seconds)
            laid[label].results.append(result)
            if hasattr(result, "step_seconds"):
                laid[label].steps.append(dict(result.step_seconds))
            print(f"{label}: {seconds:.1f}s (round {round_ + 1} of {repeats})", flush=True)
    return laid


def lay_out_once(
    spark: Any, base: str, table: str, recipe: Layout, *, properties: dict[str, str] | None = None
) -> Laid:
    """``table`` a fresh copy of ``base`` (with ``properties``) laid out once by ``recipe``."""
    return lay_out(spark, base, {table: recipe}, table, repeats=1, tables={table: table}, properties=properties)[table]
