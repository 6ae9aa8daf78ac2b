"""Iceberg file scan tasks for a planned read: listed in bulk, cut to row groups, staged for Spark.

py4j costs a fraction of a millisecond per call, so zskip never asks the JVM about tasks one at a
time: the paths of all planned tasks come back in one string (each task prints its file), and only
the tasks that survive zskip's stages are touched again.  Iceberg's staged scan splits every
task again, and its row-group split tasks refuse a second split ("Cannot split a task which is
already split"), so a task that reads part of a file claims a shorter file instead
(``row_group_tasks``).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from zskip.iceberg.jvm import call_protected, java_text
from zskip.iceberg.table import IcebergTable

__all__ = ["TaskList", "plan_tasks", "read_staged", "release", "row_group_tasks", "scan_tasks", "stage", "stage_files"]

_TASK_FILE = re.compile(r"(?:^\[|, )\w+\{file=(.*?), partition_data=")


@dataclass(frozen=True)
class TaskList:
    """Java ``FileScanTask`` objects (a ``java.util.List``) and, in the same order, their file paths."""

    java: Any
    paths: tuple[str, ...]

    def index(self) -> dict[str, int]:
        return {path: i for i, path in enumerate(self.paths)}


def plan_tasks(table: IcebergTable, snapshot_id: int, filters: Any | None) -> TaskList:
    """Iceberg's own planning (partition and min/max pruning) under ``filters``: one task per file."""
    jvm = table.jvm
    scan = table.java.newScan().useSnapshot(snapshot_id)
    if filters is not None:
        iterator = filters.iterator()
        while iterator.hasNext():
            scan = scan.filter(iterator.next())
    iterable = scan.planFiles()
    try:
        tasks = jvm.org.apache.iceberg.relocated.com.google.common.collect.Lists.newArrayList(iterable)
    finally:
        iterable.close()
    return _task_list(jvm, tasks)


def _task_list(jvm: Any, tasks: Any) -> TaskList:
    """``tasks`` (a ``java.util.List`` of file tasks) with their paths, read off the list's text."""
    size = int(tasks.size())
    text = java_text(jvm, tasks) if size else ""
    paths: list[str | None] = [m.group(1) for m in _TASK_FILE.finditer(text)]
    if len(paths) != size:
        # a task class that prints differently: ask each task (slow, but right)
        paths = [str(tasks.get(i).file().location()) for i in range(size)]
    return TaskList(tasks, tuple(p for p in paths if p is not None))


def scan_tasks(spark: SparkSession, scan: Any) -> TaskList | None:
    """The file tasks Spark's own Iceberg scan plans (``SparkPartitioningAwareScan.tasks()``, protected).

    The scan plans them once and keeps them, and Spark's execution of that scan reuses them, so
    zskip and Spark share one Iceberg planning instead of doing it twice.  ``None`` when the scan
    is of a kind without that method (``plan_tasks`` plans the files then).
    """
    found, tasks = call_protected(spark, scan, "SparkPartitioningAwareScan", "tasks")
    return _task_list(spark.sparkContext._jvm, tasks) if found else None


def row_group_tasks(table: IcebergTable, task: Any, ranges: Sequence[tuple[int, int]]) -> list[Any]:
    """Copies of ``task``, each reading only the row groups in one byte range ``[start, end)`` of its file.

    Each copy's data file declares itself ``end`` bytes long with one split offset at ``start``, so
    the staged scan splits it into exactly that range (see ``zskip.planning.row_groups``); deletes,
    residual, schema and spec are the task's own.
    """
    jvm = table.jvm
    gateway: Any = table.spark.sparkContext._gateway
    iceberg = jvm.org.apache.iceberg
    listed = task.deletes()
    deletes = gateway.new_array(iceberg.DeleteFile, int(listed.size()))
    for i in range(len(deletes)):
        deletes[i] = listed.get(i)
    schema = iceberg.SchemaParser.toJson(task.schema())
    spec = iceberg.PartitionSpecParser.toJson(task.spec())
    residual = iceberg.expressions.ResidualEvaluator.unpartitioned(task.residual())
    copies = []
    for start, end in ranges:
        offsets = gateway.new_array(jvm.long, 1)
        offsets[0] = int(start)
        claimed = (
            iceberg.DataFiles.builder(task.spec())
            .copy(task.file())
            .withFileSizeInBytes(int(end))
            .withSplitOffsets(iceberg.util.ArrayUtil.toLongList(offsets))
            .build()
        )
        copies.append(iceberg.BaseFileScanTask(claimed, deletes, schema, spec, residual))
    return copies


def stage_files(table: IcebergTable, tasks: TaskList, kept: Mapping[str, Sequence[tuple[int, int]] | None]) -> str:
    """Stage, for each file in ``kept``, its task from ``tasks`` whole (``None``) or cut to the given
    byte ranges (one task per range, see ``row_group_tasks``); returns the set id.  Files that
    ``tasks`` lacks are skipped."""
    index = tasks.index()
    chosen: list[Any] = []
    for path, ranges in kept.items():
        position = index.get(path)
        if position is None:
            continue
        task = tasks.java.get(position)
        chosen.extend([task] if ranges is None else row_group_tasks(table, task, ranges))
    return stage(table, chosen)


def stage(table: IcebergTable, tasks: Sequence[Any]) -> str:
    """Stage ``tasks`` under a new set id for ``scan-task-set-id`` reads; returns the id."""
    jvm = table.jvm
    java_list = jvm.java.util.ArrayList()
    for task in tasks:
        java_list.add(task)
    set_id = f"zskip-read-{uuid.uuid4()}"
    jvm.org.apache.iceberg.spark.ScanTaskSetManager.get().stageTasks(table.java, set_id, java_list)
    return set_id


def read_staged(table: IcebergTable, set_id: str) -> DataFrame:
    return table.spark.read.format("iceberg").option("scan-task-set-id", set_id).load(table.name)


def release(table: IcebergTable, set_id: str) -> None:
    table.jvm.org.apache.iceberg.spark.ScanTaskSetManager.get().removeTasks(table.java, set_id)
