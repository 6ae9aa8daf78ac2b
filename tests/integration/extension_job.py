"""A PySpark job that never imports zskip: zskip's extension, set by configuration alone, plans its queries.

    spark-submit --conf spark.sql.extensions=...,io.zskip.extensions.ZskipSparkSessionExtensions ... \\
        extension_job.py queries.json      # one JSON line: per query, zskip off and on

queries.json: {name: {"sql": ..., "table": the table whose scans count}}.  Each query runs with
``spark.zskip.enabled`` false, then true (a session SET); its rows, the rows its scans output (the
application's SQL metrics) and its EXPLAIN line about zskip are reported.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession
from ui_metrics import Executions


def main() -> None:
    queries = json.loads(Path(sys.argv[1]).read_text())
    spark = SparkSession.builder.appName("zskip extension job").getOrCreate()
    executions = Executions(int(spark.sparkContext.uiWebUrl.rsplit(":", 1)[1]))
    report: dict[str, object] = {}
    for name, query in queries.items():
        entry: dict[str, object] = {}
        for enabled in ("false", "true"):
            spark.sql(f"SET spark.zskip.enabled={enabled}")
            executions.mark()
            rows = sorted(tuple(row) for row in spark.sql(query["sql"]).collect())
            entry[enabled] = {"rows": rows, "scanned": executions.scanned(query["table"])}
        plan = spark.sql(f"EXPLAIN {query['sql']}").collect()[0][0]
        entry["explain"] = [line for line in plan.splitlines() if "zskip:" in line]
        report[name] = entry
    status = spark.sparkContext._jvm.io.zskip.hosted.HostedPlanner.status()  # type: ignore[union-attr]
    report["planner"] = str(status)
    report["application"] = spark.sparkContext.applicationId
    report["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # type: ignore[union-attr]
    report["imported zskip"] = any(module == "zskip" or module.startswith("zskip.") for module in sys.modules)
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
