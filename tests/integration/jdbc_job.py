"""Run by test_jdbc_catalog.py in its own process: zskip's verbs on an Iceberg JDBC catalog on
PostgreSQL, while a second process (appender_job.py) appends to the same table the whole time.

Prints one line of JSON with what each check found; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from tables import APPENDED_BATCH_ROWS, APPENDED_FIRST_ID, fingerprint, frame_fingerprint, generated_rows, make_table

import zskip
from zskip.iceberg.table import load_table
from zskip.tablefiles.index_manifest import publish, read_manifest

TABLE = "lake.db.t"


def main(warehouse: str, settings: str, work: str) -> None:
    conf = json.loads(settings)
    spark = zskip.session(warehouse=warehouse, master="local[2]", conf={"spark.sql.shuffle.partitions": "4"} | conf)
    found: dict[str, object] = {"catalog_impl": spark.conf.get("spark.sql.catalog.lake.type")}
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
    make_table(spark, TABLE, rows=30_000, files=6)
    base = fingerprint(spark, TABLE)
    log_path, stop_path = Path(work) / "appended.log", Path(work) / "stop"
    appender = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("appender_job.py")), warehouse, TABLE, str(log_path),
         str(stop_path), json.dumps(conf)],
        cwd=Path(__file__).parent,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip

    def committed() -> list[int]:
        return [int(line) for line in log_path.read_text().split()] if log_path.exists() else []

    try:
        deadline = time.monotonic() + 240
        while not committed():
            if appender.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the appender committed nothing: {appender.stderr.read() if appender.stderr else ''}")
            time.sleep(1)
        before = len(committed())
        optimized = zskip.optimize(spark, TABLE, by=["a", "b"], target_file_size="64KB", row_group_size="16KB")
        indexed = zskip.create_index(spark, TABLE, "s", kind="bloom")
        cycles = list(zskip.maintain_cycles(spark, TABLE, interval="1s", cycles=3))
        found["appends_during_verbs"] = len(committed()) - before
    finally:
        stop_path.touch()
        _, errors = appender.communicate(timeout=300)
    found["appender_exit"] = appender.returncode
    found["appender_errors"] = errors[-2000:]
    last = zskip.maintain(spark, TABLE)
    batches = committed()
    expected = base
    for batch in batches:
        start = APPENDED_FIRST_ID + batch * APPENDED_BATCH_ROWS
        part = frame_fingerprint(generated_rows(spark, start, start + APPENDED_BATCH_ROWS))
        expected = type(base)(expected.rows + part.rows, expected.checksum + part.checksum)
    status = zskip.status(spark, TABLE)
    where = "a < 300 AND s = 'k7'"
    plain = spark.table(TABLE).where(where)
    explained = zskip.explain(spark, TABLE, where)
    found |= {
        "batches": len(batches),
        "rows_kept": fingerprint(spark, TABLE) == expected,
        "optimize_commits": optimized.commits,
        "files_indexed": indexed.files_indexed,
        "cycles": [c.reason for c in cycles] + [last.reason],
        "up_to_date": status.up_to_date,
        "clustered_share": status.clustered_share,
        "read_equal": sorted(map(tuple, zskip.read(spark, TABLE, where).collect()))
        == sorted(map(tuple, plain.collect())),
        "sql_equal": zskip.sql(spark, f"SELECT count(*) FROM {TABLE} WHERE {where}").first()[0] == plain.count(),
        "explain_files": [explained.files_read, explained.files_total],
        "vacuum_deleted": zskip.vacuum(spark, TABLE, older_than=0).files_deleted,
    }
    # a publication based on a manifest another writer replaced meanwhile must not overwrite it
    iceberg = load_table(spark, TABLE)
    stale, stale_path = read_manifest(iceberg, strict=True)
    zskip.create_index(spark, TABLE, "b", kind="bitmap")
    try:
        publish(iceberg, stale, expected=stale_path)
        found["conflict"] = "overwrote"
    except zskip.ConcurrentChangeError as exc:
        found["conflict"] = f"refused: {str(exc)[:200]}"
    found["indexes_after_conflict"] = sorted(f"{i.column}:{i.kind}" for i in zskip.list_indexes(spark, TABLE))
    print(json.dumps(found))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
