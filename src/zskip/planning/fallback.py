"""When zskip cannot plan a query Spark can run: the query runs as Spark plans it, and one line says why.

zskip's planning is an optimisation.  A query shape it was not built for (a new Catalyst node, a scan
it cannot describe, an index it cannot read) must cost the user the pruning, never the answer.  Only
failures Spark's own run would meet too are raised: the query's tables cannot be reached at all.
"""

from __future__ import annotations

import logging

from zskip.errors import StorageError
from zskip.iceberg.spark_errors import first_line, is_spark_error, storage_failure

__all__ = ["falls_back", "unplanned"]

log = logging.getLogger(__name__)


def falls_back(exc: Exception) -> bool:
    """Whether a failure inside zskip's planning should leave the query to Spark (``True``) rather than
    reach the caller: everything but Spark failing to reach the query's own storage (then Spark's run
    of the query fails the same way, and the caller is told which setting to fix)."""
    if isinstance(exc, StorageError):
        return True  # zskip's own files (an index, a footer) out of reach: Spark reads the data without them
    return not (is_spark_error(exc) and storage_failure(exc) is not None)


def unplanned(what: str, exc: Exception | str) -> None:
    """Log at WARNING, in one line, that ``what`` runs as Spark plans it and why (``exc``: the failure, or
    the reason in words)."""
    reason = exc if isinstance(exc, str) else f"{type(exc).__name__}: {first_line(exc)}"
    log.warning(
        "zskip did not plan %s, which runs as Spark plans it: %s",
        what,
        reason,
        exc_info=log.isEnabledFor(logging.DEBUG) and not isinstance(exc, str),
    )
