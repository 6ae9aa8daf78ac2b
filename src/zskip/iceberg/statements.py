"""A SQL text as Spark's parser reads it: a query zskip may run, or a statement it must refuse.

``spark.sql`` runs commands (DDL, DML, CALL, SET, CACHE) eagerly, the moment it is called, so
zskip checks the parsed plan before handing any text to Spark: only queries (SELECT, WITH,
VALUES, TABLE, FROM ... SELECT) pass.  The check uses Spark's own parser (with Iceberg's SQL
extensions, so ``CALL`` is recognised too): a node that is a ``Command`` or a ``ParsedStatement``
(how Spark parses INSERT, DELETE, MERGE, CREATE, ...) or a write to a directory makes the text a
statement.  Parsing runs nothing.  The JVM helper (``zskip.iceberg.bridge``) parses and walks the
plan in one call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from zskip.errors import InvalidQueryError, UnsupportedStatementError
from zskip.iceberg.bridge import bridge, read_answer
from zskip.iceberg.jvm import java_session
from zskip.iceberg.spark_errors import first_line, is_spark_error
from zskip.iceberg.table import reads_other_state

__all__ = ["ParsedQuery", "TableReference", "analysed_query", "parse_query"]


@dataclass(frozen=True, slots=True)
class TableReference:
    """A table name as written in the query text: ``text[start:stop + 1]``."""

    identifier: str
    start: int
    stop: int


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str
    relations: tuple[TableReference, ...]
    time_travel: bool  # some table is read AS OF a version or time, or as a branch, tag or snapshot


def analysed_query(spark: SparkSession, text: str) -> DataFrame | None:
    """``text`` parsed once and analysed by Spark when it is plainly a query of current table states.

    ``None`` when it is anything else (a statement, time travel, several statements, text Spark
    cannot parse): ``parse_query`` then says what.  Spark's analysis errors are raised as they are.
    """
    if not isinstance(text, str):
        return None
    frame = bridge(spark).query(java_session(spark), text)
    return None if frame is None else DataFrame(frame, spark)


def parse_query(spark: SparkSession, text: str) -> ParsedQuery:
    """Parse ``text`` with Spark's parser; refuse anything but a single query.

    Raises ``UnsupportedStatementError`` for DDL, DML, CALL, SET, CACHE, EXPLAIN, SHOW, ... and for
    several statements; ``InvalidQueryError`` when Spark cannot parse the text.
    """
    if not isinstance(text, str):
        raise InvalidQueryError(f"a query must be SQL text, not {type(text).__name__}")
    session = java_session(spark)
    try:
        parsed = read_answer(str(bridge(spark).parse(session, text)))
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        parser = session.sessionState().sqlParser()
        if _several_statements(parser, text, exc):
            raise UnsupportedStatementError(
                "zskip runs one query at a time, and this text holds several statements separated by ';': "
                "pass a single SELECT"
            ) from None
        raise InvalidQueryError(f"Spark cannot parse the query: {first_line(exc)}") from None
    if parsed["statement"] is not None:
        raise UnsupportedStatementError(
            f"zskip runs queries only (SELECT, WITH, VALUES, TABLE), and this is a statement that changes or "
            f"inspects something ({parsed['statement']}): nothing was run; use spark.sql() for anything but a query"
        )
    relations = tuple(
        sorted(
            (TableReference(r["identifier"], int(r["start"]), int(r["stop"])) for r in parsed["relations"]),
            key=lambda r: r.start,
        )
    )
    time_travel = bool(parsed["time_travel"]) or any(reads_other_state(r.identifier) for r in relations)
    return ParsedQuery(text, relations, time_travel)


def _several_statements(parser: Any, text: str, exc: BaseException) -> bool:
    """True when Spark's parser stopped right after a ';' and what comes before it is a statement."""
    origin: Any = getattr(exc, "_origin", None)  # the Java ParseException
    try:
        start = origin.start()  # an Origin: line and position where parsing stopped
        line, position = int(start.line().get()), int(start.startPosition().get())
    except Exception:
        return False
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return False
    offset = sum(len(row) + 1 for row in lines[: line - 1]) + position
    head = text[:offset].rstrip()
    if not head.endswith(";"):
        return False
    try:
        parser.parsePlan(head)
    except Exception:
        return False
    return True
