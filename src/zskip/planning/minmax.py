"""Can a row group (or file) with these min/max statistics hold a row where the predicate is TRUE?

The answer is "might" unless the statistics prove otherwise.  NOT is pushed to the leaves first
(``NOT a < 5`` is ``a >= 5`` under Spark's rules, NaN included).  Float and double statistics leave
NaN out, and Spark finds NaN above every number, so ``>``, ``>=`` and ``!=`` never prune a float
column, and a NaN bound (some writers store one) proves nothing; ``!=`` never prunes strings or
binaries either (their statistics may be truncated bounds).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from typing import Any

from zskip.expr import AlwaysFalse, AlwaysTrue, And, Between, Compare, Expr, In, IsNull, Not, Opaque, Or, StartsWith
from zskip.planning.footers import ColumnStats

__all__ = ["might_match", "might_match_pushed", "push_not"]

NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def push_not(expr: Expr, negate: bool = False) -> Expr:
    """``expr`` with every NOT on a leaf (NOT over AND/OR moved down by De Morgan)."""
    if isinstance(expr, Not):
        return push_not(expr.child, not negate)
    if isinstance(expr, (And, Or)):
        children = tuple(push_not(c, negate) for c in expr.children)
        flip = isinstance(expr, And) == negate
        return Or(children) if flip else And(children)
    if not negate:
        return expr
    if isinstance(expr, Compare):
        return Compare(expr.column, NEGATE[expr.op], expr.value)
    if isinstance(expr, Opaque):
        return expr
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return AlwaysFalse() if isinstance(expr, AlwaysTrue) else AlwaysTrue()
    return Not(expr)


def might_match(expr: Expr, stats: Mapping[str, ColumnStats | None], floats: frozenset[str]) -> bool:
    """``stats`` by lower-cased column name (``None``: unknown); ``floats``: float and double columns."""
    return _might(push_not(expr), stats, floats)


def might_match_pushed(pushed: Expr, stats: Mapping[str, ColumnStats | None], floats: frozenset[str]) -> bool:
    """``might_match`` of a predicate already through ``push_not`` (for many row groups, push once)."""
    return _might(pushed, stats, floats)


def _might(expr: Expr, stats: Mapping[str, ColumnStats | None], floats: frozenset[str]) -> bool:
    if isinstance(expr, And):
        return all(_might(c, stats, floats) for c in expr.children)
    if isinstance(expr, Or):
        return any(_might(c, stats, floats) for c in expr.children)
    if isinstance(expr, (Opaque, AlwaysTrue)):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    negated = isinstance(expr, Not)
    leaf = expr.child if isinstance(expr, Not) else expr
    if isinstance(leaf, (Opaque, And, Or, Not, AlwaysTrue, AlwaysFalse)):
        return True
    column = leaf.column.lower()
    s = stats.get(column)
    if s is None:
        return True
    try:
        return _leaf(leaf, negated, s, column in floats)
    except (TypeError, ValueError, OverflowError):
        return True  # values the statistics cannot be compared with


def _leaf(leaf: Expr, negated: bool, s: ColumnStats, is_float: bool) -> bool:
    if isinstance(leaf, IsNull):
        if negated:
            return s.values is None or s.values > 0
        return s.null_count is None or s.null_count > 0
    if s.values == 0:
        return False  # only NULLs: no comparison is TRUE
    if not s.has_min_max:
        return True
    low, high = s.min, s.max
    if _is_nan(low) or _is_nan(high):
        return True  # some writers let NaN into a float column's bounds: they then bound nothing
    if negated:
        if isinstance(leaf, In) and not is_float and low == high:
            return not any(_equal(low, v) for v in leaf.values)
        if isinstance(leaf, StartsWith) and isinstance(low, str) and isinstance(high, str):
            return not (low.startswith(leaf.prefix) and high.startswith(leaf.prefix))
        return True
    if isinstance(leaf, Compare):
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
    if isinstance(leaf, Between):
        if is_float and any(isinstance(v, float) and math.isnan(v) for v in (leaf.low, leaf.high)):
            return True
        return _le(leaf.low, leaf.high) and _le(low, leaf.high) and _le(leaf.low, high)
    if isinstance(leaf, In):
        return any(
            (is_float and isinstance(v, float) and math.isnan(v)) or (_le(low, v) and _le(v, high)) for v in leaf.values
        )
    if isinstance(leaf, StartsWith):
        if not isinstance(low, str) or not isinstance(high, str):
            return True
        return not (high < leaf.prefix or (low > leaf.prefix and not low.startswith(leaf.prefix)))
    return True


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
