"""zskip's planner and procedures in a process of its own, for an application zskip's Spark extension
turned zskip on in.

``python -m zskip.hosted --application <id>`` is started by the application's JVM
(``io.zskip.hosted.HostedPlanner``, when ``spark.sql.extensions`` names
``io.zskip.extensions.ZskipSparkSessionExtensions``), never by hand.  It connects to that JVM the way a
PySpark driver started by ``spark-submit`` does (a py4j gateway on the loopback interface, its port and
secret in the environment), and registers ``plan_hooked`` and ``record_hooked`` as the planner of every
session zskip's rule is in that no Python driver enabled zskip in (the same planner as
``zskip.enable``'s, in the same stages), and zskip's SQL procedures (``zskip.procedures``: ``CALL
zskip.system.optimize(...)``), run by the API's code.  Each plan and each procedure runs in the session
it came from (``zskip.iceberg.callers``), with that session's catalogs, settings and credentials; its
callback server takes only connections that hold the application's secret (``zskip.iceberg.callbacks``).

It lives as long as its standard input is open: the JVM closes it (by exiting, or by stopping the
process when it replaces it), and the process then exits at once, without touching the application.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
from typing import Any

__all__ = ["main"]

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m zskip.hosted", description=__doc__.split("\n")[0])
    parser.add_argument("--application", required=True, help="the Spark application id (for the process list)")
    parser.parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("ZSKIP_PLANNER_LOG_LEVEL", "WARNING"),
        stream=sys.stdout,  # the JVM logs the process's output (zskip.planner)
        format="%(levelname)s %(name)s: %(message)s",
    )
    generation = int(os.environ["ZSKIP_PLANNER_GENERATION"])
    try:
        took = serve(generation)
    except BaseException:
        log.exception("zskip's planner could not start")
        os._exit(1)
    if not took:
        log.warning("the JVM started another planner process: this one exits")
        os._exit(0)
    sys.stdin.read()  # until the JVM closes it
    # never a normal exit: nothing of PySpark's (an atexit hook, a context stop) may act on the application
    os._exit(0)


def serve(generation: int) -> bool:
    """Connect to the JVM that started this process and register zskip's planner and procedures with it;
    whether the JVM took them."""
    from zskip.iceberg.hook import attach_hosted, register_hosted
    from zskip.planning.enable import record_hooked
    from zskip.planning.plan import PLANNING_PROPERTIES
    from zskip.procedures import specs

    attached = attach_hosted()
    if attached is None:
        return False  # the application stopped before this process was up
    gateway, spark = attached
    return register_hosted(
        gateway,
        generation,
        functools.partial(_plan, spark),
        functools.partial(record_hooked, spark, sessions=functools.partial(_scans_session, spark)),
        PLANNING_PROPERTIES,
        functools.partial(_procedure, spark),
        specs(),
    )


def _scans_session(spark: Any, java_scans: Any) -> Any:
    """The session a query's scans were planned in, as a PySpark session: its plan runs there (one
    py4j call for a session seen before)."""
    from zskip.iceberg.callers import caller_session

    return caller_session(spark, None, key=str(java_scans.sessionId()), session=java_scans.session)


def _plan(spark: Any, java_scans: Any) -> str:
    """A query's plan, made in the query's own session (never raises: ``plan_hooked``'s contract)."""
    from zskip.planning.enable import plan_hooked

    try:
        session = _scans_session(spark, java_scans)
    except Exception as exc:
        return json.dumps({"error": f"{type(exc).__name__}: the query's session is out of reach"})
    return plan_hooked(session, java_scans)


def _procedure(spark: Any, java_session: Any, request: str) -> str:
    """A procedure call from the JVM, run in the session that made it (``java_session``): ``name``, a
    line break, its arguments as JSON; the answer as JSON."""
    from zskip.iceberg.callers import caller_session
    from zskip.procedures import call

    name, _, arguments = request.partition("\n")
    return call(caller_session(spark, java_session), name, arguments)


if __name__ == "__main__":
    main()
