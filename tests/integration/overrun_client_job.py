"""A Spark Connect client (no zskip) with two sessions: one runs a long procedure; while the server runs its
Spark jobs the planner process is stalled (SIGSTOP), so that the other session's query, planned
meanwhile, overruns the planner's timeout; then the planner goes on (SIGCONT).  Reports how the
procedure ended, the query's rows (and those of the same query with zskip off), its seconds, and the
planner process before and after.

    overrun_client_job.py <connect port> <server UI port> <job description prefix> <procedure> <query>
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

from planner_processes import planner_pids
from pyspark.sql import SparkSession
from ui_metrics import Executions


def main() -> None:
    port, ui_port, prefix, procedure, query = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:6]
    builder = SparkSession.builder.remote(f"sc://127.0.0.1:{port}")
    calling, querying = builder.create(), builder.create()
    executions = Executions(ui_port)
    application = executions.application()
    (pid,) = planner_pids(application)
    report: dict[str, object] = {"pid before": pid}

    def call() -> None:
        try:
            report["procedure"] = [list(row) for row in calling.sql(procedure).collect()]
        except Exception as exc:
            report["procedure error"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"

    worker = threading.Thread(target=call)
    worker.start()
    executions.await_job(prefix, worker)
    os.kill(pid, signal.SIGSTOP)  # a planner that does not answer: the query's plan overruns
    try:
        report["procedure running"] = worker.is_alive()
        began = time.monotonic()
        report["rows"] = sorted(list(row) for row in querying.sql(query).collect())
        report["query seconds"] = round(time.monotonic() - began, 1)
    finally:
        os.kill(pid, signal.SIGCONT)
    worker.join(timeout=600)
    querying.conf.set("spark.zskip.enabled", "false")
    report["rows zskip off"] = sorted(list(row) for row in querying.sql(query).collect())
    report["pid after"] = planner_pids(application)
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
