"""The min/max verdict over arrays equals the scalar check, row group for row group."""

from __future__ import annotations

import datetime
import decimal
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.expr import AlwaysFalse, AlwaysTrue, And, Between, Compare, Expr, In, IsNull, Not, Opaque, Or, StartsWith
from zskip.expr.rewrite import rewrite_not
from zskip.planning.footers import ColumnStats
from zskip.planning.minmax import might_match
from zskip.planning.minmax_arrays import StatsColumn, might_match_arrays

UTC = datetime.timezone.utc

# one strategy of values per column type; each column's statistics and literals come from its own
VALUES = {
    "i": st.integers(-5, 5),
    "big": st.sampled_from([-(2**63), -1, 0, 2**53, 2**53 + 1, 2**63 - 1]),
    "f": st.one_of(
        st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf]), st.floats(-3, 3, allow_nan=False).map(round)
    ),
    "s": st.text(alphabet="ab\u00e9\U0001f600", max_size=3),
    "b": st.binary(max_size=2),
    "d": st.dates(datetime.date(1999, 12, 30), datetime.date(2000, 1, 3)),
    "m": st.decimals(-2, 2, places=1, allow_nan=False, allow_infinity=False),
    "t": st.datetimes(datetime.datetime(2000, 1, 1), datetime.datetime(2000, 1, 1, 0, 0, 3)),
    "tz": st.datetimes(datetime.datetime(2000, 1, 1), datetime.datetime(2000, 1, 1, 0, 0, 3), timezones=st.just(UTC)),
    "flag": st.booleans(),
}
FLOATS = frozenset({"f"})


@st.composite
def column_stats(draw: st.DrawFn, column: str) -> ColumnStats | None:
    if draw(st.integers(0, 9)) == 0:
        return None  # no statistics recorded
    values = draw(st.integers(0, 5))
    nulls = draw(st.one_of(st.none(), st.integers(0, 3)))
    if values == 0 or draw(st.integers(0, 9)) == 0:
        return ColumnStats(None, None, False, nulls, values if draw(st.booleans()) else None)
    a, b = draw(VALUES[column]), draw(VALUES[column])
    low, high = (a, b) if _ordered(a, b) else (b, a)
    return ColumnStats(low, high, True, nulls, values)


def _ordered(a: object, b: object) -> bool:
    try:
        return not (b < a)  # type: ignore[operator]
    except TypeError:
        return True


def leaves(column: str) -> st.SearchStrategy[Expr]:
    v = VALUES[column]
    found = [
        st.builds(Compare, st.just(column), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), v),
        st.builds(Between, st.just(column), v, v),
        st.builds(In, st.just(column), st.lists(v, max_size=3).map(tuple)),
        st.builds(IsNull, st.just(column)),
    ]
    if column == "s":
        found.append(st.builds(StartsWith, st.just(column), st.text(alphabet="ab\u00e9", max_size=2)))
    return st.one_of(*found)


def predicates(columns: list[str]) -> st.SearchStrategy[Expr]:
    base = st.one_of(
        *[leaves(c) for c in columns], st.just(AlwaysTrue()), st.just(AlwaysFalse()), st.just(Opaque("f(x)"))
    )
    return st.recursive(
        base,
        lambda inner: st.one_of(
            st.builds(Not, inner),
            st.lists(inner, min_size=1, max_size=3).map(lambda c: And(tuple(c))),
            st.lists(inner, min_size=1, max_size=3).map(lambda c: Or(tuple(c))),
        ),
        max_leaves=5,
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[Expr, dict[str, list[list[ColumnStats | None]]], int]:
    columns = draw(st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=2, unique=True))
    files = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))  # row groups per file
    stats = {c: [[draw(column_stats(c)) for _ in range(n)] for n in files] for c in columns}
    return draw(predicates(columns)), stats, sum(files)


@settings(max_examples=600, deadline=None)  # about ten seconds
@given(cases())
def test_arrays_answer_as_the_scalar_check_does(case: tuple[Expr, dict[str, list[list]], int]) -> None:
    expr, stats, n = case
    columns = {c: StatsColumn.concat([StatsColumn.of(per_file) for per_file in files]) for c, files in stats.items()}
    flat = {c: [s for per_file in files for s in per_file] for c, files in stats.items()}
    got = might_match_arrays(rewrite_not(expr), columns, FLOATS, n)
    expected = [might_match(expr, {c: flat[c][g] for c in flat}, FLOATS) for g in range(n)]
    assert got.tolist() == expected


def test_a_column_without_statistics_might_match() -> None:
    got = might_match_arrays(Compare("x", "=", 1), {}, frozenset(), 3)
    assert got.tolist() == [True, True, True]


@pytest.mark.parametrize(
    ("stats", "literal"),
    [
        ([ColumnStats(datetime.datetime(2000, 1, 1), datetime.datetime(2000, 1, 2), True, 0, 2)], "2000-01-01"),
        ([ColumnStats(decimal.Decimal("1.0"), decimal.Decimal("2.0"), True, 0, 2)], decimal.Decimal("1.55")),
        ([ColumnStats(b"a", b"c", True, 0, 2)], "b"),
    ],
)
def test_values_arrow_cannot_order_as_python_does_take_the_scalar_check(stats: list, literal: object) -> None:
    column = StatsColumn.of(stats)
    expr = Compare("x", "=", literal)
    got = might_match_arrays(expr, {"x": column}, frozenset(), len(stats))
    assert got.tolist() == [might_match(expr, {"x": s}, frozenset()) for s in stats]


def test_mixed_files_concatenate() -> None:
    """A file whose row groups hold only NULLs has no typed bounds; it joins the others all the same."""
    parts = [
        StatsColumn.of([ColumnStats(None, None, False, 5, 0)]),
        StatsColumn.of([ColumnStats(1, 3, True, 0, 3), ColumnStats(4, 9, True, 0, 3)]),
    ]
    column = StatsColumn.concat(parts)
    assert column.low is not None and len(column) == 3
    got = might_match_arrays(Compare("x", ">", 3), {"x": column}, frozenset(), 3)
    assert got.tolist() == [False, False, True]
    assert np.array_equal(column.known, [True, True, True])


@pytest.mark.parametrize(
    ("low", "high", "literal"),
    [
        (1, 9, 5),
        (-1.5, 2.0, 0.0),
        ("ab", "b\u00e9", "b"),
        (b"a", b"c", b"b"),
        (datetime.date(2000, 1, 1), datetime.date(2000, 2, 1), datetime.date(2000, 1, 5)),
        (decimal.Decimal("1.0"), decimal.Decimal("2.5"), decimal.Decimal("2.0")),
        (
            datetime.datetime(2000, 1, 1, tzinfo=UTC),
            datetime.datetime(2000, 1, 2, tzinfo=UTC),
            datetime.datetime(2000, 1, 1, 5, tzinfo=UTC),
        ),
    ],
)
def test_common_types_are_answered_in_arrow(monkeypatch: pytest.MonkeyPatch, low, high, literal) -> None:  # type: ignore[no-untyped-def]
    def no_scalar_check(*args: object) -> bool:
        raise AssertionError("fell back to the scalar check")

    monkeypatch.setattr("zskip.planning.minmax_arrays._might_leaf", no_scalar_check)
    column = StatsColumn.of([ColumnStats(low, high, True, 0, 4), ColumnStats(literal, literal, True, 1, 1)])
    for op in ("=", "<", ">="):
        got = might_match_arrays(Compare("x", op, literal), {"x": column}, frozenset(), 2)
        assert got.tolist() == ([True, False] if op == "<" else [True, True])
