"""Answering a predicate from the index manifest, one data file at a time (the planner's index stage).

Blobs are read by offset and length straight from the manifest's entries; a blob whose checksum
fails or that does not parse is skipped with a warning, so its file or row groups are kept.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from zskip.expr import And, Column, Expr, Leaf, columns_of
from zskip.fileindex.evaluate import FileIndexes, Match, Verdict, evaluate, key_sets_verdict
from zskip.fileindex.kinds import KINDS, IndexKind, JointProbe, kind_named
from zskip.fileindex.manifest import IndexManifest
from zskip.fileindex.puffin import CorruptIndexError, decode_blob
from zskip.storage import LOCAL, FileAccess

__all__ = ["file_indexes", "index_verdicts", "key_set_verdicts"]

log = logging.getLogger(__name__)


class BlobCache(Protocol):
    def get_or_load(self, key: Hashable, load: Callable[[], Any]) -> Any: ...

    def __contains__(self, key: Hashable) -> bool: ...


def file_indexes(
    manifest: IndexManifest,
    data_files: Iterable[str],
    field_ids: set[int],
    *,
    cache: BlobCache | None = None,
    access: FileAccess = LOCAL,
) -> dict[str, FileIndexes]:
    """The usable indexes on the fields ``field_ids`` of each of ``data_files`` that has any, by field id
    (decoded blobs are kept in ``cache`` by Puffin path and offset: index files never change)."""
    by_file = manifest.entries_by_file
    rows = [row for path in dict.fromkeys(data_files) for row in by_file.get(path, ()) if row["field_id"] in field_ids]
    found: dict[str, tuple[tuple[int, ...], list[tuple[Column, IndexKind, Any]]]] = {}
    for row, index in zip(rows, _load_many(rows, cache, access), strict=True):
        if isinstance(index, Exception):
            log.warning("skipping a damaged index (its rows are kept): %s", index)
            continue
        starts = (0, *itertools.accumulate(row["row_group_rows"]))
        found.setdefault(row["data_file"], (starts, []))[1].append((row["field_id"], kind_named(row["kind"]), index))
    return {path: FileIndexes.of(starts, indexes) for path, (starts, indexes) in found.items()}


BLOB_THREADS = 16  # runs of index blobs read at once when they are not cached yet
# Blobs of one index file closer than this are read in one request with what lies between them: on
# an object store a request costs more than a megabyte of transfer.
BLOB_GAP = 1 << 20
BLOB_RUN = 16 << 20  # at most this many bytes in one request


def _load_many(rows: list[dict[str, Any]], cache: BlobCache | None, access: FileAccess) -> list[Any]:
    """Each entry's decoded blob (or the error that kept it from loading); on a cold plan the missing
    ones are read first, neighbours in one index file together, several requests at a time."""

    def one(row: dict[str, Any]) -> Any:
        try:
            if cache is None:
                return _load(row, access)
            return cache.get_or_load(_key(row), partial(_load, row, access))
        except (CorruptIndexError, ValueError, OSError) as exc:
            return exc

    if cache is not None:
        missing = [row for row in rows if _key(row) not in cache]
        if len(missing) > 1:
            runs = _runs(missing)
            with ThreadPoolExecutor(max_workers=min(BLOB_THREADS, len(runs))) as pool:
                list(pool.map(partial(_read_run, cache=cache, access=access), runs))
    return [one(row) for row in rows]


def _read_run(run: list[dict[str, Any]], *, cache: BlobCache, access: FileAccess) -> None:
    """Read one run of blobs in one request and cache each decoded blob.  Whatever fails here is read
    again blob by blob by ``_load_many``, which reports it for that blob."""
    start = run[0]["offset"]
    try:
        data = access.read(run[0]["puffin_path"], offset=start, length=_end(run[-1]) - start)
    except OSError:
        return
    for row in run:
        try:
            decoded = _decode(row, data[row["offset"] - start : _end(row) - start])
        except (CorruptIndexError, ValueError):
            continue
        cache.get_or_load(_key(row), partial(_given, decoded))


def _given(value: Any) -> Any:
    return value


def _key(row: dict[str, Any]) -> tuple[str, str, int]:
    return ("blob", row["puffin_path"], row["offset"])


def _end(row: dict[str, Any]) -> int:
    return int(row["offset"]) + int(row["length"])


def _runs(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``rows`` in runs: blobs of one index file, in order, with gaps under ``BLOB_GAP`` and under
    ``BLOB_RUN`` bytes a run."""
    runs: list[list[dict[str, Any]]] = []
    ordered = sorted({_key(row): row for row in rows}.values(), key=lambda r: (r["puffin_path"], r["offset"]))
    for row in ordered:
        last = runs[-1] if runs else None
        if (
            last is not None
            and last[-1]["puffin_path"] == row["puffin_path"]
            and row["offset"] - _end(last[-1]) <= BLOB_GAP
            and _end(row) - last[0]["offset"] <= BLOB_RUN
        ):
            last.append(row)
        else:
            runs.append([row])
    return runs


def _load(row: dict[str, Any], access: FileAccess) -> Any:
    return _decode(row, access.read(row["puffin_path"], offset=row["offset"], length=row["length"]))


def _decode(row: dict[str, Any], stored: bytes) -> Any:
    name = f"{row['kind']} index of {row['column']} for {row['data_file']}"
    data = decode_blob(stored, codec=row["codec"], checksum=row["checksum"], name=name)
    return kind_named(row["kind"]).load(data)


def index_verdicts(
    manifest: IndexManifest,
    data_files: Iterable[str],
    expr: Expr,
    *,
    cache: BlobCache | None = None,
    manifest_key: str | None = None,
    access: FileAccess = LOCAL,
) -> dict[str, Verdict]:
    """Verdicts for the files with index entries on ``expr``'s columns; files absent here are kept.

    ``expr`` is bound (its columns are field ids, ``zskip.expr.bind``): an index answers for the field it
    was built on, whatever the column is called now.

    With a ``cache`` and the manifest's path as ``manifest_key``, the indexes of each conjunct's column
    whose kind has a joint probe (bloom filters: one probe of every file's filter) are probed for
    every file at once first: a file they rule out cannot match, and only the rest are evaluated one
    by one.
    """
    files = list(data_files)
    verdicts: dict[str, Verdict] = {}
    if cache is not None and manifest_key is not None:
        ruled_out = _jointly_ruled_out(manifest, files, expr, cache, manifest_key, access)
        verdicts.update(dict.fromkeys(ruled_out, Verdict(Match.CANNOT_MATCH, ())))
        files = [path for path in files if path not in ruled_out]
    ids = {c for c in columns_of(expr) if isinstance(c, int)}
    indexes = file_indexes(manifest, files, ids, cache=cache, access=access)
    verdicts.update({path: evaluate(expr, found) for path, found in indexes.items()})
    return verdicts


def key_set_verdicts(
    manifest: IndexManifest,
    data_files: Iterable[str],
    key_sets: Sequence[tuple[Column, pa.Array]],
    *,
    cache: BlobCache | None = None,
    access: FileAccess = LOCAL,
) -> dict[str, Verdict]:
    """Verdicts for the files whose indexes on the key sets' columns (field ids) answer (see
    ``key_sets_verdict``); files absent here are kept."""
    ids = {column for column, _ in key_sets if isinstance(column, int)}
    indexes = file_indexes(manifest, data_files, ids, cache=cache, access=access)
    verdicts = {path: key_sets_verdict(found, key_sets) for path, found in indexes.items()}
    return {path: verdict for path, verdict in verdicts.items() if verdict is not None}


def _jointly_ruled_out(
    manifest: IndexManifest, files: list[str], expr: Expr, cache: BlobCache, manifest_key: str, access: FileAccess
) -> set[str]:
    """Files a conjunct's joint probes rule out, each probe over all files at once."""
    conjuncts = expr.children if isinstance(expr, And) else (expr,)
    ruled_out: set[str] = set()
    for leaf in conjuncts:
        if not isinstance(leaf, Leaf) or not isinstance(leaf.column, int):
            continue  # not bound to a field: no index is of it
        for kind in KINDS.values():
            if not kind.has_joint_probe or not kind.answers_leaf(leaf):
                continue  # a kind without a joint probe would read every file's index for nothing
            probe: JointProbe | None = cache.get_or_load(
                ("joint probe", manifest_key, leaf.column, kind.name),
                partial(_joint_probe, manifest, leaf.column, kind, cache, access),
            )
            if probe is not None:
                ruled_out |= probe.ruled_out(leaf, [path for path in files if path not in ruled_out])
    return ruled_out


def _joint_probe(
    manifest: IndexManifest, field_id: int, kind: IndexKind, cache: BlobCache, access: FileAccess
) -> JointProbe | None:
    same = pc.fill_null(pc.equal(manifest.entries["field_id"], pa.scalar(field_id, pa.int32())), False)
    entries = manifest.entries.filter(pc.and_(pc.equal(manifest.entries["kind"], kind.name), same))
    chosen: dict[str, Any] = {}
    rows = entries.to_pylist()
    for row, index in zip(rows, _load_many(rows, cache, access), strict=True):  # later entries of a file win
        if isinstance(index, Exception):
            log.warning("skipping a damaged index (its rows are kept): %s", index)
            chosen.pop(row["data_file"], None)
            continue
        chosen[row["data_file"]] = index
    return kind.joint_probe(chosen) if chosen else None
