"""A bounded driver-side cache of immutable things: Parquet footers, index blobs, manifests, file lists.

Every key names something that never changes once written (a data file path, a Puffin path and
offset, a table location and snapshot id), so entries never go stale; they only fall out when the
cache is full (least recently used first).  This is the role Alluxio plays for the index service
in the source design, on the driver.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from zskip import settings
from zskip.retries import kept_failing

__all__ = ["CACHE", "FAILING_SECONDS", "LruCache"]

# how long a key whose load met a store that kept failing after every retry fails again at once
FAILING_SECONDS = 30.0

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


def approximate_bytes(value: Any, depth: int = 0) -> int:
    """About how much memory ``value`` holds: the buffers of byte strings, numpy and Arrow arrays and
    roaring bitmaps, summed through dataclasses, objects' attributes and containers (a few levels deep,
    a long container's first items scaled up), plus a small constant per object."""
    if value is None or isinstance(value, (bool, int, float)):
        return 16
    if isinstance(value, (bytes, bytearray, memoryview, str)):
        return len(value) + 48
    nbytes = getattr(value, "nbytes", None)  # numpy and Arrow arrays, tables, record batches
    if isinstance(nbytes, int):
        return nbytes + 96
    serialized = getattr(value, "serialized_size", None)  # Parquet metadata: parsed, a few times its size
    if isinstance(serialized, int):
        return 4 * serialized + 96
    statistics = getattr(value, "get_statistics", None)  # a roaring bitmap: its containers' bytes
    if callable(statistics) and type(value).__module__.startswith("pyroaring"):
        found = statistics()
        return sum(v for k, v in found.items() if k.startswith("n_bytes_")) + 64
    if depth >= 5:
        return 64
    if isinstance(value, Mapping):
        items: list[Any] = [part for pair in value.items() for part in pair]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value) if len(value) <= 64 else [*itertools.islice(value, 64)]
        if len(value) > 64:
            return 64 + sum(approximate_bytes(v, depth + 1) for v in items) * len(value) // 64
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [getattr(value, f.name, None) for f in dataclasses.fields(value)]
    elif hasattr(value, "__dict__"):
        items = list(vars(value).values())
    else:
        return 64
    return 64 + sum(approximate_bytes(v, depth + 1) for v in items)


class LruCache:
    """Least recently used entries go first, past ``max_entries`` or past ``max_bytes`` in all (each
    entry's size estimated once, when it is kept: ``approximate_bytes``); an entry larger than a
    quarter of ``max_bytes`` is given to its caller and not kept.  Without ``max_bytes`` only entries
    are counted: no size is estimated (walking a large value's objects costs milliseconds)."""

    def __init__(self, max_entries: int, max_bytes: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self._sizes: dict[Hashable, int] = {}
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._loading: dict[Hashable, _Loading] = {}
        # keys whose load met a store that kept failing after every retry, with when and how (``failing``)
        self._failed: dict[Hashable, tuple[float, BaseException]] = {}
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def get_or_load(self, key: Hashable, load: Callable[[], T]) -> T:
        """The value kept under ``key``, else ``load()``'s, kept.  While one caller loads a key, others
        asking for it wait for that load (planning reads ahead on other threads what it asks for
        later); if that load fails, they try again in turn, and a failure is never kept.  But a store
        that kept failing after every retry is not asked again by each waiter in turn: they raise the
        same failure (another try would wait as long, and the plan stops there), nor is anyone for
        ``FAILING_SECONDS`` after: the plan Spark's rule asks for once zskip's own plan fell back
        would wait through the same retries again."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.stats.hits += 1
                return self._items[key]  # type: ignore[no-any-return,unused-ignore]
            failed = self._failed.get(key)
            if failed is not None:
                if time.monotonic() - failed[0] < FAILING_SECONDS:
                    raise failed[1]
                del self._failed[key]
            loading = self._loading.get(key)
            owner = loading is None
            if loading is None:
                loading = self._loading[key] = _Loading()
                self.stats.misses += 1
        if not owner:
            if loading.thread == threading.get_ident():
                return load()  # asked again inside its own load: waiting would never end
            loading.wait()
            # that load failed: try again (``_failed`` then raises a failure of a store that kept failing)
            return loading.value if loading.loaded else self.get_or_load(key, load)
        try:
            value = load()
            loading.value, loading.loaded = value, True
            self.put(key, value)
            return value
        except BaseException as exc:
            self._failing([key], exc)  # before the waiters are let go
            raise
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
        except BaseException as exc:
            self._failing(list(mine), exc)
            raise
        finally:
            with self._lock:
                for key in mine:
                    self._loading.pop(key, None)
            for loading in mine.values():
                loading.done()

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key`` (something loaded in bulk, beside what ``get_or_load`` loads)."""
        size = approximate_bytes(value) if self.max_bytes is not None else 0
        with self._lock:
            self._forget(key)
            if self.max_bytes is not None and size > self.max_bytes // 4:
                return  # too large to keep: the next plan that needs it reads it again
            self._items[key] = value
            self._sizes[key] = size
            self.bytes += size
            while len(self._items) > self.max_entries or (self.max_bytes is not None and self.bytes > self.max_bytes):
                oldest, _ = self._items.popitem(last=False)
                self.bytes -= self._sizes.pop(oldest, 0)

    def _forget(self, key: Hashable) -> Any:
        """Stop keeping ``key`` (under the lock); its value, or ``None``."""
        value = self._items.pop(key, None)
        self.bytes -= self._sizes.pop(key, 0)
        return value

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
                return self._forget(key)
            loading = self._loading.get(key)
        if loading is None or loading.thread == threading.get_ident():
            return None
        loading.wait()
        with self._lock:
            return self._forget(key)

    def _failing(self, keys: list[Hashable], exc: BaseException) -> None:
        """Remember that loading ``keys`` met a store that kept failing (``exc``), when it did."""
        if kept_failing(exc):
            with self._lock:
                self._failed.update((key, (time.monotonic(), exc)) for key in keys)

    def clear(self) -> None:
        with self._lock:
            self._failed.clear()
            self._items.clear()
            self._sizes.clear()
            self.bytes = 0
            self.stats = CacheStats()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        return len(self._items)


# Footers of 50,000 files at a few KiB each stay well under a GiB of driver memory; index blobs can be
# far larger (a bloom of a large file is many MiB), so the bytes are bounded too:
# ZSKIP_PLANNING_CACHE_BYTES in the process's environment (the driver's, or the hosted planner's: the
# server's), default 1 GiB.
CACHE_BYTES = int(os.environ.get(settings.CACHE_BYTES.key, settings.CACHE_BYTES.default))
CACHE = LruCache(max_entries=50_000, max_bytes=CACHE_BYTES)
