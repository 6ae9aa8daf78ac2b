"""Row groups whose statistics prove every row matches: never one holding a row that does not."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.expr import AlwaysFalse, AlwaysTrue, And, Between, Compare, Expr, In, IsNull, Not, Opaque, Or
from zskip.planning.all_rows import compared_columns, every_row_arrays
from zskip.planning.footers import ColumnStats
from zskip.planning.minmax_arrays import StatsColumn

NAN = math.nan


def column(rows: list[float | int | None]) -> StatsColumn:
    """One row group's statistics as a Parquet writer keeps them: NaN left out of the bounds."""
    ordered = [v for v in rows if v is not None and not (isinstance(v, float) and math.isnan(v))]
    present = [v for v in rows if v is not None]
    low, high = min(ordered, default=None), max(ordered, default=None)
    return StatsColumn.of([ColumnStats(low, high, bool(ordered), rows.count(None), len(present))])


def test_a_range_inside_the_bounds_is_every_row() -> None:
    stats = {1: column([3, 4, 5])}
    assert every_row_arrays(Compare(1, ">", 2), stats, frozenset(), 1).tolist() == [True]
    assert every_row_arrays(Compare(1, ">", 3), stats, frozenset(), 1).tolist() == [False]
    assert every_row_arrays(And((Compare(1, ">=", 3), Compare(1, "<", 6))), stats, frozenset(), 1).tolist() == [True]


def test_a_null_is_not_a_match() -> None:
    stats = {1: column([3, None, 5])}
    assert every_row_arrays(Compare(1, ">", 2), stats, frozenset(), 1).tolist() == [False]
    assert every_row_arrays(Or((Compare(1, ">", 2), IsNull(1))), stats, frozenset(), 1).tolist() == [False]
    assert every_row_arrays(Not(IsNull(1)), stats, frozenset(), 1).tolist() == [False]
    assert every_row_arrays(IsNull(1), {1: column([None, None])}, frozenset(), 1).tolist() == [True]


def test_nan_is_above_every_number() -> None:
    stats = {1: column([3.0, NAN])}
    floats = frozenset({1})
    assert every_row_arrays(Compare(1, ">", 2.0), stats, floats, 1).tolist() == [True]  # NaN > 2 in Spark
    assert every_row_arrays(Compare(1, "<", 9.0), stats, floats, 1).tolist() == [False]


def test_unknowns_prove_nothing() -> None:
    stats = {1: column([3, 4])}
    assert every_row_arrays(Opaque("f(x)"), stats, frozenset(), 1).tolist() == [False]
    assert every_row_arrays(And((Compare(1, ">", 0), Opaque("g"))), stats, frozenset(), 1).tolist() == [False]
    assert every_row_arrays(Compare(2, ">", 0), stats, frozenset(), 1).tolist() == [False]  # no statistics
    assert every_row_arrays(AlwaysTrue(), {}, frozenset(), 2).tolist() == [True, True]
    assert compared_columns(Or((IsNull(1), Not(Compare(2, "=", 3))))) == {2}


_ints = st.integers(-4, 4)
_floats = st.sampled_from([-2.0, -0.0, 0.0, 1.5, 3.0, NAN, math.inf, -math.inf])


def _leaf(col: int, values: st.SearchStrategy) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(Compare, st.just(col), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), values),
        st.builds(Between, st.just(col), values, values),
        st.builds(In, st.just(col), st.lists(values, max_size=3).map(tuple)),
        st.builds(IsNull, st.just(col)),
    )


_exprs = st.recursive(
    st.one_of(_leaf(1, _ints), _leaf(2, _floats), st.just(AlwaysTrue()), st.just(AlwaysFalse()), st.just(Opaque("f"))),
    lambda inner: st.one_of(
        st.builds(Not, inner),
        st.lists(inner, min_size=1, max_size=3).map(lambda c: And(tuple(c))),
        st.lists(inner, min_size=1, max_size=3).map(lambda c: Or(tuple(c))),
    ),
    max_leaves=6,
)


def _key(v: float) -> tuple[int, float]:
    """Spark's order of doubles: NaN above every number, -0.0 equal to 0.0."""
    return (1, 0.0) if math.isnan(v) else (0, v + 0.0)


def _compare(op: str, v: float, literal: float) -> bool:
    a, b = _key(v), _key(literal)
    return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def truth(expr: Expr, row: dict[int, float | int | None]) -> bool | None:
    """Spark's three-valued answer for one row (``None``: NULL)."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, Opaque):
        return None
    if isinstance(expr, Not):
        inner = truth(expr.child, row)
        return None if inner is None else not inner
    if isinstance(expr, And | Or):
        parts = [truth(c, row) for c in expr.children]
        decisive = isinstance(expr, Or)
        if decisive in parts:
            return decisive
        return None if None in parts else not decisive
    v = row[expr.column]  # type: ignore[attr-defined]
    if isinstance(expr, IsNull):
        return v is None
    if v is None:
        return None
    if isinstance(expr, Compare):
        return _compare(expr.op, v, expr.value)
    if isinstance(expr, Between):
        return _compare(">=", v, expr.low) and _compare("<=", v, expr.high)
    assert isinstance(expr, In)
    return any(_compare("=", v, x) for x in expr.values)


@settings(max_examples=1_000)
@given(
    st.lists(st.tuples(st.one_of(st.none(), _ints), st.one_of(st.none(), _floats)), min_size=1, max_size=8),
    _exprs,
)
def test_every_row_is_only_said_of_row_groups_where_every_row_matches(
    rows: list[tuple[int | None, float | None]], expr: Expr
) -> None:
    stats = {1: column([r[0] for r in rows]), 2: column([r[1] for r in rows])}
    if every_row_arrays(expr, stats, frozenset({2}), 1)[0]:
        for x, y in rows:
            assert truth(expr, {1: x, 2: y}) is True, (expr, x, y)
