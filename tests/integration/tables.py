"""Test tables built with Spark, and the facts tests compare before and after."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class Fingerprint:
    rows: int
    checksum: int


def fingerprint(spark: SparkSession, table: str) -> Fingerprint:
    """Row count and an order-independent checksum over every column of every row."""
    row = spark.sql(
        f"SELECT count(*) AS n, coalesce(sum(CAST(xxhash64(*) AS DECIMAL(38, 0))), 0) AS h FROM {table}"
    ).first()
    assert row is not None
    return Fingerprint(int(row["n"]), int(row["h"]))


def make_table(
    spark: SparkSession,
    name: str,
    *,
    rows: int = 60_000,
    files: int = 12,
    partitioned_by: str | None = None,
    seed: int = 1,
    properties: dict[str, str] | None = None,
) -> str:
    """A table of mixed types spread at random over ``files`` files."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name.rsplit('.', 1)[0]}")
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    frame = spark.range(rows).selectExpr(
        f"CAST(floor(rand({seed}) * 1000) AS INT) AS a",
        f"CAST(floor(pow(rand({seed + 1}), 4) * 100000) AS BIGINT) AS b",
        f"date_add(DATE'1990-01-01', CAST(floor(rand({seed + 2}) * 5000) AS INT)) AS d",
        f"concat('k', CAST(floor(rand({seed + 3}) * 50) AS STRING)) AS s",
        f"CASE WHEN rand({seed + 4}) < 0.05 THEN NULL ELSE rand({seed + 5}) * 100 - 50 END AS x",
        f"CAST(rand({seed + 6}) * 1000 AS DECIMAL(12, 3)) AS m",
        "id",
        f"CAST(floor(rand({seed + 7}) * 4) AS INT) AS p",
    )
    frame = frame.repartition(files)
    writer = frame.writeTo(name).using("iceberg").tableProperty("format-version", "2")
    for key, value in (properties or {}).items():
        writer = writer.tableProperty(key, value)
    if partitioned_by:
        writer = writer.partitionedBy(partitioned_by)
    writer.create()
    return name


def table_bytes(spark: SparkSession, table: str) -> int:
    """Bytes of the table's current data files."""
    from zskip.iceberg.files import data_files

    return sum(data_files(spark, table)["file_size_in_bytes"].to_pylist())


# appender_job.py appends batches of generated_rows with ids from here on
APPENDED_FIRST_ID = 10_000_000
APPENDED_BATCH_ROWS = 500


def generated_rows(spark: SparkSession, start: int, end: int) -> DataFrame:
    """Rows with ids ``start`` to ``end - 1`` in ``make_table``'s schema, every value a function of the
    id, so another process can append them and a test can rebuild exactly what it appended."""
    return spark.range(start, end).selectExpr(
        "CAST(id % 1000 AS INT) AS a",
        "CAST((id * 7919) % 100000 AS BIGINT) AS b",
        "date_add(DATE'1990-01-01', CAST(id % 5000 AS INT)) AS d",
        "concat('k', CAST(id % 50 AS STRING)) AS s",
        "CAST(id % 100 AS DOUBLE) - 50 AS x",
        "CAST(id % 1000 AS DECIMAL(12, 3)) AS m",
        "id",
        "CAST(id % 4 AS INT) AS p",
    )


def frame_fingerprint(frame: DataFrame) -> Fingerprint:
    """``fingerprint`` of a DataFrame's rows (the same sum, so fingerprints of parts add up)."""
    row = frame.selectExpr("count(*) AS n", "coalesce(sum(CAST(xxhash64(*) AS DECIMAL(38, 0))), 0) AS h").first()
    assert row is not None
    return Fingerprint(int(row["n"]), int(row["h"]))
