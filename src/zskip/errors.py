"""Errors zskip raises on bad input; each message says what is wrong and what to do."""

from __future__ import annotations

__all__ = [
    "ConcurrentChangeError",
    "CorruptIndexError",
    "EnvironmentError_",
    "InvalidOptionError",
    "InvalidPredicateError",
    "InvalidQueryError",
    "JavaNotFoundError",
    "StorageError",
    "UnknownColumnError",
    "UnknownIndexError",
    "UnknownTableError",
    "UnsupportedSessionError",
    "UnsupportedStatementError",
    "UnsupportedTypeError",
    "WarehouseNotWritableError",
    "ZskipError",
]


class ZskipError(Exception):
    """Base class of every error zskip raises on purpose."""


class UnsupportedTypeError(ZskipError, TypeError):
    """A column's type cannot be clustered or indexed (nested types, intervals, ...)."""


class UnknownTableError(ZskipError, LookupError):
    """The catalog has no such table."""


class UnknownColumnError(ZskipError, KeyError):
    """The table has no such column."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


class EnvironmentError_(ZskipError, RuntimeError):
    """The machine lacks something Spark needs."""


class JavaNotFoundError(EnvironmentError_):
    """No Java runtime, or one too old for Spark 3.5."""


class WarehouseNotWritableError(ZskipError, PermissionError):
    """The local warehouse directory cannot be created or written."""


class InvalidOptionError(ZskipError, ValueError):
    """An option has a value zskip cannot use (a partition column in ``by``, too many columns, ...)."""


class ConcurrentChangeError(ZskipError, RuntimeError):
    """Another writer changed the files zskip was rewriting; the table is as the other writer left it."""


class UnknownIndexError(ZskipError, LookupError):
    """The table has no index of that column and kind."""


class InvalidPredicateError(ZskipError, ValueError):
    """A filter Spark cannot parse or resolve against the table."""


class InvalidQueryError(ZskipError, ValueError):
    """A SQL query Spark cannot parse or analyse (a syntax error, a type mismatch, ...)."""


class UnsupportedStatementError(ZskipError, ValueError):
    """A statement that is not a query (DDL, DML, CALL, SET, CACHE, several statements): zskip runs queries only."""


class UnsupportedSessionError(ZskipError, TypeError):
    """The SparkSession cannot run zskip: Spark Connect (no JVM in this process), or no Iceberg runtime."""


class CorruptIndexError(ZskipError, ValueError):
    """A Puffin file, blob or index manifest is damaged; reads treat what it held as absent, writes refuse."""


class StorageError(ZskipError, OSError):
    """A file of the table cannot be reached: wrong credentials, an unreachable endpoint, a missing
    bucket or file, or a store that kept throttling or failing after every retry its client's settings
    allow.  The message names the path or bucket, the store's error and the setting to fix."""
