"""Two Spark Connect sessions of one client (PySpark's thin client, no zskip), each with its own current
namespace, one with a catalog of its own: each runs the statements given for it, in turn, and the
report says, per statement, its rows or the error its session was given.

    sessions_client_job.py <connect port> steps.json

``steps.json`` is a list of ``[session, statement]`` pairs, ``session`` being ``"a"`` or ``"b"``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession


def main() -> None:
    port, listed = int(sys.argv[1]), Path(sys.argv[2])
    builder = SparkSession.builder.remote(f"sc://127.0.0.1:{port}")
    sessions = {"a": builder.create(), "b": builder.create()}
    report: list[dict[str, object]] = []
    for name, statement in json.loads(listed.read_text()):
        try:
            frame = sessions[name].sql(statement)
            report.append({"columns": frame.columns, "rows": [list(row) for row in frame.collect()]})
        except Exception as exc:  # what the client shows its user
            report.append({"error": type(exc).__name__, "message": str(exc).split("\n")[0]})
    report.append({"imported zskip": any(m == "zskip" or m.startswith("zskip.") for m in sys.modules)})
    print(json.dumps(report, default=str))


if __name__ == "__main__":
    main()
