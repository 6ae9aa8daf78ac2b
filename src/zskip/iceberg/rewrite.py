"""Rewriting data files through Iceberg's own mechanism: staged scans, rewrite writes, one commit.

The flow is the one Iceberg's ``rewrite_data_files`` uses, driven from Python: stage a group's
file tasks under an id, read exactly those with ``scan-task-set-id``, write the new files with
``rewritten-file-scan-task-set-id`` (which keeps them out of the table), fetch them from the
rewrite coordinator, and swap old for new in one ``RewriteFiles`` commit validated from the
snapshot the rewrite started at.  Iceberg's Spark 4 runtime has no such options: the table goes into
its table cache under the set id, and the id is read and written as a table.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from zskip.errors import ConcurrentChangeError
from zskip.iceberg.jvm_dependencies import spark_major
from zskip.iceberg.table import IcebergTable, apply_properties
from zskip.iceberg.tasks import TaskList, plan_tasks

__all__ = ["StagedGroup", "commit_rewrites", "plan_file_tasks", "stage_group"]

log = logging.getLogger(__name__)


def plan_file_tasks(table: IcebergTable, snapshot_id: int) -> TaskList:
    """Java ``FileScanTask`` of every live data file at ``snapshot_id`` (one task per file, paths
    listed in bulk), so a group of files stages as whole files."""
    return plan_tasks(table, snapshot_id, None)


@dataclass
class StagedGroup:
    """A group of files staged for reading and rewriting under one set id."""

    table: IcebergTable
    set_id: str
    files: tuple[str, ...]
    old_files: Any  # java.util.Set<DataFile>

    def read(self) -> DataFrame:
        reader = self.table.spark.read.format("iceberg")
        if _by_table_cache(self.table):  # Iceberg's Spark 4 runtime: the set id names a rewrite table
            return reader.load(self.set_id)
        return reader.option("scan-task-set-id", self.set_id).load(self.table.name)

    def write(self, frame: DataFrame, *, target_file_size_bytes: int) -> None:
        writer = (
            frame.write.format("iceberg")
            .option("target-file-size-bytes", str(target_file_size_bytes))
            # The frame's partitions are the files: the table's own distribution would reshuffle them.
            .option("use-table-distribution-and-ordering", "false")
            .mode("append")
        )
        if _by_table_cache(self.table):
            writer.save(self.set_id)
        else:
            writer.option("rewritten-file-scan-task-set-id", self.set_id).save(self.table.name)

    def new_files(self) -> Any:
        coordinator = self.table.jvm.org.apache.iceberg.spark.FileRewriteCoordinator.get()
        return coordinator.fetchNewFiles(self.table.java, self.set_id)

    def new_file_paths(self) -> list[str]:
        return [str(f.location()) for f in self.new_files()]

    def release(self) -> None:
        """Forget the staged tasks and the coordinator's record of new files (always call this)."""
        jvm = self.table.jvm
        jvm.org.apache.iceberg.spark.ScanTaskSetManager.get().removeTasks(self.table.java, self.set_id)
        jvm.org.apache.iceberg.spark.FileRewriteCoordinator.get().clearRewrite(self.table.java, self.set_id)
        if _by_table_cache(self.table):
            _table_cache(self.table).remove(self.set_id)

    def delete_new_files(self) -> None:
        """Remove files this group wrote but never committed (after a failure)."""
        io = self.table.java.io()
        try:
            paths = self.new_file_paths()
        except Exception:  # the write never finished: Iceberg's abort already removed its files
            return
        for path in paths:
            try:
                io.deleteFile(path)
            except Exception:  # best effort: an orphan file is harmless, vacuum removes it
                log.warning("could not delete uncommitted file %s", path)


def stage_group(table: IcebergTable, tasks: TaskList, files: Sequence[str]) -> StagedGroup:
    """Stage ``files``' tasks under a new set id; only these tasks are touched through py4j."""
    jvm = table.jvm
    task_list = jvm.java.util.ArrayList()
    old_files = jvm.java.util.HashSet()
    index = tasks.index()
    for path in files:
        task = tasks.java.get(index[path])
        task_list.add(task)
        old_files.add(task.file())
    set_id = f"zskip-{uuid.uuid4()}"
    if _by_table_cache(table):
        _table_cache(table).add(set_id, table.java)
    jvm.org.apache.iceberg.spark.ScanTaskSetManager.get().stageTasks(table.java, set_id, task_list)
    return StagedGroup(table=table, set_id=set_id, files=tuple(files), old_files=old_files)


def _by_table_cache(table: IcebergTable) -> bool:
    """Whether Iceberg's runtime reads and writes a staged set through its table cache, by the set's id
    (its Spark 4 runtime), rather than by options on the table's name (Spark 3.5)."""
    return spark_major(str(table.spark.version)) >= 4


def _table_cache(table: IcebergTable) -> Any:
    """Iceberg's ``SparkTableCache`` (its static ``get()`` is overloaded with an instance ``get(key)``,
    which py4j cannot tell apart, so it is called by reflection)."""
    jvm = table.jvm
    gateway = table.spark.sparkContext._gateway
    assert gateway is not None  # a classic session (zskip.iceberg.jvm checked it)
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    cls = jvm.java.lang.Class.forName("org.apache.iceberg.spark.SparkTableCache", True, loader)
    method = cls.getMethod("get", gateway.new_array(jvm.java.lang.Class, 0))
    return method.invoke(None, gateway.new_array(jvm.java.lang.Object, 0))


def commit_rewrites(
    table: IcebergTable,
    groups: Iterable[StagedGroup],
    *,
    start_snapshot_id: int,
    summary: Mapping[str, str],
    properties: Mapping[str, str | None],
) -> int:
    """Swap every group's old files for its new ones and set ``properties``, in one atomic commit.

    Returns the new snapshot id.  Appends committed since ``start_snapshot_id`` are kept; a
    concurrent rewrite or delete of the same files raises :class:`ConcurrentChangeError` and
    commits nothing.
    """
    jvm = table.jvm
    old_all = jvm.java.util.HashSet()
    new_all = jvm.java.util.HashSet()
    for group in groups:
        old_all.addAll(group.old_files)
        new_all.addAll(group.new_files())
    try:
        transaction = table.java.newTransaction()
        rewrite = transaction.newRewrite().validateFromSnapshot(start_snapshot_id)
        rewrite = rewrite.rewriteFiles(old_all, new_all)
        for key, value in summary.items():
            rewrite = rewrite.set(key, value)
        rewrite.commit()
        if properties:
            apply_properties(transaction.updateProperties(), properties).commit()
        transaction.commitTransaction()
    except Exception as exc:
        text = str(exc)
        if "ValidationException" in text or "CommitFailedException" in text:
            reason = next((line for line in text.splitlines() if "Exception:" in line), text.splitlines()[0])
            raise ConcurrentChangeError(
                f"another writer changed {table.name} while zskip rewrote it, so nothing was committed "
                f"({reason.strip()[:300]}); run optimize again"
            ) from None
        raise
    table.refresh()
    snapshot = table.current_snapshot_id()
    assert snapshot is not None
    return snapshot
