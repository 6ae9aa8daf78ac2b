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

from zskip.iceberg.predicates import ScanFilter, pushed_filters
from zskip.iceberg.table import load_table
from zskip.iceberg.tasks import plan_tasks, read_staged, stage
from zskip.planning.planner import plan_filter
from zskip.planning.read import explain_plan, stage_plan
from zskip.planning.staging import keep_staged

__all__ = ["explain_sql", "sql"]

log = logging.getLogger(__name__)


def _relations(spark: SparkSession, query: str) -> list[tuple[str, int, int]]:
    """Table references of ``query`` as ``(identifier, first char, last char)`` from Spark's parser."""
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(query)
    found: list[tuple[str, int, int]] = []

    def walk(node: Any) -> None:
        if node.getClass().getSimpleName() == "UnresolvedRelation":
            origin = node.origin()
            if origin.startIndex().isDefined() and origin.stopIndex().isDefined():
                found.append(
                    (
                        str(node.multipartIdentifier().mkString(".")),
                        int(origin.startIndex().get()),
                        int(origin.stopIndex().get()),
                    )
                )
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(plan)
    return found


def sql(spark: SparkSession, query: str) -> DataFrame:
    """Run ``query`` (a SELECT) with zskip's planning on every Iceberg scan; returns the DataFrame."""
    frame = spark.sql(query)
    if " AS OF " in query.upper():
        return frame
    scans: dict[str, list[ScanFilter]] = defaultdict(list)
    for scan in pushed_filters(frame):
        scans[scan.table].append(scan)
    if not scans:
        return frame
    views: dict[str, str] = {}
    text = query
    for identifier, first, last in sorted(_relations(spark, query), key=lambda r: -r[1]):
        try:
            iceberg = load_table(spark, identifier)
        except Exception:
            continue  # a view, a CTE name or a non-Iceberg table: left to Spark
        name = str(iceberg.java.name())
        if name not in scans:
            continue
        if name not in views:
            snapshot = iceberg.current_snapshot_id()
            if snapshot is None:
                continue
            plans = [plan_filter(spark, iceberg, frame, scan) for scan in scans[name]]
            kept = {path for plan in plans for path in plan.kept}
            view = f"zskip_scan_{uuid.uuid4().hex[:12]}"
            if len(plans) == 1 and kept:
                # the table's only scan: only its kept row groups are read
                stage_plan(plans[0]).createOrReplaceTempView(view)
            elif kept:
                every = plan_tasks(iceberg, snapshot, None)  # no residual: each scan filters for itself
                index = every.index()
                set_id = stage(iceberg, [every.java.get(index[p]) for p in sorted(kept) if p in index])
                read_staged(iceberg, set_id).createOrReplaceTempView(view)
                keep_staged(iceberg, set_id)
            else:
                spark.table(name).limit(0).createOrReplaceTempView(view)  # no scan can match a row
            views[name] = view
            log.info("%s: %d files staged for %d scans", name, len(kept), len(scans[name]))
        text = text[:first] + views[name] + text[last + 1 :]
    if not views:
        return frame
    return spark.sql(text)


def explain_sql(spark: SparkSession, query: str) -> list[Any]:
    """An ``Explain`` for every Iceberg scan of ``query`` (nothing is read or staged)."""
    frame = spark.sql(query)
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
