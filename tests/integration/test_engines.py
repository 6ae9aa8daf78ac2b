"""Other engines skip files on a zskip layout: pyiceberg and DuckDB plan fewer files and return Spark's rows.

Skipped with the reason when the engines are not installed (the dev extras install them).
"""

from __future__ import annotations

import pytest
from bench.engines import duckdb_connection, duckdb_count, metadata_location, pyiceberg_count, spark_count

import zskip
from tests.integration.tables import make_table, table_bytes
from zskip.layout.compare import copy_table

pytestmark = pytest.mark.integration

pytest.importorskip("pyiceberg", reason="pyiceberg is not installed (pip install -e '.[dev]')")
pytest.importorskip("duckdb_extension_iceberg", reason="duckdb-extension-iceberg is not installed (dev extras)")

WHERES = [
    "a >= 100 AND a <= 160",
    "d = DATE'2000-01-01'",
    "a < 300 AND d >= DATE'2001-01-01'",
    "s = 'k7' OR a = 5",
]


def test_pyiceberg_and_duckdb_plan_fewer_files_on_a_zskip_layout_and_return_sparks_rows(spark) -> None:
    loaded = make_table(spark, "lake.engines.loaded", rows=40_000, files=16)
    clustered = "lake.engines.clustered"
    copy_table(spark, loaded, clustered)
    zskip.optimize(spark, clustered, by=["a", "d"], mode="full", target_file_size=table_bytes(spark, loaded) // 16)
    connection = duckdb_connection()
    planned: dict[str, dict[str, int]] = {}
    for table in (loaded, clustered):
        metadata = metadata_location(spark, table)
        planned[table] = {"pyiceberg": 0, "duckdb": 0, "spark": 0}
        for where in WHERES:
            expected = spark_count(spark, table, where, "id")
            assert expected.rows > 0, where
            for engine, count in (
                ("pyiceberg", pyiceberg_count(metadata, where, "id")),
                ("duckdb", duckdb_count(connection, metadata, where, "id")),
            ):
                assert (count.rows, count.checksum) == (expected.rows, expected.checksum), (engine, table, where)
                planned[table][engine] += count.files
            planned[table]["spark"] += expected.files
    for engine in ("pyiceberg", "duckdb", "spark"):
        assert planned[clustered][engine] * 2 <= planned[loaded][engine], planned  # at least half the files go
