"""A Spark Connect client (no zskip) that starts a statement, waits until the server runs a Spark job
whose description starts with a given text, interrupts everything the session runs (as a notebook's
stop button does) and reports what the statement ended with.

    cancel_client_job.py <connect port> <server UI port> <job description prefix> <statement>
"""

from __future__ import annotations

import json
import sys
import threading
import time

from pyspark.sql import SparkSession
from ui_metrics import Executions


def main() -> None:
    port, ui_port, prefix, statement = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    executions = Executions(ui_port)
    ended: dict[str, object] = {}

    def run() -> None:
        try:
            ended["rows"] = [list(row) for row in spark.sql(statement).collect()]
        except Exception as exc:
            ended["error"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"

    worker = threading.Thread(target=run)
    started = time.monotonic()
    worker.start()
    seen = executions.await_job(prefix, worker)
    ended["interrupted"] = spark.interruptAll() if seen else []
    ended["job seen"] = seen[:1]
    worker.join(timeout=600)
    ended["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(ended, default=str))


if __name__ == "__main__":
    main()
