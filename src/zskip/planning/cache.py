"""A bounded driver-side cache of immutable things: Parquet footers, index blobs, manifests, file lists.

Every key names something that never changes once written (a data file path, a Puffin path and
offset, a table location and snapshot id), so entries never go stale; they only fall out when the
cache is full (least recently used first).  This is the role Alluxio plays for the index service
in the source design, on the driver.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["CACHE", "LruCache"]

T = TypeVar("T")


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0


class _Loading:
    """A load of one key in progress: those who ask for the key meanwhile wait for it (``wait``) until
    its loader is ``done``.  A lock held while loading, not an ``Event``: a cold plan starts a load
    per footer and blob, and an event costs ten times a lock to make."""

    def __init__(self) -> None:
        self._held = threading.Lock()
        self._held.acquire()
        self.thread = threading.get_ident()
        self.loaded = False
        self.value: Any = None

    def wait(self) -> None:
        with self._held:
            pass

    def done(self) -> None:
        self._held.release()


class LruCache:
    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._loading: dict[Hashable, _Loading] = {}
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def get_or_load(self, key: Hashable, load: Callable[[], T]) -> T:
        """The value kept under ``key``, else ``load()``'s, kept.  While one caller loads a key, others
        asking for it wait for that load (planning reads ahead on other threads what it asks for
        later); if that load fails, they try again in turn, and a failure is never kept."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.stats.hits += 1
                return self._items[key]  # type: ignore[no-any-return,unused-ignore]
            loading = self._loading.get(key)
            owner = loading is None
            if loading is None:
                loading = self._loading[key] = _Loading()
                self.stats.misses += 1
        if not owner:
            if loading.thread == threading.get_ident():
                return load()  # asked again inside its own load: waiting would never end
            loading.wait()
            return loading.value if loading.loaded else self.get_or_load(key, load)  # that load failed: try again
        try:
            value = load()
            loading.value, loading.loaded = value, True
            self.put(key, value)
            return value
        finally:
            with self._lock:
                self._loading.pop(key, None)
            loading.done()

    def load_many(self, keys: Iterable[Hashable], load: Callable[[list[Hashable]], Mapping[Hashable, Any]]) -> None:
        """Load together those of ``keys`` neither kept nor being loaded: ``load(missing)`` gives what it
        could of them, and each is kept.  Meanwhile whoever asks for one of them (``get_or_load``) waits
        for this load, and loads it alone if ``load`` did not give it or failed (a bulk read started
        ahead on another thread is then waited for, not read twice)."""
        mine: dict[Hashable, _Loading] = {}
        with self._lock:
            for key in dict.fromkeys(keys):
                if key not in self._items and key not in self._loading:
                    mine[key] = self._loading[key] = _Loading()
                    self.stats.misses += 1
        if not mine:
            return
        try:
            for key, value in load(list(mine)).items():
                if key in mine:
                    mine[key].value, mine[key].loaded = value, True
                    self.put(key, value)
        finally:
            with self._lock:
                for key in mine:
                    self._loading.pop(key, None)
            for loading in mine.values():
                loading.done()

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key`` (something loaded in bulk, beside what ``get_or_load`` loads)."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def get(self, key: Hashable) -> Any:
        """The value kept under ``key`` (now the most recently used), or ``None``; nothing is loaded."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def take(self, key: Hashable) -> Any:
        """The value kept under ``key``, no longer kept (a load of it in progress is waited for); ``None``
        when it is neither kept nor being loaded (something read ahead to be used once, then dropped)."""
        with self._lock:
            if key in self._items:
                return self._items.pop(key)
            loading = self._loading.get(key)
        if loading is None or loading.thread == threading.get_ident():
            return None
        loading.wait()
        with self._lock:
            return self._items.pop(key, None)

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
