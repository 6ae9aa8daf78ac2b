"""zskip's files stay inside their table: a file a table property or an index manifest names outside
the table's own ``<location>/zskip/`` folder is never read, trusted or deleted.

A table property is written by whoever may alter the table, and the index manifest it names lists
index files by path: both could name any file the table's credentials reach (another table's indexes,
a bucket of someone else's).  What such a file says would rule data files out, and vacuum would delete
what it names.  zskip writes every one of its files under ``<location>/zskip/``, so anything elsewhere
is ignored with one warning per path and process (the table's rows are all read, as without an index).

Paths are compared as the table's FileIO would reach them: ``s3``, ``s3a`` and ``s3n`` are one store,
``file:`` paths with one, two or three slashes one folder, and ``.`` and ``..`` are resolved first, so
``<location>/zskip/../../other`` is outside.
"""

from __future__ import annotations

import logging
import posixpath
import re
import threading
import uuid
from urllib.parse import urlsplit

from zskip.fileindex.manifest import IndexManifest

__all__ = ["ZSKIP_FOLDER", "another_tables_file", "file_name", "inside_table", "manifest_inside", "path_inside"]

log = logging.getLogger(__name__)

ZSKIP_FOLDER = "zskip"

_S3 = {"s3", "s3a", "s3n"}
_warned: set[str] = set()
_warned_lock = threading.Lock()


def _normal(path: str) -> tuple[str, str, str]:
    """(store kind, bucket or authority, resolved path) of ``path``."""
    parts = urlsplit(path)
    scheme = parts.scheme.lower()
    if scheme in ("", "file"):
        return "file", "", posixpath.normpath("/" + parts.path.lstrip("/"))
    kind = "s3" if scheme in _S3 else scheme
    return kind, parts.netloc, posixpath.normpath("/" + parts.path.lstrip("/"))


# zskip names each file it writes for its table: <kind>-<table uuid>-<file uuid>.<suffix>.  Two tables
# sharing a location (a table dropped and made again at the same place, say) share the zskip folder
# too, and vacuum of one must not delete the other's files.  A file named before zskip named them so
# (<kind>-<file uuid>) is anyone's, and vacuum treats it as before.
_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_NAMED = re.compile(rf"[a-z]+-(?P<table>{_UUID})-{_UUID}\.[a-z]+")


def file_name(table_uuid: str, kind: str, suffix: str = "puffin") -> str:
    """A new file's name for the table of ``table_uuid``."""
    return f"{kind}-{table_uuid}-{uuid.uuid4()}.{suffix}"


def another_tables_file(path: str, table_uuid: str) -> bool:
    """Whether ``path`` is named for a table other than the one of ``table_uuid``."""
    found = _NAMED.fullmatch(posixpath.basename(path))
    return found is not None and found.group("table") != table_uuid


def inside_table(location: str, path: str) -> bool:
    """Whether ``path`` lies in ``location``'s own folder of zskip's files."""
    if not location or not path:
        return False
    kind, authority, folder = _normal(location.rstrip("/") + "/" + ZSKIP_FOLDER)
    file_kind, file_authority, file_path = _normal(path)
    return kind == file_kind and authority == file_authority and file_path.startswith(folder.rstrip("/") + "/")


def _warn_once(path: str, message: str, *args: object) -> None:
    with _warned_lock:
        if path in _warned:
            return
        _warned.add(path)
    log.warning(message, *args)


def path_inside(location: str, path: str | None, what: str, table: str) -> str | None:
    """``path`` (``what``: "the index manifest", say, as a property of ``table`` names it) when it lies
    inside the table's folder of zskip's files; else ``None``, with one warning."""
    if not path or inside_table(location, path):
        return path
    _warn_once(
        path,
        "ignoring %s %s of %s: it lies outside the table's folder of zskip's files (%s/%s/), so zskip "
        "neither reads nor deletes it; its queries read every file as without it",
        what,
        path,
        table,
        location.rstrip("/"),
        ZSKIP_FOLDER,
    )
    return None


def manifest_inside(manifest: IndexManifest, location: str, table: str) -> IndexManifest:
    """``manifest`` without the entries whose index files lie outside ``table``'s folder (one warning each)."""
    outside = {path for path in manifest.puffin_paths() if not inside_table(location, path)}
    for path in sorted(outside):
        path_inside(location, path, "the index file", table)
    return manifest.without_puffins(outside)
