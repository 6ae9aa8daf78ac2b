"""How zskip reaches a file: the one module that decides it, on the driver and on executors.

Every file zskip reads or writes (Parquet footers and data files, index files, the index manifest,
the clustering store, the workload log) goes through a ``FileAccess``.  A ``FileAccess`` is built
from exactly the settings that let Spark and Iceberg reach the table, never from settings of
zskip's own, environment variables or ``~/.aws``:

- a table whose FileIO is Iceberg's ``S3FileIO`` (or ``ResolvingFileIO``, which hands ``s3://``,
  ``s3a://`` and ``s3n://`` to it) is reached with the FileIO's properties: ``s3.endpoint``,
  ``s3.access-key-id``, ``s3.secret-access-key``, ``s3.session-token``, ``s3.path-style-access``,
  ``client.region`` (whatever set them: the catalog's settings, or a REST catalog's table config);
- any other FileIO (``HadoopFileIO``) reaches object storage through Hadoop's S3A connector, so
  its Hadoop settings apply: ``fs.s3a.endpoint``, ``fs.s3a.access.key``, ``fs.s3a.secret.key``,
  ``fs.s3a.session.token``, ``fs.s3a.path.style.access``, ``fs.s3a.endpoint.region``,
  ``fs.s3a.connection.ssl.enabled``, each overridden per bucket by ``fs.s3a.bucket.<bucket>.<key>``;
- local paths and ``file:`` URIs are the local file system; other schemes go to pyarrow as they are.

When neither names credentials, the AWS default chain decides, as it does for Spark.  Requests that
fail for a while (throttling, server errors, cut connections) are tried again as the same settings say
the table's own client tries them (``zskip.retries``).  The settings
come from the JVM once per table (``zskip.iceberg``) and travel with the work to executors: a
``FileAccess`` pickles, and rebuilds its pyarrow file systems where it lands.
"""

from __future__ import annotations

import io
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from zskip.errors import StorageError
from zskip.retries import RetryPolicy, retrying, transient_code

__all__ = ["LOCAL", "FileAccess", "S3Settings", "at_once", "forget_open_objects", "in_background", "storage_error"]

log = logging.getLogger(__name__)
T = TypeVar("T")

S3_SCHEMES = ("s3", "s3a", "s3n")
S3_FILE_IOS = ("org.apache.iceberg.aws.s3.S3FileIO", "org.apache.iceberg.io.ResolvingFileIO")

# (S3A key suffix, S3Settings field) for the Hadoop side; Iceberg property -> field for S3FileIO
SDK_ATTEMPTS = 3  # tries of one request by pyarrow's S3 client itself, before ``retrying`` tries it again
# S3A's retry settings (``RetryPolicy.of_s3a``), read from the Hadoop side as they are
_S3A_RETRY_KEYS = ("retry.limit", "retry.interval", "retry.throttle.limit", "retry.throttle.interval")
_S3A_KEYS = {
    "endpoint": "endpoint",
    "access.key": "access_key",
    "secret.key": "secret_key",
    "session.token": "session_token",
    "path.style.access": "path_style",
    "endpoint.region": "region",
    "connection.ssl.enabled": "ssl",
}
_ICEBERG_KEYS = {
    "s3.endpoint": "endpoint",
    "s3.access-key-id": "access_key",
    "s3.secret-access-key": "secret_key",
    "s3.session-token": "session_token",
    "s3.path-style-access": "path_style",
    "client.region": "region",
}


@dataclass(frozen=True, slots=True)
class S3Settings:
    """How to reach one S3-compatible store, and which settings said so (for error messages)."""

    endpoint: str | None = None
    region: str | None = None
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    path_style: bool = False
    ssl: bool = True
    hadoop: bool = False  # read from Hadoop's S3A settings (else from the FileIO's properties)
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def setting(self, what: str) -> str:
        """The name a user sets ``what`` (``endpoint``, ``access_key``, ..., ``retries``) under, for these settings."""
        if what == "retries":
            return (
                "spark.hadoop.fs.s3a.retry.limit"
                if self.hadoop
                else "the catalog's s3.retry.num-retries (spark.sql.catalog.<name>.s3.retry.num-retries)"
            )
        if self.hadoop:
            suffix = next(k for k, v in _S3A_KEYS.items() if v == what)
            return f"spark.hadoop.fs.s3a.{suffix}"
        key = next(k for k, v in _ICEBERG_KEYS.items() if v == what)
        return f"the catalog's {key} (spark.sql.catalog.<name>.{key})"

    def filesystem(self) -> pafs.S3FileSystem:
        endpoint, scheme = self.endpoint, "https" if self.ssl else "http"
        if endpoint and "://" in endpoint:
            scheme, endpoint = endpoint.split("://", 1)
        return pafs.S3FileSystem(
            access_key=self.access_key if self.secret_key else None,
            secret_key=self.secret_key if self.access_key else None,
            session_token=self.session_token if self.access_key and self.secret_key else None,
            region=self.region or "us-east-1",
            endpoint_override=endpoint.rstrip("/") if endpoint else None,
            scheme=scheme,
            # pyarrow uses path-style requests whenever an endpoint is given; S3 and S3A do not
            force_virtual_addressing=bool(endpoint) and not self.path_style,
            # what S3A and S3FileIO do with a hung connection: give up after a while, not never
            connect_timeout=10,
            request_timeout=60,
            # the client retries at once what fails before an answer arrives (a blip: SDK_ATTEMPTS in all,
            # its waits tens of milliseconds); ``retrying`` what still fails, with the policy's waits, and
            # what fails after the answer began.  Not the policy's count here too: the two would multiply
            # (8 x 8 requests over a minute for one read of a store that keeps failing, S3A's defaults).
            # The SDK's default strategy, not its standard one: the standard one's retry quota runs dry
            # under a store that keeps throttling, and then no request is retried at all
            retry_strategy=pafs.AwsDefaultS3RetryStrategy(max_attempts=min(SDK_ATTEMPTS, self.retry.retries + 1)),
        )


# Rotating credentials (session tokens) make new settings every hour or so: the clients of the settings
# used least recently go past this many, and are closed when nothing holds them any more.
MAX_FILESYSTEMS = 32
_FILESYSTEMS: OrderedDict[S3Settings, pafs.S3FileSystem] = OrderedDict()
_lock = threading.Lock()


def _s3_filesystem(settings: S3Settings) -> pafs.S3FileSystem:
    """One pyarrow file system per settings per process (each holds a connection pool), the
    ``MAX_FILESYSTEMS`` used last."""
    with _lock:
        found = _FILESYSTEMS.get(settings)
        if found is not None:
            _FILESYSTEMS.move_to_end(settings)
            return found
    made = settings.filesystem()
    with _lock:
        found = _FILESYSTEMS.setdefault(settings, made)
        _FILESYSTEMS.move_to_end(settings)
        while len(_FILESYSTEMS) > MAX_FILESYSTEMS:
            _FILESYSTEMS.popitem(last=False)
    return found


@dataclass(frozen=True, slots=True)
class FileAccess:
    """How zskip reaches the files of one table (see the module's docstring)."""

    s3: S3Settings | None = None  # s3://, s3a://, s3n:// locations
    buckets: tuple[tuple[str, S3Settings], ...] = ()  # per-bucket S3A overrides

    @classmethod
    def of(cls, settings: Mapping[str, Any] | None) -> FileAccess:
        """The access a table's storage settings describe, as ``Bridge.storage`` reports them:
        ``{"io": FileIO class, "properties": {...}, "hadoop": {"fs.s3a....": ...}}``."""
        if not settings:
            return LOCAL
        io = str(settings.get("io") or "")
        if io in S3_FILE_IOS:
            properties = settings.get("properties") or {}
            values = {name: properties[key] for key, name in _ICEBERG_KEYS.items() if properties.get(key) is not None}
            return cls(s3=_settings(values, hadoop=False, retry=RetryPolicy.of_iceberg(properties)))
        hadoop = settings.get("hadoop") or {}
        base = {name: hadoop[f"fs.s3a.{key}"] for key, name in _S3A_KEYS.items() if f"fs.s3a.{key}" in hadoop}
        per_bucket: dict[str, dict[str, str]] = {}
        retry_overrides: dict[str, dict[str, str]] = {}
        for key, value in hadoop.items():
            if not key.startswith("fs.s3a.bucket."):
                continue
            rest = key[len("fs.s3a.bucket.") :]
            # bucket names may hold dots: the longest known key the setting ends with is the key
            suffix = max((k for k in (*_S3A_KEYS, *_S3A_RETRY_KEYS) if rest.endswith("." + k)), key=len, default=None)
            if suffix in _S3A_KEYS:
                per_bucket.setdefault(rest[: -len(suffix) - 1], {})[_S3A_KEYS[suffix]] = value
            elif suffix is not None:
                retry_overrides.setdefault(rest[: -len(suffix) - 1], {})[f"fs.s3a.{suffix}"] = value
        buckets = tuple(
            (bucket, _settings(base | per_bucket.get(bucket, {}), hadoop=True,
                               retry=RetryPolicy.of_s3a(hadoop | retry_overrides.get(bucket, {}))))
            for bucket in sorted(per_bucket.keys() | retry_overrides.keys())
        )  # fmt: skip
        return cls(s3=_settings(base, hadoop=True, retry=RetryPolicy.of_s3a(hadoop)), buckets=buckets)

    def settings_for(self, location: str) -> S3Settings | None:
        """The S3 settings that reach ``location``, or None when it is not on S3."""
        parsed = urlparse(location)
        if parsed.scheme not in S3_SCHEMES:
            return None
        for bucket, settings in self.buckets:
            if bucket == parsed.netloc:
                return settings
        return self.s3 or S3Settings()

    def resolve(self, location: str) -> tuple[pafs.FileSystem, str]:
        """A pyarrow file system and the path on it of ``location`` (a path or URI as Iceberg writes it)."""
        if location.startswith("/"):
            return pafs.LocalFileSystem(), location
        parsed = urlparse(location)
        if parsed.scheme == "file":
            return pafs.LocalFileSystem(), unquote(parsed.path)
        s3 = self.settings_for(location)
        if s3 is not None:
            return _s3_filesystem(s3), f"{parsed.netloc}{parsed.path}"
        filesystem, path = pafs.FileSystem.from_uri(location)
        return filesystem, path

    def retrying(self, location: str, call: Callable[[], T]) -> T:
        """``call()``, tried again as the settings reaching ``location`` say when it fails for a while
        (``zskip.retries``); once when ``location`` is not on object storage."""
        s3 = self.settings_for(location)
        return call() if s3 is None else retrying(call, s3.retry)

    def whole_file(self, location: str, call: Callable[[], T]) -> T:
        """``call()``, work on ``location`` (one request, or a whole Parquet file's reads through pyarrow's
        own readers in a Spark task), run again from the start as ``retrying`` allows when it kept failing
        after the client's retries; what still fails is a one-line ``StorageError``.  Every read and write
        of ``FileAccess`` goes through it."""
        try:
            return self.retrying(location, call)
        except OSError as exc:
            raise storage_error(exc, location, self) from exc

    def open_parquet(self, location: str) -> pq.ParquetFile:
        """A Parquet file to read with pyarrow's reader.  On object storage each of the reader's requests
        is tried again on its own (``_RetriedReads``): a whole file's reads run again from the start
        fail as often as they did when the file takes many requests."""
        filesystem, path = self.resolve(location)

        def opened() -> pq.ParquetFile:
            source = filesystem.open_input_file(path)
            if self.settings_for(location) is None:
                return pq.ParquetFile(source)
            return pq.ParquetFile(pa.PythonFile(_RetriedReads(self, location, source), mode="r"))

        return self.whole_file(location, opened)

    def parquet_metadata(self, location: str, *, size: int | None = None) -> pq.FileMetaData:
        """A Parquet file's footer.  Given the file's ``size`` (as Iceberg records it), one request
        reads it: the store is not asked for the length first."""
        if size is None:
            return self.open_parquet(location).metadata
        filesystem, path = self.resolve(location)
        return self.whole_file(
            location,
            lambda: ds.ParquetFileFormat().make_fragment(path, filesystem=filesystem, file_size=size).metadata,
        )

    def parquet_footer(self, location: str) -> tuple[bytes, int]:
        """A Parquet file's footer bytes as stored, with the length and magic after them (the tail a
        Parquet reader parses), and the file's length."""
        filesystem, path = self.resolve(location)

        def read() -> tuple[bytes, int]:
            with filesystem.open_input_file(path) as source:
                size = source.size()
                tail = source.read_at(8, max(size - 8, 0)) if size >= 12 else b""
                length = int.from_bytes(tail[:4], "little") if len(tail) == 8 else -1
                if tail[4:] != b"PAR1" or not 0 <= length <= size - 12:
                    raise ValueError(f"{location} does not end with a Parquet footer")
                footer = source.read_at(length, size - 8 - length)
            return bytes(footer) + bytes(tail), size

        return self.whole_file(location, read)

    def read(self, location: str, *, offset: int = 0, length: int | None = None) -> bytes:
        """A file's bytes, or ``length`` bytes of it from ``offset``.

        On object storage a ranged read goes through a handle kept open for the file (see
        ``_open_objects``): pyarrow asks the store for an object's length when it opens it, one more
        round trip per read, and planning reads several blobs of one index file."""
        filesystem, path = self.resolve(location)

        def read() -> Any:
            if length is not None and self.settings_for(location) is not None:
                return _open_object(self, location, filesystem, path).read_at(length, offset)
            with filesystem.open_input_file(path) as source:
                return source.read_at(source.size() - offset if length is None else length, offset)

        try:
            data = self.retrying(location, read)
        except OSError as exc:
            _open_objects.forget(self, location)
            raise storage_error(exc, location, self) from exc
        return data if isinstance(data, bytes) else data.to_pybytes()

    def open_ahead(self, location: str) -> None:
        """Open the handle ranged reads of ``location`` use (``read``), when it is on object storage:
        opening asks the store for the object's length, one round trip a later read then skips."""
        if self.settings_for(location) is None:
            return
        filesystem, path = self.resolve(location)
        self.whole_file(location, lambda: _open_object(self, location, filesystem, path))

    def write(self, location: str, data: bytes) -> None:
        """Write a whole file (zskip's files are written once and never changed).

        On object storage the object appears whole or not at all (one upload, completed or not), so a
        write tried again after a failure never leaves part of a file under the name."""
        filesystem, path = self.resolve(location)

        def write() -> None:
            parent = path.rsplit("/", 1)[0]
            if parent and isinstance(filesystem, pafs.LocalFileSystem):
                filesystem.create_dir(parent, recursive=True)
            with filesystem.open_output_stream(path) as out:
                out.write(data)

        self.whole_file(location, write)

    def delete(self, location: str) -> None:
        filesystem, path = self.resolve(location)
        failed = False  # a deletion whose answer was lost may have been done: then the file is gone

        def delete() -> None:
            nonlocal failed
            try:
                filesystem.delete_file(path)
            except FileNotFoundError:
                if not failed:
                    raise
            except OSError as exc:
                failed = failed or transient_code(exc) is not None
                raise

        self.whole_file(location, delete)

    def files_under(self, folder: str, *, recursive: bool = False) -> list[tuple[str, int, float | None]]:
        """``(location, size, modified epoch seconds)`` of each file under ``folder``; none when it is absent.

        Locations keep ``folder``'s own form (scheme and all), so they compare with what Iceberg records."""
        filesystem, base = self.resolve(folder)
        selector = pafs.FileSelector(base, recursive=recursive, allow_not_found=True)
        infos = self.whole_file(folder, lambda: filesystem.get_file_info(selector))
        prefix, root = folder.rstrip("/"), base.rstrip("/")
        found = []
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            location = prefix + info.path[len(root) :] if info.path.startswith(root) else info.path
            modified = info.mtime.timestamp() if info.mtime is not None else None
            found.append((location, int(info.size or 0), modified))
        return sorted(found)

    def missing(self, locations: Iterable[str]) -> set[str]:
        """Those of ``locations`` that do not exist (one request per file on object stores, issued at once)."""
        groups: dict[S3Settings | None, tuple[pafs.FileSystem, list[tuple[str, str]]]] = {}
        for location in sorted(set(locations)):
            filesystem, path = self.resolve(location)
            groups.setdefault(self.settings_for(location), (filesystem, []))[1].append((location, path))
        gone: set[str] = set()
        for filesystem, items in groups.values():
            paths = [path for _, path in items]
            infos = self.whole_file(items[0][0], lambda: filesystem.get_file_info(paths))  # noqa: B023
            gone.update(
                location for (location, _), info in zip(items, infos, strict=True) if info.type != pafs.FileType.File
            )
        return gone


LOCAL = FileAccess()


class _OpenObjects:
    """Objects opened for ranged reads, by access and location; past the limit the least recently used is
    dropped (closed once no read holds it).

    zskip's files are written once under names never used again, so a handle never reads stale
    bytes; an object deleted since fails its next read, which forgets the handle."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._handles: OrderedDict[tuple[FileAccess, str], Any] = OrderedDict()
        self._opening: dict[tuple[FileAccess, str], threading.Lock] = {}  # one opening per object at a time
        self._lock = threading.Lock()

    def get(self, access: FileAccess, location: str, open_file: Callable[[], Any]) -> Any:
        """The handle kept for ``location``, opened once: reads of one object that start together (a
        cold plan's first round reads many blobs of one index file at once) wait for one opening
        rather than each asking the store for the object's length."""
        key = (access, location)
        with self._lock:
            handle = self._handles.get(key)
            if handle is not None:
                self._handles.move_to_end(key)
                return handle
            opening = self._opening.setdefault(key, threading.Lock())
        with opening:
            with self._lock:
                handle = self._handles.get(key)
            if handle is None:
                try:
                    handle = open_file()
                except BaseException:
                    with self._lock:
                        self._opening.pop(key, None)
                    raise
                with self._lock:
                    self._opening.pop(key, None)
                    self._handles[key] = handle
                    while len(self._handles) > self.limit:
                        self._handles.popitem(last=False)  # closed once no read holds it
        return handle

    def forget(self, access: FileAccess, location: str) -> None:
        with self._lock:
            self._handles.pop((access, location), None)

    def clear(self) -> None:
        with self._lock:
            self._handles.clear()


_open_objects = _OpenObjects(limit=256)


class _RetriedReads(io.RawIOBase):
    """An object read one ranged request at a time, each tried again as ``FileAccess.retrying`` allows.

    pyarrow's Parquet reader asks for a file's footer, then each column chunk it reads, in requests of
    its own; its S3 client does not retry a small ranged read whose answer failed to flush (8% of them
    under a throttling store), so a column read of a hundred requests would almost never pass whole."""

    def __init__(self, access: FileAccess, location: str, source: pa.NativeFile) -> None:
        super().__init__()
        self._access, self._location, self._source = access, location, source
        self._size = source.size()  # known from opening: no request
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        start = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, start + offset)
        return self._position

    def read(self, size: int = -1) -> bytes:
        wanted = self._size - self._position if size is None or size < 0 else min(size, self._size - self._position)
        if wanted <= 0:
            return b""
        at = self._position
        data = bytes(self._access.retrying(self._location, lambda: self._source.read_at(wanted, at)))
        self._position += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._source.close()
        super().close()


def forget_open_objects() -> None:
    """Drop every handle kept for ranged reads (the next read of each object asks its length again)."""
    _open_objects.clear()


def _open_object(access: FileAccess, location: str, filesystem: pafs.FileSystem, path: str) -> Any:
    return _open_objects.get(access, location, lambda: filesystem.open_input_file(path))


READ_THREADS = 16  # reads in flight at once on the driver (each mostly waits on its store)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_in_pool = threading.local()


def at_once(reads: Sequence[Callable[[], T]]) -> list[T | Exception]:
    """Run ``reads`` several at a time on the driver's reading threads; each one's result, or the
    exception it raised.  pyarrow reads and parses without holding Python's lock, so object stores
    and local disks both overlap the waits.  The threads live as long as the process: a cold plan
    reads in several rounds, and starting sixteen threads for each cost more than some rounds'
    reads.  Called from one of those threads, the reads run one after another (a read never waits
    on the pool it holds a thread of)."""
    if len(reads) < 2 or getattr(_in_pool, "active", False):
        return [_outcome(read) for read in reads]
    pool = _reading_pool()
    return [future.result() for future in [pool.submit(_pooled, read) for read in reads]]


def in_background(reads: Sequence[Callable[[], object]]) -> None:
    """Start ``reads`` on the driver's reading threads and return at once.  A read that fails is only
    logged (at debug level): what needs its result reads again, and reports the error there."""
    pool = _reading_pool()
    for read in reads:
        pool.submit(_pooled, read).add_done_callback(_log_failure)


def _log_failure(future: Future[Any]) -> None:
    outcome = future.result()
    if isinstance(outcome, Exception):
        log.debug("reading ahead: %s", outcome)


def _reading_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="zskip-read")
        return _pool


def _pooled(read: Callable[[], T]) -> T | Exception:
    _in_pool.active = True
    try:
        return _outcome(read)
    finally:
        _in_pool.active = False


def _outcome(read: Callable[[], T]) -> T | Exception:
    try:
        return read()
    except Exception as exc:
        return exc


def _settings(values: Mapping[str, Any], *, hadoop: bool, retry: RetryPolicy) -> S3Settings:
    def flag(name: str, default: bool) -> bool:
        value = values.get(name)
        return default if value is None else str(value).strip().lower() == "true"

    def text(name: str) -> str | None:
        value = values.get(name)
        return str(value).strip() or None if value is not None else None

    return S3Settings(
        endpoint=text("endpoint"),
        region=text("region"),
        access_key=text("access_key"),
        secret_key=text("secret_key"),
        session_token=text("session_token"),
        path_style=flag("path_style", False),
        ssl=flag("ssl", True),
        hadoop=hadoop,
        retry=retry,
    )


def storage_error(exc: BaseException, location: str, access: FileAccess | None = None) -> Exception:
    """A one-line ``StorageError`` for a failed read or write of ``location``, naming the setting to fix;
    errors that are not about reaching the store come back as they are."""
    if isinstance(exc, StorageError):
        return exc  # said in one line already, where it was raised
    text = " ".join(str(exc).split())
    s3 = access.settings_for(location) if access is not None else None
    if s3 is None:
        if isinstance(exc, FileNotFoundError) or "No such file" in text or "not found" in text.lower():
            return StorageError(f"{location} does not exist: {text}")
        return exc if isinstance(exc, Exception) else StorageError(text)
    bucket = urlparse(location).netloc
    lowered = text.lower()
    missing_bucket = "bucket" in lowered and ("not found" in lowered or "does not exist" in lowered)
    if "nosuchbucket" in lowered or "no_such_bucket" in lowered or missing_bucket:
        return StorageError(
            f"bucket {bucket!r} does not exist on {s3.endpoint or 'S3'} (reading {location}): create it, or fix "
            f"the table's location or {s3.setting('endpoint')}"
        )
    if any(w in lowered for w in ("access_denied", "accessdenied", "access denied", "forbidden", "403", "signature")):
        return StorageError(
            f"{s3.endpoint or 'S3'} refused the credentials for {location}: check {s3.setting('access_key')} and "
            f"{s3.setting('secret_key')}"
        )
    # curl's 6 and 7: no such host, nothing listening (a NETWORK_CONNECTION error may also be a cut answer)
    if any(w in lowered for w in ("could not connect", "couldn't connect", "connection refused", "resolve host",
                                  "curlcode: 6,", "curlcode: 7,")):  # fmt: skip
        return StorageError(
            f"cannot connect to {s3.endpoint or 'S3'} to reach {location}: check {s3.setting('endpoint')}"
        )
    if "path does not exist" in lowered or "not found" in lowered or isinstance(exc, FileNotFoundError):
        return StorageError(f"{location} does not exist: {text}")
    code = transient_code(exc, spent_too=True)
    if code is not None:
        return StorageError(
            f"{s3.endpoint or 'S3'} kept failing ({code}) on {location} after {s3.retry.retries} retries: {text}; "
            f"the store is throttling or failing: run again later, or allow more retries with {s3.setting('retries')}"
        )
    if isinstance(exc, OSError):
        return StorageError(f"{s3.endpoint or 'S3'} failed on {location}: {text}")
    return exc if isinstance(exc, Exception) else StorageError(text)
