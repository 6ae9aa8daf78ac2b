"""Spark's errors, in one line, as zskip's named errors.

PySpark turns a JVM exception into a Python one (``ParseException``, ``AnalysisException``, ...)
whose text is dozens of lines; its error class (``TABLE_OR_VIEW_NOT_FOUND``,
``UNRESOLVED_COLUMN.WITH_SUGGESTION``, ``PARSE_SYNTAX_ERROR``) says what went wrong.  zskip
raises its own error, with the first line of Spark's message and what to do about it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NoReturn, TypeVar

from zskip.errors import InvalidPredicateError, InvalidQueryError, StorageError, UnknownColumnError, UnknownTableError

__all__ = [
    "error_class",
    "first_line",
    "is_spark_error",
    "raise_for_filter",
    "raise_for_query",
    "reaching_storage",
    "storage_failure",
]

F = TypeVar("F", bound=Callable[..., object])

UNKNOWN_TABLE = ("TABLE_OR_VIEW_NOT_FOUND", "NoSuchTableException")
UNKNOWN_COLUMN = ("UNRESOLVED_COLUMN", "UNRESOLVED_FIELD", "UNRESOLVED_MAP_KEY")


def is_spark_error(exc: BaseException) -> bool:
    """True for an error raised by Spark's JVM (converted by PySpark or left as a py4j error)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors.exceptions.base import PySparkException

    return isinstance(exc, (PySparkException, Py4JJavaError))


def error_class(exc: BaseException) -> str:
    """Spark's error class of ``exc`` (``""`` when it has none)."""
    # getCondition since Spark 4.0 (getErrorClass warns there), getErrorClass before
    getter = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
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


_LOCATION = re.compile(r"\b(s3a?|s3n)://([^/\s\"']+)[^\s\"']*")
_DENIED = ("AccessDenied", "Access Denied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "Forbidden")
# a 403 status as the SDKs write it (a bare "403" also turns up in stack traces' line numbers)
_STATUS_403 = re.compile(r"(status code|http status|statuscode|error code)\W{0,3}403\b|\b403 forbidden", re.IGNORECASE)
_UNREACHABLE = ("Connection refused", "UnknownHost", "Unable to execute HTTP request", "ConnectException",
                "connect timed out", "Connect to ")  # fmt: skip
_NO_BUCKET = ("NoSuchBucket", "UnknownStoreException", "bucket does not exist", "Bucket does not exist")
# a store that kept failing after the client's retries: throttled, or failing on its side
_FAILING = (
    ("SlowDown", "SlowDown"),
    ("Please reduce your request rate", "SlowDown"),
    ("AWSServiceThrottledException", "SlowDown"),
    ("Status Code: 503", "503"),
    ("InternalError", "InternalError"),
    ("AWSStatus500Exception", "InternalError"),
    ("Status Code: 500", "500"),
)
_UNNAMED_BUCKET = "the table's bucket"
# zskip's own one-line error, raised in a Spark task (a Python worker's traceback inside the JVM's error)
_TASK_STORAGE_ERROR = re.compile(r"zskip\.errors\.StorageError: ([^\n]+)")


def storage_failure(exc: BaseException) -> StorageError | None:
    """A one-line ``StorageError`` naming the setting to fix when Spark or Iceberg failed to reach a table's
    object store (refused credentials, an unreachable endpoint, a missing bucket); None otherwise."""
    if isinstance(exc, StorageError):
        return exc
    if not is_spark_error(exc) or _kind(exc) != "other":
        return None  # a table or column the query names wrongly: the user's to fix, not the store's
    text = str(exc)
    raised_in_task = _TASK_STORAGE_ERROR.search(text)
    if raised_in_task:
        return StorageError(raised_in_task.group(1).strip())
    found = _LOCATION.search(text)
    location, scheme, bucket = (found.group(0), found.group(1), found.group(2)) if found else ("the table", "", "")
    location = location.rstrip(":;,.)")
    if scheme == "s3a" or scheme == "s3n":
        keys = {"access": "spark.hadoop.fs.s3a.access.key", "secret": "spark.hadoop.fs.s3a.secret.key",
                "endpoint": "spark.hadoop.fs.s3a.endpoint", "retries": "spark.hadoop.fs.s3a.retry.limit"}  # fmt: skip
        where = " (or the catalog's own hadoop.fs.s3a.* settings)"
    else:
        keys = {"access": "s3.access-key-id", "secret": "s3.secret-access-key", "endpoint": "s3.endpoint",
                "retries": "s3.retry.num-retries"}  # fmt: skip
        where = " (spark.sql.catalog.<name>.<setting>, or what the catalog server hands out)"
    if any(marker in text for marker in _NO_BUCKET):
        which = f"bucket {bucket!r}" if bucket else _UNNAMED_BUCKET  # the SDK's text may name none
        return StorageError(
            f"{which} does not exist (reaching {location}): create it, or fix the catalog's "
            f"warehouse or {keys['endpoint']}{where}"
        )
    if any(marker in text for marker in _DENIED) or _STATUS_403.search(text):
        return StorageError(
            f"the object store refused the credentials reaching {location}: check {keys['access']} and "
            f"{keys['secret']}{where}"
        )
    if any(marker in text for marker in _UNREACHABLE):
        return StorageError(f"cannot connect to the object store reaching {location}: check {keys['endpoint']}{where}")
    code = next((code for marker, code in _FAILING if marker in text), None)
    if code is not None:
        return StorageError(
            f"the object store kept failing ({code}) reaching {location} after its client's retries: run again "
            f"later, or allow more retries with {keys['retries']}{where}"
        )
    return None


def reaching_storage(function: F) -> F:
    """``function``, raising a one-line ``StorageError`` instead of Spark's when a table's object store
    could not be reached (see ``storage_failure``)."""

    @functools.wraps(function)
    def wrapper(*args: object, **kwargs: object) -> object:
        try:
            return function(*args, **kwargs)
        except Exception as exc:
            failure = storage_failure(exc)
            if failure is None or failure is exc:
                raise
            raise _bucket_named(failure, args) from None

    return wrapper  # type: ignore[return-value]


def _bucket_named(failure: StorageError, args: tuple[object, ...]) -> StorageError:
    """``failure`` naming the bucket when the store's own error named none (an SDK's ``NoSuchBucket``
    says only "the specified bucket does not exist"): the bucket of the warehouse of the catalog of the
    table the verb was given (``verb(spark, "catalog.db.table", ...)``), where one is set."""
    text = str(failure)
    if not text.startswith(_UNNAMED_BUCKET) or len(args) < 2 or not isinstance(args[1], str):
        return failure
    spark, table = args[0], args[1]
    try:
        catalog = table.split(".", 1)[0] if "." in table else spark.catalog.currentCatalog()  # type: ignore[attr-defined]
        warehouse = spark.conf.get(f"spark.sql.catalog.{catalog}.warehouse", None)  # type: ignore[attr-defined]
    except Exception:
        return failure
    found = _LOCATION.search(str(warehouse or ""))
    if not found:
        return failure
    named = f"bucket {found.group(2)!r} (of the catalog's warehouse {warehouse})"
    return StorageError(named + text[len(_UNNAMED_BUCKET) :])
