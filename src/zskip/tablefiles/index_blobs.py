"""Answering a predicate from the index manifest, one data file at a time (the planner's index stage).

Blobs are read by offset and length straight from the manifest's entries; a blob whose checksum
fails or that does not parse is skipped with a warning, so its file or row groups are kept.

A blob with a head (a bitmap's dictionary and non-null rows: the manifest's ``head`` column) is read
in two rounds on a cold plan: the heads of the columns a conjunct holds equal to some values first,
for every candidate file, then the blobs of every column whole, only for the files those heads did
not rule out.  An equality on a value a file does not hold is decided by the head alone; a range's
head never rules a file out at this stage, so its blobs wait for the second round.

How blobs, their heads, a dictionary's blocks and footer copies are read is
``zskip.tablefiles.blob_reads``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from zskip import degraded
from zskip.expr import And, Column, Expr, Leaf, Or, columns_of
from zskip.expr.nodes import equality_values
from zskip.fileindex.answers import RestNotRead
from zskip.fileindex.entries import blob_entries
from zskip.fileindex.evaluate import FileIndexes, Match, Verdict, evaluate, key_sets_verdict
from zskip.fileindex.kinds import KINDS, IndexKind, JointProbe, kind_named
from zskip.fileindex.manifest import IndexManifest
from zskip.storage import LOCAL, FileAccess
from zskip.tablefiles.blob_reads import BlobCache, load_many, read_parts

__all__ = ["decided", "file_indexes", "index_verdicts", "key_set_verdicts"]

log = logging.getLogger(__name__)


def file_indexes(
    manifest: IndexManifest,
    data_files: Iterable[str],
    field_ids: set[int],
    *,
    cache: BlobCache | None = None,
    access: FileAccess = LOCAL,
    heads: bool = False,
) -> dict[str, FileIndexes]:
    """The usable indexes on the fields ``field_ids`` of each of ``data_files`` that has any, by field id
    (decoded blobs are kept in ``cache`` by Puffin path and offset: index files never change).

    ``heads`` (with a ``cache``): a blob with a head that is not cached whole loads from its head
    alone; its index raises ``RestNotRead`` where it needs the rest (see ``decided``)."""
    by_file = manifest.entries_by_file
    rows = [
        row
        for path in dict.fromkeys(data_files)
        for row in by_file.get(path, ())
        if row.field_id in field_ids and _filtering(row.kind)
    ]
    found: dict[str, tuple[tuple[int, ...], list[tuple[Column, IndexKind, Any]]]] = {}
    for row, index in zip(rows, load_many(rows, cache, access, heads=heads and cache is not None), strict=True):
        if isinstance(index, Exception):
            degraded.tolerate(index)
            log.warning("skipping a damaged index (its rows are kept): %s", index)
            continue
        starts = (0, *itertools.accumulate(row.row_group_rows))
        found.setdefault(row.data_file, (starts, []))[1].append((row.field_id, kind_named(row.kind), index))
    return {path: FileIndexes.of(starts, indexes) for path, (starts, indexes) in found.items()}


def _filtering(kind: str) -> bool:
    """Whether an index of ``kind`` answers conditions (a kind this version does not know: let loading say)."""
    found = KINDS.get(kind)
    return found is None or found.answers_conditions


def decided(
    manifest: IndexManifest,
    data_files: Iterable[str],
    field_ids: set[int],
    verdict: Callable[[FileIndexes], Verdict | None],
    *,
    cache: BlobCache | None,
    access: FileAccess,
    heads_of: set[int] | None = None,
    probes: Mapping[int, Sequence[Any] | pa.Array] | None = None,
) -> dict[str, Verdict | None]:
    """``verdict`` of each data file's indexes, in two rounds on a cold plan.

    First the heads of the fields ``heads_of`` (``None``: of all of ``field_ids``; empty: no first
    round), then, for the files the first round did not rule out, every field's blobs whole (all read
    at once).  When the first round reads only some fields, a file it finds might match goes to the
    second round all the same: the other fields' indexes may rule out more of it.  A verdict from
    some fields' indexes is sound on its own (a field without an index keeps every row), so a file
    ruled out in the first round is ruled out."""
    files = list(dict.fromkeys(data_files))
    first_ids = set(field_ids) if heads_of is None else heads_of & field_ids
    if not first_ids or cache is None:
        whole = file_indexes(manifest, files, field_ids, cache=cache, access=access)
        return {path: verdict(found) for path, found in whole.items()}
    some = first_ids != field_ids  # the first round reads only some of the fields
    out: dict[str, Verdict | None] = {}
    first = file_indexes(manifest, files, first_ids, cache=cache, access=access, heads=True)
    if probes and read_parts(manifest, list(first), first_ids, probes, cache, access):
        first = file_indexes(manifest, files, first_ids, cache=cache, access=access, heads=True)
    undecided = [path for path in files if path not in first] if some else []
    for path, found in first.items():
        try:
            answer = verdict(found)
        except RestNotRead:
            undecided.append(path)
            continue
        if some and (answer is None or answer.file is not Match.CANNOT_MATCH):
            undecided.append(path)
        else:
            out[path] = answer
    if undecided:
        whole = file_indexes(manifest, undecided, field_ids, cache=cache, access=access)
        out.update({path: verdict(found) for path, found in whole.items()})
    return out


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
    found = decided(
        manifest,
        files,
        ids,
        partial(evaluate, expr),
        cache=cache,
        access=access,
        heads_of=_equality_fields(expr),
        probes=_equality_probes(expr),
    )
    verdicts.update({path: verdict for path, verdict in found.items() if verdict is not None})
    return verdicts


def _equality_fields(expr: Expr) -> set[int]:
    """The fields whose heads are read first: those a conjunct of ``expr`` holds equal to some values.

    A head (a bitmap's dictionary) rules a file out where its min/max did not only by lacking a value
    between them, so for an equality or IN list.  A range reaching this stage overlaps the file's
    values (Iceberg's file bounds already dropped the rest), so its head can at most say "every row":
    its blobs are read whole, and only for the files the equalities' heads left."""
    conjuncts = expr.children if isinstance(expr, And) else (expr,)
    fields: set[int] = set()
    for conjunct in conjuncts:
        if isinstance(conjunct, Leaf) and isinstance(conjunct.column, int) and equality_values(conjunct) is not None:
            fields.add(conjunct.column)
        elif isinstance(conjunct, Or) and all(equality_values(child) is not None for child in conjunct.children):
            fields |= {c for c in columns_of(conjunct) if isinstance(c, int)}
    return fields


def _equality_probes(expr: Expr) -> dict[int, list[Any]]:
    """The values each field is held equal to by a conjunct of ``expr`` (an equality, an IN list, or an
    OR of them): what a head asks its dictionary's blocks about."""
    conjuncts = expr.children if isinstance(expr, And) else (expr,)
    probes: dict[int, list[Any]] = {}
    for conjunct in conjuncts:
        leaves = conjunct.children if isinstance(conjunct, Or) else (conjunct,)
        for leaf in leaves:
            values = equality_values(leaf) if isinstance(leaf, Leaf) else None
            if values is not None and isinstance(leaf.column, int):  # type: ignore[union-attr]
                probes.setdefault(leaf.column, []).extend(v for v in values if v is not None)  # type: ignore[union-attr]
    return probes


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
    probes = {column: keys for column, keys in key_sets if isinstance(column, int)}  # a dictionary's blocks they need
    found = decided(
        manifest, data_files, ids, partial(_key_sets_verdict, key_sets), cache=cache, access=access, probes=probes
    )
    return {path: verdict for path, verdict in found.items() if verdict is not None}


def _key_sets_verdict(key_sets: Sequence[tuple[Column, pa.Array]], indexes: FileIndexes) -> Verdict | None:
    return key_sets_verdict(indexes, key_sets)


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
    rows = blob_entries(entries.to_pylist())
    for row, index in zip(rows, load_many(rows, cache, access, heads=False), strict=True):  # later entries win
        if isinstance(index, Exception):
            degraded.tolerate(index)
            log.warning("skipping a damaged index (its rows are kept): %s", index)
            chosen.pop(row.data_file, None)
            continue
        chosen[row.data_file] = index
    return kind.joint_probe(chosen) if chosen else None
