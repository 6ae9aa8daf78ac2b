"""The planning cache: one load per key however many threads ask for it at once; a failed load is not kept."""

from __future__ import annotations

import threading
import time

import pytest

from zskip.planning.cache import LruCache


def test_threads_asking_for_a_key_being_loaded_wait_for_that_one_load() -> None:
    cache = LruCache(10)
    calls: list[str] = []
    started = threading.Event()

    def slow() -> str:
        calls.append(threading.current_thread().name)
        started.set()
        time.sleep(0.2)
        return "footer"

    results: list[str] = []
    first = threading.Thread(target=lambda: results.append(cache.get_or_load("k", slow)), name="ahead")
    first.start()
    started.wait()
    waiters = [threading.Thread(target=lambda: results.append(cache.get_or_load("k", slow))) for _ in range(3)]
    for thread in waiters:
        thread.start()
    for thread in [first, *waiters]:
        thread.join()
    assert calls == ["ahead"] and results == ["footer"] * 4
    assert cache.stats.misses == 1 and "k" in cache


def test_a_failed_load_is_not_kept_and_a_waiter_loads_again() -> None:
    cache = LruCache(10)
    started, release = threading.Event(), threading.Event()

    def failing() -> str:
        started.set()
        release.wait()
        raise OSError("the store did not answer")

    errors: list[Exception] = []

    def ahead() -> None:
        try:
            cache.get_or_load("k", failing)
        except OSError as exc:
            errors.append(exc)

    thread = threading.Thread(target=ahead)
    thread.start()
    started.wait()
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(cache.get_or_load("k", lambda: "read again")))
    waiter.start()
    time.sleep(0.05)
    assert not got  # waits for the load in progress
    release.set()
    thread.join()
    waiter.join()
    assert [str(e) for e in errors] == ["the store did not answer"] and got == ["read again"]
    assert cache.get_or_load("k", lambda: "later") == "read again"


def test_a_store_that_kept_failing_is_not_asked_again_by_each_waiter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read ahead met a store that kept failing after every retry: the plan waiting for the same
    key gets that failure at once, not a read of its own that would wait as long (and fail too), and
    so does the next plan for a while (Spark's rule planning the query zskip's plan left to Spark)."""
    cache = LruCache(10)
    started, release = threading.Event(), threading.Event()
    spent = OSError("AWS Error SLOW_DOWN during GetObject operation")
    spent.retries_spent = True  # type: ignore[attr-defined]  # as zskip.retries.retrying marks it

    def failing() -> str:
        started.set()
        release.wait()
        raise spent

    def ahead() -> None:
        with pytest.raises(OSError):
            cache.get_or_load("k", failing)

    thread = threading.Thread(target=ahead)
    thread.start()
    started.wait()
    got: list[object] = []

    def waiter() -> None:
        try:
            got.append(cache.get_or_load("k", lambda: "read again"))
        except OSError as exc:
            got.append(exc)

    waiting = threading.Thread(target=waiter)
    waiting.start()
    release.set()
    thread.join()
    waiting.join()
    assert got == [spent] and "k" not in cache
    with pytest.raises(OSError) as again:
        cache.get_or_load("k", lambda: "at once")
    assert again.value is spent
    monkeypatch.setattr("zskip.planning.cache.FAILING_SECONDS", 0.0)
    assert cache.get_or_load("k", lambda: "later") == "later"  # a while later, read again
    cache.clear()
    other = OSError("no such key")  # a failure of its own, not a store that kept failing: not remembered
    with pytest.raises(OSError):
        cache.get_or_load("j", lambda: (_ for _ in ()).throw(other))
    assert cache.get_or_load("j", lambda: "read") == "read"


def test_a_load_asking_for_its_own_key_does_not_wait_on_itself() -> None:
    cache = LruCache(10)

    def outer() -> int:
        return cache.get_or_load("k", lambda: 1) + 1

    assert cache.get_or_load("k", outer) == 2


def test_an_error_reaches_the_caller_that_loaded() -> None:
    cache = LruCache(10)
    with pytest.raises(ValueError, match="corrupt"):
        cache.get_or_load("k", lambda: (_ for _ in ()).throw(ValueError("corrupt")))
    assert "k" not in cache


def test_a_bulk_load_is_waited_for_key_by_key_and_a_key_it_did_not_give_is_loaded_alone() -> None:
    cache = LruCache(10)
    cache.put("kept", 0)
    started, release = threading.Event(), threading.Event()
    asked: list[list[str]] = []

    def bulk(keys: list) -> dict:
        asked.append(keys)
        started.set()
        release.wait()
        return {"a": 1, "b": 2}  # "c" could not be read in bulk

    ahead = threading.Thread(target=lambda: cache.load_many(["kept", "a", "b", "c"], bulk))
    ahead.start()
    started.wait()
    cache.load_many(["a", "b"], bulk)  # already being loaded: not read twice
    alone: list[str] = []
    results: list[object] = []
    waiters = [
        threading.Thread(target=lambda key=key: results.append(cache.get_or_load(key, lambda: alone.append(key) or 9)))
        for key in ("a", "c")
    ]
    for thread in waiters:
        thread.start()
    time.sleep(0.1)
    assert results == []  # both wait for the bulk load
    release.set()
    for thread in [ahead, *waiters]:
        thread.join()
    assert asked == [["a", "b", "c"]] and sorted(results, key=str) == [1, 9] and alone == ["c"]
    assert cache.get_or_load("b", lambda: 0) == 2 and cache.get_or_load("kept", lambda: 1) == 0


def test_taking_a_key_waits_for_its_load_and_leaves_it_unkept() -> None:
    cache = LruCache(10)
    assert cache.take("absent") is None
    started, release = threading.Event(), threading.Event()

    def bulk(keys: list) -> dict:
        started.set()
        release.wait()
        return {"copy": b"bytes"}

    ahead = threading.Thread(target=lambda: cache.load_many(["copy"], bulk))
    ahead.start()
    started.wait()
    taken: list[object] = []
    taker = threading.Thread(target=lambda: taken.append(cache.take("copy")))
    taker.start()
    time.sleep(0.1)
    assert taken == []  # waits for the load in progress
    release.set()
    for thread in (ahead, taker):
        thread.join()
    assert taken == [b"bytes"] and "copy" not in cache and cache.take("copy") is None


def test_the_cache_stays_under_its_byte_bound_under_a_workload_of_large_blooms() -> None:
    import numpy as np

    from zskip.fileindex.bloom import BloomFilter

    cache = LruCache(max_entries=50_000, max_bytes=64 * 1024 * 1024)
    for i in range(200):  # 200 blooms of 4 MiB: 800 MiB asked for
        bloom = cache.get_or_load(("blob", i), lambda: BloomFilter(np.zeros((128 * 1024, 8), np.uint32)))
        assert bloom.blocks.nbytes == 4 * 1024 * 1024
        assert cache.bytes <= cache.max_bytes
    assert 10 <= len(cache) <= 16  # as many as fit, the latest kept
    assert ("blob", 199) in cache and ("blob", 0) not in cache
    huge = cache.get_or_load("huge", lambda: b"x" * (20 * 1024 * 1024))  # over a quarter of the bound
    assert len(huge) == 20 * 1024 * 1024 and "huge" not in cache  # given, not kept
    taken = cache.take(("blob", 199))
    assert taken is not None and ("blob", 199) not in cache and cache.bytes <= cache.max_bytes
    cache.clear()
    assert cache.bytes == 0


def test_sizes_are_estimated_from_the_buffers_values_hold() -> None:
    import numpy as np
    import pyarrow as pa

    from zskip.planning.cache import approximate_bytes

    assert approximate_bytes(b"x" * 1_000_000) >= 1_000_000
    assert approximate_bytes(np.zeros(1_000_000, np.int64)) >= 8_000_000
    assert approximate_bytes(pa.table({"a": np.arange(1_000_000)})) >= 8_000_000
    assert approximate_bytes({"k": [np.zeros(1000, np.int8)] * 200}) >= 200_000  # a long list, scaled up
    assert approximate_bytes(42) < 100


def test_a_cache_bounded_by_entries_only_sizes_nothing() -> None:
    """Estimating a value's bytes walks its objects (milliseconds for a large one): a cache with no byte
    bound (the rule's workload records) never does."""

    class Watched:
        looked = 0

        @property
        def nbytes(self) -> int:
            Watched.looked += 1
            return 8

    LruCache(max_entries=4).put("k", Watched())
    assert Watched.looked == 0
    LruCache(max_entries=4, max_bytes=1 << 20).put("k", Watched())
    assert Watched.looked == 1
