"""How many rows of each row group a range predicate must match, from the row groups' min/max.

A bitmap rules a row group out only when none of its rows matches.  For a predicate of ranges the
blobs are read whole (a head cannot decide a range), and where the row groups' own statistics leave
no doubt that each holds matches, reading them buys nothing.  Before reading them, the index stage
asks what the statistics say: each condition's share of a row group's rows if its column's values
spread evenly between the row group's min and max, and how much of the row group the conditions
hold together:

- conditions on one column hold together at least ``max(0, sum of shares - (conditions - 1))`` of
  it: exactly the span between a lower and an upper bound (``x >= a AND x <= b``), the least they
  can share otherwise;
- conditions on different columns are independent: their shares multiply.  Also between the
  columns a curve placed together: a curve's row group is a box in them that may be half empty (two
  cells of the curve far apart), but measured on SSB lineorder at scale factor 1 in zskip's Z-order
  over three columns (``bench/range_estimate.py``, docs/benchmarks/range-estimate.md: 150 random
  boxes on two or three columns, 2,551 row groups), of the row groups "the least share" put under 4
  matches 33% held none, and together they held 383,737 matches; of those independence put under 4
  matches 37% held none, 2,464 matches in all.  On D7 (a wide band of one curve column, a narrow one
  of another) independence expected 3,679 matches and the row groups held 3,709.

Where every row group must hold several matches, the bitmaps are not read (their files stay whole,
which is always sound: this only ever keeps more).

The estimate is only a cost decision.  It misses where values bunch up inside a row group's bounds
and the range falls in a gap between them, or where the columns are correlated in the data (a
curve's half-empty box among them); ``spark.zskip.planning.bitmapRangeRows`` sets how many matches
make the bitmaps not worth reading (``0``: always read them).

>>> from zskip.planning.footers import ColumnStats
>>> col = StatsColumn.of([ColumnStats(0, 9, True, 0, 100), ColumnStats(0, 99, True, 0, 100)])
>>> expected_matches(Compare(1, "<", 5), {1: col}, np.array([100, 100]), {1}).tolist()
[50.0, 5.0]
>>> expected_matches(Compare(1, ">", 50), {1: col}, np.array([100, 100]), {1}).tolist()  # min/max rule out the first
[nan, 49.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Set

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from zskip.expr import And, Between, Compare, Expr, In, IsNull, Leaf, Not, columns_of
from zskip.planning.minmax_arrays import ARROW_ERRORS, StatsColumn, _scalar
from zskip.settings import RANGE_ROWS

__all__ = ["DEFAULT_RANGE_ROWS", "RANGE_ROWS_SETTING", "as_numbers", "expected_matches"]

RANGE_ROWS_SETTING = RANGE_ROWS.key
# The share of a row group whose bounds are NaN or infinite: small enough that its bitmaps are read.
UNKNOWN_SHARE = 1e-9
# At 4 expected matches an even spread leaves a row group without one about 2% of the time (Poisson).
DEFAULT_RANGE_ROWS = float(RANGE_ROWS.default)


def expected_matches(
    expr: Expr, columns: Mapping[int, StatsColumn], rows: np.ndarray, indexed: Set[int]
) -> np.ndarray | None:
    """The number of rows of each row group (``rows`` of them each) that ``expr``'s conjuncts on the
    ``indexed`` fields are expected to match together, each column's values spread evenly between the
    row group's bounds and the columns independent, NaN where a condition's bounds rule the row group
    out; ``None`` when one of those conjuncts is not a comparison, ``BETWEEN`` or ``IN`` on a column
    with numeric, date or timestamp bounds in every row group (then nothing is estimated)."""
    conjuncts = expr.children if isinstance(expr, And) else (expr,)
    shares: dict[int, list[np.ndarray]] = {}  # field -> each of its conditions' share of every row group
    for leaf in conjuncts:
        if isinstance(leaf, Not) and isinstance(leaf.child, IsNull):
            continue  # rows with a value: every condition below already counts only those
        if not isinstance(leaf, Leaf) or not isinstance(leaf.column, int) or leaf.column not in indexed:
            if _mentions(leaf, indexed):
                return None  # an OR, NOT or other condition the bitmaps decide: no estimate of it
            continue  # a condition the bitmaps cannot use: it does not change what they can rule out
        column = columns.get(leaf.column)
        share = None if column is None else _share(leaf, column)
        if share is None:
            return None
        shares.setdefault(leaf.column, []).append(share)
    if not shares:
        return None
    together = np.ones(len(rows), dtype=np.float64)
    possible = np.ones(len(rows), dtype=bool)  # no condition's min/max rules the row group out
    for of_column in shares.values():
        possible &= np.logical_and.reduce([share > 0 for share in of_column])
        together = together * np.clip(sum(of_column) - (len(of_column) - 1), 0.0, 1.0)
    # a row group the statistics rule out needs no index: NaN says so apart from "no match for sure"
    return np.where(possible, rows.astype(np.float64) * together, np.nan)


def _mentions(expr: Expr, fields: Set[int]) -> bool:
    return any(isinstance(c, int) and c in fields for c in columns_of(expr))


def _share(leaf: Leaf, column: StatsColumn) -> np.ndarray | None:
    """The share of each row group's rows ``leaf`` is expected to keep (non-null rows spread evenly)."""
    if column.low is None or column.high is None or not bool(np.all(column.has_min_max)):
        return None
    kind = column.low.type
    low, high = as_numbers(column.low), as_numbers(column.high)
    if low is None or high is None:
        return None
    # a float column's bounds may be NaN or infinite: no even spread between them to speak of, so those
    # row groups are estimated apart (below) and their bounds stand in as 0 to keep the arithmetic finite
    finite = np.isfinite(low) & np.isfinite(high)
    if not bool(np.all(finite)):
        low, high = np.where(finite, low, 0.0), np.where(finite, high, 0.0)
    discrete = not (pa.types.is_floating(kind) or pa.types.is_decimal(kind))
    # discrete values: the whole numbers from low to high; continuous ones: the interval between them
    width = high - low + (1.0 if discrete else 0.0)
    nonnull = np.where(np.isnan(column.values), np.inf, column.values)  # unknown: as if no NULLs
    nulls = np.nan_to_num(column.null_count)
    present = np.divide(nonnull, nonnull + nulls, out=np.ones_like(nonnull), where=np.isfinite(nonnull) & (nulls > 0))

    def value(literal: object) -> float | None:
        try:
            number = as_numbers(pa.array([_scalar(literal, kind)], kind))
        except ARROW_ERRORS:
            return None
        return None if number is None or np.isnan(number[0]) else float(number[0])

    def below(v: float, strict: bool) -> np.ndarray:
        """How much of each row group's span lies below ``v`` (``strict``) or at or below it."""
        if discrete:
            return np.clip(np.ceil(v) - low if strict else np.floor(v) - low + 1.0, 0.0, width)
        return np.clip(v - low, 0.0, width)

    def equal(v: float) -> np.ndarray:
        """One value's share of the span: a whole number's, or one row's among distinct continuous values."""
        one = np.ones_like(width) if discrete else width / np.clip(nonnull, 1.0, None)
        return np.where((low <= v) & (v <= high), one, 0.0)

    if isinstance(leaf, Compare):
        v = value(leaf.value)
        if v is None or leaf.op not in ("<", "<=", ">", ">=", "=", "!="):
            return None
        covered = {
            "<": lambda: below(v, True),
            "<=": lambda: below(v, False),
            ">": lambda: width - below(v, False),
            ">=": lambda: width - below(v, True),
            "=": lambda: equal(v),
            "!=": lambda: width - equal(v),
        }[leaf.op]()
        point = {"<": low < v, "<=": low <= v, ">": low > v, ">=": low >= v, "=": low == v, "!=": low != v}[leaf.op]
    elif isinstance(leaf, Between):
        lo, hi = value(leaf.low), value(leaf.high)
        if lo is None or hi is None:
            return None
        covered = np.clip(below(hi, False) - below(lo, True), 0.0, None)
        point = (lo <= low) & (low <= hi)
    elif isinstance(leaf, In):
        values = [value(v) for v in leaf.values if v is not None]
        if any(v is None for v in values):
            return None
        numbers = [v for v in values if v is not None]
        covered = sum((equal(v) for v in numbers), np.zeros_like(width))
        point = np.isin(low, numbers)
    else:
        return None
    share = np.where(width > 0, np.divide(covered, width, out=np.zeros_like(width), where=width > 0), point)
    share = np.clip(share, 0.0, 1.0) * present
    # bounds that are not finite numbers say nothing of how many rows match: as if few did, so the exact
    # index decides (reading it only costs; a row group the bounds rule out is still ruled out by min/max)
    return np.where(finite, share, UNKNOWN_SHARE)


def as_numbers(values: pa.Array) -> np.ndarray | None:
    """``values`` as float64 numbers in their order (``None``: not numbers, dates or timestamps)."""
    kind = values.type
    try:
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
            return np.asarray(pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
        if pa.types.is_date32(kind):
            return np.asarray(values.cast(pa.int32()).to_numpy(zero_copy_only=False), dtype=np.float64)
        if pa.types.is_timestamp(kind) or pa.types.is_date64(kind):
            return np.asarray(values.cast(pa.int64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    except ARROW_ERRORS:
        return None
    return None
