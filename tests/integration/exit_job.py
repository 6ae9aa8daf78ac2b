"""Run by test_workload.py in its own process: the workload log's flush at exit when the queried table is gone."""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tables import make_table

import zskip


def main(warehouse: str) -> None:
    spark = zskip.session(warehouse=warehouse, master="local[1]", conf={"spark.sql.shuffle.partitions": "2"})
    make_table(spark, "lake.exiting.t", rows=6_000, files=3)
    zskip.optimize(spark, "lake.exiting.t", by=["a", "b"], target_file_size=20_000)
    location = spark.sql("DESCRIBE TABLE EXTENDED lake.exiting.t").where("col_name = 'Location'").first()[1]
    for a in range(12):  # twelve records waiting for the log (a batch is written at 64)
        zskip.read(spark, "lake.exiting.t", f"a = {a} AND b < 500").count()
    spark.sql("DROP TABLE lake.exiting.t PURGE")
    print(json.dumps({"location": location, "done_at": time.time()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
