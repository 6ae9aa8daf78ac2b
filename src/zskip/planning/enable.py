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
import os
from collections.abc import Mapping
from typing import Any

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


def session(
    *,
    warehouse: str | os.PathLike[str] = "./warehouse",
    catalog: str = "lake",
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    object_storage: bool | None = None,
) -> SparkSession:
    """A SparkSession with Iceberg and an embedded hadoop-type catalog named ``catalog`` in ``warehouse``,
    zskip enabled in every query unless ``conf`` sets ``spark.zskip.enabled`` to false.

    ``warehouse`` is a local folder, or a URI such as ``s3a://bucket/warehouse`` whose store the
    settings in ``conf`` reach (``spark.hadoop.fs.s3a.*``).  ``object_storage`` puts the S3 libraries
    on Spark's classpath (Iceberg's AWS bundle, and Hadoop's S3A on Spark 4.1); by default they are
    added when the warehouse or ``conf`` names S3.

    When a session is already active and has Iceberg configured, it is returned (and enabled) as it
    is, so code written against ``zskip.session()`` runs unchanged on a cluster whose session was
    built by ``spark-submit`` with the user's own catalog (Hive, REST, Glue, JDBC, ...).

    >>> spark = zskip.session(warehouse="/tmp/wh")                     # doctest: +SKIP
    >>> spark.sql("CREATE TABLE lake.db.t (id BIGINT) USING iceberg")  # doctest: +SKIP
    """
    spark = iceberg_session(
        warehouse=warehouse, catalog=catalog, master=master, conf=conf, object_storage=object_storage
    )
    wanted = (conf or {}).get(ENABLED, spark.conf.get(ENABLED, "true"))
    if str(wanted).lower() == "false":
        spark.conf.set(ENABLED, "false")  # an active session enabled before is paused too
    else:
        enable(spark)
    return spark


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
            plan = plan_scan(spark, None, scan, table=scan.table, joins=scans.joins_of(scan), join_filter=join_filter)
            RECORDER.record(spark, plan, settings=scans.settings)  # the workload log (never raises)
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
