"""Answering a predicate from the index manifest, one data file at a time (the planner's index stage).

Blobs are read by offset and length straight from the manifest's entries; a blob whose checksum
fails or that does not parse is skipped with a warning, so its file or row groups are kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from functools import partial
from typing import Any, Protocol

import pyarrow.compute as pc

from zskip.expr import Expr, columns_of
from zskip.index.bitmap import BitmapIndex
from zskip.index.bloom import BloomIndex
from zskip.index.evaluate import FileIndexes, Verdict, evaluate
from zskip.index.manifest import IndexManifest
from zskip.index.parquet_io import read_file
from zskip.index.puffin import CorruptIndexError, decode_blob

__all__ = ["file_indexes", "index_verdicts"]

log = logging.getLogger(__name__)


class BlobCache(Protocol):
    def get_or_load(self, key: Hashable, load: Callable[[], Any]) -> Any: ...


def file_indexes(
    manifest: IndexManifest, data_files: Iterable[str], columns: set[str], *, cache: BlobCache | None = None
) -> dict[str, FileIndexes]:
    """The usable indexes on ``columns`` of each of ``data_files`` that has any (decoded blobs are
    kept in ``cache`` by Puffin path and offset: index files never change)."""
    wanted = {c.lower() for c in columns}
    entries = manifest.entries.filter(
        pc.and_(
            pc.is_in(manifest.entries["data_file"], value_set=pc.unique(pc.cast(list(data_files), "string"))),
            pc.is_in(pc.utf8_lower(manifest.entries["column"]), value_set=pc.cast(sorted(wanted), "string")),
        )
    )
    found: dict[str, tuple[tuple[int, ...], dict[str, BitmapIndex], dict[str, BloomIndex]]] = {}
    for row in entries.to_pylist():
        try:
            if cache is None:
                index = _load(row)
            else:
                index = cache.get_or_load(("blob", row["puffin_path"], row["offset"]), partial(_load, row))
        except (CorruptIndexError, ValueError, OSError) as exc:
            log.warning("skipping a damaged index (its rows are kept): %s", exc)
            continue
        starts = [0]
        for rows in row["row_group_rows"]:
            starts.append(starts[-1] + rows)
        _, bitmaps, blooms = found.setdefault(row["data_file"], (tuple(starts), {}, {}))
        target: dict = bitmaps if row["kind"] == "bitmap" else blooms
        target[row["column"].lower()] = index
    return {path: FileIndexes(starts, bitmaps, blooms) for path, (starts, bitmaps, blooms) in found.items()}


def _load(row: dict[str, Any]) -> BitmapIndex | BloomIndex:
    name = f"{row['kind']} index of {row['column']} for {row['data_file']}"
    stored = read_file(row["puffin_path"], offset=row["offset"], length=row["length"])
    data = decode_blob(stored, codec=row["codec"], checksum=row["checksum"], name=name)
    return BitmapIndex.from_bytes(data) if row["kind"] == "bitmap" else BloomIndex.from_bytes(data)


def index_verdicts(
    manifest: IndexManifest, data_files: Iterable[str], expr: Expr, *, cache: BlobCache | None = None
) -> dict[str, Verdict]:
    """Verdicts for the files with index entries on ``expr``'s columns; files absent here are kept."""
    lowered = _lower_columns(expr)
    indexes = file_indexes(manifest, data_files, columns_of(lowered), cache=cache)
    return {path: evaluate(lowered, found) for path, found in indexes.items()}


def _lower_columns(expr: Expr) -> Expr:
    """The predicate with column names lower-cased (Spark resolves names case-insensitively)."""
    from dataclasses import fields, replace

    from zskip.expr import AlwaysFalse, AlwaysTrue, And, Not, Opaque, Or

    if isinstance(expr, (And, Or)):
        return type(expr)(tuple(_lower_columns(c) for c in expr.children))
    if isinstance(expr, Not):
        return Not(_lower_columns(expr.child))
    if isinstance(expr, (Opaque, AlwaysTrue, AlwaysFalse)):
        return expr
    assert any(f.name == "column" for f in fields(expr))
    return replace(expr, column=expr.column.lower())
