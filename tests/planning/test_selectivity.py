"""The expected matches per row group that decide whether a range predicate's bitmaps are read."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

from zskip.expr import And, Between, Compare, In, IsNull, Not, Or
from zskip.planning.footers import ColumnStats
from zskip.planning.minmax_arrays import StatsColumn
from zskip.planning.selectivity import expected_matches


def column(*groups: tuple[object, object, int, int]) -> StatsColumn:
    """Row groups as (min, max, nulls, values)."""
    return StatsColumn.of([ColumnStats(lo, hi, True, nulls, values) for lo, hi, nulls, values in groups])


ROWS = np.array([100.0, 100.0])
NAN = float("nan")
WHOLE = column((0, 9, 0, 100), (10, 19, 0, 100))  # ten whole numbers a row group


@pytest.mark.parametrize(
    ("leaf", "expected"),
    [
        (Compare(1, "<", 5), [50.0, NAN]),  # 0-4 of 0-9; 10-19 ruled out by its bounds
        (Compare(1, "<=", 5), [60.0, NAN]),
        (Compare(1, ">", 14), [NAN, 50.0]),
        (Compare(1, ">=", 14), [NAN, 60.0]),
        (Compare(1, "!=", 3), [90.0, 100.0]),
        (Between(1, 8, 11), [20.0, 20.0]),
        (In(1, (1, 2, 15)), [20.0, 10.0]),
    ],
)
def test_whole_numbers_count_the_values_a_range_covers(leaf, expected) -> None:  # type: ignore[no-untyped-def]
    assert expected_matches(leaf, {1: WHOLE}, ROWS, {1}).tolist() == pytest.approx(expected, nan_ok=True)


def test_conditions_on_different_columns_are_independent_and_nulls_count_against_the_rows() -> None:
    half_null = column((0.0, 10.0, 50, 50), (0.0, 0.0, 0, 100))  # doubles; the second row group all 0.0
    both = And((Compare(1, "<", 9), Compare(2, ">", 1.0), Not(IsNull(2))))
    got = expected_matches(both, {1: WHOLE, 2: half_null}, ROWS, {1, 2})
    # 90% of the rows have q < 9 and 45% (half of them NULL) x > 1.0: 40.5% have both; the second row
    # group's bounds rule it out
    assert got.tolist() == pytest.approx([40.5, NAN], nan_ok=True)
    # shares that need not overlap at all still meet where the values spread evenly
    three = And((Compare(1, "<", 5), Compare(3, "<", 8), Compare(2, "<", 3)))
    got = expected_matches(three, {1: WHOLE, 2: WHOLE, 3: WHOLE}, ROWS, {1, 2, 3})
    assert got.tolist() == pytest.approx([0.5 * 0.8 * 0.3 * 100.0, NAN], nan_ok=True)


def test_conditions_on_one_column_hold_the_span_between_them() -> None:
    # a lower and an upper bound hold what lies between them (5-7 of 0-9), not the product of their shares
    band = And((Compare(1, ">=", 5), Compare(1, "<=", 7)))
    assert expected_matches(band, {1: WHOLE}, ROWS, {1}).tolist() == pytest.approx([30.0, NAN], nan_ok=True)
    # ...and meet another column's condition independently
    other = And((Compare(1, ">=", 5), Compare(2, "<", 5), Compare(1, "<=", 7)))
    got = expected_matches(other, {1: WHOLE, 2: WHOLE}, ROWS, {1, 2})
    assert got.tolist() == pytest.approx([15.0, NAN], nan_ok=True)
    # bounds that leave nothing between them in a row group: no match expected, though each alone
    # leaves part of it (the statistics cannot rule it out: the bitmaps may)
    apart = And((Compare(1, ">=", 8), Compare(1, "<", 3)))
    assert expected_matches(apart, {1: WHOLE}, ROWS, {1}).tolist() == pytest.approx([0.0, NAN], nan_ok=True)


def test_dates_are_whole_numbers_of_days() -> None:
    days = column((datetime.date(2000, 1, 1), datetime.date(2000, 1, 10), 0, 100))
    got = expected_matches(Compare(3, "<", datetime.date(2000, 1, 3)), {3: days}, np.array([100.0]), {3})
    assert got.tolist() == pytest.approx([20.0])


def test_what_cannot_be_estimated_says_so_and_unindexed_conditions_do_not_count() -> None:
    text = column(("a", "z", 0, 100), ("a", "z", 0, 100))
    assert expected_matches(Compare(1, "<", 5), {1: WHOLE}, ROWS, {1}) is not None
    assert expected_matches(Or((Compare(1, "<", 5), Compare(1, ">", 15))), {1: WHOLE}, ROWS, {1}) is None
    assert expected_matches(Not(Compare(1, "<", 5)), {1: WHOLE}, ROWS, {1}) is None
    assert expected_matches(Compare(2, "<", "m"), {2: text}, ROWS, {2}) is None  # text: no estimate
    assert expected_matches(Compare(1, "<", 4.5), {1: WHOLE}, ROWS, {1}) is None  # not a value of the column
    # column 2 has no bitmap: its condition does not change what the bitmaps of 1 can rule out
    assert expected_matches(
        And((Compare(1, "<", 5), Compare(2, "<", "m"))), {1: WHOLE}, ROWS, {1}
    ).tolist() == pytest.approx([50.0, NAN], nan_ok=True)
    assert expected_matches(Compare(2, "<", "m"), {}, ROWS, {1}) is None  # no condition on an indexed column


INF = float("inf")


def float_column(kind: object, *groups: tuple[float, float]) -> StatsColumn:
    """Row groups of 100 values and no NULLs with these (min, max), as ``kind`` (float32 or float64) arrays."""
    import pyarrow as pa

    n = len(groups)
    return StatsColumn.of_arrays(
        lambda: [ColumnStats(lo, hi, True, 0, 100) for lo, hi in groups],
        np.ones(n, dtype=bool),
        np.ones(n, dtype=bool),
        np.zeros(n),
        np.full(n, 100.0),
        pa.array([lo for lo, _ in groups], kind),
        pa.array([hi for _, hi in groups], kind),
    )


@pytest.mark.parametrize("kind", ["float32", "float64"])
@pytest.mark.parametrize(
    "leaf",
    [
        Compare(1, "<", 5.0),
        Compare(1, ">", 5.0),
        Compare(1, "=", 0.0),
        Compare(1, "!=", 0.0),
        Between(1, -1.0, 1.0),
        In(1, (0.0, 2.5)),
        Compare(1, "<", INF),
        Compare(1, ">", -INF),
    ],
)
def test_nan_infinite_and_negative_zero_bounds_warn_nothing_and_leave_the_index_to_decide(kind, leaf) -> None:  # type: ignore[no-untyped-def]
    import warnings

    import pyarrow as pa

    col = float_column(
        pa.float32() if kind == "float32" else pa.float64(),
        (0.0, 10.0),  # finite: estimated as always
        (NAN, NAN),
        (-INF, 10.0),
        (0.0, INF),
        (-INF, INF),
        (-0.0, -0.0),  # a row group of zeros (one of them negative)
    )
    rows = np.full(6, 100.0)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        got = expected_matches(leaf, {1: col}, rows, {1})
    assert got is not None
    # non-finite bounds: not ruled out (NaN would say min/max rule them out) and well under the
    # 4 matches that make bitmaps not worth reading
    assert not np.isnan(got[1:4]).any() and (got[1:4] < 1e-3).all(), got
    finite = expected_matches(leaf, {1: float_column(pa.float64(), (0.0, 10.0))}, np.array([100.0]), {1})
    assert finite is not None
    assert got[0] == pytest.approx(finite[0], nan_ok=True)  # the finite row group as estimated alone
    zero = {"<": 100.0, ">": NAN, "=": 100.0, "!=": NAN}
    if isinstance(leaf, Compare) and leaf.value in (0.0, 5.0):
        assert got[5] == pytest.approx(zero[leaf.op], nan_ok=True), got  # -0.0 is 0.0
