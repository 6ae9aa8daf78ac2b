"""Filters as Spark and Iceberg understood them, converted to zskip's predicate IR with typed literals."""

from __future__ import annotations

import datetime
import decimal

import pytest

from zskip.expr import AlwaysTrue, And, Compare, In, IsNull, Not, Or, StartsWith, to_sql
from zskip.iceberg.predicates import filter_of as _filter_of


def filter_of(spark, table, where):  # type: ignore[no-untyped-def]
    frame, _, scan = _filter_of(spark, table, where)
    return frame, scan


pytestmark = pytest.mark.integration

UTC = datetime.timezone.utc


@pytest.fixture(scope="module")
def typed(spark) -> str:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.pred")
    spark.sql("DROP TABLE IF EXISTS lake.pred.t PURGE")
    spark.sql(
        "CREATE TABLE lake.pred.t (i INT, l BIGINT, f FLOAT, m DECIMAL(10,2), s STRING, b BINARY, dt DATE, "
        "ts TIMESTAMP, tn TIMESTAMP_NTZ) USING iceberg"
    )
    return "lake.pred.t"


def leaves(expr) -> list:
    """The conjuncts other than Spark's implicit IS NOT NULL guards."""
    parts = expr.children if isinstance(expr, And) else (expr,)
    return [p for p in parts if not (isinstance(p, Not) and isinstance(p.child, IsNull))]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("I BETWEEN 1 AND 10", [Compare("i", ">=", 1), Compare("i", "<=", 10)]),
        ("i < 5.5", [Compare("i", "<", 6)]),  # Spark unwraps the cast exactly
        ("m = 1.25", [Compare("m", "=", decimal.Decimal("1.25"))]),
        ("s LIKE 'ab%'", [StartsWith("s", "ab")]),
        ("b = X'0102'", [Compare("b", "=", b"\x01\x02")]),
        ("dt = DATE'1969-12-31'", [Compare("dt", "=", datetime.date(1969, 12, 31))]),
        ("ts > TIMESTAMP'2020-01-01 00:00:00'", [Compare("ts", ">", datetime.datetime(2020, 1, 1, tzinfo=UTC))]),
        ("tn < TIMESTAMP_NTZ'2020-01-01 10:00:00'", [Compare("tn", "<", datetime.datetime(2020, 1, 1, 10))]),
        ("i NOT IN (1, 2)", [Not(In("i", (1, 2)))]),
        ("s IN ('a', 'b') OR i IS NULL", [Or((In("s", ("a", "b")), IsNull("i")))]),
        ("i + 1 = 3", []),  # not pushed: Spark applies it
    ],
)
def test_filters_become_typed_predicates(spark, typed, where, expected) -> None:
    _, scan = filter_of(spark, typed, where)
    assert scan is not None and leaves(scan.expr) == expected


def test_a_filter_spark_proves_false_has_no_scan(spark, typed) -> None:
    frame, scan = filter_of(spark, typed, "i = 5.5")
    assert scan is None and frame.count() == 0


def test_functions_zskip_does_not_know_stay_opaque(spark, typed) -> None:
    _, scan = filter_of(spark, typed, "isnan(f)")
    # Spark pushes nothing for isnan(): the scan's predicate is TRUE (was Opaque("true") before the IR had TRUE)
    assert scan is not None and scan.expr == AlwaysTrue()


@pytest.mark.parametrize(
    "where",
    [
        "I BETWEEN 1 AND 10",
        "m = 1.25",
        "s LIKE 'ab%' AND s != 'it''s \\\\ x'",
        "b = X'0102'",
        "dt = DATE'1969-12-31'",
        "ts > TIMESTAMP'2020-01-01 00:00:00'",
        "tn < TIMESTAMP_NTZ'2020-01-01 10:00:00'",
        "i NOT IN (1, 2)",
        "s IN ('a', 'b') OR i IS NULL",
        "NOT (l > 3 AND s = 'x')",
    ],
)
def test_the_predicate_as_sql_reads_back_as_the_same_predicate(spark, typed, where) -> None:
    _, scan = filter_of(spark, typed, where)
    assert scan is not None
    text = to_sql(scan.expr)
    _, again = filter_of(spark, typed, text)
    assert again is not None and conjuncts(again.expr) == conjuncts(scan.expr), text


def conjuncts(expr) -> set:  # type: ignore[no-untyped-def]
    """The AND-ed parts, nested ANDs flattened (Spark adds its IS NOT NULL guards again on the way back)."""
    if isinstance(expr, And):
        return set().union(*(conjuncts(c) for c in expr.children))
    return {expr}
