"""Run by test_cluster.py in its own process: optimize on a local-cluster master (executors in separate JVMs)."""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from jobs import JIT_OPTIONS
from tables import fingerprint, make_table

import zskip
from zskip.iceberg.files import data_files


def main(warehouse: str) -> None:
    spark = zskip.session(
        warehouse=warehouse,
        master="local-cluster[2,1,1024]",
        conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.driver.memory": "1g",
            "spark.executor.extraJavaOptions": JIT_OPTIONS,
        },
    )
    table = make_table(spark, "lake.cluster.t", rows=30_000, files=6)
    before = fingerprint(spark, table)
    size = sum(data_files(spark, table)["file_size_in_bytes"].to_pylist())
    result = zskip.optimize(spark, table, by=["a", "d"], target_file_size=size // 4)
    after = fingerprint(spark, table)
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
    pids = spark.sparkContext.parallelize(range(8), 8).map(lambda _: os.getpid()).distinct().count()
    print(
        json.dumps(
            {
                "executors": executors,
                "python_worker_pids": pids,
                "driver_pid": os.getpid(),
                "same": before == after,
                "files_written": result.files_written,
                "commits": result.commits,
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
