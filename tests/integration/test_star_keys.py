"""Star joins on keys that are not whole numbers: text codes and dates prune as integer keys do, with
NULL and orphan keys in the fact table, through zskip.sql and through plain SQL with zskip enabled."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import zskip
from tests.integration.stars import make_star
from tests.integration.switches import zskip_off, zskip_on
from zskip.iceberg.scan_stats import scanned_rows
from zskip.planning.plan import JOIN_STAGE

pytestmark = pytest.mark.integration

NS = {"int": "lake.star_int_keys", "text": "lake.star_text_keys"}


@pytest.fixture(scope="module")
def stars(spark: Any) -> dict[str, str]:
    out = {}
    for keys, ns in NS.items():
        make_star(spark, ns, keys=keys)
        by = [
            zskip.Dimension("a_key", f"{ns}.dim_a", key="a_id", by=["region", "nation"]),
            zskip.Dimension("b_key", f"{ns}.dim_b", key="b_id", by=["colour"]),
        ]
        fact = f"{ns}.fact"
        zskip.optimize(spark, fact, by=by, target_file_size=40_000, row_group_size=8_000, mode="full")
        out[keys] = fact
    return out


QUERIES = {
    "region": "SELECT count(*), sum(CAST(f.v * 1000000 AS BIGINT)) FROM {ns}.fact f "
    "JOIN {ns}.dim_a a ON f.a_key = a.a_id WHERE a.region = 'r2'",
    "dimension first": "SELECT count(*) FROM {ns}.dim_b b JOIN {ns}.fact f ON b.b_id = f.b_key WHERE b.colour = 'c4'",
    "implicit, two dimensions": "SELECT count(*) FROM {ns}.fact f, {ns}.dim_a a, {ns}.dim_b b "
    "WHERE f.a_key = a.a_id AND f.b_key = b.b_id AND a.nation IN ('n3', 'n8') AND b.colour = 'c1'",
    "or": "SELECT count(*) FROM {ns}.fact f JOIN {ns}.dim_a a ON f.a_key = a.a_id "
    "WHERE a.nation = 'n4' OR a.nation = 'n9'",
    "semi": "SELECT count(*) FROM {ns}.fact WHERE a_key IN (SELECT a_id FROM {ns}.dim_a WHERE region = 'r1')",
}


def rows(frame: Any) -> Counter:
    return Counter(map(tuple, frame.collect()))


def fact_explain(spark: Any, query: str, fact: str) -> zskip.Explain:
    (found,) = [e for e in zskip.explain_sql(spark, query) if e.table == fact]
    return found


@pytest.mark.parametrize("shape", list(QUERIES))
@pytest.mark.smoke
def test_text_and_date_keys_prune_as_integer_keys_do(spark: Any, stars: dict[str, str], shape: str) -> None:
    kept = {}
    for keys, fact in stars.items():
        query = QUERIES[shape].format(ns=NS[keys])
        with zskip_off(spark):
            plain = spark.sql(query)
            expected = rows(plain)
            plain_scanned = scanned_rows(plain, fact)
        assert rows(zskip.sql(spark, query)) == expected, (keys, query)
        with zskip_on(spark):
            hooked = spark.sql(query)
            assert rows(hooked) == expected, (keys, query)
            assert scanned_rows(hooked, fact) < plain_scanned, (keys, query)
        plan = fact_explain(spark, query, fact)
        stage = next((s for s in plan.stages if s.name == JOIN_STAGE), None)
        assert stage is not None, (keys, plan.stages)
        kept[keys] = plan.row_groups_read
    # the same data under other key types: the text and date keys keep no more than 1.5x the row groups
    assert kept["text"] <= 1.5 * kept["int"] + 1, kept


def test_null_and_orphan_text_keys_never_join_and_never_go_missing(spark: Any, stars: dict[str, str]) -> None:
    ns = NS["text"]
    query = f"SELECT count(*), count(f.a_key) FROM {ns}.fact f LEFT JOIN {ns}.dim_a a ON f.a_key = a.a_id"
    with zskip_off(spark):
        expected = rows(spark.sql(query))
    with zskip_on(spark):
        assert rows(spark.sql(query)) == expected
    orphans = f"SELECT count(*) FROM {ns}.fact WHERE a_key = 'AP-000-1' OR a_key IS NULL"
    with zskip_off(spark):
        count = spark.sql(orphans).first()[0]
    assert count > 0
