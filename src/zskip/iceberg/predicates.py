"""A table's filter as Spark understood it: the filtered DataFrame, and the Iceberg scan it plans.

zskip does not parse SQL itself: Spark analyses the filter, pushes what it can to the table's
Iceberg scan, and ``zskip.iceberg.scans`` reads that scan (filters, files, table state) in one
call to the JVM.  Bad input gets zskip's named errors here, before anything is planned.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from pyspark.sql import Column, DataFrame, SparkSession

from zskip.errors import InvalidPredicateError
from zskip.iceberg.scan_types import IcebergScan, TableState
from zskip.iceberg.scans import QueryScans, query_scans
from zskip.iceberg.spark_errors import is_spark_error, raise_for_filter

__all__ = ["filter_of", "filtered_frame"]

log = logging.getLogger(__name__)


def filter_of(
    spark: SparkSession,
    table: str,
    where: str | Column,
    properties: Sequence[str] = (),
    *,
    ahead: Callable[[Sequence[TableState]], object] | None = None,
) -> tuple[DataFrame, QueryScans, IcebergScan | None]:
    """``spark.table(table).where(where)``, its scans, and the scan of ``table`` (``None`` when Spark
    proved no row can match, ``int_column = 5.5``: the plan has no scan left); clear errors for bad input.

    A filter with a subquery (``a IN (SELECT ...)``) plans the scan of ``table`` itself, recognised
    by its output columns; the subquery's own scans prune nothing here.  ``ahead``: as ``query_scans``'s.
    """
    frame = filtered_frame(spark, table, where)
    scans = query_scans(frame, properties, ahead=ahead)
    if not scans.relations:
        from zskip.iceberg.table import load_table

        load_table(spark, table)  # not an Iceberg table (a view, another format): says so
        raise InvalidPredicateError(f"{table} does not read an Iceberg table; zskip plans Iceberg tables only")
    frame = scans.planned
    if len(scans.scans) <= 1:
        return frame, scans, scans.scans[0] if scans.scans else None
    own = [scan for scan in scans.scans if scans.output <= scan.output]
    if len(own) != 1:
        raise InvalidPredicateError(
            f"cannot tell which of {len(scans.scans)} Iceberg scans reads {table} for the filter {where!r}; "
            "move the subquery into a join with zskip.sql"
        )
    note = "the filter's subquery reads other scans; zskip prunes only the scan of the table itself by it"
    log.info("%s: %s", table, note)
    return frame, scans, replace(own[0], notes=(*own[0].notes, note))


def filtered_frame(spark: SparkSession, table: str, where: str | Column) -> DataFrame:
    """``spark.table(table).where(where)``, analysed; zskip's named errors for an unknown table or a bad filter."""
    from zskip.iceberg.table import load_table

    if not isinstance(where, (str, Column)):
        raise InvalidPredicateError(
            f"where must be SQL text or a pyspark Column, not {type(where).__name__} ({where!r})"
        )
    if isinstance(where, str) and not where.strip():
        raise InvalidPredicateError("the filter is empty: pass a SQL boolean expression such as 'a = 5'")
    if not isinstance(table, str) or not table.strip():
        load_table(spark, table)  # UnknownTableError with advice
    try:
        return spark.table(table).where(where)
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        load_table(spark, table)  # an unknown or non-Iceberg table: UnknownTableError with advice
        raise_for_filter(exc, table=table, where=where)
