"""Iceberg's own planning of a table's file tasks (for rewrites), listed in bulk.

py4j costs a fraction of a millisecond per call, so zskip never asks the JVM about tasks one at a
time: the paths of all planned tasks come back in one string (each task prints its file).  Queries
plan through the JVM helper instead (``zskip.iceberg.scans``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from zskip.iceberg.jvm import java_text
from zskip.iceberg.table import IcebergTable

__all__ = ["TaskList", "plan_tasks"]

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
