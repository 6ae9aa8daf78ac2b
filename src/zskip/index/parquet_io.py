"""Opening a table's Parquet data files with pyarrow, on executors, from Iceberg file locations."""

from __future__ import annotations

from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs
import pyarrow.parquet as pq

__all__ = ["open_parquet", "resolve"]


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
