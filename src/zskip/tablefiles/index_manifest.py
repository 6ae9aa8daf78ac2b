"""Where a table's index manifest lives, and publishing a new one atomically.

The table property ``zskip.index.manifest`` names the current manifest file.  Publishing writes a
new manifest under ``<table location>/zskip/indexes/`` and swaps the property with a
compare-and-swap commit: a reader sees the old manifest or the new one, and of two concurrent
publishers the second fails (``ConcurrentChangeError``) instead of dropping the first one's work.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from zskip import settings
from zskip.errors import StorageError
from zskip.fileindex.manifest import IndexManifest
from zskip.fileindex.puffin import CorruptIndexError
from zskip.iceberg.table import IcebergTable, swap_property
from zskip.tablefiles.locations import file_name, manifest_inside, path_inside
from zskip.tablefiles.planning_fields import INDEXED_FIELDS_PROPERTY, SUMMED_FIELDS_PROPERTY, fields_value

__all__ = [
    "MANIFEST_PROPERTY",
    "index_dir",
    "missing_files",
    "new_puffin_path",
    "publish",
    "read_manifest",
    "resolved",
]

log = logging.getLogger(__name__)

MANIFEST_PROPERTY = settings.INDEX_MANIFEST.key


def index_dir(table: IcebergTable) -> str:
    return f"{table.location().rstrip('/')}/zskip/indexes"


def new_puffin_path(table: IcebergTable, prefix: str = "index") -> str:
    return f"{index_dir(table)}/{file_name(table.uuid(), prefix)}"


def read_manifest(table: IcebergTable, *, strict: bool = False) -> tuple[IndexManifest, str | None]:
    """The current manifest and its path; an empty manifest when there is none.

    A manifest that is named but cannot be read is, for planning (``strict=False``), no manifest:
    nothing is skipped.  Code that would write a new manifest or delete index files passes
    ``strict=True`` and gets ``CorruptIndexError``, so it never replaces or deletes what it could
    not read.
    """
    named = table.property(MANIFEST_PROPERTY)
    path = path_inside(table.location(), named, "the index manifest", table.name)
    if not path:
        # none, or one outside the table (never read): a writer publishes over it by compare-and-swap
        return IndexManifest.empty(), named
    try:
        manifest = IndexManifest.from_bytes(table.file_access().read(path), name=path)
        return manifest_inside(resolved(manifest, table), table.location(), table.name), path
    except Exception as exc:  # missing or damaged: every file counts as unindexed, nothing is skipped
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if strict:
            if isinstance(exc, StorageError) and _store_out_of_reach(table):
                raise  # the table's store, not the manifest: its error names the setting or bucket to fix
            raise CorruptIndexError(
                f"the index manifest of {table.name} cannot be read ({reason}); zskip changed nothing. Restore "
                f"{path}, or drop every index: ALTER TABLE {table.name} UNSET TBLPROPERTIES ('{MANIFEST_PROPERTY}')"
            ) from None
        log.warning("ignoring the index manifest %s of %s: %s", path, table.name, reason)
        return IndexManifest.empty(), path


def _store_out_of_reach(table: IcebergTable) -> bool:
    """Whether the table's own metadata file cannot be reached either (a missing bucket, refused
    credentials): then a manifest that could not be read is not known to be damaged or gone."""
    metadata = table.metadata_file()
    if metadata is None:
        return True
    try:
        return bool(table.file_access().missing([metadata]))
    except Exception:
        return True


def resolved(manifest: IndexManifest, table: IcebergTable) -> IndexManifest:
    """``manifest`` with the names a pre-0.4 manifest stored tied to field ids (``IcebergTable.old_names``);
    a name tied to none is logged, and its index is never used."""
    if all(d.field_id is not None for d in manifest.definitions) and manifest.entries["field_id"].null_count == 0:
        return manifest
    find = table.old_names()

    def field_of(name: str) -> int | None:
        found = find(name)
        if found is None:
            log.warning(
                "%s: the index manifest (written before zskip 0.4) names column %r, which has meant more than "
                "one column of the table: its index is not used; create it again",
                table.name,
                name,
            )
        return None if found is None else found.id

    return manifest.resolved(field_of)


def missing_files(table: IcebergTable, paths: Iterable[str]) -> set[str]:
    """Those of ``paths`` (index files of ``table``) that do not exist: their requests issued at once."""
    return table.file_access().missing(paths)


def publish(table: IcebergTable, manifest: IndexManifest, *, expected: str | None) -> str:
    """Write ``manifest`` and make it current if the current one is still ``expected``; its path.  The
    same commit records the indexed columns' field ids, those of indexes answering conditions and those
    of columns whose sums an index holds (``zskip.tablefiles.planning_fields``)."""
    path = new_puffin_path(table, "manifest")
    table.file_access().write(path, manifest.to_bytes())
    filtering = fields_value((d.field_id for d in manifest.definitions if d.index_kind.answers_conditions), path)
    summed = fields_value(_summed_fields(manifest), path)
    also = (
        {INDEXED_FIELDS_PROPERTY: filtering, SUMMED_FIELDS_PROPERTY: summed}
        if filtering is not None and summed is not None
        else None
    )
    swap_property(table, MANIFEST_PROPERTY, expected=expected, value=path, also=also)
    return path


def _summed_fields(manifest: IndexManifest) -> list[int | None]:
    """The columns some index of ``manifest`` holds sums of: those of sums indexes, and cubes' measures."""
    out: list[int | None] = []
    for d in manifest.definitions:
        if d.index_kind.takes_measures:
            out += d.measures
        elif not d.index_kind.answers_conditions:
            out.append(d.field_id)
    return out
