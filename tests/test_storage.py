"""How zskip reaches a file (zskip.storage): the settings a table's FileIO and Hadoop configuration give,
and the one-line errors naming the setting to fix.  No server here: tests/integration/test_object_storage.py
runs against a real S3-compatible one."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from zskip.errors import StorageError
from zskip.storage import LOCAL, FileAccess, S3Settings, storage_error

S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
HADOOP_FILE_IO = "org.apache.iceberg.hadoop.HadoopFileIO"


def test_an_s3fileio_table_is_reached_with_its_properties_and_not_hadoops() -> None:
    access = FileAccess.of(
        {
            "io": S3_FILE_IO,
            "properties": {
                "s3.endpoint": "http://127.0.0.1:9000",
                "s3.access-key-id": "key",
                "s3.secret-access-key": "secret",
                "s3.path-style-access": "true",
                "client.region": "eu-west-1",
            },
            "hadoop": {"fs.s3a.endpoint": "http://elsewhere:1", "fs.s3a.access.key": "other"},
        }
    )
    settings = access.settings_for("s3a://bucket/t/data/f.parquet")
    assert settings == S3Settings("http://127.0.0.1:9000", "eu-west-1", "key", "secret", None, True, True, False)
    assert "secret" not in repr(access)  # credentials never reach a log line
    assert "s3.secret-access-key" in settings.setting("secret_key")


def test_a_hadoop_fileio_table_is_reached_with_s3a_settings_per_bucket() -> None:
    access = FileAccess.of(
        {
            "io": HADOOP_FILE_IO,
            "properties": {},
            "hadoop": {
                "fs.s3a.endpoint": "http://127.0.0.1:9000",
                "fs.s3a.access.key": "key",
                "fs.s3a.secret.key": "secret",
                "fs.s3a.path.style.access": "true",
                "fs.s3a.bucket.my.dotted.bucket.endpoint": "http://127.0.0.2:9000",
                "fs.s3a.bucket.my.dotted.bucket.endpoint.region": "ap-south-1",
            },
        }
    )
    plain = access.settings_for("s3a://lake/wh/t")
    special = access.settings_for("s3a://my.dotted.bucket/wh/t")
    assert plain is not None and special is not None
    assert (plain.endpoint, plain.region, plain.access_key, plain.path_style) == (
        "http://127.0.0.1:9000",
        None,
        "key",
        True,
    )
    assert (special.endpoint, special.region, special.access_key) == ("http://127.0.0.2:9000", "ap-south-1", "key")
    assert special.setting("endpoint") == "spark.hadoop.fs.s3a.endpoint"
    assert access.settings_for("/tmp/x") is None and access.settings_for("file:/tmp/x") is None
    filesystem, path = access.resolve("s3a://lake/wh/t/data/f.parquet")
    assert isinstance(filesystem, pafs.S3FileSystem) and path == "lake/wh/t/data/f.parquet"
    assert pickle.loads(pickle.dumps(access)) == access  # travels to executors


def test_local_files_are_read_written_listed_and_deleted(tmp_path: Path) -> None:
    target = f"file:{tmp_path}/zskip/indexes/index-1.puffin"
    LOCAL.write(target, b"0123456789")
    assert LOCAL.read(target, offset=2, length=3) == b"234"
    assert LOCAL.read(str(tmp_path / "zskip/indexes/index-1.puffin")) == b"0123456789"
    listed = LOCAL.files_under(f"file:{tmp_path}/zskip", recursive=True)
    assert [(location, size) for location, size, _ in listed] == [(target, 10)]
    assert LOCAL.missing([target, f"file:{tmp_path}/gone.puffin"]) == {f"file:{tmp_path}/gone.puffin"}
    LOCAL.delete(target)
    assert LOCAL.files_under(f"file:{tmp_path}/zskip", recursive=True) == []
    with pytest.raises(StorageError, match="does not exist"):
        LOCAL.read(target)


def test_store_failures_name_the_setting_to_fix() -> None:
    hadoop = FileAccess(s3=S3Settings(endpoint="http://127.0.0.1:9", hadoop=True))
    iceberg = FileAccess(s3=S3Settings(endpoint="http://127.0.0.1:9"))
    where = "s3a://lake/wh/t/zskip/x.puffin"
    denied = storage_error(OSError("AWS Error ACCESS_DENIED during HeadObject operation"), where, hadoop)
    assert "spark.hadoop.fs.s3a.access.key" in str(denied) and "fs.s3a.secret.key" in str(denied)
    unreachable = storage_error(OSError("AWS Error NETWORK_CONNECTION: Could not connect"), where, iceberg)
    assert "s3.endpoint" in str(unreachable) and isinstance(unreachable, StorageError)
    bucket = storage_error(OSError("Bucket 'lake' not found"), where, hadoop)
    assert "bucket 'lake' does not exist" in str(bucket)
    other = ValueError("something else")
    assert storage_error(other, where, hadoop) is other  # not about reaching the store: as it was


def test_reads_at_once_keep_their_order_and_errors_and_never_wait_on_their_own_pool() -> None:
    from zskip.storage import READ_THREADS, at_once

    def fails() -> int:
        raise OSError("gone")

    outcomes = at_once([lambda: 1, fails, lambda: 3])
    assert outcomes[0] == 1 and isinstance(outcomes[1], OSError) and outcomes[2] == 3
    # every reading thread asks for more reads at once: they run in place instead of waiting forever
    nested = at_once([lambda i=i: sum(at_once([lambda: i, lambda: i])) for i in range(READ_THREADS * 2)])
    assert nested == [2 * i for i in range(READ_THREADS * 2)]


def test_reads_of_one_object_that_start_together_open_it_once() -> None:
    import threading
    import time

    from zskip.storage import _OpenObjects

    objects, opened = _OpenObjects(limit=4), []

    def slow_open() -> object:
        opened.append(1)
        time.sleep(0.05)  # the store answering the length request
        return object()

    handles: list[object] = []
    threads = [
        threading.Thread(target=lambda: handles.append(objects.get(LOCAL, "s3://b/index.puffin", slow_open)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(opened) == 1 and len({id(h) for h in handles}) == 1

    def failing_open() -> object:
        raise OSError("unreachable")

    with pytest.raises(OSError):
        objects.get(LOCAL, "s3://b/other.puffin", failing_open)
    assert objects.get(LOCAL, "s3://b/other.puffin", object) is not None  # a failed opening is not remembered


def test_rotating_credentials_keep_a_bounded_number_of_s3_clients() -> None:
    from zskip import storage

    for hour in range(storage.MAX_FILESYSTEMS + 8):  # a session token a hour
        settings = S3Settings("http://127.0.0.1:9", "eu-west-1", "key", "secret", f"token-{hour}", True, False)
        assert storage._s3_filesystem(settings) is storage._s3_filesystem(settings)  # one client per settings
    assert len(storage._FILESYSTEMS) <= storage.MAX_FILESYSTEMS
    assert settings in storage._FILESYSTEMS  # the latest kept
