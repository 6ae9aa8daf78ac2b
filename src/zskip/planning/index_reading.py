"""Reading a snapshot's index blobs for planning: which candidate files' blobs are worth reading
(``worth_reading``), reading them ahead, and applying their verdicts to candidates.  The index stage
applies the predicate's verdicts; the join-keys stage applies a dimension key set's; the curve stage
asks whether the index stage will read every file's blobs."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping

import numpy as np
import pyarrow.compute as pc

from zskip.expr import And, Or, columns_of
from zskip.expr.nodes import equality_values
from zskip.fileindex.evaluate import Match, Verdict
from zskip.fileindex.manifest import IndexManifest
from zskip.planning.cache import CACHE
from zskip.planning.plan import Candidates, PlanInputs
from zskip.planning.selectivity import expected_matches
from zskip.tablefiles.blob_reads import unread_bytes
from zskip.tablefiles.index_blobs import index_verdicts

__all__ = ["apply_verdicts", "holds_values", "predicate_verdicts", "read_indexes_ahead", "worth_reading"]

# worth_reading's answers, per plan's inputs and by the candidates they were worked out for: several
# stages of one plan ask it of the same candidates.  Held weakly: they go with the plan's inputs.
_WORTH_READING: weakref.WeakKeyDictionary[PlanInputs, dict[tuple[object, ...], tuple[str, ...]]] = (
    weakref.WeakKeyDictionary()
)
_WORTH_READING_LOCK = threading.Lock()


def read_indexes_ahead(inputs: PlanInputs, candidates: Candidates) -> None:
    """Read (into the planning cache) the index blobs this stage would read for ``candidates``, while
    something else is waited for; what a later stage leaves of them finds its blobs read."""
    manifest = inputs.metadata.manifest()
    if manifest is not None and candidates.files:
        predicate_verdicts(inputs, candidates, manifest)


def predicate_verdicts(inputs: PlanInputs, candidates: Candidates, manifest: IndexManifest) -> dict[str, Verdict]:
    return index_verdicts(
        manifest,
        worth_reading(inputs, candidates, manifest),
        inputs.expr,
        cache=CACHE,
        manifest_key=inputs.metadata.manifest_path,
        access=inputs.metadata.storage,
    )


def apply_verdicts(inputs: PlanInputs, candidates: Candidates, verdicts: Mapping[str, Verdict]) -> Candidates:
    """Candidates without the files and row groups index verdicts rule out."""
    gone: set[str] = set()
    keep: dict[str, tuple[int, ...]] = {}
    totals: dict[str, int] = {}
    inputs.metadata.prefetch_footers([p for p, v in verdicts.items() if v.file is not Match.CANNOT_MATCH])
    for path, verdict in verdicts.items():
        if verdict.file is Match.CANNOT_MATCH:
            gone.add(path)
            continue
        footer = inputs.metadata.footer(path)
        if len(verdict.row_groups) != footer.row_groups:
            continue  # an index of a different row-group layout: ignore its row groups
        current = candidates.files[path]
        groups = range(footer.row_groups) if current is None else current
        keep[path] = tuple(g for g in groups if verdict.row_groups[g] is Match.MIGHT_MATCH)
        totals[path] = footer.row_groups
    return candidates.dropped(gone).narrowed(keep, totals)


def worth_reading(inputs: PlanInputs, candidates: Candidates, manifest: IndexManifest) -> list[str]:
    """The candidate files whose indexes may rule out a row group the statistics leave, at less cost
    than reading what they could rule out.

    An equality or IN list is answered from the bitmaps' heads first, so every file is worth asking.
    A predicate of ranges reads whole blobs, and a file's are read only when

    - some row group the statistics leave is expected to hold fewer than ``inputs.range_rows``
      matches (``zskip.planning.selectivity``: each column's values spread evenly between the row
      group's bounds, the columns independent); a row group its min/max rules out needs no index
      either; and
    - they cost no more than those row groups do: the blobs still to read against the bytes of the
      columns the scan reads in those row groups, plus opening the file when they are all its row
      groups left (Iceberg's ``read.split.open-file-cost``).  A range-encoded bitmap of a column of
      many distinct values is about as large as the column itself: reading it on the planner to save
      reading a few of the column's row groups on the executors would make the query slower.
    """
    files = list(candidates.files)
    if inputs.range_rows <= 0 or holds_values(inputs.expr):
        return files
    key = tuple(candidates.files.items())
    with _WORTH_READING_LOCK:
        known = _WORTH_READING.get(inputs, {}).get(key)
    if known is None:
        known = _worth_reading(inputs, candidates, manifest)
        with _WORTH_READING_LOCK:
            _WORTH_READING.setdefault(inputs, {})[key] = known
    return list(known)


def _worth_reading(inputs: PlanInputs, candidates: Candidates, manifest: IndexManifest) -> tuple[str, ...]:
    files = list(candidates.files)
    indexed = _indexed_fields(manifest) & {c for c in columns_of(inputs.expr) if isinstance(c, int)}
    if not indexed:
        return tuple(files)
    inputs.metadata.prefetch_footers(files)
    columns = {field_id: inputs.metadata.stats_over(files, field_id) for field_id in indexed}
    rows = np.concatenate([np.asarray(inputs.metadata.footer(p).rows, dtype=np.float64) for p in files])
    expected = expected_matches(inputs.expr, columns, rows, indexed)
    if expected is None:
        return tuple(files)
    worth: list[str] = []
    start = 0
    for path in files:
        count = inputs.metadata.row_groups(path)
        mine = expected[start : start + count]
        start += count
        groups = candidates.files[path]
        chosen = np.arange(count) if groups is None else np.asarray(groups, dtype=np.int64)
        left = chosen[~np.isnan(mine[chosen])]  # row groups the statistics leave
        at_stake = left[mine[left] < inputs.range_rows]
        if len(at_stake) and _cheaper_than(inputs, manifest, path, indexed, at_stake, whole=len(at_stake) == len(left)):
            worth.append(path)
    return tuple(worth)


def _cheaper_than(
    inputs: PlanInputs, manifest: IndexManifest, path: str, fields: set[int], groups: np.ndarray, *, whole: bool
) -> bool:
    """Whether ``path``'s index blobs on ``fields`` cost no more to read than its row groups ``groups``
    (and opening the file, when they are ``whole``: all its row groups the statistics leave)."""
    cost = unread_bytes(manifest, path, fields, CACHE)
    if cost == 0:
        return True
    saved = float(inputs.open_file_cost) if whole else 0.0
    if saved >= cost:
        return True
    footer = inputs.metadata.footer(path)
    read = inputs.scan.read_fields
    chunks = footer.bytes_of(read) if read is not None else None
    if chunks is None:  # not known: the row groups whole
        chunks = np.asarray([length for _, length in footer.ranges], dtype=np.float64)
    return saved + float(chunks[groups].sum()) >= cost


def holds_values(expr: object) -> bool:
    """Whether ``expr`` holds a column to listed values somewhere (an equality or IN list)."""
    if isinstance(expr, (And, Or)):
        return any(holds_values(child) for child in expr.children)
    return equality_values(expr) is not None  # type: ignore[arg-type]


def _indexed_fields(manifest: IndexManifest) -> set[int]:
    return {f for f in pc.unique(manifest.entries["field_id"]).to_pylist() if f is not None}
