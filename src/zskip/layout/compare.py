"""Side-by-side layouts of one table: copies, Iceberg's own rewrite as the baseline, files read per query.

Used by the demo, the benchmarks and the tests, so every figure they show is measured the same way:
files, bytes and rows are what Iceberg's planner keeps for the query (``planned_scans``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import SparkSession

from zskip.iceberg.files import data_files
from zskip.iceberg.scan_stats import planned_scans

__all__ = ["QueryCount", "copy_table", "count_files_read", "iceberg_rewrite"]


@dataclass(frozen=True, slots=True)
class QueryCount:
    where: str
    files_read: int
    files_total: int
    bytes_read: int
    rows_matching: int
    ideal_files: int


def copy_table(spark: SparkSession, source: str, target: str, properties: Mapping[str, str] | None = None) -> None:
    """``target`` as a copy of ``source`` in as many files, so each layout rewrites its own copy;
    ``properties`` are set on it before its files are written (a row-group size, say)."""
    files = data_files(spark, source).num_rows
    spark.sql(f"DROP TABLE IF EXISTS {target} PURGE")
    frame = spark.table(source).repartition(max(1, files))
    writer = frame.writeTo(target).using("iceberg").tableProperty("format-version", "2")
    for key, value in (properties or {}).items():
        writer = writer.tableProperty(key, value)
    writer.create()


def iceberg_rewrite(
    spark: SparkSession,
    table: str,
    *,
    sort_order: str,
    target_file_size_bytes: int,
    catalog: str | None = None,
) -> None:
    """Iceberg's own ``rewrite_data_files`` with ``strategy => 'sort'`` (``sort_order`` may be ``zorder(a,b)``)."""
    catalog = catalog or table.split(".")[0]
    name = table.split(".", 1)[1]
    spark.sql(
        f"CALL {catalog}.system.rewrite_data_files(table => '{name}', strategy => 'sort', "
        f"sort_order => '{sort_order}', options => map('rewrite-all', 'true', "
        f"'target-file-size-bytes', '{target_file_size_bytes}'))"
    ).collect()


def count_files_read(spark: SparkSession, table: str, wheres: Sequence[str]) -> list[QueryCount]:
    """Files Iceberg reads for each filter, the matching rows, and the ideal file count
    (matching rows packed into files of the table's average row count)."""
    files = data_files(spark, table)
    total_files = files.num_rows
    rows_per_file = max(1.0, sum(files["record_count"].to_pylist()) / max(total_files, 1))
    out = []
    for where in wheres:
        frame = spark.table(table).where(where)
        scans = planned_scans(frame)
        matching = frame.count()
        out.append(
            QueryCount(
                where=where,
                files_read=sum(s.files for s in scans),
                files_total=total_files,
                bytes_read=sum(s.bytes for s in scans),
                rows_matching=matching,
                ideal_files=math.ceil(matching / rows_per_file),
            )
        )
    return out
