"""A bounded driver-side cache of immutable things: Parquet footers, index blobs, manifests, file lists.

Every key names something that never changes once written (a data file path, a Puffin path and
offset, a table location and snapshot id), so entries never go stale; they only fall out when the
cache is full (least recently used first).  This is the role Alluxio plays for the index service
in the source design, on the driver.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["CACHE", "LruCache"]

T = TypeVar("T")


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0


class LruCache:
    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def get_or_load(self, key: Hashable, load: Callable[[], T]) -> T:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.stats.hits += 1
                return self._items[key]  # type: ignore[no-any-return,unused-ignore]
            self.stats.misses += 1
        value = load()
        self.put(key, value)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key`` (something loaded in bulk, beside what ``get_or_load`` loads)."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.stats = CacheStats()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        return len(self._items)


# Footers of 50,000 files at a few KiB each stay well under a GiB of driver memory.
CACHE = LruCache(max_entries=50_000)
