"""Can a row group (or file) with these min/max statistics hold a row where the predicate is TRUE?

The answer is "might" unless the statistics prove otherwise.  NOT is pushed to the leaves first
(``NOT a < 5`` is ``a >= 5`` under Spark's rules, NaN included).  Float and double statistics leave
NaN out, and Spark finds NaN above every number, so ``>``, ``>=`` and ``!=`` never prune a float
column, and a NaN bound (some writers store one) proves nothing; ``!=`` never prunes strings or
binaries either (their statistics may be truncated bounds).
"""

from __future__ import annotations

import datetime
import functools
import math
from collections.abc import Mapping
from typing import Any

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
from zskip.expr.rewrite import rewrite_not
from zskip.planning.footers import ColumnStats

__all__ = ["might_match", "might_match_pushed"]


def might_match(expr: Expr, stats: Mapping[Any, ColumnStats | None], floats: frozenset[Column]) -> bool:
    """``stats`` by lower-cased column name (``None``: unknown); ``floats``: float and double columns."""
    return _might(rewrite_not(expr), stats, floats)


def might_match_pushed(pushed: Expr, stats: Mapping[Any, ColumnStats | None], floats: frozenset[Column]) -> bool:
    """``might_match`` of a predicate already through ``rewrite_not`` (for many row groups, push once)."""
    return _might(pushed, stats, floats)


# ---- might a row match? (predicates through rewrite_not) --------------------------------------------

Stats = Mapping[Any, ColumnStats | None]


@functools.singledispatch
def _might(expr: Expr, stats: Stats, floats: frozenset[Column]) -> bool:
    return True  # a node this check does not know proves nothing


@_might.register
def _(expr: Leaf, stats: Stats, floats: frozenset[Column]) -> bool:
    return _might_leaf(expr, False, stats, floats)


@_might.register
def _(expr: And, stats: Stats, floats: frozenset[Column]) -> bool:
    return all(_might(c, stats, floats) for c in expr.children)


@_might.register
def _(expr: Or, stats: Stats, floats: frozenset[Column]) -> bool:
    return any(_might(c, stats, floats) for c in expr.children)


@_might.register
def _(expr: Opaque | AlwaysTrue, stats: Stats, floats: frozenset[Column]) -> bool:
    return True


@_might.register
def _(expr: AlwaysFalse, stats: Stats, floats: frozenset[Column]) -> bool:
    return False


@_might.register
def _(expr: Not, stats: Stats, floats: frozenset[Column]) -> bool:
    if not isinstance(expr.child, LEAVES):
        return True  # not through rewrite_not: nothing is proven
    return _might_leaf(expr.child, True, stats, floats)


def _might_leaf(leaf: Leaf, negated: bool, stats: Stats, floats: frozenset[Column]) -> bool:
    column = leaf.column
    s = stats.get(column)
    if s is None:
        return True
    if isinstance(leaf, IsNull):
        if negated:
            return s.values is None or s.values > 0
        return s.null_count is None or s.null_count > 0
    if s.values == 0:
        return False  # only NULLs: no comparison is TRUE
    if not s.has_min_max or _is_nan(s.min) or _is_nan(s.max):
        return True  # some writers let NaN into a float column's bounds: they then bound nothing
    try:
        if negated:
            return _might_not(leaf, s.min, s.max, column in floats)
        return _within(leaf, s.min, s.max, column in floats)
    except (TypeError, ValueError, OverflowError):
        return True  # values the statistics cannot be compared with


@functools.singledispatch
def _within(leaf: Expr, low: Any, high: Any, is_float: bool) -> bool:
    """Might ``leaf`` be TRUE for a value in ``[low, high]`` (or a NaN, for a float column)?"""
    return True


@_within.register
def _(leaf: Compare, low: Any, high: Any, is_float: bool) -> bool:
    v = leaf.value
    if is_float and isinstance(v, float) and math.isnan(v):
        return True
    op = leaf.op
    if op == "=":
        return _le(low, v) and _le(v, high)
    if op == "!=":
        return is_float or isinstance(low, (str, bytes)) or not (_equal(low, v) and _equal(high, v))
    if op == "<":
        return _lt(low, v)
    if op == "<=":
        return _le(low, v)
    if is_float:
        return True  # NaN rows are above everything and missing from the statistics
    if op == ">":
        return _lt(v, high)
    return _le(v, high)  # >=


@_within.register
def _(leaf: Between, low: Any, high: Any, is_float: bool) -> bool:
    if is_float and any(isinstance(v, float) and math.isnan(v) for v in (leaf.low, leaf.high)):
        return True
    return _le(leaf.low, leaf.high) and _le(low, leaf.high) and _le(leaf.low, high)


@_within.register
def _(leaf: In, low: Any, high: Any, is_float: bool) -> bool:
    return any(
        (is_float and isinstance(v, float) and math.isnan(v)) or (_le(low, v) and _le(v, high)) for v in leaf.values
    )


@_within.register
def _(leaf: StartsWith, low: Any, high: Any, is_float: bool) -> bool:
    if not isinstance(low, str) or not isinstance(high, str):
        return True
    return not (high < leaf.prefix or (low > leaf.prefix and not low.startswith(leaf.prefix)))


@functools.singledispatch
def _might_not(leaf: Expr, low: Any, high: Any, is_float: bool) -> bool:
    """Might ``NOT leaf`` be TRUE for a value in ``[low, high]``?  (Comparisons were negated by rewrite_not.)"""
    return True


@_might_not.register
def _(leaf: In, low: Any, high: Any, is_float: bool) -> bool:
    return is_float or low != high or not any(_equal(low, v) for v in leaf.values)


@_might_not.register
def _(leaf: StartsWith, low: Any, high: Any, is_float: bool) -> bool:
    if not isinstance(low, str) or not isinstance(high, str):
        return True
    return not (low.startswith(leaf.prefix) and high.startswith(leaf.prefix))


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _align(a: Any, b: Any) -> tuple[Any, Any]:
    """Make timestamps comparable: statistics may come back naive where the literal is UTC-aware."""
    mixed = (
        isinstance(a, datetime.datetime)
        and isinstance(b, datetime.datetime)
        and (a.tzinfo is None) != (b.tzinfo is None)
    )
    if mixed:
        if a.tzinfo is not None:
            a = a.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        else:
            b = b.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    if isinstance(a, float) and a == 0:
        a = 0.0
    if isinstance(b, float) and b == 0:
        b = 0.0
    return a, b


def _le(a: Any, b: Any) -> bool:
    a, b = _align(a, b)
    return bool(a <= b)


def _lt(a: Any, b: Any) -> bool:
    a, b = _align(a, b)
    return bool(a < b)


def _equal(a: Any, b: Any) -> bool:
    a, b = _align(a, b)
    return bool(a == b)
