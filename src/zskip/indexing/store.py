"""Where a table's index manifest lives, and publishing a new one atomically.

The table property ``zskip.index.manifest`` names the current manifest file.  Publishing writes a
new manifest under ``<table location>/zskip/indexes/`` and swaps the property with a
compare-and-swap commit: a reader sees the old manifest or the new one, and of two concurrent
publishers the second fails (``ConcurrentChangeError``) instead of dropping the first one's work.
"""

from __future__ import annotations

import logging
import uuid

from zskip.iceberg.table import IcebergTable, swap_property
from zskip.index.manifest import IndexManifest
from zskip.index.parquet_io import read_file, write_file

__all__ = ["MANIFEST_PROPERTY", "index_dir", "new_puffin_path", "publish", "read_manifest"]

log = logging.getLogger(__name__)

MANIFEST_PROPERTY = "zskip.index.manifest"


def index_dir(table: IcebergTable) -> str:
    return f"{table.location().rstrip('/')}/zskip/indexes"


def new_puffin_path(table: IcebergTable, prefix: str = "index") -> str:
    return f"{index_dir(table)}/{prefix}-{uuid.uuid4()}.puffin"


def read_manifest(table: IcebergTable) -> tuple[IndexManifest, str | None]:
    """The current manifest and its path; an empty manifest when there is none or it is unreadable."""
    path = table.property(MANIFEST_PROPERTY)
    if not path:
        return IndexManifest.empty(), None
    try:
        return IndexManifest.from_bytes(read_file(path), name=path), path
    except Exception as exc:  # missing or damaged: every file counts as unindexed, nothing is skipped
        log.warning("ignoring the index manifest %s of %s: %s", path, table.name, str(exc).splitlines()[0])
        return IndexManifest.empty(), path


def publish(table: IcebergTable, manifest: IndexManifest, *, expected: str | None) -> str:
    """Write ``manifest`` and make it current if the current one is still ``expected``; its path."""
    path = new_puffin_path(table, "manifest")
    write_file(path, manifest.to_bytes())
    swap_property(table, MANIFEST_PROPERTY, expected=expected, value=path)
    return path
