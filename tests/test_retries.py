"""Requests that fail for a while are tried again (zskip.retries): which failures pass, how long to wait,
the settings that say so, and the count of retries.  No server here: test_object_storage.py puts a
relay that makes faults between zskip and a real S3-compatible server."""

from __future__ import annotations

import pytest

from zskip import degraded
from zskip.errors import StorageError
from zskip.retries import RetryPolicy, counts, kept_failing, retrying, stage_retried, transient_code
from zskip.storage import FileAccess, S3Settings, storage_error

# as pyarrow words the AWS SDK for C++'s errors
SLOW_DOWN = "When reading information for key 'k' in bucket 'lake': AWS Error SLOW_DOWN during HeadObject operation"
FLUSH = "AWS Error INTERNAL_FAILURE during GetObject operation: Failed to flush response stream"
CUT = "AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 18, Transferred a partial file"
REFUSED = "AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 7, Couldn't connect to server"
DENIED = "AWS Error ACCESS_DENIED during HeadObject operation: No response body."


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (SLOW_DOWN, "SLOW_DOWN"),
        (FLUSH, "INTERNAL_FAILURE"),
        (CUT, "NETWORK_CONNECTION"),
        ("AWS Error UNKNOWN (HTTP status 502) during GetObject operation", "HTTP 502"),
        ("Connection reset by peer", "CONNECTION_CUT"),
        (REFUSED, None),  # a wrong endpoint: a setting to fix, at once
        (DENIED, None),
        ("Path does not exist 'lake/x'", None),
    ],
)
def test_failures_that_pass_are_told_from_those_that_do_not(text: str, code: str | None) -> None:
    assert transient_code(OSError(text)) == code


def test_a_storage_error_is_tried_again_for_the_failure_it_wraps() -> None:
    try:
        raise StorageError("reading s3://lake/x failed") from OSError(SLOW_DOWN)
    except StorageError as exc:
        assert transient_code(exc) == "SLOW_DOWN"
    assert transient_code(ValueError(SLOW_DOWN)) is None  # not an error of the store's client


def test_a_failure_that_passes_is_tried_again_with_growing_waits_and_counted() -> None:
    waits: list[float] = []
    outcomes = iter([OSError(SLOW_DOWN), OSError(FLUSH), OSError(CUT)])

    def call() -> str:
        failure = next(outcomes, None)
        if failure is not None:
            raise failure
        return "read"

    before = counts.snapshot()
    policy = RetryPolicy(retries=5, min_wait=0.1, max_wait=0.3, throttle_retries=5, throttle_min_wait=0.2)
    assert retrying(call, policy, sleep=waits.append) == "read"
    after = counts.snapshot()
    assert {code: after[code] - before.get(code, 0) for code in after if after[code] != before.get(code, 0)} == {
        "SLOW_DOWN": 1,
        "INTERNAL_FAILURE": 1,
        "NETWORK_CONNECTION": 1,
    }
    # equal jitter: each wait between half and all of min(max_wait, base * 2**(n-1))
    assert 0.1 <= waits[0] <= 0.2  # throttled: the throttle's base, 0.2
    assert 0.1 <= waits[1] <= 0.2  # the second retry: 0.1 * 2
    assert 0.15 <= waits[2] <= 0.3  # the third: 0.4, held to max_wait


def test_retries_stop_where_the_policy_says_and_are_not_repeated_around_the_failure() -> None:
    calls = []

    def call() -> None:
        calls.append(1)
        raise OSError(FLUSH)

    policy = RetryPolicy(retries=2, min_wait=0, max_wait=0, throttle_retries=2, throttle_min_wait=0)
    with pytest.raises(OSError, match="INTERNAL_FAILURE") as raised:
        retrying(call, policy, sleep=lambda _: None)
    assert len(calls) == 3
    # spent here: a retry around this call (an index build of the whole file) does not try it again
    assert transient_code(raised.value) is None and transient_code(raised.value, spent_too=True) == "INTERNAL_FAILURE"
    calls.clear()
    with pytest.raises(OSError):
        retrying(lambda: retrying(call, policy, sleep=lambda _: None), policy, sleep=lambda _: None)
    assert len(calls) == 3
    refused = []
    with pytest.raises(OSError):
        retrying(lambda: refused.append(1) or (_ for _ in ()).throw(OSError(REFUSED)), policy, sleep=lambda _: None)
    assert len(refused) == 1  # never retried


def test_planning_goes_on_without_a_damaged_read_but_not_past_a_store_that_kept_failing() -> None:
    """A read that failed for its own reasons (a damaged index) is gone on without; one the store kept
    failing after every retry stops the plan (the query then runs as Spark plans it): every other read
    would wait as long before it failed too."""
    policy = RetryPolicy(retries=1, min_wait=0, max_wait=0, throttle_retries=1, throttle_min_wait=0)
    with pytest.raises(OSError) as raised:
        retrying(lambda: (_ for _ in ()).throw(OSError(FLUSH)), policy, sleep=lambda _: None)
    try:
        raise storage_error(raised.value, "s3://b/k", FileAccess(s3=S3Settings())) from raised.value
    except StorageError as wrapped:
        spent = wrapped
    assert kept_failing(raised.value) and kept_failing(spent)
    before = degraded.count()
    with pytest.raises(StorageError):
        degraded.tolerate(spent)
    assert degraded.count() == before
    degraded.tolerate(ValueError("a damaged index blob"))
    degraded.tolerate(OSError(FLUSH))  # not retried yet (no policy ran it): a read of its own that failed
    assert degraded.count() == before + 2
    assert not kept_failing(StorageError("s3://b/k does not exist"))


def test_long_verbs_progress_says_how_many_requests_were_retried() -> None:
    assert stage_retried("indexing files", 0) == "indexing files"
    assert stage_retried("recording key ranges", 3) == "recording key ranges (3 requests retried)"


def test_the_table_clients_retry_settings_govern_zskips() -> None:
    iceberg = FileAccess.of(
        {
            "io": "org.apache.iceberg.aws.s3.S3FileIO",
            "properties": {"s3.retry.num-retries": "8", "s3.retry.min-wait-ms": "100", "s3.retry.max-wait-ms": "900"},
        }
    )
    assert iceberg.s3 is not None and iceberg.s3.retry == RetryPolicy(8, 0.1, 0.9, 8, 0.1)
    defaults = FileAccess.of({"io": "org.apache.iceberg.aws.s3.S3FileIO", "properties": {}})
    assert defaults.s3 is not None and defaults.s3.retry == RetryPolicy(5, 2.0, 20.0, 5, 2.0)  # S3FileIO's own
    hadoop = FileAccess.of(
        {
            "io": "org.apache.iceberg.hadoop.HadoopFileIO",
            "hadoop": {
                "fs.s3a.retry.limit": "3",
                "fs.s3a.retry.interval": "250ms",
                "fs.s3a.retry.throttle.limit": "9",
                "fs.s3a.retry.throttle.interval": "1s",
                "fs.s3a.bucket.hot.data.retry.limit": "12",
            },
        }
    )
    plain, hot = hadoop.settings_for("s3a://lake/t"), hadoop.settings_for("s3a://hot.data/t")
    assert plain is not None and plain.retry == RetryPolicy(3, 0.25, 20.0, 9, 1.0)
    assert hot is not None and hot.retry == RetryPolicy(12, 0.25, 20.0, 9, 1.0)
    assert RetryPolicy.of_s3a({}) == RetryPolicy(7, 0.5, 20.0, 20, 0.1)  # S3A's defaults


def test_a_store_that_kept_failing_says_so_in_one_line_with_the_setting_to_raise() -> None:
    access = FileAccess(s3=S3Settings(endpoint="http://127.0.0.1:9", hadoop=True))
    message = str(storage_error(OSError(FLUSH), "s3a://lake/wh/t/zskip/x.puffin", access))
    assert "INTERNAL_FAILURE" in message and "s3a://lake/wh/t/zskip/x.puffin" in message
    assert "spark.hadoop.fs.s3a.retry.limit" in message and "\n" not in message


def test_zskips_own_error_is_tried_again_for_its_cause_only_and_never_said_twice() -> None:
    access = FileAccess(s3=S3Settings(endpoint="http://127.0.0.1:9"))
    where = "s3://lake/t/data/f.parquet"
    spent = OSError(FLUSH)
    spent.retries_spent = True  # type: ignore[attr-defined]
    try:
        raise storage_error(spent, where, access) from spent
    except StorageError as said:
        assert "INTERNAL_FAILURE" in str(said)
        assert transient_code(said) is None  # its text names the code, but its cause was tried enough
        assert storage_error(said, where, access) is said
