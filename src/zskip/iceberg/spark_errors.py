"""Spark's errors, in one line, as zskip's named errors.

PySpark turns a JVM exception into a Python one (``ParseException``, ``AnalysisException``, ...)
whose text is dozens of lines; its error class (``TABLE_OR_VIEW_NOT_FOUND``,
``UNRESOLVED_COLUMN.WITH_SUGGESTION``, ``PARSE_SYNTAX_ERROR``) says what went wrong.  zskip
raises its own error, with the first line of Spark's message and what to do about it.
"""

from __future__ import annotations

import re
from typing import NoReturn

from zskip.errors import InvalidPredicateError, InvalidQueryError, UnknownColumnError, UnknownTableError

__all__ = ["error_class", "first_line", "is_spark_error", "raise_for_filter", "raise_for_query"]

UNKNOWN_TABLE = ("TABLE_OR_VIEW_NOT_FOUND", "NoSuchTableException")
UNKNOWN_COLUMN = ("UNRESOLVED_COLUMN", "UNRESOLVED_FIELD", "UNRESOLVED_MAP_KEY")


def is_spark_error(exc: BaseException) -> bool:
    """True for an error raised by Spark's JVM (converted by PySpark or left as a py4j error)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.base import PySparkException

    return isinstance(exc, (PySparkException, Py4JJavaError))


def error_class(exc: BaseException) -> str:
    """Spark's error class of ``exc`` (``""`` when it has none)."""
    getter = getattr(exc, "getErrorClass", None)
    if getter is not None:
        try:
            return str(getter() or "")
        except Exception:  # a py4j error whose JVM side is gone
            return ""
    return ""


def first_line(exc: BaseException) -> str:
    """The first non-empty line of ``exc``'s message, without Spark's position suffix noise."""
    for line in str(exc).splitlines():
        line = line.strip()
        if line and not line.startswith("An error occurred while calling"):  # py4j's own preamble
            line = line.removeprefix("org.apache.spark.SparkException: ")
            return re.sub(r"\s*SQLSTATE: \w+\s*$", "", line).rstrip(" ;")
    return type(exc).__name__


def _kind(exc: BaseException) -> str:
    text = error_class(exc) or first_line(exc)
    if any(marker in text for marker in UNKNOWN_TABLE):
        return "table"
    if any(marker in text for marker in UNKNOWN_COLUMN):
        return "column"
    return "other"


def raise_for_filter(exc: BaseException, *, table: str, where: object) -> NoReturn:
    """Raise the named error for a filter Spark refused on ``table``."""
    line = first_line(exc)
    if _kind(exc) == "column":
        raise UnknownColumnError(
            f"the filter {where!r} names a column {table} lacks: {line}; `DESCRIBE {table}` lists its columns"
        ) from None
    raise InvalidPredicateError(
        f"Spark cannot use the filter {where!r} on {table}: {line}; write it as a SQL boolean expression "
        "such as \"a = 5 AND b > 'x'\""
    ) from None


def raise_for_query(exc: BaseException, *, query: str) -> NoReturn:
    """Raise the named error for a query Spark could not parse or analyse."""
    line = first_line(exc)
    kind = _kind(exc)
    if kind == "table":
        raise UnknownTableError(
            f"the query reads a table or view that does not exist: {line}; check the name "
            "(catalog.namespace.table); 'SHOW TABLES IN <catalog>.<namespace>' lists what exists"
        ) from None
    if kind == "column":
        raise UnknownColumnError(f"the query names a column that does not exist: {line}") from None
    raise InvalidQueryError(f"Spark cannot run the query: {line}") from None
