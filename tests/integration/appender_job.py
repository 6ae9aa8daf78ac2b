"""Run in its own process by test_maintain.py and jdbc_job.py: append batches of ``generated_rows``
to a table in a loop, as another writer would, until a stop file appears; each committed batch's
number is logged.  An optional fifth argument holds Spark settings as JSON (another catalog)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tables import APPENDED_BATCH_ROWS, APPENDED_FIRST_ID, generated_rows

import zskip


def main(warehouse: str, table: str, log_path: str, stop_path: str, settings: str = "{}") -> None:
    spark = zskip.session(
        warehouse=warehouse,
        master="local[1]",
        conf={"spark.sql.shuffle.partitions": "1", "spark.driver.memory": "1g", "spark.ui.enabled": "false"}
        | json.loads(settings),
    )
    batch = 0
    with open(log_path, "a", encoding="utf-8") as log:
        while not Path(stop_path).exists() and batch < 500:
            start = APPENDED_FIRST_ID + batch * APPENDED_BATCH_ROWS
            try:
                generated_rows(spark, start, start + APPENDED_BATCH_ROWS).coalesce(1).writeTo(table).append()
            except Exception as exc:  # a failed append commits nothing; say so and go on
                print(f"batch {batch} failed: {exc}", file=sys.stderr)
            else:
                log.write(f"{batch}\n")
                log.flush()
                os.fsync(log.fileno())
            batch += 1
            time.sleep(0.3)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])
