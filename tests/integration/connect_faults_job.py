"""Faults of zskip's planner process under a Spark Connect server, seen from a client (no zskip).

    connect_faults_job.py <connect port> <server UI port> <planner timeout s> fact_table star_join_sql

The star join runs with a new literal each time (so no answer zskip's rule remembers applies and the
planner is asked).  Steps: a baseline; the planner killed between queries; a query while the planner is
stalled (SIGSTOP) past the server's timeout; the planner killed while a query waits for it.  After each,
the job waits until queries are pruned again.  One JSON line: each step's rows, scans and seconds.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from planner_processes import planner_pids
from pyspark.sql import SparkSession
from ui_metrics import Executions

COUNTER = itertools.count()


def main() -> None:
    port, ui_port, timeout = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    fact, join = sys.argv[4], sys.argv[5]
    spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    executions = Executions(ui_port)
    application = executions.application()

    def query() -> dict[str, Any]:
        sql = join.replace("GROUP BY", f"AND d.nation <> 'x{next(COUNTER)}' GROUP BY")
        executions.mark()
        started = time.monotonic()
        rows = sorted(tuple(r) for r in spark.sql(sql).collect())
        return {"rows": rows, "seconds": time.monotonic() - started, "scanned": executions.scanned(fact)}

    def planner() -> int:
        deadline = time.monotonic() + 60
        while not (pids := planner_pids(application)):
            assert time.monotonic() < deadline, "no planner process"
            time.sleep(0.2)
        return pids[0]

    spark.conf.set("spark.zskip.enabled", "false")
    plain = query()
    spark.conf.set("spark.zskip.enabled", "true")

    def recovered() -> dict[str, Any]:
        """Queries until one is pruned again (at most 90 s): the first such, with the seconds waited."""
        started = time.monotonic()
        while True:
            answer = query()
            if answer["scanned"] < plain["scanned"] or time.monotonic() - started > 90:
                return answer | {"after": time.monotonic() - started, "pid": planner()}

    report: dict[str, Any] = {"plain": plain, "baseline": recovered()}
    os.kill(report["baseline"]["pid"], signal.SIGKILL)
    report["killed between queries"] = query()
    report["back after kill"] = recovered()
    stalled = report["back after kill"]["pid"]
    os.kill(stalled, signal.SIGSTOP)
    report["stalled"] = query()
    report["back after stall"] = recovered()
    waiting = report["back after stall"]["pid"]
    os.kill(waiting, signal.SIGSTOP)
    answer: dict[str, Any] = {}
    running = threading.Thread(target=lambda: answer.update(query()))
    running.start()
    time.sleep(min(1.0, timeout / 3))
    os.kill(waiting, signal.SIGKILL)
    running.join()
    report["killed during a query"] = answer
    report["back after kill during"] = recovered()
    report["stalled pid gone"] = stalled not in planner_pids(application)
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
