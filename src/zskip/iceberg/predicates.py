"""A query's filter as zskip's predicate IR, the way Spark and Iceberg understood it.

zskip does not parse SQL itself.  Spark parses and analyses the filter (types, implicit casts,
case-insensitive names), its optimizer pushes what it can to the Iceberg scan, and Iceberg keeps
those conjuncts as its own expressions; zskip reads them off the planned scan and converts them.
What Spark did not push (a UDF, a comparison of two columns) stays out of the IR: it never prunes,
and Spark applies it anyway.  Literals arrive in Iceberg's representation and are turned back into
Python values of the column's type (days into dates, microseconds into datetimes).
"""

from __future__ import annotations

import datetime
import decimal
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import BinaryType, DataType, DateType, DecimalType, StringType, TimestampNTZType, TimestampType

from zskip.errors import InvalidPredicateError
from zskip.expr import And, Compare, Expr, In, IsNull, Not, Opaque, Or, StartsWith
from zskip.iceberg.jvm import call_protected
from zskip.iceberg.spark_errors import is_spark_error, raise_for_filter

__all__ = ["ScanFilter", "filter_of", "filtered_frame", "pushed_filters", "to_expr"]

log = logging.getLogger(__name__)

EPOCH = datetime.date(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
COMPARISONS = {"LT": "<", "LT_EQ": "<=", "GT": ">", "GT_EQ": ">=", "EQ": "=", "NOT_EQ": "!="}


@dataclass(frozen=True)
class ScanFilter:
    """One Iceberg scan of a query: the table, the conjuncts pushed to it (Java and IR) and its scan node."""

    table: str  # the scan's table name as Iceberg reports it
    java_filters: Any  # java.util.List<org.apache.iceberg.expressions.Expression>
    expr: Expr
    scan: Any  # the Java SparkBatchQueryScan
    notes: tuple[str, ...] = ()  # what a user should know about how this scan was planned


def _iterate(java_iterable: Any) -> Iterator[Any]:
    iterator = java_iterable.iterator()
    while iterator.hasNext():
        yield iterator.next()


def _filter_expressions(spark: SparkSession, scan: Any) -> Any:
    """The scan's pushed filters (``SparkScan.filterExpressions()`` is protected: reached by reflection)."""
    found, filters = call_protected(spark, scan, "SparkScan", "filterExpressions")
    if not found:
        raise InvalidPredicateError(f"unexpected Iceberg scan class {scan.getClass().getName()}")
    return filters


def pushed_filters(frame: DataFrame) -> list[ScanFilter]:
    """Every Iceberg scan in ``frame``'s plan with the filters Spark pushed to it (planning only)."""
    return [scan for scan, _ in _scans(frame)]


def _scans(frame: DataFrame) -> list[tuple[ScanFilter, frozenset[str]]]:
    """Each Iceberg scan with the ids of the attributes it outputs (``a#12``), in plan order."""
    spark = frame.sparkSession
    plan = frame._jdf.queryExecution().sparkPlan()
    found = []
    for leaf in _iterate(plan.collectLeaves()):
        if leaf.getClass().getSimpleName() != "BatchScanExec":
            continue
        scan = leaf.scan()
        if "SparkBatchQueryScan" not in scan.getClass().getName():
            continue
        filters = _filter_expressions(spark, scan)
        name = str(scan.table().name())
        types = _types(leaf)
        parts = [to_expr(f, types) for f in _iterate(filters)]
        expr: Expr = parts[0] if len(parts) == 1 else And(tuple(parts)) if parts else Opaque("true")
        found.append((ScanFilter(name, filters, expr, scan), _attribute_ids(leaf.output())))
    return found


def _attribute_ids(attributes: Any) -> frozenset[str]:
    """Names with expression ids (``a#12L``) of a Scala ``Seq[Attribute]``, in one py4j call."""
    text = str(attributes.mkString("\u0001"))
    return frozenset(part for part in text.split("\u0001") if part)


def _types(leaf: Any) -> dict[str, DataType]:
    """Spark types of the scan's columns by lower-cased name (from the relation's schema JSON)."""
    import json

    from pyspark.sql.types import StructType

    schema = StructType.fromJson(json.loads(leaf.scan().readSchema().json()))
    return {f.name.lower(): f.dataType for f in schema.fields}


def filter_of(spark: SparkSession, table: str, where: str | Column) -> tuple[DataFrame, ScanFilter | None]:
    """``spark.table(table).where(where)`` and the filter Spark pushed to its scan; clear errors for bad input.

    ``None`` for the filter when Spark proved no row can match (``int_column = 5.5``): the plan has
    no scan left.  A filter with a subquery (``a IN (SELECT ...)``) plans the scan of ``table``
    itself, recognised by its output attributes; the subquery's own scans prune nothing here.
    """
    frame = filtered_frame(spark, table, where)
    scans = _scans(frame)
    if len(scans) <= 1:
        return frame, scans[0][0] if scans else None
    output = _attribute_ids(frame._jdf.queryExecution().analyzed().output())
    own = [scan for scan, ids in scans if output <= ids]
    if len(own) != 1:
        raise InvalidPredicateError(
            f"cannot tell which of {len(scans)} Iceberg scans reads {table} for the filter {where!r}; "
            "move the subquery into a join with zskip.sql"
        )
    note = "the filter's subquery reads other scans; zskip prunes only the scan of the table itself by it"
    log.info("%s: %s", table, note)
    return frame, replace(own[0], notes=(note,))


def filtered_frame(spark: SparkSession, table: str, where: str | Column) -> DataFrame:
    """``spark.table(table).where(where)``, analysed; zskip's named errors for an unknown table or a bad filter."""
    from zskip.iceberg.table import load_table

    if not isinstance(where, (str, Column)):
        raise InvalidPredicateError(
            f"where must be SQL text or a pyspark Column, not {type(where).__name__} ({where!r})"
        )
    if isinstance(where, str) and not where.strip():
        raise InvalidPredicateError("the filter is empty: pass a SQL boolean expression such as 'a = 5'")
    load_table(spark, table)  # UnknownTableError with advice
    try:
        return spark.table(table).where(where)
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise_for_filter(exc, table=table, where=where)


def to_expr(java: Any, types: Mapping[str, DataType]) -> Expr:
    """Convert one Iceberg (unbound) expression; anything unfamiliar becomes ``Opaque``."""
    op = str(java.op().name())
    if op == "AND":
        return And((to_expr(java.left(), types), to_expr(java.right(), types)))
    if op == "OR":
        return Or((to_expr(java.left(), types), to_expr(java.right(), types)))
    if op == "NOT":
        return Not(to_expr(java.child(), types))
    try:
        column = str(java.ref().name())
    except Exception:  # TRUE, FALSE, or a transform term
        return Opaque(str(java.toString()))
    dtype = types.get(column.lower())
    if dtype is None:
        return Opaque(str(java.toString()))
    try:
        if op == "IS_NULL":
            return IsNull(column)
        if op == "NOT_NULL":
            return Not(IsNull(column))
        if op in COMPARISONS:
            return Compare(column, COMPARISONS[op], _value(java.literal().value(), dtype))
        if op in ("IN", "NOT_IN"):
            values = tuple(_value(lit.value(), dtype) for lit in _iterate(java.literals()))
            return In(column, values) if op == "IN" else Not(In(column, values))
        if op in ("STARTS_WITH", "NOT_STARTS_WITH") and isinstance(dtype, StringType):
            prefix = StartsWith(column, str(_value(java.literal().value(), dtype)))
            return prefix if op == "STARTS_WITH" else Not(prefix)
    except (TypeError, ValueError, OverflowError) as exc:
        log.debug("not using %s: %s", java.toString(), exc)
    # IS_NAN / NOT_NAN (Spark's isnan(NULL) is false, unlike SQL's NULL) and the rest: never prune
    return Opaque(str(java.toString()))


def _value(value: Any, dtype: DataType) -> Any:
    if isinstance(dtype, DateType) and isinstance(value, int):
        return EPOCH + datetime.timedelta(days=value)
    if isinstance(dtype, TimestampType) and isinstance(value, int):
        return EPOCH_UTC + datetime.timedelta(microseconds=value)
    if isinstance(dtype, TimestampNTZType) and isinstance(value, int):
        return EPOCH_UTC.replace(tzinfo=None) + datetime.timedelta(microseconds=value)
    if isinstance(dtype, DecimalType):
        return decimal.Decimal(str(value))
    if isinstance(dtype, BinaryType) and not isinstance(value, (bytes, bytearray)):
        start = int(value.arrayOffset()) + int(value.position())  # a heap ByteBuffer: one call for the bytes
        return bytes(value.array())[start : start + int(value.remaining())]
    if isinstance(dtype, StringType) and not isinstance(value, str):
        return str(value.toString())
    return value
