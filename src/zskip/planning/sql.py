"""``zskip.sql``: a SELECT where every Iceberg scan reads only the files and row groups its pushed filters can match.

Spark parses, analyses and plans the query once.  zskip reads every Iceberg scan of that plan (its
pushed conjuncts; join keys pushed by dynamic filters are not among them: they exist only at run
time), plans each one through its stages, and has each table relation of the analysed plan read
only what its scan kept: a relation read by one scan gets that scan's files and row groups, as
``zskip.read`` does; a relation read by several scans gets the union of their files, whole, so
every scan sees every row it needs.  The rebuilt plan is not parsed or resolved again, and Spark
applies all of the query's filters as usual.  When no stage went beyond what Spark's own scans
skip, the query comes back exactly as Spark analysed it.  Queries with time travel run unchanged.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from zskip.errors import InvalidQueryError
from zskip.expr import Expr
from zskip.iceberg.scan_types import IcebergScan
from zskip.iceberg.scans import QueryScans, query_scans
from zskip.iceberg.spark_errors import is_spark_error, raise_for_query, reaching_storage, storage_failure
from zskip.iceberg.statements import analysed_query, parse_query
from zskip.planning.fallback import falls_back, unplanned
from zskip.planning.joins import JoinFilter, keys_loader
from zskip.planning.metadata import read_ahead
from zskip.planning.pipeline import plan_scan
from zskip.planning.plan import PLANNING_PROPERTIES, ScanPlan
from zskip.planning.read import explain_plan, staged_choice
from zskip.planning.staging import keep_staged
from zskip.planning.workload import RECORDER

__all__ = ["ScannedQuery", "analyse_query", "explain_sql", "scan_filters", "scanned_queries", "sql"]

log = logging.getLogger(__name__)

# why a query zskip does not plan is left as it is (zskip's records describe the current snapshot)
OTHER_STATE = "reads a table AS OF a version or time, or a branch, tag or snapshot; zskip plans current snapshots only"


def analyse_query(spark: SparkSession, query: str) -> tuple[bool, DataFrame]:
    """``query`` checked to be a single query (before Spark runs anything), then analysed by Spark;
    and whether it reads some table AS OF a version or time, or a branch, tag or snapshot."""
    try:
        frame = analysed_query(spark, query)  # a plain query: parsed once, checked, analysed
        if frame is not None:
            return False, frame
        parsed = parse_query(spark, query)  # raises for statements and text Spark cannot parse
        return parsed.time_travel, spark.sql(query)
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        failure = storage_failure(exc)  # the tables' store out of reach is not the query's fault
        if failure is not None:
            raise failure from None
        raise_for_query(exc, query=query)


def _plans(
    spark: SparkSession, frame: DataFrame, scans: QueryScans, *, join_keys: bool = True, record: bool = True
) -> dict[int | None, list[ScanPlan]]:
    """Every scan's plan, by the position of the relation it reads (``None``: not known); each goes to
    the workload log unless ``record`` is false."""
    by_relation: dict[int | None, list[ScanPlan]] = defaultdict(list)
    join_filter = keys_loader(scans)
    for scan in scans.scans:
        relation = scans.relation_of(scan)
        joins = scans.joins_of(scan) if join_keys else ()
        plan = plan_scan(
            spark, frame, scan, table=scan.table, joins=joins, join_filter=join_filter, settings=scans.settings
        )
        if record:
            # the workload log (never raises), with every join, pruned by or not
            RECORDER.record(spark, plan, settings=scans.settings, joins=scans.joins_of(scan))
        by_relation[relation.position if relation is not None else None].append(plan)
    return by_relation


def _analysed_current(spark: SparkSession, query: str, advice: str = "") -> DataFrame:
    """``query`` analysed (see ``_analyse``); ``InvalidQueryError`` if it reads anything but current
    snapshots (``advice`` ends the message)."""
    time_travel, frame = analyse_query(spark, query)
    if time_travel:
        raise InvalidQueryError(f"the query {OTHER_STATE}{advice}")
    return frame


def _union_choice(plans: list[ScanPlan], relation: int) -> dict[str, Any]:
    """Whole files kept by any of ``plans``, each from the first scan that has it."""
    chosen: dict[str, list[int]] = {}
    for plan in plans:
        scan: IcebergScan | None = plan.scan
        if scan is None:
            continue
        position = {path: i for i, path in enumerate(scan.paths)}
        for path in plan.kept:
            chosen.setdefault(path, [scan.position, position[path]])
    return {"relation": relation, "union": [chosen[path] for path in sorted(chosen)]}


@reaching_storage
def sql(spark: SparkSession, query: str, *, join_keys: bool = True) -> DataFrame:
    """Run ``query`` (a SELECT) with zskip's planning on every Iceberg scan; returns the DataFrame.

    Only queries run: DDL, DML, CALL, SET, CACHE and several statements raise
    ``UnsupportedStatementError`` before Spark sees them.  ``join_keys=False``: do not prune a scan
    by the keys of the filtered dimensions it is joined to (each such dimension costs a small Spark
    job on its first query).  A query zskip cannot plan (a metadata table, a shape its planning fails
    on) runs as Spark plans it, and a WARNING line says why.
    """
    time_travel, frame = analyse_query(spark, query)
    if time_travel:
        return frame
    try:
        return _pruned(spark, frame, join_keys=join_keys)
    except Exception as exc:
        if not falls_back(exc):
            raise
        unplanned("a query", exc)
        return frame


def _pruned(spark: SparkSession, frame: DataFrame, *, join_keys: bool) -> DataFrame:
    """``frame`` (an analysed query) with each table relation reading only what its scans kept."""
    scans = query_scans(frame, PLANNING_PROPERTIES, ahead=read_ahead(spark))
    frame = scans.planned  # as planned: reading the snapshots' file lists
    if not scans.scans:
        return frame
    choices = []
    for relation, plans in _plans(spark, frame, scans, join_keys=join_keys).items():
        if relation is None or not any(plan.beyond_spark for plan in plans):
            continue  # Spark's own scan reads no more than zskip would (or the relation is not known)
        choices.append(staged_choice(plans[0], relation) if len(plans) == 1 else _union_choice(plans, relation))
    if not choices:
        return frame  # nothing ruled out beyond what Spark's own scans skip: the query as analysed
    staged = scans.staged(choices)
    keep_staged(spark, scans.staged_sets)
    log.info("%d of %d table relations read staged files", len(choices), len(scans.relations))
    return staged if staged is not None else frame


@reaching_storage
def explain_sql(spark: SparkSession, query: str, *, join_keys: bool = True) -> list[Any]:
    """An ``Explain`` for every Iceberg scan of ``query`` (nothing is read or staged; queries only).

    ``join_keys``: as for ``sql`` (the joined dimensions' key jobs do run here when it is True).
    A query zskip does not plan (time travel, or a shape its planning fails on) gives an empty list
    and a WARNING line saying why; ``zskip.sql`` runs such a query as Spark plans it.
    """
    started = time.perf_counter()
    time_travel, frame = analyse_query(spark, query)
    if time_travel:
        unplanned("this query", f"it {OTHER_STATE}")
        return []
    try:
        return _explained(spark, frame, started, join_keys=join_keys)
    except Exception as exc:
        if not falls_back(exc):
            raise
        unplanned("this query", exc)
        return []


def _explained(spark: SparkSession, frame: DataFrame, started: float, *, join_keys: bool) -> list[Any]:
    scans = query_scans(frame, PLANNING_PROPERTIES, ahead=read_ahead(spark))
    analysed = time.perf_counter() - started
    out = []
    for relation, plans in _plans(spark, scans.planned, scans, join_keys=join_keys).items():
        for plan in plans:
            if relation is not None and len(plans) > 1:  # staged as a union of whole files
                plan = replace(plan, kept=dict.fromkeys(plan.kept))
            plan = replace(plan, analysis_seconds=analysed, planning_seconds=plan.planning_seconds + analysed)
            out.append(explain_plan(plan, str(plan.expr)))
    return out


@dataclass(frozen=True)
class ScannedQuery:
    """One Iceberg scan of a query, as the advisor learns it: the scan's table and pushed filter, its
    joins to filtered dimensions with the keys each yields, and zskip's plan of it (join stage
    included; nothing recorded)."""

    table: str
    expr: Expr
    joins: tuple[JoinFilter, ...]
    plan: ScanPlan


def scanned_queries(spark: SparkSession, query: str) -> list[ScannedQuery]:
    """Every Iceberg scan of ``query`` with its joins' keys and its plan; nothing is read, staged or
    recorded (the dimensions' key jobs do run)."""
    frame = _analysed_current(spark, query)
    scans = query_scans(frame, PLANNING_PROPERTIES, ahead=read_ahead(spark))
    loader = keys_loader(scans)
    out = []
    for plans in _plans(spark, scans.planned, scans, record=False).values():
        for plan in plans:
            assert plan.scan is not None
            joins = tuple(loader(join) for join in scans.joins_of(plan.scan))
            out.append(ScannedQuery(plan.table, plan.scan.expr, joins, plan))
    return out


def scan_filters(spark: SparkSession, query: str) -> list[tuple[str, Expr]]:
    """The filter Spark pushes to each Iceberg scan of ``query``, with the scan's table; nothing is
    planned, read or recorded (what the advisor learns from a file of queries)."""
    frame = _analysed_current(spark, query)
    return [(scan.table, scan.expr) for scan in query_scans(frame, PLANNING_PROPERTIES).scans]
