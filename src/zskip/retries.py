"""Requests to object stores that failed for a while, tried again: throttling (``503 SlowDown``), server
errors (``500 InternalError``), timeouts and connections cut mid-answer.

pyarrow's S3 client (the AWS SDK for C++) retries at once a request that failed before its answer
arrived (``storage.SDK_ATTEMPTS`` tries, waits of tens of milliseconds); what still fails is tried again
here, with the policy's waits.  It does not retry an answer that
failed while its body was being read into the caller's buffer: a ranged read of 8 bytes (a Parquet
footer's length) met by a 503 fails with ``INTERNAL_FAILURE ... Failed to flush response stream``, and a
cut body fails with ``NETWORK_CONNECTION``.  ``retrying`` runs each of zskip's reads and writes of one
object again on those errors, with exponential backoff and equal jitter, as Iceberg's S3FileIO does.

How many times and how long to wait come from the settings that govern the table's own client, so one
configuration governs Spark's and zskip's requests (``RetryPolicy.of_iceberg``, ``RetryPolicy.of_s3a``).
Every retry is counted in the process that made it (``counts``): the driver's for planning, each task's
own for index builds, which hand theirs back with their results.
"""

from __future__ import annotations

import contextlib
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from zskip.errors import ZskipError

__all__ = ["RetryPolicy", "count_retry", "counts", "kept_failing", "retrying", "stage_retried", "transient_code"]

T = TypeVar("T")

# Error codes of the AWS SDK for C++ (as pyarrow words them: "AWS Error <CODE> during <Operation>") and of
# S3 (as servers word them), for failures that pass
_TRANSIENT_CODES = (
    "SLOW_DOWN",
    "SlowDown",
    "THROTTLING",
    "Throttling",
    "SERVICE_UNAVAILABLE",
    "ServiceUnavailable",
    "INTERNAL_FAILURE",
    "InternalError",
    "REQUEST_TIMEOUT",
    "RequestTimeout",
    "NETWORK_CONNECTION",
)
_THROTTLED = ("SLOW_DOWN", "SlowDown", "THROTTLING", "Throttling", "SERVICE_UNAVAILABLE", "ServiceUnavailable")
_HTTP_5XX = re.compile(r"HTTP (?:status|response code)\D{0,3}(5\d\d)", re.IGNORECASE)
# a store that cannot be reached at all (a wrong endpoint, an unknown host) is a setting to fix, not a
# failure that passes: curl's "couldn't resolve host" (6) and "couldn't connect" (7)
_UNREACHABLE = re.compile(r"curlCode: (6|7)\b|Couldn't connect|Could not resolve|Connection refused", re.IGNORECASE)
_CUT = ("Connection reset", "Broken pipe", "timed out", "Timeout was reached", "partial file")


def transient_code(exc: BaseException, *, spent_too: bool = False) -> str | None:
    """The store's error code when ``exc`` is a failure that passes (and worth trying again); None otherwise,
    and None for a failure already tried again as often as allowed (``retrying`` marks it) unless
    ``spent_too``.

    Follows ``exc``'s causes: zskip's ``StorageError`` keeps the client's error as its cause."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None or (getattr(seen, "retries_spent", False) and not spent_too):
            return None  # tried as often as allowed already, where it failed: not again around it
        if isinstance(seen, OSError) and not isinstance(seen, ZskipError):  # zskip's own: see its cause
            text = str(seen)
            if _UNREACHABLE.search(text):
                return None
            code = next((c for c in _TRANSIENT_CODES if c in text), None)
            if code is not None:
                return code
            status = _HTTP_5XX.search(text)
            if status:
                return f"HTTP {status.group(1)}"
            if any(marker in text for marker in _CUT):
                return "CONNECTION_CUT"
        seen = seen.__cause__
    return None


def kept_failing(exc: BaseException) -> bool:
    """Whether ``exc`` (or a cause of it) is a failure that passes, tried again as often as allowed."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if getattr(seen, "retries_spent", False):
            return True
        seen = seen.__cause__
    return False


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to try a failed request again.

    The ``n``-th wait (from 1) is ``min(max_wait, min_wait * 2**(n-1))``, half of it fixed and half drawn
    at random (equal jitter: requests that failed together do not return together)."""

    retries: int = 5
    min_wait: float = 2.0
    max_wait: float = 20.0
    throttle_retries: int = 5  # a throttled request (S3A counts those apart)
    throttle_min_wait: float = 2.0

    def wait(self, retry: int, *, throttled: bool = False) -> float:
        base = self.throttle_min_wait if throttled else self.min_wait
        ceiling = min(self.max_wait, base * 2 ** max(retry - 1, 0))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def allowed(self, *, throttled: bool) -> int:
        return self.throttle_retries if throttled else self.retries

    @classmethod
    def of_iceberg(cls, properties: Mapping[str, Any]) -> RetryPolicy:
        """From S3FileIO's properties, with its defaults: ``s3.retry.num-retries`` (5),
        ``s3.retry.min-wait-ms`` (2000) and ``s3.retry.max-wait-ms`` (20000)."""
        retries = _count(properties.get("s3.retry.num-retries"), 5)
        min_wait = _milliseconds(properties.get("s3.retry.min-wait-ms"), 2000) / 1000
        max_wait = max(min_wait, _milliseconds(properties.get("s3.retry.max-wait-ms"), 20_000) / 1000)
        return cls(retries, min_wait, max_wait, retries, min_wait)

    @classmethod
    def of_s3a(cls, hadoop: Mapping[str, Any]) -> RetryPolicy:
        """From Hadoop's S3A settings, with their defaults: ``fs.s3a.retry.limit`` (7),
        ``fs.s3a.retry.interval`` (500ms), ``fs.s3a.retry.throttle.limit`` (20) and
        ``fs.s3a.retry.throttle.interval`` (100ms); waits stop growing at 20 s."""
        retries = _count(hadoop.get("fs.s3a.retry.limit"), 7)
        min_wait = _milliseconds(hadoop.get("fs.s3a.retry.interval"), 500) / 1000
        throttle_retries = _count(hadoop.get("fs.s3a.retry.throttle.limit"), 20)
        throttle_min_wait = _milliseconds(hadoop.get("fs.s3a.retry.throttle.interval"), 100) / 1000
        return cls(retries, min_wait, max(20.0, min_wait), throttle_retries, throttle_min_wait)


def _count(value: Any, default: int) -> int:
    try:
        return max(int(str(value).strip()), 0) if value is not None else default
    except ValueError:
        return default


_UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "min": 60_000.0, "h": 3_600_000.0}


def _milliseconds(value: Any, default: float) -> float:
    """A duration in milliseconds: a number (milliseconds) or a Hadoop duration (``500ms``, ``2s``, ``1m``)."""
    if value is None:
        return default
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", str(value).lower())
    if not found or (found.group(2) and found.group(2) not in _UNITS):
        return default
    return float(found.group(1)) * _UNITS.get(found.group(2) or "ms", 1.0)


class _Counts:
    """Retries made in this process, by the store's error code (threads count together)."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, code: str) -> None:
        with self._lock:
            self._counts[code] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())


counts = _Counts()


def count_retry(code: str) -> None:
    counts.add(code)


def retrying(call: Callable[[], T], policy: RetryPolicy, *, sleep: Callable[[float], None] = time.sleep) -> T:
    """``call()``, run again while it fails with a failure that passes (``transient_code``), up to the
    policy's retries; the last failure is raised as it was."""
    retry = 0
    while True:
        try:
            return call()
        except Exception as exc:
            code = transient_code(exc)
            throttled = code in _THROTTLED
            if code is None:
                raise
            if retry >= policy.allowed(throttled=throttled):
                with contextlib.suppress(AttributeError):  # an exception type that takes no attributes
                    exc.retries_spent = True  # type: ignore[attr-defined]
                raise
            retry += 1
            count_retry(code)
            sleep(policy.wait(retry, throttled=throttled))


def stage_retried(stage: str, retried: int) -> str:
    """A long verb's stage as its progress shows it, with the requests tried again so far (``stage`` alone
    when none were): ``indexing files (3 requests retried)``."""
    return f"{stage} ({retried} requests retried)" if retried else stage
