"""Builds under way, as vacuum sees them: a build that writes zskip files before it publishes them (an
index build, a clustering store before its commit) holds a lease, a small file under
``<location>/zskip/builds/``, from before its first file until it published or failed.

Vacuum keeps every file written since the oldest live lease started, whatever its ``older_than``:
such a file may be one the build is about to publish.  A lease outlives a build only if its process
died; after ``LEASE_LIFETIME`` it is taken to be such a lease, and vacuum removes it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from zskip.iceberg.table import IcebergTable
from zskip.tablefiles.locations import another_tables_file, file_name

__all__ = ["LEASE_LIFETIME", "build_lease", "leases_dir", "live_leases_since"]

log = logging.getLogger(__name__)

LEASE_LIFETIME = 7 * 24 * 3600.0  # seconds: no build runs this long; a lease this old is a dead build's
SUFFIX = ".lease"


def leases_dir(table: IcebergTable) -> str:
    return f"{table.location().rstrip('/')}/zskip/builds"


@contextmanager
def build_lease(table: IcebergTable, what: str) -> Iterator[None]:
    """Hold a lease on ``table``'s zskip folder while the block writes and publishes files."""
    path = f"{leases_dir(table)}/{file_name(table.uuid(), 'build', SUFFIX.lstrip('.'))}"
    access = table.file_access()
    access.write(path, json.dumps({"build": what, "pid": os.getpid(), "started": time.time()}).encode())
    try:
        yield
    finally:
        try:
            access.delete(path)
        except Exception as exc:  # a lease left behind only makes vacuum keep more, until it expires
            log.warning("could not remove the build lease %s of %s: %s", path, table.name, exc)


def live_leases_since(table: IcebergTable, now: float) -> tuple[float | None, list[str]]:
    """When the oldest live lease was taken (``None``: no build is under way), and the expired leases."""
    oldest: float | None = None
    expired = []
    for location, _, modified in table.file_access().files_under(leases_dir(table), recursive=False):
        if not location.endswith(SUFFIX) or another_tables_file(location, table.uuid()):
            continue
        if modified is not None and now - modified > LEASE_LIFETIME:
            expired.append(location)
            continue
        taken = modified if modified is not None else now - LEASE_LIFETIME  # unknown: as old as a live one can be
        oldest = taken if oldest is None else min(oldest, taken)
    return oldest, expired
