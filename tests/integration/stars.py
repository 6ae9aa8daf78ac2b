"""A small star schema for tests: a fact table and two dimensions, facts in random order."""

from __future__ import annotations


def make_star(spark, ns: str) -> str:  # type: ignore[no-untyped-def]
    """fact(a_key, b_key, v) over dim_a (key, region, nation) and dim_b (key, colour): facts in random order,
    5% of a_key NULL and 2% pointing at no dimension row."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    for name in ("fact", "dim_a", "dim_b"):
        spark.sql(f"DROP TABLE IF EXISTS {ns}.{name} PURGE")
    spark.range(2000).selectExpr(
        "CAST(id * 7 + 3 AS INT) AS a_id",  # keys not in the order of the hierarchy
        "concat('r', CAST(pmod(id * 31, 5) AS STRING)) AS region",
        "concat('n', CAST(pmod(id * 31, 25) AS STRING)) AS nation",
    ).coalesce(1).writeTo(f"{ns}.dim_a").using("iceberg").create()
    spark.range(300).selectExpr("id AS b_id", "concat('c', CAST(pmod(id * 13, 6) AS STRING)) AS colour").coalesce(
        1
    ).writeTo(f"{ns}.dim_b").using("iceberg").create()
    spark.range(80_000).selectExpr(
        "CASE WHEN rand(1) < 0.05 THEN NULL WHEN rand(2) < 0.02 THEN -1 "
        "ELSE CAST(floor(rand(3) * 2000) * 7 + 3 AS INT) END AS a_key",
        "CAST(floor(rand(4) * 300) AS BIGINT) AS b_key",
        "rand(5) AS v",
    ).repartition(16).writeTo(f"{ns}.fact").using("iceberg").tableProperty("format-version", "2").create()
    return f"{ns}.fact"
