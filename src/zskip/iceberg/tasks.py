"""Iceberg file scan tasks for a planned read: listed in bulk, cut to row groups, staged for Spark.

py4j costs a fraction of a millisecond per call, so zskip never asks the JVM about tasks one at a
time: the paths of all planned tasks come back in one string (each task prints its file), and only
the tasks that survive zskip's stages are touched again.  Row-group tasks are Iceberg's own split
tasks made for exact byte ranges (a row group's first byte and length, from the Parquet footer), so
they work whether or not the writer recorded split offsets.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from zskip.iceberg.table import IcebergTable

__all__ = ["TaskList", "plan_tasks", "read_staged", "release", "row_group_tasks", "stage"]

_TASK_FILE = re.compile(r"^\w+\{file=(.*?), partition_data=")


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
    size = int(tasks.size())
    text = str(jvm.scala.collection.JavaConverters.asScalaBuffer(tasks).mkString("\n")) if size else ""
    paths = [m.group(1) if (m := _TASK_FILE.match(line)) else None for line in text.split("\n")] if size else []
    if len(paths) != size or any(p is None for p in paths):
        # a task class that prints differently: ask each task (slow, but right)
        paths = [str(tasks.get(i).file().location()) for i in range(size)]
    return TaskList(tasks, tuple(p for p in paths if p is not None))


def row_group_tasks(table: IcebergTable, task: Any, ranges: Sequence[tuple[int, int]]) -> list[Any]:
    """Split tasks of ``task`` reading exactly the byte ranges ``(start, length)`` of some row groups."""
    gateway: Any = table.spark.sparkContext._gateway
    jvm = table.jvm
    constructor = _split_constructor(table, task)
    out = []
    for start, length in ranges:
        arguments = gateway.new_array(jvm.java.lang.Object, 3)
        arguments[0] = jvm.java.lang.Long(start)
        arguments[1] = jvm.java.lang.Long(length)
        arguments[2] = task
        out.append(constructor.newInstance(arguments))
    return out


_CONSTRUCTORS: dict[int, Any] = {}


def _split_constructor(table: IcebergTable, task: Any) -> Any:
    """``BaseFileScanTask.SplitScanTask(long offset, long length, FileScanTask parent)`` (package-private)."""
    key = id(table.spark)
    if key not in _CONSTRUCTORS:
        gateway: Any = table.spark.sparkContext._gateway
        jvm = table.jvm
        loader = task.getClass().getClassLoader()
        cls = jvm.java.lang.Class.forName("org.apache.iceberg.BaseFileScanTask$SplitScanTask", True, loader)
        types = gateway.new_array(jvm.java.lang.Class, 3)
        types[0] = jvm.java.lang.Long.TYPE
        types[1] = jvm.java.lang.Long.TYPE
        types[2] = jvm.java.lang.Class.forName("org.apache.iceberg.FileScanTask", True, loader)
        constructor = cls.getDeclaredConstructor(types)
        constructor.setAccessible(True)
        _CONSTRUCTORS[key] = constructor
    return _CONSTRUCTORS[key]


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
