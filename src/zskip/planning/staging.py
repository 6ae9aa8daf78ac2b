"""How long staged scan tasks live.

Spark plans every DataFrame derived from a read (``read(...).groupBy(...)``) anew, and each plan
fetches the staged tasks again, so a read's tasks must stay staged while any derived DataFrame may
still run; releasing them when the first DataFrame object is collected breaks the derived ones.
zskip keeps the most recent ``MAX_STAGED`` staged sets per session and releases older ones (a
DataFrame planned from a released set fails with Iceberg's "no tasks for ... task set ID", so the
bound is generous); ``release_reads`` drops them all.
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
    """Remember staged sets; release the oldest beyond ``MAX_STAGED``."""
    old: list[tuple[str, Any]] = []
    with _lock:
        for set_id in set_ids:
            _staged[set_id] = spark
        while len(_staged) > MAX_STAGED:
            old.append(_staged.popitem(last=False))
    for set_id, session in old:
        with contextlib.suppress(Exception):
            release_staged(session, [set_id])


def staged_count() -> int:
    """How many staged sets zskip holds now."""
    with _lock:
        return len(_staged)


def release_reads() -> int:
    """Release the staged tasks of every earlier ``zskip.read`` / ``zskip.sql``; returns how many sets."""
    with _lock:
        items = list(_staged.items())
        _staged.clear()
    for set_id, session in items:
        with contextlib.suppress(Exception):
            release_staged(session, [set_id])
    return len(items)
