"""A small star schema for tests: a fact table and two dimensions, facts in random order."""

from __future__ import annotations

# how the keys are spelled: whole numbers, or text codes and dates (a_key 'AP-00010', b_key a date)
KEYS = {
    "int": ("{x}", "{x}"),
    "text": ("concat('AP-', lpad(CAST({x} AS STRING), 5, '0'))", "date_add(DATE'2001-01-01', CAST({x} AS INT))"),
}


def make_star(spark, ns: str, keys: str = "int") -> str:  # type: ignore[no-untyped-def]
    """fact(a_key, b_key, v) over dim_a (key, region, nation) and dim_b (key, colour): facts in random order,
    5% of a_key NULL and 2% pointing at no dimension row.  ``keys="text"``: a_key is a text code and
    b_key a date."""
    a, b = KEYS[keys]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    for name in ("fact", "dim_a", "dim_b"):
        spark.sql(f"DROP TABLE IF EXISTS {ns}.{name} PURGE")
    spark.range(2000).selectExpr(
        a.format(x="CAST(id * 7 + 3 AS INT)") + " AS a_id",  # keys not in the order of the hierarchy
        "concat('r', CAST(pmod(id * 31, 5) AS STRING)) AS region",
        "concat('n', CAST(pmod(id * 31, 25) AS STRING)) AS nation",
    ).coalesce(1).writeTo(f"{ns}.dim_a").using("iceberg").create()
    spark.range(300).selectExpr(
        b.format(x="id") + " AS b_id", "concat('c', CAST(pmod(id * 13, 6) AS STRING)) AS colour"
    ).coalesce(1).writeTo(f"{ns}.dim_b").using("iceberg").create()
    spark.range(80_000).selectExpr(
        "CASE WHEN rand(1) < 0.05 THEN NULL WHEN rand(2) < 0.02 THEN "
        + a.format(x="-1")
        + " ELSE "
        + a.format(x="CAST(floor(rand(3) * 2000) * 7 + 3 AS INT)")
        + " END AS a_key",
        b.format(x="CAST(floor(rand(4) * 300) AS BIGINT)") + " AS b_key",
        "rand(5) AS v",
    ).repartition(16).writeTo(f"{ns}.fact").using("iceberg").tableProperty("format-version", "2").create()
    return f"{ns}.fact"
