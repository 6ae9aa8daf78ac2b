"""The read-ranges stage, the one that adds: row groups between two runs of a file's kept row groups, where
reading them costs less than opening the file again (``zskip.planning.row_groups``).
"""

from __future__ import annotations

from zskip.planning.plan import Candidates, PlanInputs
from zskip.planning.row_group_statistics import statistics_allow_by_file
from zskip.planning.row_groups import joined_runs, run_count

__all__ = ["read_ranges"]


def read_ranges(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files read in several ranges get the row groups between two of their runs that the reader
    would read anyway where those hold at most ``JOIN_GAP_BYTES``: one range instead of two."""
    split = [path for path, groups in candidates.files.items() if groups is not None and run_count(groups) > 1]
    if not split:
        return candidates
    keep: dict[str, tuple[int, ...]] = {}
    totals: dict[str, int] = {}
    for path, allowed in statistics_allow_by_file(inputs, split).items():
        groups = candidates.files[path]
        assert groups is not None
        keep[path] = joined_runs(inputs.metadata.footer(path), groups, allowed)
        totals[path] = len(allowed)
    return candidates.narrowed(keep, totals)
