"""Predicates zskip can reason about: a small IR of frozen dataclasses.

Literals are plain Python values (``int``, ``float``, ``str``, ``bytes``, ``bool``,
``datetime.date``, ``datetime.datetime``, ``decimal.Decimal``) already converted to the type of
the column they are compared with.  Anything the planner cannot reason about is ``Opaque``: it
never prunes, and Spark still applies it.
"""

from zskip.expr.bind import bind, is_bound
from zskip.expr.nodes import (
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
    columns_of,
    equality_values,
)
from zskip.expr.rewrite import rewrite_not, without_implied_not_null
from zskip.expr.sql import literal_sql, quoted, to_sql

__all__ = [
    "LEAVES",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "Between",
    "Column",
    "Compare",
    "Expr",
    "In",
    "IsNull",
    "Leaf",
    "Not",
    "Opaque",
    "Or",
    "StartsWith",
    "bind",
    "columns_of",
    "equality_values",
    "is_bound",
    "literal_sql",
    "quoted",
    "rewrite_not",
    "to_sql",
    "without_implied_not_null",
]
