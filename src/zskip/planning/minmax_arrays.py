"""The min/max verdict of many row groups at once, over their statistics as arrays.

``zskip.planning.minmax`` answers for one row group from Python values; a query on a table of
thousands of row groups asks that thousands of times.  Here each column's statistics over a run of
row groups are arrays (``StatsColumn``: Arrow arrays of the bounds, numpy arrays of the counts),
and each node of the predicate (through ``rewrite_not``) answers for all of them with one Arrow or
numpy operation.  The answer is the scalar check's, row group for row group: where a bound cannot
be compared in Arrow (timestamps with and without a zone, values Arrow cannot hold in one array),
that condition falls back to the scalar check for each row group.  A property test holds the two
equal on random statistics and predicates.

>>> col = StatsColumn.of([ColumnStats(1, 5, True, 0, 3), ColumnStats(7, 9, True, 0, 2)])
>>> might_match_arrays(Compare("x", ">", 6), {"x": col}, frozenset(), 2).tolist()
[False, True]
"""

from __future__ import annotations

import datetime
import decimal
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from zskip.expr import (
    LEAVES,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Between,
    Column,
    Compare,
    Expr,
    In,
    IsNull,
    Leaf,
    Not,
    Opaque,
    Or,
    StartsWith,
)
from zskip.planning.footers import ColumnStats
from zskip.planning.minmax import _is_nan, _might_leaf

__all__ = ["StatsColumn", "might_match_arrays"]

ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError, OverflowError)


@dataclass(frozen=True)
class StatsColumn:
    """One column's statistics over a run of row groups (``None`` in ``stats``: none recorded)."""

    # each row group's statistics as objects, or what builds them: the arrays below answer every
    # question but a few (a column without one Arrow array of bounds), so a footer copy's arrays
    # are not turned into objects until one is asked (that took most of a cold plan's footer time)
    source: Sequence[ColumnStats | None] | Callable[[], Sequence[ColumnStats | None]]
    known: np.ndarray  # bool: statistics recorded
    has_min_max: np.ndarray  # bool
    null_count: np.ndarray  # float64, NaN: unknown
    values: np.ndarray  # float64 (non-null values), NaN: unknown
    low: pa.Array | None  # the minimum per row group (null where none); None: not one Arrow array
    high: pa.Array | None

    @functools.cached_property
    def stats(self) -> tuple[ColumnStats | None, ...]:
        return tuple(self.source() if callable(self.source) else self.source)

    def __len__(self) -> int:
        return len(self.known)

    @staticmethod
    def of(stats: Sequence[ColumnStats | None]) -> StatsColumn:
        """Arrays of ``stats`` (built once per file and column, then cached with the footer)."""
        n = len(stats)
        known = np.fromiter((s is not None for s in stats), dtype=bool, count=n)
        has = np.fromiter((s is not None and s.has_min_max for s in stats), dtype=bool, count=n)
        nulls = np.fromiter((_count(s.null_count) if s else math.nan for s in stats), dtype=np.float64, count=n)
        values = np.fromiter((_count(s.values) if s else math.nan for s in stats), dtype=np.float64, count=n)
        low = _bounds([s.min if s is not None and s.has_min_max else None for s in stats])
        high = _bounds([s.max if s is not None and s.has_min_max else None for s in stats])
        if low is None or high is None or low.type != high.type:
            low = high = None
        return StatsColumn(tuple(stats), known, has, nulls, values, low, high)

    @staticmethod
    def of_arrays(
        stats: Sequence[ColumnStats | None] | Callable[[], Sequence[ColumnStats | None]],
        known: np.ndarray,
        has_min_max: np.ndarray,
        null_count: np.ndarray,
        values: np.ndarray,
        low: pa.Array,
        high: pa.Array,
    ) -> StatsColumn:
        """``of`` for statistics that come as arrays already (a footer copy's): the same column."""
        if low.type != high.type or not (pa.types.is_null(low.type) or _arrow_comparable(low.type)):
            return StatsColumn(stats, known, has_min_max, null_count, values, None, None)
        return StatsColumn(stats, known, has_min_max, null_count, values, low, high)

    @staticmethod
    def concat(parts: Sequence[StatsColumn]) -> StatsColumn:
        """The row groups of ``parts`` one after another."""
        if len(parts) == 1:
            return parts[0]
        low = _concat([p.low for p in parts])
        high = _concat([p.high for p in parts])
        if low is None or high is None:
            low = high = None
        return StatsColumn(
            lambda: tuple(s for p in parts for s in p.stats),
            np.concatenate([p.known for p in parts]),
            np.concatenate([p.has_min_max for p in parts]),
            np.concatenate([p.null_count for p in parts]),
            np.concatenate([p.values for p in parts]),
            low,
            high,
        )


def _count(value: int | None) -> float:
    return math.nan if value is None else float(value)


def _bounds(values: list[Any]) -> pa.Array | None:
    try:
        array = pa.array(values)
    except ARROW_ERRORS:
        return None
    if pa.types.is_null(array.type) or _arrow_comparable(array.type):
        return array
    return None


def _arrow_comparable(kind: pa.DataType) -> bool:
    """Types whose Arrow order is Python's order of the values the scalar check compares."""
    t = pa.types
    return (
        t.is_integer(kind)
        or t.is_floating(kind)
        or t.is_date(kind)
        or t.is_decimal(kind)
        or t.is_string(kind)  # UTF-8 byte order is code point order
        or t.is_large_string(kind)
        or t.is_binary(kind)
        or t.is_large_binary(kind)
        or t.is_boolean(kind)
        or t.is_timestamp(kind)
    )


def _concat(arrays: Sequence[pa.Array | None]) -> pa.Array | None:
    if any(a is None for a in arrays):
        return None
    typed = [a for a in arrays if a is not None and not pa.types.is_null(a.type)]
    if not typed:
        return pa.concat_arrays([a for a in arrays if a is not None])
    kind = typed[0].type
    try:
        return pa.concat_arrays([a if a.type == kind else a.cast(kind) for a in arrays if a is not None])
    except ARROW_ERRORS:
        return None  # mixed types (decimals of different scales, ...): the scalar check decides


def might_match_arrays(
    pushed: Expr, columns: Mapping[Any, StatsColumn], floats: frozenset[Column], n: int
) -> np.ndarray:
    """For each of ``n`` row groups: might it hold a row where ``pushed`` (through ``rewrite_not``) is TRUE?

    ``columns`` by lower-cased name (a column missing: no statistics, might match).
    """
    return _might(pushed, columns, floats, n)


Columns = Mapping[Any, StatsColumn]


@functools.singledispatch
def _might(expr: Expr, columns: Columns, floats: frozenset[Column], n: int) -> np.ndarray:
    return np.ones(n, dtype=bool)  # a node this check does not know proves nothing


@_might.register
def _(expr: Opaque | AlwaysTrue, columns: Columns, floats: frozenset[Column], n: int) -> np.ndarray:
    return np.ones(n, dtype=bool)


@_might.register
def _(expr: AlwaysFalse, columns: Columns, floats: frozenset[Column], n: int) -> np.ndarray:
    return np.zeros(n, dtype=bool)


@_might.register
def _(expr: And, columns: Columns, floats: frozenset[Column], n: int) -> np.ndarray:
    out = np.ones(n, dtype=bool)
    for child in expr.children:
        out &= _might(child, columns, floats, n)
    return out


@_might.register
def _(expr: Or, columns: Columns, floats: frozenset[Column], n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    for child in expr.children:
        out |= _might(child, columns, floats, n)
    return out


@_might.register
def _(expr: Not, columns: Columns, floats: frozenset[Column], n: int) -> np.ndarray:
    if not isinstance(expr.child, LEAVES):
        return np.ones(n, dtype=bool)  # not through rewrite_not: nothing is proven
    return _leaf(expr.child, True, columns, floats, n)


@_might.register
def _(expr: Leaf, columns: Columns, floats: frozenset[Column], n: int) -> np.ndarray:
    return _leaf(expr, False, columns, floats, n)


def _leaf(leaf: Leaf, negated: bool, columns: Columns, floats: frozenset[Column], n: int) -> np.ndarray:
    name = leaf.column
    col = columns.get(name)
    if col is None:
        return np.ones(n, dtype=bool)
    unknown = ~col.known
    if isinstance(leaf, IsNull):
        counts = col.values if negated else col.null_count
        return unknown | np.isnan(counts) | (counts > 0)
    only_nulls = col.known & (col.values == 0)
    open_ = unknown | ~col.has_min_max  # no bounds: might match
    is_float = name in floats
    verdict = None
    if col.low is not None and col.high is not None:
        try:
            if pa.types.is_floating(col.low.type):
                nan = _filled(pc.is_nan(col.low), False) | _filled(pc.is_nan(col.high), False)
                open_ = open_ | nan
            verdict = (_might_not if negated else _within)(leaf, col.low, col.high, is_float)
        except ARROW_ERRORS:
            verdict = None
    if verdict is None:  # the scalar check, row group by row group
        return np.fromiter(
            (_might_leaf(leaf, negated, {name: s}, floats) for s in col.stats), dtype=bool, count=len(col)
        )
    return ~only_nulls & (open_ | verdict)


def _filled(values: pa.Array | pa.ChunkedArray, fill: bool) -> np.ndarray:
    if values.null_count:  # filling costs a kernel call even when nothing is null
        values = pc.fill_null(values, fill)
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)


EXACT_FLOAT_INT = 2**53  # integers a double holds exactly


def _scalar(value: Any, kind: pa.DataType) -> pa.Scalar:
    """``value`` as an Arrow scalar of the bounds' type, when Arrow then orders it exactly as Python
    orders ``value`` against the bounds; otherwise ``TypeError`` (the scalar check decides)."""
    t = pa.types
    if isinstance(value, bool) != t.is_boolean(kind):
        raise TypeError("boolean against a non-boolean column")
    if t.is_floating(kind):
        exact = isinstance(value, float) or (isinstance(value, int) and abs(value) <= EXACT_FLOAT_INT)
        if not exact:
            raise TypeError("not exactly a double")
        return pa.scalar(float(value), kind)
    ok = (
        (t.is_integer(kind) and isinstance(value, int))
        or (t.is_boolean(kind) and isinstance(value, bool))
        or (t.is_decimal(kind) and isinstance(value, decimal.Decimal | int))
        or (_is_string(kind) and isinstance(value, str))
        or ((t.is_binary(kind) or t.is_large_binary(kind)) and isinstance(value, bytes))
        or (t.is_date(kind) and type(value) is datetime.date)
        or (
            t.is_timestamp(kind)
            and isinstance(value, datetime.datetime)
            and (value.tzinfo is None) == (kind.tz is None)
        )
    )
    if not ok:
        raise TypeError(f"{type(value).__name__} against {kind}")
    return pa.scalar(value, kind)


def _le(a: Any, b: Any) -> np.ndarray:
    return _filled(pc.less_equal(a, b), True)


def _lt(a: Any, b: Any) -> np.ndarray:
    return _filled(pc.less(a, b), True)


def _eq(a: Any, b: Any) -> np.ndarray:
    return _filled(pc.equal(a, b), True)


@functools.singledispatch
def _within(leaf: Expr, low: pa.Array, high: pa.Array, is_float: bool) -> np.ndarray:
    """Might ``leaf`` be TRUE for a value in ``[low, high]`` (per row group)?  As ``minmax._within``."""
    return np.ones(len(low), dtype=bool)


@_within.register
def _(leaf: Compare, low: pa.Array, high: pa.Array, is_float: bool) -> np.ndarray:
    n = len(low)
    if is_float and _is_nan(leaf.value):
        return np.ones(n, dtype=bool)
    v = _scalar(leaf.value, low.type)
    op = leaf.op
    if op == "=":
        return _le(low, v) & _le(v, high)
    if op == "!=":
        if is_float or _stringlike(low.type):
            return np.ones(n, dtype=bool)
        return ~(_eq(low, v) & _eq(high, v))
    if op == "<":
        return _lt(low, v)
    if op == "<=":
        return _le(low, v)
    if is_float:
        return np.ones(n, dtype=bool)  # NaN rows are above everything and missing from the statistics
    if op == ">":
        return _lt(v, high)
    return _le(v, high)


@_within.register
def _(leaf: Between, low: pa.Array, high: pa.Array, is_float: bool) -> np.ndarray:
    n = len(low)
    if is_float and (_is_nan(leaf.low) or _is_nan(leaf.high)):
        return np.ones(n, dtype=bool)
    a, b = _scalar(leaf.low, low.type), _scalar(leaf.high, low.type)
    if not pc.less_equal(a, b).as_py():
        return np.zeros(n, dtype=bool)
    return _le(low, b) & _le(a, high)


@_within.register
def _(leaf: In, low: pa.Array, high: pa.Array, is_float: bool) -> np.ndarray:
    out = np.zeros(len(low), dtype=bool)
    for value in leaf.values:
        if is_float and _is_nan(value):
            return np.ones(len(low), dtype=bool)
        v = _scalar(value, low.type)
        out |= _le(low, v) & _le(v, high)
    return out


@_within.register
def _(leaf: StartsWith, low: pa.Array, high: pa.Array, is_float: bool) -> np.ndarray:
    if not _is_string(low.type):
        return np.ones(len(low), dtype=bool)
    p = pa.scalar(leaf.prefix, low.type)
    below = _filled(pc.less(high, p), False)
    above = _filled(pc.greater(low, p), False) & ~_filled(pc.starts_with(low, pattern=leaf.prefix), False)
    return ~(below | above)


@functools.singledispatch
def _might_not(leaf: Expr, low: pa.Array, high: pa.Array, is_float: bool) -> np.ndarray:
    """Might ``NOT leaf`` be TRUE for a value in ``[low, high]``?  As ``minmax._might_not``."""
    return np.ones(len(low), dtype=bool)


@_might_not.register
def _(leaf: In, low: pa.Array, high: pa.Array, is_float: bool) -> np.ndarray:
    n = len(low)
    if is_float:
        return np.ones(n, dtype=bool)
    single = ~_filled(pc.not_equal(low, high), True)
    hit = np.zeros(n, dtype=bool)
    for value in leaf.values:
        hit |= _filled(pc.equal(low, _scalar(value, low.type)), False)
    return ~(single & hit)


@_might_not.register
def _(leaf: StartsWith, low: pa.Array, high: pa.Array, is_float: bool) -> np.ndarray:
    if not _is_string(low.type):
        return np.ones(len(low), dtype=bool)
    inside = _filled(pc.starts_with(low, pattern=leaf.prefix), False) & _filled(
        pc.starts_with(high, pattern=leaf.prefix), False
    )
    return ~inside


def _is_string(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _stringlike(kind: pa.DataType) -> bool:
    return _is_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind)
