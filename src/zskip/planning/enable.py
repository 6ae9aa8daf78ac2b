"""zskip in every query of a session: ``enable`` prunes plain ``spark.sql``, DataFrames and views.

Once enabled, every query Spark optimizes in the session hands the Iceberg batch scans of tables zskip
clustered or indexed to ``plan_hooked`` (through zskip's optimizer rule, ``zskip.iceberg.hook``),
which plans each one through the same stages as ``zskip.sql``: Iceberg's own pruning, the join keys
of filtered dimensions, the curve ranges, the indexes and the row-group statistics.  Each scan then
reads only the files and row groups its plan kept, and its line in ``explain()`` says so.

The rule asks the planner only what it cannot answer alone: a scan planned before in the same table
state (same filters, columns, joined dimensions and settings) takes the answer remembered, and a scan
joined to no filtered dimension whose filters name no column zskip clustered or indexed reads what
Iceberg planned.  Such scans still reach the workload log, recorded after the query has its plan.

The rule never touches a scan of a table the same plan writes (DELETE, UPDATE, MERGE, INSERT OVERWRITE
of the table read), copy-on-write and staged scans (``rewrite_data_files``, zskip's own optimize),
streaming, time travel and branch reads.  If planning fails, the query runs with Spark's own plan: the
JVM logs one warning and counts the failure (``hook_counts``).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec

from pyspark.sql import SparkSession

from zskip import degraded
from zskip.iceberg.hook import ENABLED, HookCounts, forget_answers, hook_counts, install, installed, uninstall
from zskip.iceberg.scans import described_scans
from zskip.iceberg.session import session as iceberg_session
from zskip.planning.aggregate_answers import AggregateAnswer, answer_aggregate, answered_note
from zskip.planning.cache import LruCache
from zskip.planning.joins import keys_loader
from zskip.planning.pipeline import plan_scan
from zskip.planning.plan import ICEBERG_STAGE, PLANNING_PROPERTIES, ScanPlan
from zskip.planning.read import kept_tasks
from zskip.planning.workload import RECORDER, Recorded
from zskip.settings import flag

__all__ = [
    "ENABLED",
    "HookCounts",
    "disable",
    "enable",
    "enabled",
    "forget_answers",
    "hook_counts",
    "plan_hooked",
    "record_hooked",
    "session",
]

log = logging.getLogger(__name__)

P = ParamSpec("P")


def _enabling(start: Callable[P, SparkSession]) -> Callable[P, SparkSession]:
    """``start`` (``zskip.iceberg.session``) with zskip enabled in the session it returns, unless its
    ``conf`` sets ``spark.zskip.enabled`` to false (which pauses an active session enabled before)."""

    @functools.wraps(start)
    def started(*args: P.args, **kwargs: P.kwargs) -> SparkSession:
        spark = start(*args, **kwargs)
        conf: Mapping[str, str] = kwargs.get("conf") or {}  # type: ignore[assignment]
        if not flag(conf.get(ENABLED, spark.conf.get(ENABLED, None)), default=True):
            spark.conf.set(ENABLED, "false")
        else:
            enable(spark)
        return spark

    return started


def enable(spark: SparkSession) -> None:
    """Prune every query of ``spark`` the way ``zskip.sql`` does (``spark.zskip.enabled`` becomes true).

    ``zskip.session()`` does this unless its ``conf`` sets ``spark.zskip.enabled`` to false."""
    spark.conf.set(ENABLED, "true")
    install(spark, functools.partial(plan_hooked, spark), functools.partial(record_hooked, spark), PLANNING_PROPERTIES)


def disable(spark: SparkSession) -> None:
    """Stop pruning the queries of ``spark`` (``zskip.sql`` and ``zskip.read`` still prune theirs)."""
    spark.conf.set(ENABLED, "false")
    uninstall(spark)


def enabled(spark: SparkSession) -> bool:
    """Whether zskip prunes every query of ``spark``."""
    return flag(spark.conf.get(ENABLED, None), default=False) and installed(spark)


def plan_hooked(spark: SparkSession, java_scans: Any) -> str:
    """The answer zskip's rule takes for one plan's scans (a Java ``Bridge.Scans``): for each scan, the
    tasks to read (``files``, when zskip rules out more than Spark's own scan skips) and its explain note;
    or, when planning failed, why (the rule then keeps Spark's plan, warns and counts the failure).

    Each scan's item also tells the rule what it may remember (``remember``: false when planning went on
    without something it could not read, which the next plan reads again): the columns planning can
    rule anything out by in the table's state (``fields``, see ``planning_fields``) and a token for the
    scan's workload record (``record``), which the rule hands back when it reuses the answer.
    Never raises: py4j would log an error with the traceback for every query."""
    try:
        before = degraded.count()
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
            recorded = RECORDER.record(spark, plan, settings=scans.settings, joins=joins)  # never raises
            answer.append(_answer_item(scan.position, plan, recorded, aggregates=True))
        remember = degraded.count() == before
        return json.dumps({"scans": [item | {"remember": remember} for item in answer]})
    except Exception as exc:
        log.debug("planning a query failed", exc_info=True)
        return json.dumps({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"})


def record_hooked(spark: SparkSession, batch: Any, *, sessions: Callable[[Any], SparkSession] | None = None) -> str:
    """Put in the workload log the scans zskip's rule decided without the planner: ``batch`` is a Java
    list of ``Bridge.Scans``, each with its ``recordWork`` (the positions of the scans to plan for their
    records, the tokens of records to note again).  Called on a JVM thread of its own, well after the
    queries had their plans; never raises.  Returns a JSON list with, for each ``Scans``, the answers of
    the scans it planned as ``plan_hooked`` gives them (``{}`` for none), for the rule to remember: the
    same query again then only repeats its record.  ``sessions``: the session each ``Scans`` is planned
    in (the planner zskip's extension hosts serves many), else ``spark``."""
    answers: list[dict[str, Any]] = []
    for java_scans in batch:
        try:
            answers.append(_record_scans(spark if sessions is None else sessions(java_scans), java_scans))
        except Exception:
            log.debug("recording a query zskip's rule planned alone failed", exc_info=True)
            answers.append({})
    return json.dumps(answers)


def _record_scans(spark: SparkSession, java_scans: Any) -> dict[str, Any]:
    work = json.loads(str(java_scans.recordWork()))
    for token in work.get("repeat", ()):
        recorded = _RECORDS.get(token)
        if recorded is not None:
            RECORDER.repeat(recorded)
    wanted = set(work.get("plan", ()))
    if not wanted:
        return {}
    before = degraded.count()
    scans = described_scans(java_scans, None)
    answer = []
    for scan in scans.scans:
        if scan.position in wanted:
            plan = plan_scan(spark, None, scan, table=scan.table, settings=scans.settings)
            recorded = RECORDER.record(spark, plan, settings=scans.settings)
            answer.append(_answer_item(scan.position, plan, recorded))
    remember = degraded.count() == before
    return {"scans": [item | {"remember": remember} for item in answer]}


def _answer_item(
    position: int, plan: ScanPlan, recorded: Recorded | None, *, aggregates: bool = False
) -> dict[str, Any]:
    """One scan's item of an answer to zskip's rule (see ``plan_hooked``).  ``aggregates``: answer the
    aggregate over the scan the rule asked about, where statistics answer some of its row groups
    (``aggregate``: their partials; ``files`` then leaves them out).  The rule remembers the two together:
    the files are right only with the partials beside them."""
    item: dict[str, Any] = {
        "scan": position,
        "note": note(plan),
        "fields": planning_fields(plan),
        "record": _keep_record(recorded),
    }
    answered = _answered(plan) if aggregates else None
    if answered is not None:
        rest, partials = answered
        item["aggregate"] = partials.as_json()
        item["files"] = kept_tasks(rest)
        ruled = item["note"].partition(", ruled out by ")[2]
        item["note"] = answered_note(rest, partials, ruled_out_by=ruled)
        return item
    if plan.beyond_spark or not plan.kept:
        item["files"] = kept_tasks(plan)
    return item


def _answered(plan: ScanPlan) -> tuple[ScanPlan, AggregateAnswer] | None:
    """The plan's aggregate answered in part from statistics (``None``: no aggregate asked, or none
    of its row groups answered; a failure is logged and reads every row group as before)."""
    request = plan.scan.aggregate if plan.scan is not None else None
    if request is None:
        return None
    try:
        rest, partials = answer_aggregate(plan, request)
    except Exception:
        log.debug("answering an aggregate from statistics failed; its row groups are read", exc_info=True)
        return None
    return None if partials is None else (rest, partials)


def planning_fields(plan: ScanPlan) -> list[int] | None:
    """The field ids planning can rule anything out by in the state ``plan`` read, beyond Iceberg's own
    pruning: the clustered columns and the indexed ones (``None``: some are not known by field id)."""
    assert plan.metadata is not None
    fields: set[int] = set()
    store = plan.metadata.store()
    if store is not None:
        ids = store.spec.field_ids
        if any(i is None for i in ids):
            return None
        fields.update(i for i in ids if i is not None)
    manifest = plan.metadata.manifest()
    if manifest is not None:
        if any(d.field_id is None for d in manifest.definitions):
            return None
        # sums indexes answer no condition: a filter on such a column alone is Iceberg's to plan
        fields.update(
            d.field_id for d in manifest.definitions if d.field_id is not None and d.index_kind.answers_conditions
        )
    return sorted(fields)


# the workload records of answers the rule may reuse, by token (the newest kept)
_RECORDS = LruCache(4096)
_TOKENS = itertools.count()


def _keep_record(recorded: Recorded | None) -> str | None:
    """A token for ``recorded`` that the rule hands back when it reuses the answer (``None``: no record)."""
    if recorded is None:
        return None
    token = str(next(_TOKENS))
    _RECORDS.put(token, recorded)
    return token


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
