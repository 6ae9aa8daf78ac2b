"""``zskip.sql``: a SELECT where every Iceberg table scan reads only the files its pushed filters can match.

Spark parses and plans the query; zskip takes each Iceberg scan's pushed conjuncts (join keys
pushed by dynamic filters are not among them: they exist only at run time), plans the files per
scan, and points each table reference of the query text at a view of the staged files.  A table
read by one scan gets that scan's plan, only its kept row groups read, as ``zskip.read`` does.  A
table read by several scans gets the union of their files, staged whole, so every scan sees every
row it needs.  Spark applies all of the query's filters as usual.  Queries with time travel run
unchanged.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter, defaultdict
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from zskip.errors import InvalidQueryError
from zskip.iceberg.predicates import ScanFilter, pushed_filters
from zskip.iceberg.spark_errors import is_spark_error, raise_for_query
from zskip.iceberg.statements import ParsedQuery, parse_query
from zskip.iceberg.table import IcebergTable, load_table
from zskip.iceberg.tasks import plan_tasks, read_staged, stage_files
from zskip.planning.planner import plan_filter
from zskip.planning.read import explain_plan, stage_plan
from zskip.planning.staging import keep_staged

__all__ = ["explain_sql", "sql"]

log = logging.getLogger(__name__)


def _analyse(spark: SparkSession, query: str) -> tuple[ParsedQuery, DataFrame]:
    """``query`` checked to be a single query (before Spark runs anything), then analysed by Spark."""
    parsed = parse_query(spark, query)
    try:
        frame = spark.sql(query)
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise_for_query(exc, query=query)
    return parsed, frame


def sql(spark: SparkSession, query: str) -> DataFrame:
    """Run ``query`` (a SELECT) with zskip's planning on every Iceberg scan; returns the DataFrame.

    Only queries run: DDL, DML, CALL, SET, CACHE and several statements raise
    ``UnsupportedStatementError`` before Spark sees them.
    """
    parsed, frame = _analyse(spark, query)
    if parsed.time_travel:
        return frame
    scans: dict[str, list[ScanFilter]] = defaultdict(list)
    for scan in pushed_filters(frame):
        scans[scan.table].append(scan)
    if not scans:
        return frame
    views: dict[str, str | None] = {}  # None: the table stays as written (zskip would not read less)
    text = query
    for identifier, first, last in ((r.identifier, r.start, r.stop) for r in reversed(parsed.relations)):
        try:
            iceberg = load_table(spark, identifier)
        except Exception:
            continue  # a view, a CTE name or a non-Iceberg table: left to Spark
        name = iceberg.full_name()
        if name not in scans:
            continue
        if name not in views:
            views[name] = _view_of(spark, iceberg, frame, scans[name])
        view = views[name]
        if view is not None:
            text = text[:first] + view + text[last + 1 :]
    made = [view for view in views.values() if view is not None]
    if not made:
        return frame  # nothing ruled out beyond what Spark's own scans skip: the query as analysed
    try:
        return spark.sql(text)
    finally:
        # the analysed plan holds each view's plan, so the names can go (they would pile up otherwise)
        for view in made:
            spark.catalog.dropTempView(view)


def _view_of(spark: SparkSession, iceberg: IcebergTable, frame: DataFrame, scans: list[ScanFilter]) -> str | None:
    """A temp view of the rows ``scans`` of ``iceberg`` need, or ``None`` when Spark's own scans read no more."""
    snapshot = iceberg.current_snapshot_id()
    if snapshot is None:
        return None
    plans = [plan_filter(spark, iceberg, frame, scan) for scan in scans]
    if not any(plan.beyond_spark for plan in plans):
        return None
    kept = {path for plan in plans for path in plan.kept}
    view = f"zskip_scan_{uuid.uuid4().hex[:12]}"
    if len(plans) == 1 and kept:
        # the table's only scan: only its kept row groups are read
        stage_plan(plans[0]).createOrReplaceTempView(view)
    elif kept:
        every = plan_tasks(iceberg, snapshot, None)  # no residual: each scan filters for itself
        set_id = stage_files(iceberg, every, dict.fromkeys(sorted(kept)))
        read_staged(iceberg, set_id).createOrReplaceTempView(view)
        keep_staged(iceberg, set_id)
    else:
        spark.table(iceberg.name).limit(0).createOrReplaceTempView(view)  # no scan can match a row
    log.info("%s: %d files staged for %d scans", iceberg.name, len(kept), len(scans))
    return view


def explain_sql(spark: SparkSession, query: str) -> list[Any]:
    """An ``Explain`` for every Iceberg scan of ``query`` (nothing is read or staged; queries only)."""
    parsed, frame = _analyse(spark, query)
    if parsed.time_travel:
        raise InvalidQueryError(
            "the query reads a table AS OF a version or time, or a branch, tag or snapshot; zskip plans "
            "current snapshots only (zskip.sql runs such a query unchanged)"
        )
    scans = pushed_filters(frame)
    per_table = Counter(scan.table for scan in scans)
    out = []
    for scan in scans:
        iceberg = load_table(spark, scan.table)
        plan = plan_filter(spark, iceberg, frame, scan)
        if per_table[scan.table] > 1:  # staged as a union of whole files
            plan.kept = dict.fromkeys(plan.kept)
        out.append(explain_plan(plan, str(scan.expr)))
    return out
