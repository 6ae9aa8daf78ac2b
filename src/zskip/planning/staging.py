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

from zskip.iceberg.table import IcebergTable
from zskip.iceberg.tasks import release

__all__ = ["MAX_STAGED", "keep_staged", "release_reads"]

MAX_STAGED = 1024

_lock = threading.Lock()
_staged: OrderedDict[str, IcebergTable] = OrderedDict()


def keep_staged(table: IcebergTable, set_id: str) -> None:
    """Remember a staged set; release the oldest beyond ``MAX_STAGED``."""
    with _lock:
        _staged[set_id] = table
        while len(_staged) > MAX_STAGED:
            old_id, old_table = _staged.popitem(last=False)
            with contextlib.suppress(Exception):
                release(old_table, old_id)


def release_reads() -> int:
    """Release the staged tasks of every earlier ``zskip.read`` / ``zskip.sql``; returns how many sets."""
    with _lock:
        items = list(_staged.items())
        _staged.clear()
    for set_id, table in items:
        with contextlib.suppress(Exception):
            release(table, set_id)
    return len(items)
