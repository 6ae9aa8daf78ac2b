"""Row-group min/max verdicts: never rule out a row group that can hold a match."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.expr import AlwaysFalse, AlwaysTrue, And, Between, Compare, Expr, In, IsNull, Not, Opaque, Or, StartsWith
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


# ---- against the rows themselves -------------------------------------------------------------------

_values = st.integers(-5, 5)
_leaves = st.one_of(
    st.builds(Compare, st.just("x"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _values),
    st.builds(Between, st.just("x"), _values, _values),
    st.builds(In, st.just("x"), st.lists(_values, max_size=3).map(tuple)),
    st.builds(IsNull, st.just("x")),
    st.just(AlwaysTrue()),
    st.just(AlwaysFalse()),
    st.just(Opaque("f(x)")),
)
_exprs = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.builds(Not, inner),
        st.lists(inner, min_size=1, max_size=3).map(lambda c: And(tuple(c))),
        st.lists(inner, min_size=1, max_size=3).map(lambda c: Or(tuple(c))),
    ),
    max_leaves=6,
)


def truth(expr: Expr, v: int | None) -> bool | None:
    """Spark's three-valued answer for one row (``None``: NULL)."""
    if isinstance(expr, AlwaysTrue | Opaque):
        return True if isinstance(expr, AlwaysTrue) else None
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, IsNull):
        return v is None
    if isinstance(expr, Not):
        inner = truth(expr.child, v)
        return None if inner is None else not inner
    if isinstance(expr, And | Or):
        parts = [truth(c, v) for c in expr.children]
        decisive = isinstance(expr, Or)  # OR: one TRUE decides; AND: one FALSE decides
        if decisive in parts:
            return decisive
        return None if None in parts else not decisive
    if v is None:
        return None
    if isinstance(expr, Compare):
        return {"=": v == expr.value, "!=": v != expr.value, "<": v < expr.value, "<=": v <= expr.value,
                ">": v > expr.value, ">=": v >= expr.value}[expr.op]  # fmt: skip
    if isinstance(expr, Between):
        return expr.low <= v <= expr.high
    assert isinstance(expr, In)
    return v in expr.values if expr.values else False


@settings(max_examples=1_000)  # cheap: a thousand predicates take about a second
@given(st.lists(st.one_of(st.none(), _values), min_size=1, max_size=8), st.one_of(_leaves, _exprs))
def test_a_row_group_holding_a_matching_row_is_never_ruled_out(rows: list[int | None], expr: Expr) -> None:
    present = [v for v in rows if v is not None]
    s = {"x": ColumnStats(min(present, default=None), max(present, default=None), bool(present),
                          len(rows) - len(present), len(present))}  # fmt: skip
    if any(truth(expr, v) is True for v in rows):
        assert might_match(expr, s, frozenset())
