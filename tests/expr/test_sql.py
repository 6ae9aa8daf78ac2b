"""Predicates as Spark SQL text (what explain shows)."""

from __future__ import annotations

import datetime
import decimal

from zskip.expr import AlwaysFalse, AlwaysTrue, And, Between, Compare, In, IsNull, Not, Opaque, Or, StartsWith, to_sql


def test_leaves_and_literals_read_as_spark_sql() -> None:
    assert to_sql(Compare("l_shipdate", ">=", datetime.date(1995, 3, 1))) == "l_shipdate >= DATE '1995-03-01'"
    assert to_sql(Compare("s", "=", "it's \\ here")) == "s = 'it\\'s \\\\ here'"
    assert to_sql(Between("x", 1, 10)) == "x BETWEEN 1 AND 10"
    assert to_sql(In("m", ("AIR", "RAIL"))) == "m IN ('AIR', 'RAIL')"
    assert to_sql(In("m", ())) == "FALSE"
    assert to_sql(Compare("d", "<", 0.5)) == "d < 0.5D"
    assert to_sql(Compare("d", "=", float("nan"))) == "d = CAST('NaN' AS DOUBLE)"
    assert to_sql(Compare("p", "=", decimal.Decimal("1.50"))) == "p = 1.50BD"
    assert to_sql(Compare("b", "=", b"\x00\xff")) == "b = X'00FF'"
    utc = datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    assert to_sql(Compare("t", ">", utc)) == "t > TIMESTAMP '2020-01-02 03:04:05+00:00'"
    assert to_sql(StartsWith("name", "ab")) == "startswith(name, 'ab')"
    assert to_sql(Compare("odd name", "!=", True)) == "`odd name` != TRUE"


def test_connectives_are_parenthesised_where_they_nest() -> None:
    expr = And((Compare("a", ">=", 1), Not(Compare("m", "=", "AIR")), Or((IsNull("b"), Not(IsNull("c"))))))
    assert to_sql(expr) == "a >= 1 AND NOT (m = 'AIR') AND (b IS NULL OR c IS NOT NULL)"
    assert to_sql(Not(And((AlwaysTrue(), Opaque("udf(x)"))))) == "NOT (TRUE AND (udf(x)))"
    assert to_sql(AlwaysFalse()) == "FALSE"
