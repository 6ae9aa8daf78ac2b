"""Predicates as Spark SQL text: what ``zskip explain`` shows and what a user can paste back.

Literals are written as Spark reads them back to the same value: strings with backslash escapes,
dates and timestamps as typed literals, bytes as ``X'..'``, NaN and infinities as casts.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import math
import re
from typing import Any

from zskip.expr.nodes import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Between,
    Compare,
    Expr,
    In,
    IsNull,
    Not,
    Opaque,
    Or,
    StartsWith,
)

__all__ = ["literal_sql", "quoted", "to_sql"]

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _name(column: str | int) -> str:
    if isinstance(column, int):
        return f"`#{column}`"  # a bound column: its field id (the workload log keeps filters so)
    return column if _PLAIN_NAME.fullmatch(column) else "`" + column.replace("`", "``") + "`"


def quoted(name: str) -> str:
    """``name`` as a Spark SQL identifier, whatever it holds (dots, spaces, backticks).

    >>> quoted("a.b"), quoted("it`s")
    ('`a.b`', '`it``s`')
    """
    return "`" + name.replace("`", "``") + "`"


def literal_sql(value: Any) -> str:
    """``value`` as a Spark SQL literal.

    >>> literal_sql("it's"), literal_sql(datetime.date(1995, 3, 1)), literal_sql(b"\\x01")
    ("'it\\\\'s'", "DATE '1995-03-01'", "X'01'")
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return f"CAST('{'' if value > 0 else '-'}Infinity' AS DOUBLE)"
        return repr(value) + "D"  # a double, not a decimal literal
    if isinstance(value, decimal.Decimal):
        return f"{value}BD"
    if isinstance(value, datetime.datetime):
        text = value.isoformat(sep=" ")
        return f"TIMESTAMP '{text}'" if value.tzinfo is not None else f"TIMESTAMP_NTZ '{text}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex().upper()}'"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"  # Spark's escapes


@functools.singledispatch
def to_sql(expr: Expr) -> str:
    """``expr`` as Spark SQL (``l_shipdate >= DATE '1995-03-01' AND NOT (l_shipmode = 'AIR')``)."""
    raise TypeError(f"not a predicate node: {expr!r}")


@to_sql.register
def _(expr: Compare) -> str:
    return f"{_name(expr.column)} {expr.op} {literal_sql(expr.value)}"


@to_sql.register
def _(expr: Between) -> str:
    return f"{_name(expr.column)} BETWEEN {literal_sql(expr.low)} AND {literal_sql(expr.high)}"


@to_sql.register
def _(expr: In) -> str:
    if not expr.values:
        return "FALSE"  # IN () matches no row (Spark has no empty IN list)
    return f"{_name(expr.column)} IN ({', '.join(literal_sql(v) for v in expr.values)})"


@to_sql.register
def _(expr: IsNull) -> str:
    return f"{_name(expr.column)} IS NULL"


@to_sql.register
def _(expr: StartsWith) -> str:
    return f"startswith({_name(expr.column)}, {literal_sql(expr.prefix)})"


def _operand(expr: Expr) -> str:
    """A child of AND, OR or NOT: parenthesised when it is itself AND or OR."""
    return f"({to_sql(expr)})" if isinstance(expr, And | Or) else to_sql(expr)


@to_sql.register
def _(expr: And) -> str:
    return " AND ".join(_operand(c) for c in expr.children) if expr.children else "TRUE"


@to_sql.register
def _(expr: Or) -> str:
    return " OR ".join(_operand(c) for c in expr.children) if expr.children else "FALSE"


@to_sql.register
def _(expr: Not) -> str:
    if isinstance(expr.child, IsNull):
        return f"{_name(expr.child.column)} IS NOT NULL"
    return f"NOT ({to_sql(expr.child)})"


@to_sql.register
def _(expr: Opaque) -> str:
    return f"({expr.text})"


@to_sql.register
def _(expr: AlwaysTrue) -> str:
    return "TRUE"


@to_sql.register
def _(expr: AlwaysFalse) -> str:
    return "FALSE"
