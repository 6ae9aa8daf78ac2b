"""The JVM side of ``zskip.enable``: zskip's optimizer rule in a session, calling a Python planner back.

``zskip.bridge.PlanHook`` (in zskip's jar) is a Catalyst rule among the session's extra optimizations.
For each plan with Iceberg batch scans of tables zskip clustered or indexed, it calls the planner
given to ``install`` through py4j's callback server (the one PySpark starts for ``foreachBatch``)
with the plan's scans (a Java ``Bridge.Scans``), and has each scan read the tasks the planner's
answer keeps.  The call comes back on the Python thread whose action made Spark plan, so the planner
may call into the JVM and run Spark jobs of its own; while it plans, zskip's rule lets every query
pass untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from zskip.iceberg.jvm import java_session, jvm_of

__all__ = ["ENABLED", "HookCounts", "hook_counts", "install", "installed", "uninstall"]

log = logging.getLogger(__name__)

ENABLED = "spark.zskip.enabled"


@dataclass(frozen=True)
class HookCounts:
    """What zskip's rule did in a JVM so far: plans handed to the planner, and those left as Spark made them."""

    planned: int
    failures: int
    last_failure: str


class _Planner:
    """The Python object the rule calls (py4j proxies it as a ``java.util.function.Function``)."""

    def __init__(self, plan: Callable[[Any], str]) -> None:
        self._plan = plan

    def apply(self, scans: Any) -> str:
        return self._plan(scans)

    class Java:
        implements: ClassVar[list[str]] = ["java.util.function.Function"]


def _hook(spark: Any) -> Any:
    return jvm_of(spark).zskip.bridge.PlanHook


def install(spark: Any, plan: Callable[[Any], str], properties: Sequence[str]) -> None:
    """Put zskip's rule in ``spark``'s optimizer (replacing one already there), planning through ``plan``.

    ``properties``: the table properties that mark a table zskip clustered or indexed."""
    from pyspark.java_gateway import ensure_callback_server_started

    gateway: Any = spark.sparkContext._gateway
    ensure_callback_server_started(gateway)
    # a Python object crosses py4j as a proxy only as an argument of a call made through the gateway
    holder = gateway.jvm.java.util.ArrayList()
    holder.add(_Planner(plan))
    _hook(spark).install(java_session(spark), holder.get(0), "\u0001".join(properties))


def uninstall(spark: Any) -> None:
    """Take zskip's rule out of ``spark``'s optimizer (if it is there)."""
    _hook(spark).uninstall(java_session(spark))


def installed(spark: Any) -> bool:
    return bool(_hook(spark).installed(java_session(spark)))


def hook_counts(spark: Any) -> HookCounts:
    planned, failures, last = str(_hook(spark).counts()).split(" ", 2)
    return HookCounts(int(planned), int(failures), last)
