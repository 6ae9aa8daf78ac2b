"""The row-group min/max stage: row groups whose Parquet statistics prove the predicate false go.

Every candidate row group is answered at once, over the statistics as arrays (``zskip.planning.row_group_statistics``).
"""

from __future__ import annotations

from zskip.expr import columns_of
from zskip.planning.plan import Candidates, PlanInputs, keep_row_groups, row_group_counts
from zskip.planning.row_group_statistics import statistics_allow

__all__ = ["row_group_minmax"]


def row_group_minmax(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Row groups whose Parquet statistics prove the predicate false go (files with none left too).

    Every candidate row group is answered at once, over the statistics as arrays
    (``zskip.planning.minmax_arrays``)."""
    if not columns_of(inputs.expr) or not candidates.files:
        return candidates
    paths = list(candidates.files)
    counts = row_group_counts(inputs, paths)
    return keep_row_groups(candidates, paths, counts, statistics_allow(inputs, paths, counts))
