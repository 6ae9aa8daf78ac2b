"""How long staged scan tasks live.

Spark plans every DataFrame derived from a read (``read(...).groupBy(...)``) anew, and each plan
fetches the staged tasks again, so a read's tasks must stay staged while any derived DataFrame may
still run; releasing them when the first DataFrame object is collected breaks the derived ones.
zskip keeps the most recent ``MAX_STAGED`` staged sets per session and releases older ones (a
DataFrame planned from a released set fails with Iceberg's "no tasks for ... task set ID", so the
bound is generous); ``release_reads`` drops them all.  Past the bound, a sixteenth of it goes at
once, in one JVM call, so a long session does not pay a release with every query.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from zskip.iceberg.scans import release_staged

__all__ = ["MAX_STAGED", "keep_staged", "release_reads", "staged_count"]

MAX_STAGED = 1024

_lock = threading.Lock()
_staged: OrderedDict[str, Any] = OrderedDict()  # set id -> the session that staged it


def keep_staged(spark: Any, set_ids: Iterable[str]) -> None:
    """Remember staged sets; past ``MAX_STAGED``, release the oldest (a sixteenth of the bound at once)."""
    old: list[tuple[str, Any]] = []
    with _lock:
        for set_id in set_ids:
            _staged[set_id] = spark
        if len(_staged) > MAX_STAGED:
            keep = MAX_STAGED - max(1, MAX_STAGED // 16)
            while len(_staged) > keep:
                old.append(_staged.popitem(last=False))
    _release(old)


def staged_count() -> int:
    """How many staged sets zskip holds now."""
    with _lock:
        return len(_staged)


def release_reads() -> int:
    """Release the staged tasks of every earlier ``zskip.read`` / ``zskip.sql``; returns how many sets."""
    with _lock:
        items = list(_staged.items())
        _staged.clear()
    _release(items)
    return len(items)


def _release(items: Iterable[tuple[str, Any]]) -> None:
    """Release ``(set id, session)`` pairs: one JVM call per session."""
    by_session: dict[int, tuple[Any, list[str]]] = {}
    for set_id, session in items:
        by_session.setdefault(id(session), (session, []))[1].append(set_id)
    for session, ids in by_session.values():
        with contextlib.suppress(Exception):
            release_staged(session, ids)
