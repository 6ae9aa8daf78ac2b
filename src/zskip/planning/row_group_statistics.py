"""Which row groups Parquet statistics leave possibly matching, over the statistics as arrays
(``zskip.planning.minmax_arrays``): what the row-group min/max stage keeps, and what Spark's own
reader would read of a range covering them (the read-ranges stage and measured reads ask it)."""

from __future__ import annotations

import numpy as np

from zskip.expr import columns_of
from zskip.expr.rewrite import rewrite_not
from zskip.planning.minmax_arrays import might_match_arrays
from zskip.planning.plan import PlanInputs, row_group_counts

__all__ = ["statistics_allow", "statistics_allow_by_file"]


def statistics_allow(inputs: PlanInputs, paths: list[str], counts: np.ndarray | None = None) -> np.ndarray:
    """Per row group of ``paths``, file after file: whether its Parquet statistics leave the predicate
    possibly true (what Iceberg's reader reads of a range covering it).  ``counts``: row groups per file."""
    if counts is None:
        counts = row_group_counts(inputs, paths)
    ids = [c for c in columns_of(inputs.expr) if isinstance(c, int)]
    columns = inputs.metadata.stats_columns(paths, ids)
    pushed = inputs.pushed if inputs.pushed is not None else rewrite_not(inputs.expr)
    return might_match_arrays(pushed, columns, inputs.floats, int(counts.sum()))


def statistics_allow_by_file(inputs: PlanInputs, paths: list[str]) -> dict[str, np.ndarray]:
    """``statistics_allow`` of ``paths`` (one array call), cut into one array per file."""
    counts = row_group_counts(inputs, paths)
    allowed = statistics_allow(inputs, paths, counts)
    ends = np.cumsum(counts).tolist()
    return {path: allowed[end - n : end] for path, n, end in zip(paths, counts.tolist(), ends, strict=True)}
