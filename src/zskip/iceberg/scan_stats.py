"""What Iceberg reads for a query: planned files, bytes and rows from its scan tasks, and the rows its
scans produced once the query ran (Spark's own metric)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

__all__ = [
    "MeasuredRead",
    "PlannedScan",
    "measure_read",
    "plan_children",
    "planned_scans",
    "scan_notes",
    "scanned_rows",
]


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


def plan_children(node: Any) -> list[Any]:
    """A physical plan node's inputs, looking through adaptive execution's wrappers."""
    name = node.getClass().getSimpleName()
    if name == "AdaptiveSparkPlanExec":
        return [node.executedPlan()]
    if name.endswith("QueryStageExec"):
        return [node.plan()]
    return list(_iterate(node.children()))


def scanned_rows(frame: DataFrame, table: str) -> int:
    """Rows the Iceberg scans of ``table`` produced in ``frame``'s last run (Spark's ``numOutputRows``
    of each scan node: rows Iceberg's reader returned after skipping row groups, before Spark's
    own filter).  ``frame`` must have been executed, e.g. by ``collect()``; a reused exchange is a
    leaf, so its scan counts once."""
    total = 0
    pending = [frame._jdf.queryExecution().executedPlan()]
    while pending:
        node = pending.pop()
        if node.getClass().getSimpleName() == "BatchScanExec":
            described = str(node.scan().description())
            # "<table> [filters=...]" (Iceberg's Spark 3.5 runtime) or "IcebergScan(table=<table>, ..."
            # and "IcebergStagedScan(table=<table>, ..." (its Spark 4 runtime)
            if described.split(" ")[0] == table or described.split(",")[0].endswith(f"(table={table}"):
                total += int(node.metrics().apply("numOutputRows").value())
            continue
        pending.extend(plan_children(node))
    return total


def scan_notes(frame: DataFrame, marker: str) -> dict[str, list[str]]:
    """Each Iceberg table ``frame``'s physical plan scans, with what each of its scans' descriptions says
    from ``marker`` on (zskip's note; none where a description does not hold it)."""
    found: dict[str, list[str]] = {}
    pending = [frame._jdf.queryExecution().executedPlan()]
    while pending:
        node = pending.pop()
        if node.getClass().getSimpleName() == "BatchScanExec":
            described = str(node.scan().description())
            notes = found.setdefault(_described_table(described), [])
            if marker in described:
                notes.append(marker + described.split(marker, 1)[1].split(" RuntimeFilters")[0].strip())
            continue
        pending.extend(plan_children(node))
    return found


def _described_table(described: str) -> str:
    """The table a scan's description names: "<table> [filters=...]" (Iceberg's Spark 3.5 runtime) or
    "IcebergScan(table=<table>, ..." (its Spark 4 runtime)."""
    if "(table=" in described.split(",")[0]:
        return described.split(",")[0].split("(table=", 1)[1]
    return described.split(" ")[0]


@dataclass(frozen=True, slots=True)
class MeasuredRead:
    """What the Iceberg scans of one run of a query read, measured from the run: the rows they produced
    (Spark's ``numOutputRows``, after Iceberg's reader skipped row groups and applied deletes, before
    Spark's filter), the files and bytes of the tasks they ran (a task of part of a file counts the
    bytes of its range), and the row groups Iceberg's reader read for those tasks: those of each task's
    range that its residual filter cannot rule out by their statistics, dictionaries and bloom filters,
    counted from the files (``None`` when some could not be: not Parquet, or a runtime without them)."""

    rows: int
    files: int
    tasks: int
    bytes: int
    row_groups: int | None = None


def measure_read(frame: DataFrame, table: str | None = None) -> MeasuredRead:
    """Run ``frame``'s query once in the JVM (its rows are counted there, none reach Python) and measure
    what its Iceberg scans read, in one call (``io.zskip.scan.ReadMeasure``); ``table``: only what the
    scans of that table read (a star query's fact, not its dimensions)."""
    from zskip.iceberg.bridge import bridge

    answer = str(bridge(frame.sparkSession).measuredRead(frame._jdf, table))
    rows, files, tasks, read, groups = (int(n) for n in answer.split())
    return MeasuredRead(rows=rows, files=files, tasks=tasks, bytes=read, row_groups=groups if groups >= 0 else None)
