"""Opening a table's Parquet data files with pyarrow, on executors, from Iceberg file locations."""

from __future__ import annotations

from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs
import pyarrow.parquet as pq

__all__ = ["open_parquet", "read_file", "resolve", "write_file"]


def resolve(location: str) -> tuple[pafs.FileSystem, str]:
    """A pyarrow filesystem and path for an Iceberg file location (``file:``, ``s3a://``, ``hdfs://``)."""
    if location.startswith("/"):
        return pafs.LocalFileSystem(), location
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return pafs.LocalFileSystem(), unquote(parsed.path)
    if parsed.scheme in ("s3a", "s3n"):
        location = "s3" + location[len(parsed.scheme) :]
    filesystem, path = pafs.FileSystem.from_uri(location)
    return filesystem, path


def open_parquet(location: str) -> pq.ParquetFile:
    filesystem, path = resolve(location)
    return pq.ParquetFile(filesystem.open_input_file(path))


def write_file(location: str, data: bytes) -> None:
    """Write a whole file (index files: written once, never changed)."""
    filesystem, path = resolve(location)
    parent = path.rsplit("/", 1)[0]
    if parent and isinstance(filesystem, pafs.LocalFileSystem):
        filesystem.create_dir(parent, recursive=True)
    with filesystem.open_output_stream(path) as out:
        out.write(data)


def read_file(location: str, *, offset: int = 0, length: int | None = None) -> bytes:
    """A file's bytes, or ``length`` bytes of it from ``offset``."""
    filesystem, path = resolve(location)
    with filesystem.open_input_file(path) as source:
        data = source.read_at(source.size() - offset if length is None else length, offset)
    return data if isinstance(data, bytes) else data.to_pybytes()
