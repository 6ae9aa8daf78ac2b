"""Row-group min/max verdicts: never rule out a row group that can hold a match."""

from __future__ import annotations

import math

from zskip.expr import Between, Compare, In, IsNull, Not, StartsWith
from zskip.planning.footers import ColumnStats
from zskip.planning.minmax import might_match


def stats(low, high, nulls=0, values=10) -> dict[str, ColumnStats]:
    return {"x": ColumnStats(low, high, True, nulls, values)}


def test_nan_in_float_statistics_proves_nothing() -> None:
    # Parquet writers may put NaN into a float column's min or max
    for low, high in [(-9.5, math.nan), (math.nan, 7.0), (math.nan, math.nan)]:
        for expr in [Compare("x", "=", 0.5), Compare("x", "<", 0.0), Between("x", 0.0, 1.0), In("x", (0.5,))]:
            assert might_match(expr, stats(low, high), frozenset({"x"})), (low, high, expr)


def test_ranges_rule_out_what_they_prove() -> None:
    s = stats(10, 20)
    floats: frozenset[str] = frozenset()
    assert not might_match(Compare("x", "=", 5), s, floats)
    assert might_match(Compare("x", "=", 15), s, floats)
    assert not might_match(Compare("x", "<", 10), s, floats)
    assert not might_match(Compare("x", ">", 20), s, floats)
    assert not might_match(Not(Compare("x", "<=", 20)), s, floats)
    assert not might_match(Between("x", 21, 30), s, floats)
    assert not might_match(IsNull("x"), s, floats)
    assert might_match(IsNull("x"), stats(10, 20, nulls=1), floats)
    assert not might_match(Compare("x", "=", 15), stats(None, None, nulls=5, values=0), floats)


def test_floats_never_prune_greater_than_because_of_nan_rows() -> None:
    assert might_match(Compare("x", ">", 100.0), stats(1.0, 2.0), frozenset({"x"}))
    assert not might_match(Compare("x", "<", 0.0), stats(1.0, 2.0), frozenset({"x"}))


def test_prefixes() -> None:
    s = {"x": ColumnStats("ka", "kz", True, 0, 5)}
    assert might_match(StartsWith("x", "kb"), s, frozenset())
    assert not might_match(StartsWith("x", "m"), s, frozenset())
    assert not might_match(StartsWith("x", "a"), s, frozenset())
    assert not might_match(Not(StartsWith("x", "k")), s, frozenset())
