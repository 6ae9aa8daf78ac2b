"""A Spark Connect client (PySpark's thin client, no zskip) that runs SQL statements on a server and
reports, for each, its columns and rows or the error the client was given (its class and message).

    sql_client_job.py <connect port> statements.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession


def main() -> None:
    port, listed = int(sys.argv[1]), Path(sys.argv[2])
    spark = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    report: list[dict[str, object]] = []
    for statement in json.loads(listed.read_text()):
        try:
            frame = spark.sql(statement)
            report.append({"columns": frame.columns, "rows": [list(row) for row in frame.collect()]})
        except Exception as exc:  # what the client shows its user
            report.append({"error": type(exc).__name__, "message": str(exc)})
    report.append({"imported zskip": any(m == "zskip" or m.startswith("zskip.") for m in sys.modules)})
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
