"""Run by test_enable.py in its own process: zskip in every query survives a stopped and restarted session."""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tables import make_table

import zskip
from zskip.planning.enable import hook_counts

QUERY = "SELECT count(*), sum(id) FROM lake.restart.t WHERE a BETWEEN 10 AND 30 AND b < 500"


def start(warehouse: str):  # type: ignore[no-untyped-def]
    return zskip.session(warehouse=warehouse, master="local[1]", conf={"spark.sql.shuffle.partitions": "2"})


def main(warehouse: str) -> None:
    spark = start(warehouse)
    make_table(spark, "lake.restart.t", rows=6_000, files=3)
    zskip.optimize(spark, "lake.restart.t", by=["a", "b"], target_file_size=20_000)
    first = [tuple(r) for r in spark.sql(QUERY).collect()]
    counts = hook_counts(spark)
    planned = counts.planned + counts.remembered  # answered by the planner, or from what the rule remembered
    spark.stop()
    spark = start(warehouse)  # a new session in the same process and JVM gateway
    again = [tuple(r) for r in spark.sql(QUERY).collect()]
    zskip.disable(spark)
    plain = [tuple(r) for r in spark.sql(QUERY).collect()]
    print(
        json.dumps(
            {
                "same": first == again == plain,
                "planned_before_stop": planned,
                "planned_after_restart": hook_counts(spark).planned + hook_counts(spark).remembered,
                "off_after_disable": zskip.enabled(spark) is False,
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
