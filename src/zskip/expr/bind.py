"""Binding: a predicate's column names resolved once to Iceberg field ids.

Everything zskip stores about a column (index entries, the clustering spec, Parquet statistics)
names it by field id, so the planner's stages see only bound predicates and compare ids, never
names: a renamed column keeps what was stored about it, and a new column that took an old name
inherits nothing.  A leaf whose column is not in the schema becomes ``Opaque`` (it never prunes).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from zskip.expr.nodes import LEAVES, AlwaysFalse, AlwaysTrue, And, Expr, Leaf, Not, Opaque, Or
from zskip.expr.sql import to_sql

__all__ = ["bind", "is_bound"]


def bind(expr: Expr, field_ids: Mapping[str, int]) -> Expr:
    """``expr`` with each column name replaced by its field id in ``field_ids`` (exact names, as the
    table's schema spells them).

    >>> from zskip.expr import Compare, IsNull
    >>> bind(And((Compare("a", "=", 5), IsNull("gone"))), {"a": 3})
    And(children=(Compare(column=3, op='=', value=5), Opaque(text='gone IS NULL')))
    """
    return _bind(expr, field_ids)


@functools.singledispatch
def _bind(expr: Expr, field_ids: Mapping[str, int]) -> Expr:
    if isinstance(expr, LEAVES):
        return _leaf(expr, field_ids)
    raise TypeError(f"not a predicate node: {expr!r}")


def _leaf(leaf: Leaf, field_ids: Mapping[str, int]) -> Expr:
    from dataclasses import replace

    if isinstance(leaf.column, int):
        return leaf  # bound already
    found = field_ids.get(leaf.column)
    return Opaque(to_sql(leaf)) if found is None else replace(leaf, column=found)


@_bind.register
def _(expr: And, field_ids: Mapping[str, int]) -> Expr:
    return And(tuple(_bind(c, field_ids) for c in expr.children))


@_bind.register
def _(expr: Or, field_ids: Mapping[str, int]) -> Expr:
    return Or(tuple(_bind(c, field_ids) for c in expr.children))


@_bind.register
def _(expr: Not, field_ids: Mapping[str, int]) -> Expr:
    return Not(_bind(expr.child, field_ids))


@_bind.register(Opaque)
@_bind.register(AlwaysTrue)
@_bind.register(AlwaysFalse)
def _(expr: Expr, field_ids: Mapping[str, int]) -> Expr:
    return expr


def is_bound(expr: Expr) -> bool:
    """Whether every column ``expr`` names is a field id."""
    from zskip.expr.nodes import columns_of

    return all(isinstance(c, int) for c in columns_of(expr))
