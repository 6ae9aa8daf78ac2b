"""zskip.sql returns exactly the rows of plain Spark SQL on random star schemas.

Each hypothesis example builds a fact table and two dimensions with random hierarchies (NULL and
orphan foreign keys included), maybe clusters the fact table through one or both dimensions (any
curve, maybe with a plain column), maybe indexes the foreign keys, maybe changes a dimension's
attributes, adds a dimension key and appends facts using it, with whole-number, text or date keys,
then checks many random join queries, through zskip.sql and plain SQL with zskip enabled
(inner joins in either order, WHERE-style joins, semi and anti joins, left joins, random filters
on dimension columns).  ``ZSKIP_STAR_SCHEMAS`` and ``ZSKIP_STAR_QUERIES`` scale the run (CI: 4 x 15).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zskip
from tests.integration.switches import zskip_off, zskip_on
from zskip.planning.cache import CACHE

pytestmark = pytest.mark.integration

SCHEMAS = int(os.environ.get("ZSKIP_STAR_SCHEMAS", "4"))
QUERIES = int(os.environ.get("ZSKIP_STAR_QUERIES", "15"))
CHECKED: list[int] = []
NS = "lake.star_prop"

REGIONS = ["r0", "r1", "r2", "r3"]
COLOURS = ["c0", "c1", "c2"]


@st.composite
def star(draw: st.DrawFn) -> dict[str, Any]:
    a_keys = draw(st.lists(st.integers(-50, 500), min_size=1, max_size=40, unique=True))
    b_keys = draw(st.lists(st.integers(0, 10**12), min_size=1, max_size=15, unique=True))
    dim_a = [(k, draw(st.sampled_from(REGIONS)), draw(st.integers(0, 9))) for k in a_keys]
    dim_b = [(k, draw(st.sampled_from(COLOURS))) for k in b_keys]
    a_ref = st.one_of(st.sampled_from(a_keys), st.none(), st.integers(-60, 600))  # orphans too
    b_ref = st.one_of(st.sampled_from(b_keys), st.none())
    fact = draw(st.lists(st.tuples(a_ref, b_ref, st.integers(0, 99)), min_size=1, max_size=400))
    return {"dim_a": dim_a, "dim_b": dim_b, "fact": fact}


def a_filter(draw: st.DrawFn, alias: str) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return f"{alias}.region = '{draw(st.sampled_from([*REGIONS, 'zz']))}'"
    if kind == 1:
        regions = draw(st.lists(st.sampled_from(REGIONS), min_size=1, max_size=2))
        return f"{alias}.region IN ({', '.join(repr(r) for r in regions)})"
    if kind == 2:
        return f"{alias}.level BETWEEN {draw(st.integers(0, 9))} AND {draw(st.integers(0, 9))}"
    if kind == 3:
        return f"{alias}.level {draw(st.sampled_from(['<', '>=', '=']))} {draw(st.integers(0, 9))}"
    if kind == 4:
        return f"({alias}.region = '{draw(st.sampled_from(REGIONS))}' OR {alias}.level = {draw(st.integers(0, 9))})"
    return f"{NUMBER[KIND[0]].format(key=f'{alias}.a_id')} % 3 = {draw(st.integers(0, 2))}"


# the dimension key's type in the current example: whole numbers, text codes sharing an 8-byte prefix
# (order keys of text are 8-byte prefixes: every key here collides there), or dates
KIND = ["int"]
KEY_SQL = {
    "int": "CAST({x} AS INT)",
    "text": "concat('AIRPORT-', CAST({x} AS STRING))",
    "date": "date_add(DATE'2000-01-01', CAST({x} AS INT))",
}
NUMBER = {"int": "{key}", "text": "length({key})", "date": "dayofmonth({key})"}  # a number of each key


@st.composite
def queries(draw: st.DrawFn) -> str:
    fact, a, b = f"{NS}.fact", f"{NS}.dim_a", f"{NS}.dim_b"
    shape = draw(st.integers(0, 6))
    select = draw(st.sampled_from(["count(*), sum(f.v)", "f.a_key, f.v", "f.b_key, count(*)"]))
    group = " GROUP BY f.b_key" if select.endswith("count(*)") and select.startswith("f.b_key") else ""
    colour = f"b.colour = '{draw(st.sampled_from(COLOURS))}'"
    if shape == 0:
        return f"SELECT {select} FROM {fact} f JOIN {a} a ON f.a_key = a.a_id WHERE {a_filter(draw, 'a')}{group}"
    if shape == 1:
        return (
            f"SELECT {select} FROM {b} b JOIN {fact} f ON b.b_id = f.b_key JOIN {a} a ON a.a_id = f.a_key "
            f"WHERE {a_filter(draw, 'a')} AND {colour}{group}"
        )
    if shape == 2:
        return (
            f"SELECT {select} FROM {fact} f, {a} a, {b} b WHERE f.a_key = a.a_id AND f.b_key = b.b_id "
            f"AND {colour}{group}"
        )
    if shape == 3:
        return (
            f"SELECT {select} FROM {fact} f WHERE f.a_key IN (SELECT a.a_id FROM {a} a WHERE {a_filter(draw, 'a')})"
            f"{group}"
        )
    if shape == 4:
        return (
            f"SELECT {select} FROM {fact} f WHERE f.a_key NOT IN "
            f"(SELECT a.a_id FROM {a} a WHERE {a_filter(draw, 'a')} AND a.a_id IS NOT NULL){group}"
        )
    if shape == 5:
        return (
            f"SELECT count(*), count(a.a_id), sum(f.v) FROM {fact} f LEFT JOIN {a} a ON f.a_key = a.a_id "
            f"AND {a_filter(draw, 'a')}"
        )
    return (
        f"SELECT {select} FROM {fact} f JOIN {a} x ON f.a_key = x.a_id JOIN {a} y ON f.a_key = y.a_id "
        f"WHERE {a_filter(draw, 'x')} AND {a_filter(draw, 'y')}{group}"
    )


def rows_of(frame: Any) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(repr(v) for v in row) for row in frame.collect())


@settings(max_examples=SCHEMAS, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    schema=star(),
    layout=st.sampled_from([None, "a", "ab", "a+v", "b"]),
    curve=st.sampled_from(["hilbert", "zorder", "linear"]),
    index=st.sampled_from([None, "bloom", "bitmap"]),
    change=st.sampled_from([None, "dimension", "append"]),
    kind=st.sampled_from(["int", "text", "date"]),
    data=st.data(),
)
def test_sql_equals_plain_spark_on_random_stars(spark, schema, layout, curve, index, change, kind, data) -> None:
    KIND[0] = kind
    key = KEY_SQL[kind]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    for name in ("fact", "dim_a", "dim_b"):
        spark.sql(f"DROP TABLE IF EXISTS {NS}.{name} PURGE")
    spark.createDataFrame(schema["dim_a"], "a_id INT, region STRING, level INT").selectExpr(
        f"{key.format(x='a_id')} AS a_id", "region", "level"
    ).coalesce(1).writeTo(f"{NS}.dim_a").using("iceberg").create()
    spark.createDataFrame(schema["dim_b"], "b_id BIGINT, colour STRING").coalesce(1).writeTo(f"{NS}.dim_b").using(
        "iceberg"
    ).create()
    facts = "a_key INT, b_key BIGINT, v INT"
    as_keys = (f"{key.format(x='a_key')} AS a_key", "b_key", "v")
    spark.createDataFrame(schema["fact"], facts).selectExpr(*as_keys).repartition(3).writeTo(f"{NS}.fact").using(
        "iceberg"
    ).tableProperty("format-version", "2").tableProperty("write.parquet.row-group-size-bytes", "1").create()
    by: list[Any] = []
    if layout is not None:
        if "a" in layout:
            by.append(zskip.Dimension("a_key", f"{NS}.dim_a", key="a_id", by=["region", "level"]))
        if "b" in layout:
            by.append(zskip.Dimension("b_key", f"{NS}.dim_b", key="b_id", by=["colour"]))
        if "+v" in layout:
            by.append("v")
        zskip.optimize(spark, f"{NS}.fact", by=by, curve=curve, target_file_size=1024, row_group_size=1)
    if index is not None:
        for column in ("a_key", "b_key"):
            zskip.create_index(spark, f"{NS}.fact", column, kind=index)
    if change == "dimension":
        even = f"{NUMBER[kind].format(key='a_id')} % 2 = 0"
        spark.sql(f"UPDATE {NS}.dim_a SET region = 'r0', level = level + 1 WHERE {even}")
        spark.sql(f"INSERT INTO {NS}.dim_a SELECT {key.format(x=9999)}, 'r1', 3")
        spark.sql(
            f"INSERT INTO {NS}.fact SELECT {key.format(x='k')}, b, v FROM VALUES "
            "(9999, NULL, 1), (9999, 7, 2), (-1234, NULL, 3) AS t(k, b, v)"
        )
    elif change == "append":
        spark.createDataFrame(schema["fact"][:40], facts).selectExpr(*as_keys).writeTo(f"{NS}.fact").append()
    CACHE.clear()
    for _ in range(QUERIES):
        query = data.draw(queries(), label="query")
        with zskip_off(spark):
            expected = rows_of(spark.sql(query))
        assert rows_of(zskip.sql(spark, query)) == expected, query
        with zskip_on(spark):  # plain SQL through zskip's rule in Spark's optimizer
            assert rows_of(spark.sql(query)) == expected, f"zskip.enable: {query}"
        CHECKED.append(1)


def test_report_how_many_star_queries_were_checked() -> None:
    print(f"\nzskip.sql checked against Spark on {len(CHECKED)} star queries")
