"""Clustered on write: the rows a write puts in a table zskip clustered come out in the table's curve-key
order (zskip.layout.write_keys, ClusteredWrites.java), and the table holds the rows it holds with zskip
off."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import zskip
from tests.integration.switches import zskip_off, zskip_on
from tests.integration.tables import fingerprint, make_table
from zskip.iceberg.table import load_table
from zskip.tablefiles.clustering_store import read_store

pytestmark = pytest.mark.integration

NS = "lake.cwrites"
# a write's rows in an order the curve does not have: a, b and the rest drawn from hashes of id (the same
# rows on every run, as MERGE's source must be) over two tasks
NEW_ROWS = (
    "SELECT CAST(pmod(xxhash64(id, 11), 1000) AS INT) AS a, "
    "CAST(pow(pmod(xxhash64(id, 12), 1000) / 1000.0, 4) * 100000 AS BIGINT) AS b, "
    "date_add(DATE'1990-01-01', CAST(pmod(xxhash64(id, 13), 5000) AS INT)) AS d, "
    "concat('k', CAST(pmod(xxhash64(id, 14), 50) AS STRING)) AS s, "
    "CAST(pmod(xxhash64(id, 15), 10000) / 100.0 - 50 AS DOUBLE) AS x, "
    "CAST(pmod(xxhash64(id, 16), 1000000) / 1000.0 AS DECIMAL(12, 3)) AS m, id + 1000000 AS id, "
    "CAST(pmod(xxhash64(id, 17), 4) AS INT) AS p FROM range(0, 3000, 1, 2)"
)


@contextmanager
def settings(spark: Any, values: dict[str, str]) -> Iterator[None]:
    before = {key: spark.conf.get(key, None) for key in values}
    for key, value in values.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def data_files(spark: Any, table: str) -> set[str]:
    return {r[0] for r in spark.sql(f"SELECT file_path FROM {table}.files WHERE content = 0").collect()}


def keys_of(spark: Any, table: str, path: str) -> np.ndarray:
    """The curve keys of the rows of data file ``path``, in the file's order, by the table's recorded spec."""
    store = read_store(load_table(spark, table))
    assert store is not None
    rows = pq.read_table(Path(path.removeprefix("file:")))
    return store.spec.keys(rows)


def in_key_order(spark: Any, table: str, paths: set[str]) -> list[bool]:
    return [_sorted(keys_of(spark, table, p)) for p in sorted(paths)]


def _sorted(keys: np.ndarray) -> bool:
    return bool(np.all(keys[1:] >= keys[:-1]))


@pytest.fixture(scope="module")
def twins(spark: Any) -> dict[str, list[tuple[str, int]]]:
    """Per row-level write mode, two identical tables zskip clustered along a raw Z-order of (a, b) (one
    written with zskip off, one with it on) and the snapshot each test starts from: made once, rolled back to."""
    made: dict[str, list[tuple[str, int]]] = {}
    for mode in ("copy-on-write", "merge-on-read"):
        made[mode] = []
        for name in ("plain", "clustered"):
            table = f"{NS}.t_{mode.replace('-', '_')}_{name}"
            properties = {f"write.{k}.mode": mode for k in ("delete", "update", "merge")}
            make_table(spark, table, rows=8_000, files=4, properties=properties)
            zskip.optimize(
                spark,
                table,
                by=["a", "b"],
                curve="zorder",
                mapping="raw",
                target_file_size=40_000,
                row_group_size=4_000,
            )
            snapshot = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at DESC").first()[0]
            made[mode].append((table, snapshot))
    return made


WRITES = {
    "insert": "INSERT INTO {t} " + NEW_ROWS,
    "insert-overwrite": "INSERT OVERWRITE {t} SELECT * FROM {t} WHERE a >= 300 UNION ALL " + NEW_ROWS,
    "update": "UPDATE {t} SET b = 100000 - b WHERE a < 400",
    "delete": "DELETE FROM {t} WHERE a BETWEEN 100 AND 600 AND b < 5000",
    "merge": "MERGE INTO {t} t USING (" + NEW_ROWS + ") u ON t.id = u.id - 1000000 + 17 "
    "WHEN MATCHED AND t.a < 500 THEN UPDATE SET t.b = u.b WHEN MATCHED THEN DELETE "
    "WHEN NOT MATCHED THEN INSERT *",
}


def _write(spark: Any, table: str, kind: str) -> None:
    if kind == "append":
        spark.sql(NEW_ROWS).writeTo(table).append()
    elif kind == "overwrite-partitions":
        spark.sql(NEW_ROWS).writeTo(table).overwritePartitions()
    else:
        spark.sql(WRITES[kind].format(t=table))


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
@pytest.mark.parametrize("kind", [*WRITES, "append", "overwrite-partitions"])
def test_a_write_leaves_spark_s_rows_in_curve_order(
    spark: Any, twins: dict[str, list[tuple[str, int]]], mode: str, kind: str
) -> None:
    if mode == "merge-on-read" and kind in ("insert", "insert-overwrite", "append", "overwrite-partitions"):
        pytest.skip("a plain write does not depend on the row-level write mode")
    tables = []
    for table, snapshot in twins[mode]:
        spark.sql(f"CALL lake.system.rollback_to_snapshot('{table.removeprefix('lake.')}', {snapshot})")
        tables.append(table)
    plain, clustered = tables
    before = data_files(spark, clustered)
    with zskip_off(spark):
        _write(spark, plain, kind)
    with zskip_on(spark):
        _write(spark, clustered, kind)
    with zskip_off(spark):
        assert fingerprint(spark, plain) == fingerprint(spark, clustered)
    written = data_files(spark, clustered) - before
    if mode == "merge-on-read" and kind == "delete":
        assert not written  # only delete files
        return
    assert written
    assert all(in_key_order(spark, clustered, written)), kind
    if kind in ("insert", "append"):
        # the test can fail: without zskip the same write's files are not in the curve's order
        assert not all(in_key_order(spark, plain, data_files(spark, plain) - before))


@pytest.fixture(scope="module")
def layouts(spark: Any) -> dict[str, str]:
    """Tables laid out by a rank Hilbert curve over a date and a string, by a partitioned Z-order, and through a
    dimension."""
    made = {}
    table = make_table(spark, f"{NS}.rank", rows=6_000, files=3)
    zskip.optimize(spark, table, by=["d", "s"], curve="hilbert", mapping="rank", target_file_size=40_000)
    made["rank"] = table
    table = make_table(spark, f"{NS}.parted", rows=6_000, files=3, partitioned_by="p")
    zskip.optimize(spark, table, by=["a", "x"], curve="zorder", target_file_size=40_000)
    made["partitioned"] = table
    spark.sql(f"DROP TABLE IF EXISTS {NS}.dim PURGE")
    spark.sql(
        "SELECT CAST(id AS INT) AS a_id, concat('r', CAST(pmod(id * 31, 5) AS STRING)) AS region FROM range(1000)"
    ).coalesce(1).writeTo(f"{NS}.dim").using("iceberg").create()
    table = make_table(spark, f"{NS}.fact", rows=6_000, files=3)
    by = [zskip.Dimension("a", f"{NS}.dim", key="a_id", by=["region"]), "b"]
    zskip.optimize(spark, table, by=by, target_file_size=40_000, mode="full")
    made["dimension"] = table
    return made


@pytest.mark.parametrize("layout", ["rank", "partitioned", "dimension"])
def test_an_insert_is_written_in_the_order_of_each_kind_of_layout(
    spark: Any, layouts: dict[str, str], layout: str
) -> None:
    table = layouts[layout]
    before, rows = data_files(spark, table), fingerprint(spark, table).rows
    with zskip_on(spark):
        spark.sql(f"INSERT INTO {table} {NEW_ROWS}")
    written = data_files(spark, table) - before
    assert len(written) >= (4 if layout == "partitioned" else 1)  # a file per partition value and task
    assert all(in_key_order(spark, table, written)), layout
    assert fingerprint(spark, table).rows == rows + 3000


# auto on the unpartitioned table cuts ranges at the recorded bounds; range on the partitioned one ranges
# over the partition and the key with Spark's range partitioning
@pytest.mark.parametrize(("layout", "order"), [("rank", "sort"), ("dimension", "auto"), ("partitioned", "range")])
def test_a_copy_on_write_merge_is_written_in_the_order_of_each_kind_of_layout(
    spark: Any, layouts: dict[str, str], layout: str, order: str
) -> None:
    table = layouts[layout]
    spark.sql(
        f"ALTER TABLE {table} SET TBLPROPERTIES ('write.merge.mode' = 'copy-on-write', 'zskip.write.order' = '{order}')"
    )
    start = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at DESC").first()[0]
    before = data_files(spark, table)
    with zskip_off(spark):
        spark.sql(WRITES["merge"].format(t=table))
        expected = fingerprint(spark, table)
    spark.sql(f"CALL lake.system.rollback_to_snapshot('{table.removeprefix('lake.')}', {start})")
    with zskip_on(spark):
        spark.sql(WRITES["merge"].format(t=table))
    with zskip_off(spark):
        assert fingerprint(spark, table) == expected
    written = data_files(spark, table) - before
    assert written and all(in_key_order(spark, table, written)), layout


@pytest.mark.smoke
def test_range_mode_partitions_the_curve_and_none_leaves_writes_alone(spark: Any) -> None:
    table = make_table(spark, f"{NS}.modes", rows=6_000, files=3)
    zskip.optimize(spark, table, by=["a", "b"], curve="zorder", mapping="raw", target_file_size=40_000)
    assert (zskip.status(spark, table).write_order or "").startswith("auto (the default)")
    with zskip_on(spark):  # auto: ranges cut at the recorded bounds on an unpartitioned table
        assert "zskip_write_range(" in spark.sql(f"EXPLAIN INSERT INTO {table} {NEW_ROWS}").first()[0]
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('zskip.write.order' = 'sort')")
    with zskip_on(spark):
        shown = spark.sql(f"EXPLAIN INSERT INTO {table} {NEW_ROWS}").first()[0]
        assert "zskip_curve_key(" in shown and "zskip_write_range(" not in shown, shown
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('zskip.write.order' = 'range')")
    assert (zskip.status(spark, table).write_order or "").startswith("range (zskip.write.order = range)")
    before = data_files(spark, table)
    # four write tasks (Spark's adaptive execution would join such small ones into one); the recorded
    # bounds cut the key where the table's row groups start, three ranges here
    with zskip_on(spark), settings(spark, {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "4"}):
        shown = spark.sql(f"EXPLAIN INSERT INTO {table} {NEW_ROWS}").first()[0]
        spark.sql(f"INSERT INTO {table} {NEW_ROWS}")
    # cut at the bounds optimize recorded: a hash repartition, not Spark's range partitioning (which samples)
    assert "hashpartitioning(zskip_write_range(" in shown and "rangepartitioning" not in shown, shown
    written = data_files(spark, table) - before
    assert len(written) == 3 and all(in_key_order(spark, table, written))
    spans = sorted((int(k.min()), int(k.max())) for k in (keys_of(spark, table, p) for p in written))
    assert all(low > high for (_, high), (low, _) in itertools.pairwise(spans)), spans  # no overlap

    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('zskip.write.order' = 'none')")
    assert zskip.status(spark, table).write_order == "off (zskip.write.order = none)"
    before = data_files(spark, table)
    with zskip_on(spark):
        spark.sql(f"INSERT INTO {table} {NEW_ROWS}")
    assert not all(in_key_order(spark, table, data_files(spark, table) - before))


def test_explain_shows_the_sort_and_a_table_zskip_never_clustered_is_written_as_spark_writes_it(spark: Any) -> None:
    clustered = make_table(spark, f"{NS}.explained", rows=2_000, files=2)
    zskip.optimize(spark, clustered, by=["a", "b"], curve="zorder", mapping="raw", target_file_size=40_000)
    untouched = make_table(spark, f"{NS}.untouched", rows=2_000, files=2)
    with zskip_on(spark):
        shown = spark.sql(f"EXPLAIN INSERT INTO {clustered} {NEW_ROWS}").first()[0]
        assert "zskip_curve_key" in shown, shown
        assert "zskip_curve_key" not in spark.sql(f"EXPLAIN INSERT INTO {untouched} {NEW_ROWS}").first()[0]
    with zskip_off(spark):
        assert "zskip_curve_key" not in spark.sql(f"EXPLAIN INSERT INTO {clustered} {NEW_ROWS}").first()[0]


@pytest.mark.smoke
def test_a_streaming_query_writes_each_batch_clustered(spark: Any, tmp_path: Path) -> None:
    table = make_table(spark, f"{NS}.stream", rows=4_000, files=2)
    zskip.optimize(spark, table, by=["a", "b"], curve="zorder", mapping="raw", target_file_size=40_000)
    source = tmp_path / "arriving"
    for batch in range(3):  # two files each
        spark.sql(NEW_ROWS.replace("id + 1000000", f"id + {batch * 10_000}")).write.mode("append").parquet(str(source))
    before, rows = data_files(spark, table), fingerprint(spark, table).rows
    with zskip_on(spark):
        query = (
            spark.readStream.schema(spark.table(table).schema)
            .option("maxFilesPerTrigger", 2)
            .parquet(str(source))
            .writeStream.format("iceberg")
            .outputMode("append")
            .trigger(availableNow=True)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .toTable(table)
        )
        query.awaitTermination(300)
    assert query.exception() is None
    written = data_files(spark, table) - before
    assert len(written) >= 3 and all(in_key_order(spark, table, written))
    assert fingerprint(spark, table).rows == rows + 9_000


def test_a_key_zskip_cannot_make_leaves_the_write_to_spark(spark: Any) -> None:
    table = make_table(spark, f"{NS}.unkeyed", rows=2_000, files=2)
    zskip.optimize(spark, table, by=["a", "b"], curve="zorder", mapping="raw", target_file_size=40_000)
    store = Path(load_table(spark, table).property("zskip.clustering.store").removeprefix("file:"))
    store.write_bytes(b"not a puffin file")
    rows = fingerprint(spark, table).rows
    with zskip_on(spark):
        spark.sql(f"INSERT INTO {table} {NEW_ROWS}")
        assert "zskip_curve_key" not in spark.sql(f"EXPLAIN INSERT INTO {table} {NEW_ROWS}").first()[0]
    assert fingerprint(spark, table).rows == rows + 3_000


def test_concurrent_clustered_writes_commit_as_they_would_without_zskip(spark: Any) -> None:
    """Two appends and a MERGE at once, from three threads: Iceberg's optimistic commits retry as without zskip, every
    row lands and every file written is in key order."""
    # snapshot isolation: under Iceberg's default (serializable) a MERGE that inserts fails on any append
    # committed meanwhile, with zskip or without
    isolation = {"write.merge.isolation-level": "snapshot"}
    table = make_table(spark, f"{NS}.concurrent", rows=4_000, files=2, properties=isolation)
    zskip.optimize(spark, table, by=["a", "b"], curve="zorder", mapping="raw", target_file_size=40_000)
    before, rows = data_files(spark, table), fingerprint(spark, table).rows
    statements = [
        f"INSERT INTO {table} {NEW_ROWS.replace('id + 1000000', f'id + {offset}')}" for offset in (2_000_000, 3_000_000)
    ] + [f"MERGE INTO {table} t USING ({NEW_ROWS}) u ON t.id = u.id WHEN NOT MATCHED THEN INSERT *"]
    failures: list[BaseException] = []

    def run(statement: str) -> None:
        try:
            spark.sql(statement)
        except BaseException as exc:  # reported below
            failures.append(exc)

    with zskip_on(spark):
        threads = [threading.Thread(target=run, args=(s,)) for s in statements]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
    assert not failures, failures
    written = data_files(spark, table) - before
    assert len(written) >= 3 and all(in_key_order(spark, table, written))
    assert fingerprint(spark, table).rows == rows + 9_000


def test_a_clustered_column_promoted_since_the_layout_leaves_writes_unsorted_until_the_next_optimize(
    spark: Any,
) -> None:
    table = make_table(spark, f"{NS}.promoted", rows=2_000, files=2)
    zskip.optimize(spark, table, by=["a", "b"], curve="zorder", mapping="raw", target_file_size=40_000)
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN a TYPE BIGINT")
    with zskip_on(spark):
        assert "zskip_curve_key" not in spark.sql(f"EXPLAIN INSERT INTO {table} {NEW_ROWS}").first()[0]
        spark.sql(f"INSERT INTO {table} {NEW_ROWS}")
        zskip.optimize(spark, table, by=["a", "b"], curve="zorder", mapping="raw", target_file_size=40_000)
        assert "zskip_curve_key" in spark.sql(f"EXPLAIN INSERT INTO {table} {NEW_ROWS}").first()[0]


def test_maintain_records_files_written_in_curve_order_and_rewrites_the_others(spark: Any) -> None:
    table = make_table(spark, f"{NS}.kept", rows=6_000, files=3)
    zskip.optimize(spark, table, by=["a", "b"], curve="zorder", mapping="raw", target_file_size=20_000)
    laid_out = data_files(spark, table)
    with zskip_on(spark):
        spark.sql(f"INSERT INTO {table} {NEW_ROWS}")
    clustered = data_files(spark, table) - laid_out
    rows = fingerprint(spark, table)

    result = zskip.maintain(spark, table)  # only files in curve order: recorded, nothing rewritten
    assert result.optimize is not None and "recorded as laid out, none rewritten" in result.optimize.reason, result
    assert data_files(spark, table) == laid_out | clustered and fingerprint(spark, table) == rows
    store = read_store(load_table(spark, table))
    assert store is not None and clustered <= set(store.ranges["file_path"].to_pylist())
    assert zskip.status(spark, table).up_to_date

    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('zskip.write.order' = 'none')")
    with zskip_on(spark):
        spark.sql(f"INSERT INTO {table} {NEW_ROWS.replace('id + 1000000', 'id + 2000000')}")
    plain = data_files(spark, table) - laid_out - clustered
    rows = fingerprint(spark, table)
    result = zskip.maintain(spark, table)  # the arrival-order files are rewritten, the others stay
    assert result.optimize is not None and result.optimize.files_rewritten == len(plain), result
    after = data_files(spark, table)
    assert laid_out | clustered <= after and not plain & after and fingerprint(spark, table) == rows
