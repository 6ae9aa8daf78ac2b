"""Side-by-side layouts of one table: copies, Iceberg's own rewrite as the baseline, files read per query.

Used by the demo, the benchmarks and the tests, so every layout they compare is made the same way
(``copy_and_lay_out`` with a ``Layout`` from ``iceberg_layout`` or ``zskip_layout``) and every figure
they show is measured the same way: files, bytes and rows are what Iceberg's planner keeps for the
query (``planned_scans``).  Timing layouts fairly against each other (repeats, rotated order,
medians) is the benchmarks' own business (``bench/layouts.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from zskip.iceberg.files import data_files
from zskip.iceberg.scan_stats import planned_scans
from zskip.layout.dimensions import Dimension
from zskip.layout.optimize import ROW_GROUP_PROPERTY, optimize

__all__ = [
    "Layout",
    "QueryCount",
    "copy_and_lay_out",
    "copy_table",
    "count_files_read",
    "iceberg_layout",
    "iceberg_rewrite",
    "zskip_layout",
]

Layout = Callable[[str], Any]
"""Lays the table named out in place; what it returns (zskip's ``OptimizeResult``) is handed back."""


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


def iceberg_layout(
    spark: SparkSession, sort_order: str, *, target_file_size_bytes: int, row_group_size_bytes: int
) -> Layout:
    """Iceberg's own sort rewrite (``sort_order`` may be ``zorder(a,b)``) into files and row groups of
    the sizes given: the same sizes a ``zskip_layout`` beside it writes, so both roll files alike."""

    def lay(table: str) -> None:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{ROW_GROUP_PROPERTY}'='{row_group_size_bytes}')")
        iceberg_rewrite(spark, table, sort_order=sort_order, target_file_size_bytes=target_file_size_bytes)

    return lay


def zskip_layout(
    spark: SparkSession,
    by: Sequence[str | Dimension],
    *,
    curve: str = "hilbert",
    mapping: str = "rank",
    weights: Mapping[str, float] | None = None,
    target_file_size_bytes: int,
    row_group_size_bytes: int,
) -> Layout:
    """A full ``zskip.optimize`` along ``curve`` over ``by`` (each column ``weights``' share of a zorder),
    into files and row groups of the sizes given."""

    def lay(table: str) -> Any:
        return optimize(
            spark,
            table,
            by=by,
            curve=curve,
            mapping=mapping,
            weights=weights,
            mode="full",
            target_file_size=target_file_size_bytes,
            row_group_size=row_group_size_bytes,
        )

    return lay


def copy_and_lay_out(
    spark: SparkSession, base: str, table: str, layout: Layout, *, properties: Mapping[str, str] | None = None
) -> tuple[float, Any]:
    """``table`` made a fresh copy of ``base`` (with ``properties``), then laid out by ``layout``:
    the wall seconds of the layout step alone, and what it returned."""
    copy_table(spark, base, table, properties=properties)
    started = time.perf_counter()
    result = layout(table)
    return time.perf_counter() - started, result


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
