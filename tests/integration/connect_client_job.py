"""A Spark Connect client (PySpark's thin client, no zskip): runs queries on a Connect server with zskip's
extension, each with ``spark.zskip.enabled`` true, then false, and reports their rows, the rows the
server's scans output (its SQL metrics, through its UI's REST API) and ``df.explain()``'s zskip line.

    connect_client_job.py <connect port> <server UI port> queries.json
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

from pyspark.sql import SparkSession
from ui_metrics import Executions


def main() -> None:
    port, ui_port, listed = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    queries = json.loads(listed.read_text())
    spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    executions = Executions(ui_port)
    report: dict[str, object] = {}
    for name, query in queries.items():
        entry: dict[str, object] = {}
        # zskip on first: the server's first query is pruned (the planner started with the server, and
        # a query before it is ready waits for it, spark.zskip.planner.startWait: 30 s by default)
        for enabled in ("true", "false"):
            spark.conf.set("spark.zskip.enabled", enabled)
            executions.mark()
            rows = sorted(tuple(row) for row in spark.sql(query["sql"]).collect())
            entry[enabled] = {"rows": rows, "scanned": executions.scanned(query["table"])}
        spark.conf.set("spark.zskip.enabled", "true")
        printed = io.StringIO()
        with redirect_stdout(printed):
            spark.sql(query["sql"]).explain()
        entry["explain"] = [line for line in printed.getvalue().splitlines() if "zskip:" in line]
        report[name] = entry
    report["application"] = executions.application()
    report["imported zskip"] = any(module == "zskip" or module.startswith("zskip.") for module in sys.modules)
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
