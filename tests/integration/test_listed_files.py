"""Scans planned from a snapshot's file list in memory read exactly the tasks Iceberg plans itself.

zskip hands each Iceberg scan of a query the tasks Iceberg's own planning would give it, from the
snapshot's live files read once (``SnapshotFiles.java``), so Spark's optimizer does not read the
manifests on every query.  These tests compare the two plans task by task (file, byte range,
residual) on a table with two partition specs and an added column, and check that a table with
delete files keeps Iceberg's own planning.
"""

from __future__ import annotations

import pyspark
import pytest

from tests.integration.tables import make_table
from zskip.iceberg.jvm_dependencies import spark_major
from zskip.iceberg.scans import forget_listed_files, listed_scan_count, planned_tasks, query_scans

TABLE = "lake.listed.evolved"

# Spark 4.1 plans the scans of the tables its catalog loads again, so zskip leaves Iceberg's own planning
# alone there (SnapshotFiles.reading); the tests that need a listed scan run on Spark 3.5
LISTED = pytest.mark.skipif(
    spark_major(pyspark.__version__) >= 4, reason="scans are planned from file lists on Spark 3.5 only"
)

FILTERS = [
    "a = 17",
    "a BETWEEN 100 AND 180 AND p = 2",
    "p IN (0, 3)",
    "p = 1 OR b < 50",
    "s IN ('k1', 'k7') AND d >= DATE'1995-01-01'",
    "s LIKE 'k4%'",
    "x IS NULL",
    "x > 49.5",
    "m < 2.5",
    "NOT (a < 990)",
    "z = 3",
    "z IS NULL AND a < 10",
    "id >= 0",
    "a = -1",
]


@pytest.fixture(scope="module")
def evolved(spark) -> str:
    """Partitioned by ``p``, then also by ``bucket(4, a)``, with a column added after the first files."""
    make_table(spark, TABLE, rows=20_000, files=6, partitioned_by="p")
    spark.sql(f"ALTER TABLE {TABLE} ADD PARTITION FIELD bucket(4, a)")
    spark.sql(f"ALTER TABLE {TABLE} ADD COLUMN z INT")
    more = (
        spark.table(TABLE)
        .where("id < 3000")
        .selectExpr("a", "b", "d", "s", "x", "m", "id + 100000 AS id", "p", "CAST(id % 7 AS INT) AS z")
    )
    more.repartition(3).writeTo(TABLE).append()
    return TABLE


@LISTED
@pytest.mark.smoke
@pytest.mark.parametrize("where", FILTERS)
def test_a_listed_scan_reads_the_tasks_iceberg_plans_and_the_same_rows(spark, evolved, where: str) -> None:
    plain = spark.table(evolved).where(where)
    before = listed_scan_count(spark)
    listed = query_scans(spark.table(evolved).where(where)).frame
    assert listed_scan_count(spark) > before, "the scan planned its own files"
    assert planned_tasks(listed) == planned_tasks(plain)
    assert sorted(listed.collect()) == sorted(plain.collect())


def test_the_session_can_turn_listing_off(spark, evolved) -> None:
    spark.conf.set("spark.zskip.planning.listedFiles", "false")
    try:
        before = listed_scan_count(spark)
        frame = query_scans(spark.table(evolved).where("a = 5")).frame
        assert planned_tasks(frame)  # planned, by Iceberg itself
        assert listed_scan_count(spark) == before
    finally:
        spark.conf.unset("spark.zskip.planning.listedFiles")


def test_a_table_with_delete_files_keeps_icebergs_own_planning(spark) -> None:
    table = make_table(
        spark,
        "lake.listed.deleted",
        rows=5_000,
        files=3,
        properties={"write.delete.mode": "merge-on-read"},
    )
    spark.sql(f"DELETE FROM {table} WHERE a < 100")
    before = listed_scan_count(spark)
    listed = query_scans(spark.table(table).where("a < 300")).frame
    assert listed_scan_count(spark) == before
    plain = spark.table(table).where("a < 300")
    assert sorted(listed.collect()) == sorted(plain.collect())
    assert listed.count() == spark.sql(f"SELECT count(*) FROM {table} WHERE a BETWEEN 100 AND 299").first()[0]


def test_a_new_snapshot_is_listed_anew(spark) -> None:
    table = make_table(spark, "lake.listed.growing", rows=2_000, files=2)
    first = query_scans(spark.table(table).where("a >= 0")).frame.count()
    spark.range(500).selectExpr(
        "7 AS a",
        "CAST(id AS BIGINT) AS b",
        "DATE'2001-01-01' AS d",
        "'k1' AS s",
        "1.0D AS x",
        "CAST(1 AS DECIMAL(12, 3)) AS m",
        "id + 10000 AS id",
        "0 AS p",
    ).writeTo(table).append()
    assert query_scans(spark.table(table).where("a >= 0")).frame.count() == first + 500


@LISTED
@pytest.mark.smoke
def test_forgotten_lists_are_read_again(spark, evolved) -> None:
    where = "a BETWEEN 10 AND 20"
    expected = planned_tasks(spark.table(evolved).where(where))
    forget_listed_files(spark)
    before = listed_scan_count(spark)
    listed = query_scans(spark.table(evolved).where(where)).frame
    assert listed_scan_count(spark) == before + 1
    assert planned_tasks(listed) == expected
