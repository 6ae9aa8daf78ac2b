"""Star joins over dimensions whose columns hold NULLs: the keys zskip reads for a filtered dimension
are exactly the keys Spark's join lets through, whatever the comparison, and they prune as well as
those of the same dimension without NULLs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import zskip
from tests.integration.switches import zskip_off, zskip_on
from zskip.iceberg.scan_stats import scanned_rows

pytestmark = pytest.mark.integration

NS = "lake.star_nulls"
FACT = f"{NS}.sales"


@pytest.fixture(scope="module")
def star(spark: Any) -> str:
    """sales(shop, amount) clustered by shop, over two copies of one dimension of 400 shops:
    ``shops_gaps`` has NULL zones (every fifth shop) and NULL keys (every 40th), ``shops_full`` spells
    those zones 'none' and keeps its keys.  Each zone is a block of 80 shops; the NULL rows never match
    the filters below."""
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    for name in ("sales", "shops_gaps", "shops_full"):
        spark.sql(f"DROP TABLE IF EXISTS {NS}.{name} PURGE")
    zone = "element_at(array('north', 'south', 'east', 'west', 'centre'), CAST(floor(id / 80) + 1 AS INT))"
    spark.range(400).selectExpr(
        "CASE WHEN pmod(id, 40) = 39 THEN NULL ELSE id END AS shop_id",
        f"CASE WHEN pmod(id, 5) = 4 THEN NULL ELSE {zone} END AS zone",
    ).coalesce(1).writeTo(f"{NS}.shops_gaps").using("iceberg").create()
    spark.range(400).selectExpr(
        "id AS shop_id", f"CASE WHEN pmod(id, 5) = 4 THEN 'none' ELSE {zone} END AS zone"
    ).coalesce(1).writeTo(f"{NS}.shops_full").using("iceberg").create()
    spark.range(60_000).selectExpr(
        "CASE WHEN rand(7) < 0.03 THEN NULL ELSE CAST(floor(rand(8) * 400) AS BIGINT) END AS shop",
        "rand(9) AS amount",
    ).repartition(8).writeTo(FACT).using("iceberg").create()
    zskip.optimize(spark, FACT, by=["shop"], target_file_size=30_000, row_group_size=4_000, mode="full")
    return FACT


FILTERS = {
    "in": "s.zone IN ('north', 'east')",
    "equal": "s.zone = 'south'",
    "not equal": "s.zone <> 'south'",
    "like": "s.zone LIKE 'we%'",
    "is null": "s.zone IS NULL",
    "not in": "NOT s.zone IN ('north', 'east', 'west')",
    "not": "NOT (s.zone = 'north' OR s.zone = 'east')",
    "key range": "s.shop_id BETWEEN 100 AND 200 AND s.zone IN ('south', 'west')",
}


def query(dimension: str, condition: str) -> str:
    return (
        f"SELECT count(*), sum(CAST(f.amount * 1000000 AS BIGINT)) FROM {FACT} f "
        f"JOIN {NS}.{dimension} s ON f.shop = s.shop_id WHERE {condition}"
    )


def rows(frame: Any) -> Counter:
    return Counter(map(tuple, frame.collect()))


@pytest.mark.parametrize("shape", list(FILTERS))
def test_keys_of_a_dimension_with_nulls_are_exactly_the_joins_keys(spark: Any, star: str, shape: str) -> None:
    text = query("shops_gaps", FILTERS[shape])
    with zskip_off(spark):
        plain = spark.sql(text)
        expected = rows(plain)
        plain_scanned = scanned_rows(plain, FACT)
    assert rows(zskip.sql(spark, text)) == expected, text
    with zskip_on(spark):
        hooked = spark.sql(text)
        assert rows(hooked) == expected, text
        hooked_scanned = scanned_rows(hooked, FACT)
    assert hooked_scanned <= plain_scanned, text
    if shape != "is null":  # IS NULL matches shops a NULL zone leaves without keys to prune by
        assert hooked_scanned < plain_scanned, (text, hooked_scanned, plain_scanned)


def test_nulls_in_the_filtered_column_prune_as_much_as_a_column_without_them(spark: Any, star: str) -> None:
    scanned = {}
    for dimension in ("shops_gaps", "shops_full"):
        text = query(dimension, FILTERS["in"])
        with zskip_off(spark):
            expected = rows(spark.sql(text))
        with zskip_on(spark):
            hooked = spark.sql(text)
            assert rows(hooked) == expected
            scanned[dimension] = scanned_rows(hooked, FACT)
    assert scanned["shops_gaps"] <= scanned["shops_full"], scanned
    assert scanned["shops_full"] < 60_000 * 0.7, scanned  # two zones of five: 40% of the rows
