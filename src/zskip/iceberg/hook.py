"""The JVM side of ``zskip.enable``: zskip's optimizer rule in a session, calling a Python planner back.

``io.zskip.rule.PlanHook`` (in zskip's jar) is a Catalyst rule among the session's extra optimizations.
For each plan with Iceberg batch scans of tables zskip clustered or indexed, it calls the planner
given to ``install`` through py4j's callback server (the one PySpark starts for ``foreachBatch``,
armed with the application's secret: ``zskip.iceberg.callbacks``)
with the plan's scans (a Java ``Bridge.Scans``), and has each scan read the tasks the planner's
answer keeps.  The call comes back on the Python thread whose action made Spark plan, so the planner
may call into the JVM and run Spark jobs of its own; while it plans, zskip's rule lets every query
pass untouched.

The rule remembers answers (``RememberedPlans`` in the jar): a scan it has an answer for, or one that
names no column the planner said it can use, is decided in the JVM alone, and the ``record`` function
given to ``install`` is then called on a JVM thread of its own, after the query has its plan, to put
those scans in the workload log (``await_records`` waits for it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from zskip import settings
from zskip.iceberg.bridge import read_answer
from zskip.iceberg.jvm import java_session, jvm_of

__all__ = [
    "ENABLED",
    "HookCounts",
    "attach_hosted",
    "await_records",
    "forget_answers",
    "hook_counts",
    "install",
    "installed",
    "register_hosted",
    "uninstall",
]

log = logging.getLogger(__name__)

ENABLED = settings.ENABLED.key


@dataclass(frozen=True)
class HookCounts:
    """What zskip's rule did in a JVM so far: plans handed to the planner, and those left as Spark made them."""

    planned: int
    failures: int
    last_failure: str
    remembered: int = 0  # plans the rule answered from what it remembered, without calling the planner
    dropped_records: int = 0  # workload records not made: too many were waiting
    unavailable: int = 0  # plans left as Spark made them: the hosted planner was not ready (zskip's extension)


class _Planner:
    """The Python object the rule calls (py4j proxies it as a ``java.util.function.Function``)."""

    def __init__(self, plan: Callable[[Any], str]) -> None:
        self._plan = plan

    def apply(self, scans: Any) -> str:
        return self._plan(scans)

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Function"]


class _TwoArguments:
    """A Python function of two arguments as the JVM calls it (a ``java.util.function.BiFunction``)."""

    def __init__(self, function: Callable[[Any, Any], str]) -> None:
        self._function = function

    def apply(self, first: Any, second: Any) -> str:
        return self._function(first, second)

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.BiFunction"]


def _hook(spark: Any) -> Any:
    return jvm_of(spark).io.zskip.rule.PlanHook


def install(spark: Any, plan: Callable[[Any], str], record: Callable[[Any], str], properties: Sequence[str]) -> None:
    """Put zskip's rule in ``spark``'s optimizer (replacing one already there), planning through ``plan``
    and recording the scans it decided alone through ``record`` (see the module's text).

    ``properties``: the table properties that mark a table zskip clustered or indexed."""
    planner, recorder = _proxies(spark.sparkContext._gateway, plan, record)
    _hook(spark).install(java_session(spark), planner, recorder, "\u0001".join(properties))


def register_hosted(
    gateway: Any,
    generation: int,
    plan: Callable[[Any], str],
    record: Callable[[Any], str],
    properties: Sequence[str],
    procedures: Callable[[Any, str], str],
    procedure_specs: str,
) -> bool:
    """Register the planner and the procedures of the process zskip's Spark extension started
    (``zskip.hosted``) with that JVM's ``HostedPlanner``; false when the JVM has started another process
    since this one.  ``procedures`` takes the JVM session a ``CALL`` runs in and its request."""
    planner, recorder, runner = _proxies(gateway, plan, record, _TwoArguments(procedures))
    hosted = gateway.jvm.io.zskip.hosted.HostedPlanner
    return bool(hosted.register(generation, planner, recorder, "\u0001".join(properties), runner, procedure_specs))


def attach_hosted() -> tuple[Any, Any] | None:
    """In the planner process zskip's Spark extension started: connect to that JVM (its py4j gateway's
    port and secret are in this process's environment, as for a PySpark driver ``spark-submit``
    started) and wrap the session zskip's extension first saw as a PySpark session, over the JVM's own
    context (nothing new is created in the JVM).  The gateway and the session; ``None`` when the
    application stopped meanwhile."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    gateway = launch_gateway()
    java_session = gateway.jvm.io.zskip.hosted.HostedPlanner.session()
    if java_session is None:
        return None
    java_context = gateway.jvm.org.apache.spark.api.java.JavaSparkContext(java_session.sparkContext())
    context = SparkContext(gateway=gateway, jsc=java_context, conf=SparkConf(_jconf=java_context.getConf()))
    _quiet_accumulators(context)
    return gateway, SparkSession(context, jsparkSession=java_session)


def _quiet_accumulators(context: Any) -> None:
    """Give the UDFs this process runs an accumulator that sends nothing to it, and close the
    accumulator server PySpark started in it.  PySpark's accumulator has the JVM send each finished
    task's updates here and wait for an answer on the DAGScheduler's only thread: while this process
    stalls, every job of the application would wait with it.  zskip reads no accumulator."""
    quiet = context._jvm.io.zskip.hosted.PlannerAccumulator()
    context._jsc.sc().register(quiet)
    context._javaAccumulator = quiet
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.shutdown()
        server.server_close()
        context._accumulatorServer = None


def _proxies(gateway: Any, *functions: Callable[[Any], str] | _TwoArguments) -> list[Any]:
    """JVM proxies (``java.util.function.Function``) of ``functions``, called back through py4j's
    callback server, which takes only connections holding the application's secret (``callbacks``)."""
    from zskip.iceberg.callbacks import ensure_authenticated

    ensure_authenticated(gateway)
    # a Python object crosses py4j as a proxy only as an argument of a call made through the gateway
    holder = gateway.jvm.java.util.ArrayList()
    for function in functions:
        holder.add(function if isinstance(function, _TwoArguments) else _Planner(function))
    return [holder.get(i) for i in range(len(functions))]


def uninstall(spark: Any) -> None:
    """Take zskip's rule out of ``spark``'s optimizer (if it is there)."""
    _hook(spark).uninstall(java_session(spark))


def installed(spark: Any) -> bool:
    return bool(_hook(spark).installed(java_session(spark)))


def hook_counts(spark: Any) -> HookCounts:
    counts = read_answer(str(_hook(spark).counts()))
    return HookCounts(
        counts["planned"],
        counts["failures"],
        counts["last_failure"],
        counts["remembered"],
        counts["dropped"],
        counts["unavailable"],
    )


def forget_answers(spark: Any) -> None:
    """Have zskip's rule forget every answer it remembers (its next plans are asked of the planner)."""
    _hook(spark).forget()


def await_records(seconds: float = 10.0) -> bool:
    """Wait (at most ``seconds``) until the workload records zskip's rule handed to the recorder so far
    are made; whether they are.  True at once without a running JVM or without zskip's jar in it."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or context._jvm is None:
        return True
    try:
        return bool(context._jvm.io.zskip.rule.PlanHook.awaitRecords(int(seconds * 1000)))
    except Exception:  # the JVM is going away, or has no zskip jar: no record can be pending
        return True
