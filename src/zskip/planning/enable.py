"""zskip in every query of a session: ``enable`` prunes plain ``spark.sql``, DataFrames and views.

Once enabled, every query Spark optimizes in the session hands the Iceberg batch scans of tables zskip
clustered or indexed to ``plan_hooked`` (through zskip's optimizer rule, ``zskip.iceberg.hook``),
which plans each one through the same stages as ``zskip.sql``: Iceberg's own pruning, the join keys
of filtered dimensions, the curve ranges, the indexes and the row-group statistics.  Each scan then
reads only the files and row groups its plan kept, and its line in ``explain()`` says so.

The rule never touches a scan of a table the same plan writes (DELETE, UPDATE, MERGE, INSERT OVERWRITE
of the table read), copy-on-write and staged scans (``rewrite_data_files``, zskip's own optimize),
streaming, time travel and branch reads.  If planning fails, the query runs with Spark's own plan: the
JVM logs one warning and counts the failure (``hook_counts``).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec

from pyspark.sql import SparkSession

from zskip.iceberg.hook import ENABLED, HookCounts, hook_counts, install, installed, uninstall
from zskip.iceberg.scans import described_scans
from zskip.iceberg.session import session as iceberg_session
from zskip.planning.joins import keys_loader
from zskip.planning.pipeline import plan_scan
from zskip.planning.plan import ICEBERG_STAGE, PLANNING_PROPERTIES, ScanPlan
from zskip.planning.read import kept_tasks
from zskip.planning.workload import RECORDER

__all__ = ["ENABLED", "HookCounts", "disable", "enable", "enabled", "hook_counts", "plan_hooked", "session"]

log = logging.getLogger(__name__)

P = ParamSpec("P")


def _enabling(start: Callable[P, SparkSession]) -> Callable[P, SparkSession]:
    """``start`` (``zskip.iceberg.session``) with zskip enabled in the session it returns, unless its
    ``conf`` sets ``spark.zskip.enabled`` to false (which pauses an active session enabled before)."""

    @functools.wraps(start)
    def started(*args: P.args, **kwargs: P.kwargs) -> SparkSession:
        spark = start(*args, **kwargs)
        conf: Mapping[str, str] = kwargs.get("conf") or {}  # type: ignore[assignment]
        if str(conf.get(ENABLED, spark.conf.get(ENABLED, "true"))).lower() == "false":
            spark.conf.set(ENABLED, "false")
        else:
            enable(spark)
        return spark

    return started


def enable(spark: SparkSession) -> None:
    """Prune every query of ``spark`` the way ``zskip.sql`` does (``spark.zskip.enabled`` becomes true).

    ``zskip.session()`` does this unless its ``conf`` sets ``spark.zskip.enabled`` to false."""
    spark.conf.set(ENABLED, "true")
    install(spark, functools.partial(plan_hooked, spark), PLANNING_PROPERTIES)


def disable(spark: SparkSession) -> None:
    """Stop pruning the queries of ``spark`` (``zskip.sql`` and ``zskip.read`` still prune theirs)."""
    spark.conf.set(ENABLED, "false")
    uninstall(spark)


def enabled(spark: SparkSession) -> bool:
    """Whether zskip prunes every query of ``spark``."""
    return str(spark.conf.get(ENABLED, "false")).lower() == "true" and installed(spark)


def plan_hooked(spark: SparkSession, java_scans: Any) -> str:
    """The answer zskip's rule takes for one plan's scans (a Java ``Bridge.Scans``): for each scan, the
    tasks to read (``files``, when zskip rules out more than Spark's own scan skips) and its explain note;
    or, when planning failed, why (the rule then keeps Spark's plan, warns and counts the failure).
    Never raises: py4j would log an error with the traceback for every query."""
    try:
        scans = described_scans(java_scans, None)
        join_filter = keys_loader(scans)
        answer = []
        for scan in scans.scans:
            joins = scans.joins_of(scan)
            plan = plan_scan(
                spark,
                None,
                scan,
                table=scan.table,
                joins=joins,
                join_filter=join_filter,
                settings=scans.settings,
            )
            RECORDER.record(spark, plan, settings=scans.settings, joins=joins)  # the workload log (never raises)
            item: dict[str, Any] = {"scan": scan.position, "note": note(plan)}
            if plan.beyond_spark or not plan.kept:
                item["files"] = kept_tasks(plan)
            answer.append(item)
        return json.dumps({"scans": answer})
    except Exception as exc:
        log.debug("planning a query failed", exc_info=True)
        return json.dumps({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"})


def note(plan: ScanPlan) -> str:
    """What ``explain()`` adds to a scan zskip planned: what it reads, and which stages ruled out the rest."""
    assert plan.scan is not None
    planned = len(plan.scan.paths)
    if not plan.beyond_spark and plan.kept:
        return f"zskip: reads what Iceberg planned ({planned:,} files); nothing more to skip"
    ruled = []
    before: tuple[int, int | None] | None = None
    for result in plan.stage_results:
        now = (result.files_kept, result.row_groups_kept)
        if before is not None and result.name != ICEBERG_STAGE and result.skipped is None and _fewer(now, before):
            ruled.append(result.name.split(" (")[0])
        before = now if result.row_groups_kept is not None or before is None else (now[0], before[1])
    by = f", ruled out by {', '.join(dict.fromkeys(ruled))}" if ruled else ""
    return f"zskip: reads {len(plan.kept):,} of {planned:,} files, {plan.row_groups_kept():,} row groups{by}"


def _fewer(now: tuple[int, int | None], before: tuple[int, int | None]) -> bool:
    if now[0] < before[0]:
        return True
    return now[1] is not None and before[1] is not None and now[1] < before[1]


session = _enabling(iceberg_session)
