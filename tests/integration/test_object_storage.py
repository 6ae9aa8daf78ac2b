"""zskip on object storage: a real S3-compatible server (S3Proxy) and Iceberg's REST catalog server on
loopback, reached through ``s3a://`` (Hadoop's S3A) and ``s3://`` (Iceberg's S3FileIO), with the
credentials and endpoint only in Spark's and the catalog's settings (tests/integration/s3_job.py).

Every client (Spark's S3A, the catalogs' S3FileIO, the REST server's, zskip's pyarrow) reaches the
store through a relay that misbehaves as stores under load do (``Faults.typical``: 8% of requests
throttled, 3% failed, 2% cut, 5% delayed), so every verb and query here is checked under faults."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from pathlib import Path

import pyspark
import pytest
from bench.s3_requests import ZSKIP, Faults

from tests.integration.jobs import run_job
from zskip.iceberg.jvm_dependencies import S3A_HADOOP, spark_line

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def servers():  # type: ignore[no-untyped-def]
    from tests.integration.object_store import missing, rest_catalog, started_s3_server

    reason = missing()
    if reason:
        pytest.skip(reason)
    if spark_line(pyspark.__version__) not in S3A_HADOOP:
        pytest.skip(f"Hadoop's S3A needs the AWS SDK v1 on Spark {pyspark.__version__}; S3FileIO only there")
    from bench.s3_requests import counting_relay

    with started_s3_server() as s3:
        s3.create_bucket("lake")
        with counting_relay(s3.endpoint, FAULTS) as (relay, counts):
            faulty = dataclasses.replace(s3, endpoint=relay)
            with rest_catalog(faulty, "s3://lake/rest", retry_wait_ms=(50, 1000)) as uri:
                yield s3, uri, faulty, counts


FAULTS = Faults.typical(seed=11)  # what every client of the store meets
# retries as the clients' own settings say, with shorter waits than their defaults (2 s for S3FileIO):
# zskip's requests follow the same settings
QUICK_RETRIES = {"s3.retry.min-wait-ms": "50", "s3.retry.max-wait-ms": "1000"}
QUICK_S3A_RETRIES = {
    "spark.hadoop.fs.s3a.retry.interval": "50ms",
    "spark.hadoop.fs.s3a.retry.throttle.interval": "50ms",
    # S3A's own retries only: the AWS SDK's under them wait a second or more on each throttled request
    "spark.hadoop.fs.s3a.attempts.maximum": "1",
}


def _settings(s3, uri: str) -> dict[str, object]:  # type: ignore[no-untyped-def]
    hadoop = s3.hadoop_conf() | QUICK_S3A_RETRIES
    rest = (
        {
            "spark.sql.catalog.rest": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.rest.type": "rest",
            "spark.sql.catalog.rest.uri": uri,
        }
        | s3.catalog_conf("rest")
        | {f"spark.sql.catalog.rest.{key}": value for key, value in QUICK_RETRIES.items()}
    )
    bad: dict[str, str] = {}

    def hadoop_catalog(name: str, warehouse: str, **overrides: str) -> None:
        bad.update(
            {
                f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
                f"spark.sql.catalog.{name}.type": "hadoop",
                f"spark.sql.catalog.{name}.warehouse": warehouse,
                # its own S3A client (Hadoop caches one per bucket), giving up at once
                f"spark.sql.catalog.{name}.hadoop.fs.s3a.impl.disable.cache": "true",
                f"spark.sql.catalog.{name}.hadoop.fs.s3a.attempts.maximum": "1",
                f"spark.sql.catalog.{name}.hadoop.fs.s3a.retry.limit": "1",
                f"spark.sql.catalog.{name}.hadoop.fs.s3a.connection.establish.timeout": "2s",
            }
            | {f"spark.sql.catalog.{name}.hadoop.fs.s3a.{k}": v for k, v in overrides.items()}
        )

    hadoop_catalog("bad_secret", "s3a://lake/wh", **{"secret.key": "not-the-secret"})
    hadoop_catalog("bad_endpoint", "s3a://lake/wh", endpoint="http://127.0.0.1:9")
    hadoop_catalog("no_bucket", "s3a://no-such-bucket/wh")
    # a catalog whose bucket is deleted once its table is made (s3_job.py)
    bad |= {
        "spark.sql.catalog.doomed": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.doomed.type": "hadoop",
        "spark.sql.catalog.doomed.warehouse": "s3a://doomed/wh",
    }
    bad |= {
        "spark.sql.catalog.rest_bad_secret": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.rest_bad_secret.type": "rest",
        "spark.sql.catalog.rest_bad_secret.uri": uri,
    } | s3.catalog_conf("rest_bad_secret")
    bad["spark.sql.catalog.rest_bad_secret.s3.secret-access-key"] = "not-the-secret"
    return {
        "warehouse": "s3a://lake/wh",
        "hadoop": hadoop,
        "rest": rest,
        "bad": bad,
        "relay": s3.endpoint,
        "typical": FAULTS.to_json(),
        "failing": dataclasses.replace(FAULTS, failing=(ZSKIP,)).to_json(),  # zskip's reads keep failing
        # zskip's reads in tasks meet answers cut mid-body (the JVM's clients do not retry those)
        "truncating": dataclasses.replace(FAULTS, clients=(ZSKIP,), truncated=0.2).to_json(),
    }


def test_every_verb_on_s3_through_s3a_and_s3fileio(servers, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from bench.s3_requests import JVM

    s3, uri, faulty, counts = servers
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    s3.create_bucket("doomed")
    before = counts.snapshot()
    settings = _settings(faulty, uri) | {"store": s3.to_json()}  # the store itself, without the relay
    found = run_job("s3_job.py", json.dumps(settings), str(tmp_path), timeout=1500, env=env)
    asked = {key: n - before.get(key, 0) for key, n in counts.snapshot().items()}
    print("s3_job seconds:", found["seconds"], "requests and faults:", asked, "zskip retried:", found["retried"])
    # the store misbehaved for every client, and every verb above succeeded at its first run (pyarrow's
    # client retried most of zskip's failed requests itself: zskip counts only those it tried again)
    for client in (ZSKIP, JVM):
        for fault in ("throttled", "failed", "cut"):
            assert asked.get(f"{client} fault {fault}", 0) >= 3, (client, fault, asked)
    for catalog, folder in (("lake", "wh/db/t"), ("rest", "rest/db/t")):
        result = found[catalog]
        assert result["optimize_commits"] >= 1 and result["files_indexed"] >= 1, result
        if catalog == "lake":  # the long verbs' progress says how many of zskip's requests were retried
            retried = [stage for stage in result["stages"] if re.fullmatch(r".+ \(\d+ requests retried\)", stage)]
            assert {stage.partition(" (")[0] for stage in retried} & {"recording key ranges", "indexing files"}, result
        assert result["read_equal"] and result["sql_equal"] and result["star_equal"], result
        read, total = result["explain_files"]
        assert 0 < read < total, result
        assert any(r < t for r, t in result["star_row_groups"]), result  # the star join pruned the fact table
        assert result["advised"] >= 1 and result["up_to_date"], result
        assert result["vacuum_kept"] >= 2 and result["read_after_vacuum"], result  # manifest and store kept
        assert result["workload_records"] >= 3, result
        assert result["intact"], result  # rows and checksum as written, after every verb under faults
        # zskip's own files went to the object store, beside the table's
        objects = s3.objects("lake", folder)
        for kind in ("zskip/clustering-", "zskip/indexes/manifest-", "zskip/indexes/index-", "zskip/workload/"):
            assert any(o.startswith(f"{folder}/{kind}") for o in objects), (kind, objects[-20:])
    # row groups ruled out inside kept files are not read through S3FileIO either: the same rows scanned
    # (Spark's numOutputRows) as through Hadoop's S3A, fewer than plain Spark's scan of the same table
    for catalog in ("lake", "rest"):
        result = found[catalog]
        assert result["range_equal"] and "RowGroupRange" in result["range_tasks"], result
        assert 0 < result["range_scan_rows"] < result["range_plain_scan_rows"], result
    assert found["rest"]["range_scan_rows"] == found["lake"]["range_scan_rows"], (found["rest"], found["lake"])
    assert found["rest"]["appender"][0] == 0, found["rest"]["appender"]
    assert found["manifest cache"] == "true"  # zskip.session's catalog on S3 keeps the manifests it read
    errors = found["errors"]
    expected = {"bad_endpoint": "fs.s3a.endpoint", "no_bucket": "no-such-bucket"}
    if s3.checks_credentials:  # moto's server takes any secret
        expected |= {"bad_secret": "fs.s3a.secret.key", "optimize_bad_secret": "fs.s3a.secret.key",
                     "rest_bad_secret": "s3.secret-access-key"}  # fmt: skip
    assert set(errors) == set(expected), errors
    for name, setting in expected.items():
        assert setting in errors[name] and "\n" not in errors[name], (name, errors[name])
    assert found["unchanged"] is True
    # zskip's own reads of the store kept failing: each query ran as Spark planned it, with Spark's rows,
    # and said so in one WARNING line (zskip's rule counts it as a failure and warns in Spark's log)
    for name, outcome in found["planned by Spark"].items():
        assert outcome["equal"], (name, outcome)
        if name == "enabled":
            assert outcome["rule_failures"] == 1 and outcome["warnings"] == [], (name, outcome)
        else:
            assert len(outcome["warnings"]) == 1 and "runs as Spark plans it" in outcome["warnings"][0], (name, outcome)
    # two index builds at once: both indexes survive (the second publisher is refused and reruns), on a
    # hadoop catalog and on a REST catalog, whose commits do not compare the base they were made on
    for catalog, publishers in found["publishers"].items():
        assert publishers["listed"] == ["a:bitmap", "s:bloom"], (catalog, publishers)
        assert set(publishers["outcomes"].values()) <= {"built", "conflict"}, (catalog, publishers)
    # every verb tells a storage failure as one, in one line naming the setting or the bucket, never as a
    # damaged index to drop
    assert {call.split(" ")[1] for call in found["every verb"]} == (
        {"bad_secret", "no_bucket", "rest_bad_secret", "doomed"} if s3.checks_credentials else {"no_bucket", "doomed"}
    )
    for call, message in found["every verb"].items():
        name = call.split(" ")[1]
        named = {"bad_secret": "fs.s3a.secret.key", "no_bucket": "no-such-bucket", "rest_bad_secret":
                 "s3.secret-access-key", "doomed": "doomed"}[name]  # fmt: skip
        assert named in message and "\n" not in message and "UNSET" not in message, (call, message)


def test_ranged_reads_of_one_object_ask_its_length_once(servers) -> None:  # type: ignore[no-untyped-def]
    """Planning reads several blobs of one index file: one handle per object, not a HEAD per blob."""
    from bench.s3_requests import counting_relay

    from tests.integration.object_store import ACCESS_KEY, SECRET_KEY
    from zskip.storage import FileAccess, forget_open_objects

    s3 = servers[0]
    with counting_relay(s3.endpoint) as (relay, counts):
        properties = {"s3.endpoint": relay, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY}
        access = FileAccess.of(
            {"io": "org.apache.iceberg.aws.s3.S3FileIO", "properties": properties | {"s3.path-style-access": "true"}}
        )
        access.write("s3://lake/ranged/blobs.bin", bytes(range(256)) * 400)
        before = counts.snapshot()
        assert [access.read("s3://lake/ranged/blobs.bin", offset=i * 1000, length=3) for i in range(6)] == [
            bytes([(i * 1000 + j) % 256 for j in range(3)]) for i in range(6)
        ]
        for _ in range(100):  # the relay counts a request once it has passed the answer on
            after = counts.snapshot()
            asked = {key: after.get(key, 0) - before.get(key, 0) for key in after}
            if asked.get(f"{ZSKIP} GET", 0) >= 6:
                break
            time.sleep(0.05)
        assert (asked[f"{ZSKIP} HEAD"], asked[f"{ZSKIP} GET"]) == (1, 6)
        # opened ahead (as planning opens index files while Spark plans), the reads ask no length
        forget_open_objects()
        before = counts.snapshot()
        access.open_ahead("s3://lake/ranged/blobs.bin")
        opened = _asked_once_counted(counts, before, f"{ZSKIP} HEAD")
        assert access.read("s3://lake/ranged/blobs.bin", offset=5, length=2) == bytes([5, 6])
        read = _asked_once_counted(counts, opened, f"{ZSKIP} GET")
        assert _asked(before, opened).get(f"{ZSKIP} HEAD") == 1
        assert _asked(opened, read).get(f"{ZSKIP} HEAD", 0) == 0 and _asked(opened, read)[f"{ZSKIP} GET"] == 1


def test_pyarrows_parquet_reads_are_retried_one_request_at_a_time(servers) -> None:  # type: ignore[no-untyped-def]
    """An index build or key-range task reads a column through pyarrow's Parquet reader: many ranged
    requests per file.  With half of them failing, the file's reads run again whole would almost never all
    pass; each request tried again on its own, every row is read (and the retries are counted)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from bench.s3_requests import counting_relay

    from tests.integration.object_store import ACCESS_KEY, SECRET_KEY
    from zskip import retries
    from zskip.storage import FileAccess

    s3 = servers[0]
    written = pa.table({"a": pa.array(range(40_000), pa.int64()), "s": [f"k{i % 97}" for i in range(40_000)]})
    buffer = io.BytesIO()
    pq.write_table(written, buffer, row_group_size=1_000)  # 40 row groups
    faults = Faults(failed=0.5, clients=(ZSKIP,), seed=5)
    with counting_relay(s3.endpoint, faults) as (relay, counts):
        properties = {"s3.endpoint": relay, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY}
        access = FileAccess.of(
            {"io": "org.apache.iceberg.aws.s3.S3FileIO",
             "properties": properties | {"s3.path-style-access": "true"} | QUICK_RETRIES}
        )  # fmt: skip
        counts.set_faults(Faults())
        access.write("s3://lake/retried/rows.parquet", buffer.getvalue())
        counts.set_faults(faults)
        before = retries.counts.total()
        parquet = access.open_parquet("s3://lake/retried/rows.parquet")
        # row group by row group, as an index build reads a file: a request each
        read = pa.concat_tables(parquet.read_row_group(g) for g in range(parquet.num_row_groups))
        assert read.equals(written)
        assert retries.counts.total() > before
        assert counts.snapshot().get(f"{ZSKIP} fault failed", 0) >= 20


def _asked(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {key: after.get(key, 0) - before.get(key, 0) for key in after}


def _asked_once_counted(counts, before: dict[str, int], request: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """The relay's counts once it has counted one ``request`` since ``before`` (it counts a request when
    it has passed the answer on)."""
    for _ in range(100):
        after = counts.snapshot()
        if _asked(before, after).get(request, 0) >= 1:
            return after  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"no {request} counted")


def test_zskips_reads_and_writes_outlast_a_store_that_throttles_fails_and_cuts_answers(servers) -> None:  # type: ignore[no-untyped-def]
    """8% of requests throttled, 3% failed, 2% cut before the answer, 2% cut mid-body and 5% delayed:
    every small ranged read (a footer's 8-byte length, met by a 503, is the one the store's client does
    not retry), whole read, write, listing and deletion succeeds, with the bytes as written, and the
    retries are counted."""
    from bench.s3_requests import counting_relay

    from tests.integration.object_store import ACCESS_KEY, SECRET_KEY
    from zskip.retries import counts as retries
    from zskip.storage import FileAccess, forget_open_objects

    s3 = servers[0]
    faults = dataclasses.replace(Faults.typical(seed=7), truncated=0.02)  # answers cut mid-body too
    with counting_relay(s3.endpoint, faults) as (relay, counts):
        properties = {"s3.endpoint": relay, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY,
                      "s3.path-style-access": "true"} | QUICK_RETRIES  # fmt: skip
        access = FileAccess.of({"io": "org.apache.iceberg.aws.s3.S3FileIO", "properties": properties})
        before = retries.total()
        data = bytes(range(256)) * 200
        names = [f"s3://lake/faults/blob-{i}.bin" for i in range(12)]
        for name in names:
            access.write(name, data)
        for round in range(6):
            forget_open_objects()  # each round opens every object again
            for i, name in enumerate(names):
                offset = (round * 37 + i * 101) % (len(data) - 8)
                assert access.read(name, offset=offset, length=8) == data[offset : offset + 8]
        assert all(access.read(name) == data for name in names[:5])
        assert [location for location, _, _ in access.files_under("s3://lake/faults")] == sorted(names)
        for name in names:
            access.delete(name)
        assert access.missing(names) == set(names)
        asked = counts.snapshot()
    faults = sum(n for key, n in asked.items() if key.startswith(f"{ZSKIP} fault") and "delayed" not in key)
    assert faults >= 8, asked  # the store misbehaved, and every call above still succeeded
    assert retries.total() - before >= 1, asked
