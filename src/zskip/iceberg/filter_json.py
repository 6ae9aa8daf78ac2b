"""Iceberg filters as the JVM helper writes them (JSON, ``io.zskip.filter.ExpressionJson``), read into
zskip's predicate IR; anything unfamiliar, or a literal with no exact value of its column's type,
becomes ``Opaque`` and never prunes."""

from __future__ import annotations

import datetime
import decimal
import logging
from collections.abc import Mapping
from typing import Any

from zskip.expr import AlwaysFalse, AlwaysTrue, And, Compare, Expr, In, IsNull, Not, Opaque, Or, StartsWith
from zskip.iceberg.scan_types import Field

__all__ = ["expr_from_json", "literal_value"]

log = logging.getLogger(__name__)

EPOCH = datetime.date(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
COMPARISONS = {"lt": "<", "lt_eq": "<=", "gt": ">", "gt_eq": ">=", "eq": "=", "not_eq": "!="}


def expr_from_json(node: Mapping[str, Any], fields: Mapping[str, Field]) -> Expr:
    """One Iceberg expression (as the JVM helper writes it) in zskip's IR; anything unfamiliar is ``Opaque``.

    ``fields``: the table's field for each term the filter names (a term not there names no column of
    the table, and its condition never prunes)."""
    op = node["op"]
    if op == "and":
        return And((expr_from_json(node["left"], fields), expr_from_json(node["right"], fields)))
    if op == "or":
        return Or((expr_from_json(node["left"], fields), expr_from_json(node["right"], fields)))
    if op == "not":
        return Not(expr_from_json(node["child"], fields))
    if op == "true":
        return AlwaysTrue()
    if op == "false":
        return AlwaysFalse()
    term = node.get("term")
    found = fields.get(term) if term is not None else None
    if found is None:
        return Opaque(node.get("text") or _text(node))
    column = found.name
    try:
        if op == "is_null":
            return IsNull(column)
        if op == "not_null":
            return Not(IsNull(column))
        literals = [literal_value(kind, value, found.type) for kind, value in node.get("literals") or ()]
        if op in COMPARISONS:
            return Compare(column, COMPARISONS[op], literals[0])
        if op in ("in", "not_in"):
            return In(column, tuple(literals)) if op == "in" else Not(In(column, tuple(literals)))
        if op in ("starts_with", "not_starts_with") and found.type == "string":
            prefix = StartsWith(column, str(literals[0]))
            return prefix if op == "starts_with" else Not(prefix)
    except (TypeError, ValueError, OverflowError, IndexError, decimal.InvalidOperation) as exc:
        log.debug("not using %s: %s", node, exc)
    # IS_NAN / NOT_NAN (Spark's isnan(NULL) is false, unlike SQL's NULL) and the rest: never prune
    return Opaque(_text(node))


def _text(node: Mapping[str, Any]) -> str:
    literals = ", ".join(str(v) for _, v in node.get("literals") or ())
    return f"{node['op']}({node.get('term', '')}{', ' if literals else ''}{literals})"


class _NoValue(ValueError):
    """A literal with no exact Python value of the column's type: the condition never prunes."""


def literal_value(kind: str, value: Any, iceberg_type: str) -> Any:
    """A literal as written by the JVM helper, as a Python value of the column's type."""
    if kind == "int":
        if iceberg_type == "date":
            return EPOCH + datetime.timedelta(days=value)
        if iceberg_type == "timestamptz":
            return EPOCH_UTC + datetime.timedelta(microseconds=value)
        if iceberg_type == "timestamp":
            return EPOCH_UTC.replace(tzinfo=None) + datetime.timedelta(microseconds=value)
        if iceberg_type in ("int", "long"):
            return int(value)
        if iceberg_type in ("float", "double"):
            return float(value)
        if iceberg_type.startswith("decimal"):
            return decimal.Decimal(value)
        raise _NoValue(f"an integer literal on a {iceberg_type} column")
    if kind == "float":
        return float(value)  # "NaN", "Infinity" and Java's exponent form all parse
    if kind == "decimal":
        return decimal.Decimal(value)
    if kind == "bool":
        return bool(value)
    if kind == "string" and iceberg_type == "string":
        return str(value)
    if kind == "binary" and iceberg_type == "binary":
        return bytes.fromhex(value)
    raise _NoValue(f"a {kind} literal on a {iceberg_type} column")
