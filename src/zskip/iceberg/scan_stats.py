"""What Iceberg's own planner decides to read for a query: files, bytes and rows, from its scan tasks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

__all__ = ["PlannedScan", "planned_scans"]


@dataclass(frozen=True, slots=True)
class PlannedScan:
    """One Iceberg scan of a query plan after Iceberg's partition and min/max pruning."""

    table: str
    files: int
    bytes: int
    rows: int
    paths: frozenset[str]


def _iterate(java_iterable: Any) -> Any:
    iterator = java_iterable.iterator()
    while iterator.hasNext():
        yield iterator.next()


def planned_scans(frame: DataFrame) -> list[PlannedScan]:
    """The Iceberg scans ``frame`` would run, each with the data files Iceberg kept.

    Planning only: nothing is read.  Files are counted once even when split into several tasks.
    """
    plan = frame._jdf.queryExecution().sparkPlan()
    scans = []
    for leaf in _iterate(plan.collectLeaves()):
        if leaf.getClass().getSimpleName() != "BatchScanExec":
            continue
        sizes: dict[str, tuple[int, int]] = {}
        for partition in _iterate(leaf.inputPartitions()):
            group = getattr(partition, "taskGroup", None)
            if group is None:
                continue
            for task in _iterate(partition.taskGroup().tasks()):
                data_file = task.file()
                path = str(data_file.location())
                if path not in sizes:
                    sizes[path] = (int(data_file.fileSizeInBytes()), int(data_file.recordCount()))
        scans.append(
            PlannedScan(
                table=str(leaf.scan().description()),
                files=len(sizes),
                bytes=sum(s for s, _ in sizes.values()),
                rows=sum(r for _, r in sizes.values()),
                paths=frozenset(sizes),
            )
        )
    return scans
