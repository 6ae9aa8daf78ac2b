"""The index stage: files and row groups that bloom filters or bitmaps prove cannot match go (unindexed files stay)."""

from __future__ import annotations

from collections.abc import Mapping

from zskip.fileindex.evaluate import Match, Verdict
from zskip.planning.cache import CACHE
from zskip.planning.plan import Candidates, PlanInputs
from zskip.tablefiles.index_blobs import index_verdicts

__all__ = ["apply_verdicts", "indexes"]


def indexes(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files and row groups that bloom filters or bitmaps prove cannot match go (unindexed files stay)."""
    manifest = inputs.metadata.manifest()
    if manifest is None or not candidates.files:
        return candidates
    verdicts = index_verdicts(
        manifest,
        list(candidates.files),
        inputs.expr,
        cache=CACHE,
        manifest_key=inputs.metadata.manifest_path,
        access=inputs.metadata.storage,
    )
    return apply_verdicts(inputs, candidates, verdicts)


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
