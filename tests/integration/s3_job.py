"""Run by test_object_storage.py in its own process: zskip's verbs on tables on a real S3-compatible
server, through Hadoop's S3A (a hadoop catalog on ``s3a://``, settings in ``spark.hadoop.fs.s3a.*``)
and through Iceberg's S3FileIO (a REST catalog on ``s3://``, settings in the catalog's properties).
The process has no AWS environment variables: Spark's and the catalog's settings are all there is.

Prints one line of JSON with what each check found; the test asserts on it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from object_store import S3Server
from stars import make_star
from tables import Fingerprint, fingerprint, make_table

import zskip
from zskip.iceberg.hook import hook_counts
from zskip.planning.cache import CACHE
from zskip.planning.workload import flush_workload
from zskip.retries import counts as retries
from zskip.storage import forget_open_objects

WHERE = "a < 300 AND s = 'k7'"
STAR = (
    "SELECT count(*), sum(f.b_key) FROM {ns}.fact f JOIN {ns}.dim_a d ON f.a_key = d.a_id "
    "WHERE d.region = 'r2' AND d.nation IN ('n2', 'n7')"
)


def rows(frame) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(map(tuple, frame.collect()))


def verbs(spark, catalog: str, warehouse: str, conf: dict[str, str], work: Path, given: dict) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Every verb on ``catalog``'s tables; what each found."""
    table = f"{catalog}.db.t"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.db")
    make_table(spark, table, rows=20_000, files=4)
    made = fingerprint(spark, table)  # rows and checksum as Spark wrote them, before any of zskip's verbs
    found: dict[str, object] = {}
    appender = None
    stop = work / f"stop-{catalog}"
    # another process appends while optimize and the index build run, on the catalog whose commits are
    # atomic on an object store (a hadoop catalog commits by renaming a file, which S3 does not do
    # atomically: two writers can both think they committed, and the last one's metadata wins)
    if catalog == "rest":
        log = work / f"appended-{catalog}.log"
        appender = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("appender_job.py")), warehouse, table, str(log),
             str(stop), json.dumps(conf)],
            cwd=Path(__file__).parent, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 240
        while not (log.exists() and log.read_text().strip()):
            if appender.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the appender committed nothing: {appender.stderr.read() if appender.stderr else ''}")
            time.sleep(1)
    stages: list[str] = []

    def progress(stage: str, done: int, total: int) -> None:
        stages.append(stage)

    if catalog == "lake":  # zskip's own reads in the tasks also meet answers cut mid-body, which it retries
        set_faults(given["relay"], given["truncating"])
    try:
        optimized = zskip.optimize(
            spark, table, by=["a", "b"], target_file_size="64KB", row_group_size="16KB", progress=progress
        )
        indexed = zskip.create_index(spark, table, "s", kind="bloom", progress=progress)
        if catalog == "lake":
            set_faults(given["relay"], given["typical"])
        zskip.create_index(spark, table, "b", kind="bitmap")
    finally:
        stop.touch()
        if appender is not None:
            _, errors = appender.communicate(timeout=300)
            found["appender"] = [appender.returncode, errors[-1500:]]
    settled = current_fingerprint(spark, table)  # with the appender's rows, once it stopped
    refreshed = zskip.refresh_indexes(spark, table)
    plain = spark.table(table).where(WHERE)
    explained = zskip.explain(spark, table, WHERE)
    ns = f"{catalog}.star"
    make_star(spark, ns)
    by = [zskip.Dimension("a_key", f"{ns}.dim_a", key="a_id", by=["region", "nation"])]
    zskip.optimize(spark, f"{ns}.fact", by=by, target_file_size=40_000, row_group_size=8_000)
    star = STAR.format(ns=ns)
    star_plan = zskip.explain_sql(spark, star)
    advice = zskip.advise(spark, table, queries=[f"SELECT * FROM {table} WHERE {WHERE}"], top=2)
    maintained = zskip.maintain(spark, table)
    status = zskip.status(spark, table)
    vacuumed = zskip.vacuum(spark, table, older_than=0)
    flush_workload()
    found |= {
        "stages": sorted(set(stages)),
        "optimize_commits": optimized.commits,
        "files_indexed": indexed.files_indexed,
        "refreshed_total": refreshed.files_total,
        "read_equal": rows(zskip.read(spark, table, WHERE)) == rows(plain),
        "sql_equal": rows(zskip.sql(spark, f"SELECT a, b, s FROM {table} WHERE {WHERE}"))
        == rows(plain.select("a", "b", "s")),
        "explain_files": [explained.files_read, explained.files_total],
        "star_equal": rows(zskip.sql(spark, star)) == rows(spark.sql(star)),
        "star_row_groups": [[p.row_groups_read, p.row_groups_total] for p in star_plan],
        "advised": len(advice.layouts),
        "maintained": maintained.reason,
        "up_to_date": status.up_to_date,
        "vacuum_kept": vacuumed.files_kept,
        "read_after_vacuum": rows(zskip.read(spark, table, WHERE)) == rows(plain),
        "workload_records": zskip.workload(spark, table).num_rows,
    }
    # the table's rows and checksum, through optimize, index builds, maintain and vacuum under faults: as
    # Spark wrote them (the lake's), or as they were once the appender stopped (the REST catalog's)
    kept = current_fingerprint(spark, table)
    found["intact"] = kept == settled and (appender is not None or settled == made)
    found["rows"] = [made.rows, settled.rows, kept.rows]
    found |= row_group_reads(spark, catalog)
    return found


def current_fingerprint(spark, table: str) -> Fingerprint:  # type: ignore[no-untyped-def]
    """The table's fingerprint at its latest snapshot: the session's catalog keeps the table it loaded
    last for a while (Iceberg's caching catalog), which may be from before another writer's commits."""
    spark.sql(f"REFRESH TABLE {table}")
    return fingerprint(spark, table)


def scan_rows(frame) -> int:  # type: ignore[no-untyped-def]
    """Rows the Iceberg scans of an executed DataFrame produced (Spark's numOutputRows, measured)."""
    leaves = frame._jdf.queryExecution().executedPlan().collectLeaves().iterator()
    total = 0
    while leaves.hasNext():
        total += int(leaves.next().metrics().apply("numOutputRows").value())
    return total


def task_classes(frame) -> list[str]:  # type: ignore[no-untyped-def]
    """The classes of the tasks the Iceberg scans of an executed DataFrame read."""
    found = set()
    leaves = frame._jdf.queryExecution().executedPlan().collectLeaves().iterator()
    while leaves.hasNext():
        partitions = leaves.next().inputPartitions().iterator()
        while partitions.hasNext():
            tasks = partitions.next().taskGroup().tasks().iterator()
            while tasks.hasNext():
                found.add(str(tasks.next().getClass().getSimpleName()))
    return sorted(found)


def row_group_reads(spark, catalog: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """A read whose kept files lose row groups to bitmap indexes: the rows its scan produced, measured,
    against plain Spark's scan of the same table (built the same way in every catalog).  Each condition
    holds somewhere in every row group (so min/max and dictionaries keep them all), both at once in few;
    row groups are larger than the gaps zskip joins into one range (JOIN_GAP_BYTES)."""
    table = f"{catalog}.db.ranges"
    big = {"write.parquet.row-group-size-bytes": str(384 * 1024)}
    make_table(spark, table, rows=160_000, files=4, properties=big)
    zskip.create_index(spark, table, "a", kind="bitmap")
    zskip.create_index(spark, table, "s", kind="bitmap")
    first = spark.table(table).orderBy("id").select("a", "s").first()
    where = f"a = {first['a']} AND s = '{first['s']}'"
    read = zskip.read(spark, table, where)
    enabled = spark.conf.get("spark.zskip.enabled", "false")
    spark.conf.set("spark.zskip.enabled", "false")  # Spark's own scan, without zskip's rule
    try:
        plain = spark.table(table).where(where)
        equal = rows(read) == rows(plain)
    finally:
        spark.conf.set("spark.zskip.enabled", enabled)
    return {
        "range_equal": equal,
        "range_scan_rows": scan_rows(read),
        "range_plain_scan_rows": scan_rows(plain),
        "range_tasks": task_classes(read),
    }


def concurrent_publishers(spark, catalog: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Two index builds of different columns of one table at once, each in a thread of its own: how
    each ended (a ConcurrentChangeError is rerun), and the indexes listed afterwards."""
    table = f"{catalog}.db.publishers"
    make_table(spark, table, rows=8_000, files=4)
    outcomes: dict[str, str] = {}
    start = threading.Barrier(2)

    def build(column: str, kind: str) -> None:
        start.wait()
        try:
            zskip.create_index(spark, table, column, kind=kind)
            outcomes[column] = "built"
        except zskip.ConcurrentChangeError:
            outcomes[column] = "conflict"
        except Exception as exc:  # anything else is reported, not swallowed
            outcomes[column] = f"{type(exc).__name__}: {str(exc)[:300]}"

    threads = [threading.Thread(target=build, args=spec) for spec in (("a", "bitmap"), ("s", "bloom"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for column, kind in (("a", "bitmap"), ("s", "bloom")):
        if outcomes[column] == "conflict":
            zskip.create_index(spark, table, column, kind=kind)
    listed = sorted(f"{i.column}:{i.kind}" for i in zskip.list_indexes(spark, table))
    return {"outcomes": outcomes, "listed": listed}


class _Warnings(logging.Handler):
    """The WARNING lines zskip logs while it is attached."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def set_faults(relay: str, faults: str) -> None:
    """The relay's faults from now on (``faults``: ``Faults`` as JSON; bench/s3_requests.py)."""
    request = urllib.request.Request(relay + "/__relay_faults", data=faults.encode(), method="PUT")
    with urllib.request.urlopen(request, timeout=30):
        pass


def planned_by_spark(spark, relay: str, failing: str, typical: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Every request of zskip's own (footers, index files) failing, the JVM's meeting the usual faults:
    each query runs as Spark plans it, with Spark's rows, and says so in one WARNING line (zskip's
    rule: counted as a failure).  Filters not asked before, so no plan is remembered."""
    table = "lake.db.t"
    wheres = {"read": "a < 250 AND s = 'k3'", "sql": "a < 260 AND s = 'k4'", "enabled": "a < 270 AND s = 'k5'"}
    queries = {
        "read": lambda: zskip.read(spark, table, wheres["read"]).select("a", "b", "s"),
        "sql": lambda: zskip.sql(spark, f"SELECT a, b, s FROM {table} WHERE {wheres['sql']}"),
        "enabled": lambda: spark.sql(f"SELECT a, b, s FROM {table} WHERE {wheres['enabled']}"),
    }
    spark.conf.set("spark.zskip.enabled", "false")
    expected = {name: rows(spark.table(table).where(where).select("a", "b", "s")) for name, where in wheres.items()}
    spark.conf.set("spark.zskip.enabled", "true")
    warnings = _Warnings()
    logging.getLogger("zskip").addHandler(warnings)
    found: dict[str, object] = {}
    set_faults(relay, failing)
    try:
        for name, query in queries.items():
            CACHE.clear()
            forget_open_objects()
            before, failures, started = len(warnings.lines), hook_counts(spark).failures, time.monotonic()
            equal = rows(query()) == expected[name]
            found[name] = {
                "equal": equal,
                "warnings": warnings.lines[before:],
                "rule_failures": hook_counts(spark).failures - failures,
                "seconds": round(time.monotonic() - started, 1),
            }
    finally:
        set_faults(relay, typical)
        logging.getLogger("zskip").removeHandler(warnings)
    return found


EVERY_VERB = {
    "status": lambda spark, t: zskip.status(spark, t),
    "optimize": lambda spark, t: zskip.optimize(spark, t, by=["a"]),
    "read": lambda spark, t: zskip.read(spark, t, WHERE).collect(),
    "explain": lambda spark, t: zskip.explain(spark, t, WHERE),
    "sql": lambda spark, t: zskip.sql(spark, f"SELECT count(*) FROM {t} WHERE {WHERE}").collect(),
    "explain_sql": lambda spark, t: zskip.explain_sql(spark, f"SELECT count(*) FROM {t} WHERE {WHERE}"),
    "create_index": lambda spark, t: zskip.create_index(spark, t, "b", kind="bloom"),
    "refresh_indexes": lambda spark, t: zskip.refresh_indexes(spark, t),
    "list_indexes": lambda spark, t: zskip.list_indexes(spark, t),
    "maintain": lambda spark, t: zskip.maintain(spark, t),
}


def refused(spark, call) -> str:  # type: ignore[no-untyped-def]
    """The one-line message of the error ``call`` raises (or what went wrong instead)."""
    try:
        call()
    except zskip.StorageError as exc:
        return str(exc)
    except Exception as exc:
        return f"not a StorageError: {type(exc).__name__}: {str(exc)[:600]}"
    return "no error"


def doomed_tables(spark, store: S3Server) -> list[str]:  # type: ignore[no-untyped-def]
    """A table whose bucket is deleted once it is made and indexed, on a hadoop catalog (``s3a://``).

    Not on the REST catalog: its server reads a table's metadata again for each load, retrying a missing
    bucket for minutes (Iceberg's ``refreshFromMetadataLocation``) before it answers."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS doomed.db")
    spark.sql("CREATE TABLE doomed.db.t USING iceberg AS SELECT * FROM lake.db.t")
    zskip.create_index(spark, "doomed.db.t", "s", kind="bloom")
    store.delete_bucket("doomed")
    return ["doomed.db.t"]


def main(settings: str, work: str) -> None:
    given = json.loads(settings)
    hadoop, rest, bad = given["hadoop"], given["rest"], given["bad"]
    warehouse = given["warehouse"]
    assert not [k for k in os.environ if k.startswith("AWS_")], "the job must run without AWS variables"
    spark = zskip.session(
        warehouse=warehouse, master="local[2]", conf={"spark.sql.shuffle.partitions": "4"} | hadoop | rest | bad
    )
    found: dict[str, object] = {
        "manifest cache": spark.conf.get("spark.sql.catalog.lake.io.manifest.cache-enabled", None)
    }
    seconds: dict[str, float] = {}  # where the job's time goes (the test prints it: CI's time is budgeted)
    started = time.monotonic()
    for catalog, conf in (("lake", hadoop), ("rest", hadoop | rest)):
        found[catalog] = verbs(spark, catalog, warehouse, conf, Path(work), given)
        seconds[catalog], started = time.monotonic() - started, time.monotonic()
    found["publishers"] = {catalog: concurrent_publishers(spark, catalog) for catalog in ("lake", "rest")}
    seconds["publishers"], started = time.monotonic() - started, time.monotonic()
    found["planned by Spark"] = planned_by_spark(spark, given["relay"], given["failing"], given["typical"])
    seconds["planned by Spark"], started = time.monotonic() - started, time.monotonic()
    # what a misconfigured catalog gets: one line naming the setting, and the table as it was
    before = {c: spark.sql(f"SELECT snapshot_id FROM {c}.db.t.snapshots").count() for c in ("lake", "rest")}
    store = S3Server.from_json(given["store"])
    # a store that takes any secret (moto's) reaches the lake's own tables through the wrong one
    wrong_secrets = ("bad_secret", "rest_bad_secret") if store.checks_credentials else ()
    found["errors"] = {
        name: refused(spark, lambda name=name: zskip.status(spark, f"{name}.db.t"))
        for name in ("bad_endpoint", "no_bucket", *wrong_secrets)
    }
    if store.checks_credentials:
        found["errors"]["optimize_bad_secret"] = refused(
            spark, lambda: zskip.optimize(spark, "bad_secret.db.t", by=["a"])
        )
    seconds["errors"], started = time.monotonic() - started, time.monotonic()
    # every verb, through a wrong secret (S3A and S3FileIO), a missing bucket and a bucket deleted under
    # its tables
    tables = {name: f"{name}.db.t" for name in ("no_bucket", *wrong_secrets)}
    tables |= {table.split(".")[0]: table for table in doomed_tables(spark, store)}
    found["every verb"] = {
        f"{verb} {name}": refused(spark, lambda call=call, table=table: call(spark, table))
        for name, table in tables.items()
        for verb, call in EVERY_VERB.items()
    }
    found["unchanged"] = before == {
        c: spark.sql(f"SELECT snapshot_id FROM {c}.db.t.snapshots").count() for c in ("lake", "rest")
    }
    seconds["every verb"] = time.monotonic() - started
    found["seconds"] = seconds
    found["retried"] = retries.snapshot()  # the driver's; each index build task counts its own
    (Path(work) / "found.json").write_text(json.dumps(found, indent=1))
    print(json.dumps(found))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:3])
