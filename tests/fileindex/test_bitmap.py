"""Bitmap indexes answer exactly what a row-by-row check (with Spark's NULL and NaN rules) answers."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.expr import And, Between, Compare, Expr, In, IsNull, Not, Opaque, Or, StartsWith
from zskip.fileindex.bitmap import BitmapIndex
from zskip.fileindex.evaluate import FileIndexes, Match, evaluate, exactly_answered, matching_rows
from zskip.fileindex.kinds.bitmap import BITMAP


def spark_cmp(a: Any, b: Any) -> int:
    """Spark's order: NaN equals NaN and is above every other number; -0.0 equals 0.0."""
    a_nan = isinstance(a, float) and math.isnan(a)
    b_nan = isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return (a_nan > b_nan) - (a_nan < b_nan)
    return (a > b) - (a < b)


def truth(expr: Expr, row: dict[str, Any]) -> bool | None:
    """SQL three-valued truth of ``expr`` on one row."""
    if isinstance(expr, And):
        values = [truth(c, row) for c in expr.children]
        return False if False in values else (None if None in values else True)
    if isinstance(expr, Or):
        values = [truth(c, row) for c in expr.children]
        return True if True in values else (None if None in values else False)
    if isinstance(expr, Not):
        value = truth(expr.child, row)
        return None if value is None else not value
    if isinstance(expr, Opaque):
        return None
    value = row[expr.column]
    if isinstance(expr, IsNull):
        return value is None
    if value is None:
        return None
    if isinstance(expr, Compare):
        c = spark_cmp(value, expr.value)
        return {"=": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[expr.op]
    if isinstance(expr, Between):
        return spark_cmp(value, expr.low) >= 0 and spark_cmp(value, expr.high) <= 0
    if isinstance(expr, In):
        return any(spark_cmp(value, v) == 0 for v in expr.values)
    if isinstance(expr, StartsWith):
        return value.startswith(expr.prefix)
    raise AssertionError(expr)


floats = st.sampled_from([-2.5, -0.0, 0.0, 1.0, 3.5, math.inf, -math.inf, math.nan])
ints = st.integers(-5, 5)
strings = st.sampled_from(["", "a", "ab", "abc", "b", "ba", "z"])
COLUMNS = {"i": (ints, pa.int32()), "f": (floats, pa.float64()), "s": (strings, pa.string())}


@st.composite
def leaves(draw: st.DrawFn) -> Expr:
    column = draw(st.sampled_from(sorted(COLUMNS)))
    values, _ = COLUMNS[column]
    kind = draw(
        st.sampled_from(
            ["cmp", "between", "in", "null", "prefix"] if column == "s" else ["cmp", "between", "in", "null"]
        )
    )
    if kind == "cmp":
        return Compare(column, draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="])), draw(values))
    if kind == "between":
        return Between(column, draw(values), draw(values))
    if kind == "in":
        return In(column, tuple(draw(st.lists(values, min_size=1, max_size=3))))
    if kind == "prefix":
        return StartsWith(column, draw(st.sampled_from(["", "a", "ab", "b", "c"])))
    return IsNull(column)


predicates = st.recursive(
    leaves(),
    lambda children: st.one_of(
        st.builds(lambda xs: And(tuple(xs)), st.lists(children, min_size=2, max_size=3)),
        st.builds(lambda xs: Or(tuple(xs)), st.lists(children, min_size=2, max_size=3)),
        st.builds(Not, children),
    ),
    max_leaves=6,
)


@st.composite
def tables(draw: st.DrawFn) -> dict[str, list[Any]]:
    rows = draw(st.integers(1, 60))
    return {
        name: draw(st.lists(st.one_of(st.none(), values), min_size=rows, max_size=rows))
        for name, (values, _) in COLUMNS.items()
    }


def file_indexes(data: dict[str, list[Any]], row_groups: int) -> FileIndexes:
    rows = len(data["i"])
    starts = tuple(sorted({0, rows, *np.linspace(0, rows, row_groups + 1).astype(int).tolist()}))
    return FileIndexes.of(
        starts, [(name, BITMAP, BitmapIndex.build(pa.array(data[name], type=COLUMNS[name][1]))) for name in data]
    )


@settings(max_examples=400, deadline=None)
@given(tables(), predicates, st.integers(1, 4))
def test_bitmap_answers_equal_a_row_by_row_check(data: dict[str, list[Any]], expr: Expr, row_groups: int) -> None:
    indexes = file_indexes(data, row_groups)
    rows = [{name: data[name][r] for name in data} for r in range(len(data["i"]))]
    expected = [r for r, row in enumerate(rows) if truth(expr, row) is True]
    assert sorted(matching_rows(expr, indexes)) == expected
    assert exactly_answered(expr, {c: [BITMAP] for c in COLUMNS})  # every column has a bitmap: every row is decided
    verdict = evaluate(expr, indexes)
    starts = indexes.row_group_starts
    for g, match in enumerate(verdict.row_groups):
        holds = any(starts[g] <= r < starts[g + 1] for r in expected)
        assert (match is Match.MIGHT_MATCH) == holds
    assert (verdict.file is Match.MIGHT_MATCH) == bool(expected)


@settings(max_examples=400, deadline=None)
@given(tables(), predicates, st.integers(1, 4), st.sampled_from(sorted(COLUMNS)))
def test_a_column_without_an_index_never_costs_a_row_group_holding_a_match(
    data: dict[str, list[Any]], expr: Expr, row_groups: int, unindexed: str
) -> None:
    """Exact row sets of the indexed columns meet "might be true" row groups of the other column
    (an AND stops early, its exact parts intersected row by row): every row group holding a
    matching row stays."""
    indexes = file_indexes(data, row_groups)
    indexes = FileIndexes(indexes.row_group_starts, {c: f for c, f in indexes.by_column.items() if c != unindexed})
    rows = [{name: data[name][r] for name in data} for r in range(len(data["i"]))]
    # the planner's static question (may a stage leave every row to the bitmaps?) agrees with the answer
    kinds = {c: [f.kind for f in found] for c, found in indexes.by_column.items()}
    assert exactly_answered(expr, kinds) == (matching_rows(expr, indexes) is not None)
    verdict = evaluate(expr, indexes)
    starts = indexes.row_group_starts
    for g, match in enumerate(verdict.row_groups):
        if any(truth(expr, rows[r]) is True for r in range(starts[g], starts[g + 1])):
            assert match is Match.MIGHT_MATCH, g


@settings(max_examples=100, deadline=None)
@given(tables())
def test_bitmap_round_trips_through_bytes(data: dict[str, list[Any]]) -> None:
    for name, (_, kind) in COLUMNS.items():
        index = BitmapIndex.build(pa.array(data[name], type=kind))
        again = BitmapIndex.from_bytes(index.to_bytes())
        assert again.rows == index.rows and again.not_null == index.not_null
        assert again.clear_bits == index.clear_bits
        assert again.dictionary.type == index.dictionary.type
        assert [repr(v) for v in again.dictionary.to_pylist()] == [repr(v) for v in index.dictionary.to_pylist()]


def test_opaque_parts_keep_row_groups_but_exact_parts_still_prune() -> None:
    data = {"i": [1, 2, 3, 4], "f": [0.0] * 4, "s": ["a"] * 4}
    indexes = file_indexes(data, 2)
    verdict = evaluate(And((Compare("i", "=", 4), Opaque("udf(x)"))), indexes)
    assert verdict.row_groups == (Match.CANNOT_MATCH, Match.MIGHT_MATCH)
    assert evaluate(Not(Opaque("udf(x)")), indexes).row_groups == (Match.MIGHT_MATCH,) * 2


def test_an_inexact_literal_is_never_answered_by_truncation() -> None:
    indexes = file_indexes({"i": [5, 5, 5, 5], "f": [0.0] * 4, "s": ["a"] * 4}, 1)
    assert evaluate(Compare("i", "<", 5.5), indexes).file is Match.MIGHT_MATCH
    assert evaluate(Compare("i", "=", 5.0), indexes).file is Match.MIGHT_MATCH
    assert evaluate(Compare("i", ">", 5.0), indexes).file is Match.CANNOT_MATCH


@pytest.mark.parametrize("cardinality", [1, 2, 3, 1000])
def test_at_most_is_the_set_of_rows_with_small_codes(cardinality: int) -> None:
    rng = np.random.default_rng(cardinality)
    values = rng.integers(0, cardinality, 5000)
    index = BitmapIndex.build(pa.array(values))
    codes = np.searchsorted(np.unique(values), values)
    for code in sorted({-1, 0, cardinality // 2, cardinality - 1, cardinality}):
        assert sorted(index.at_most(code)) == np.flatnonzero(codes <= code).tolist()
        assert sorted(index.with_code(code)) == np.flatnonzero(codes == code).tolist()
        assert sorted(index.codes_between(code, code + 1)) == np.flatnonzero(codes == code).tolist()


TYPED = [
    (pa.bool_(), [True, False, None, True]),
    (pa.int8(), [3, -2, None, 3, 127]),
    (pa.int16(), [300, -2, None]),
    (pa.int64(), [2**62, -(2**63), None, 0]),
    (pa.float32(), [1.5, float("nan"), -0.0, None]),
    (pa.decimal128(7, 2), [decimal.Decimal("1.25"), decimal.Decimal("-3.10"), None]),
    (pa.decimal128(30, 3), [decimal.Decimal("12345678901234567890.125"), decimal.Decimal("-1.000"), None]),
    (pa.date32(), [datetime.date(1969, 12, 31), datetime.date(2024, 2, 29), None]),
    (pa.timestamp("us", tz="UTC"), [datetime.datetime(1960, 1, 1, tzinfo=datetime.timezone.utc), None]),
    (pa.timestamp("us"), [datetime.datetime(2030, 5, 6, 7, 8, 9, 10), None]),
    (pa.binary(), [b"\x00", b"\xff\x01", None, b""]),
    (pa.string(), ["é", "e", None, "ä"]),
]


@pytest.mark.parametrize(("kind", "values"), TYPED, ids=[str(k) for k, _ in TYPED])
def test_every_primitive_type_answers_each_comparison_exactly(kind: pa.DataType, values: list[Any]) -> None:
    index = BitmapIndex.from_bytes(BitmapIndex.build(pa.array(values, type=kind)).to_bytes())
    indexes = FileIndexes.of((0, len(values)), [("c", BITMAP, index)])
    present = [v for v in values if v is not None]
    for literal in present:
        for op in ("=", "!=", "<", "<=", ">", ">="):
            expr = Compare("c", op, literal)
            expected = [r for r, v in enumerate(values) if truth(expr, {"c": v}) is True]
            assert sorted(matching_rows(expr, indexes)) == expected, (op, literal)
    assert sorted(matching_rows(IsNull("c"), indexes)) == [r for r, v in enumerate(values) if v is None]
