"""The session a call from the JVM came from, as a PySpark session over the same JVM session.

The planner process zskip's extension hosts serves every session of its application: a Connect
client's, a Thrift connection's, a ``spark-sql`` script's.  Each plan and each ``CALL`` arrives with
the JVM session it was made in, and runs in it, never in another: its current catalog and namespace,
its session-only catalogs and settings, its credentials and temporary views.  A PySpark wrapper is
cheap but not free (zskip checks a session's JVM once), so the wrappers of the sessions seen last
are kept, by Spark's own id of each session (``sessionUUID``), a bounded number of them: a wrapper
holds its JVM session, which a closed client's session must not outlive for long.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

__all__ = ["KEPT", "caller_session"]

KEPT = 16  # sessions whose wrappers are kept; one more is made when a seventeenth calls

_lock = threading.Lock()
_wrapped: OrderedDict[str, SparkSession] = OrderedDict()


def caller_session(
    spark: SparkSession, java_session: Any, *, key: str | None = None, session: Callable[[], Any] | None = None
) -> SparkSession:
    """``java_session`` (a JVM ``SparkSession`` of ``spark``'s application) as a PySpark session.  Or,
    for a caller that knows the session's id (``key``) cheaper than the session, ``session()`` gives
    the JVM session, asked for only when no wrapper of it is kept."""
    if key is None:
        if java_session is None:
            raise ValueError("a call from the JVM named no session to run in")
        key = str(java_session.sessionUUID())
    with _lock:
        wrapped = _wrapped.get(key)
        if wrapped is not None:
            _wrapped.move_to_end(key)
            return wrapped
    if java_session is None:
        java_session = session() if session is not None else None
    if java_session is None:
        raise ValueError("a call from the JVM named no session to run in")
    wrapped = SparkSession(spark.sparkContext, jsparkSession=java_session)
    with _lock:
        _wrapped[key] = wrapped
        while len(_wrapped) > KEPT:
            _wrapped.popitem(last=False)
    return wrapped
