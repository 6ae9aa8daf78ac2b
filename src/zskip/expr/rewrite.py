"""Rewrites of a predicate that keep its meaning: NOT moved down to the leaves, and the NULL checks Spark
adds for compared columns dropped.  Each is one pure function over the frozen IR (a new tree; the
input is never changed).
"""

from __future__ import annotations

import functools

from zskip.expr.nodes import AlwaysFalse, AlwaysTrue, And, Column, Compare, Expr, IsNull, Not, Opaque, Or, columns_of

__all__ = ["rewrite_not", "without_implied_not_null"]

NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@functools.singledispatch
def _pushed(expr: Expr, negate: bool) -> Expr:
    """A leaf with no negated form of its own keeps its NOT (``NOT a IN (...)``, ``NOT a IS NULL``)."""
    return Not(expr) if negate else expr


@_pushed.register
def _(expr: Not, negate: bool) -> Expr:
    return _pushed(expr.child, not negate)


@_pushed.register
def _(expr: And | Or, negate: bool) -> Expr:
    children = tuple(_pushed(c, negate) for c in expr.children)
    return Or(children) if isinstance(expr, And) == negate else And(children)  # De Morgan when negated


@_pushed.register
def _(expr: Compare, negate: bool) -> Expr:
    return Compare(expr.column, NEGATE[expr.op], expr.value) if negate else expr


@_pushed.register
def _(expr: Opaque, negate: bool) -> Expr:
    return expr  # unknown either way


@_pushed.register
def _(expr: AlwaysTrue | AlwaysFalse, negate: bool) -> Expr:
    if not negate:
        return expr
    return AlwaysFalse() if isinstance(expr, AlwaysTrue) else AlwaysTrue()


def rewrite_not(expr: Expr, negate: bool = False) -> Expr:
    """``expr`` with every NOT on a leaf (NOT over AND/OR moved down by De Morgan; ``NOT a < 5`` is
    ``a >= 5`` under Spark's rules, NaN included).

    >>> rewrite_not(Not(And((Compare("a", "<", 5), IsNull("b")))))
    Or(children=(Compare(column='a', op='>=', value=5), Not(child=IsNull(column='b'))))
    """
    return _pushed(expr, negate)


def without_implied_not_null(expr: Expr) -> Expr:
    """``expr`` without the ``IS NOT NULL`` conjuncts Spark adds for columns another conjunct
    compares (those already reject NULLs), so equal filters read alike in the log."""
    if not isinstance(expr, And):
        return expr
    others = [c for c in expr.children if not _is_not_null(c)]
    compared: set[Column] = set()
    for child in others:
        compared |= columns_of(child)
    kept = [c for c in expr.children if not (_is_not_null(c) and _not_null_column(c) in compared)]
    return kept[0] if len(kept) == 1 else And(tuple(kept))


def _is_not_null(expr: Expr) -> bool:
    return isinstance(expr, Not) and isinstance(expr.child, IsNull)


def _not_null_column(expr: Expr) -> Column:
    assert isinstance(expr, Not) and isinstance(expr.child, IsNull)
    return expr.child.column
