"""Narrowing candidates by the curve: files and row groups whose recorded curve-key range meets none of
the query box's intervals go.  The box is the bound predicate's conjuncts on clustered columns
(``zskip.planning.curve``), tightened by ranks known from elsewhere: the curve stage asks with none,
the join-keys stage with the coordinates of a joined dimension's keys."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from zskip.planning.curve import curve_arrow_types, query_intervals, ranges_meet
from zskip.planning.plan import Candidates, PlanInputs, within

__all__ = ["curve_narrow"]


def curve_narrow(inputs: PlanInputs, candidates: Candidates, extra_ranks: Mapping[str, np.ndarray]) -> Candidates:
    """The curve stage's work for the query box of the scan's predicate, tightened by ``extra_ranks``."""
    store = inputs.metadata.store()
    if store is None or not candidates.files:
        return candidates
    arrow_types = curve_arrow_types(store.spec, inputs.fields)
    recorded = inputs.metadata.curve_ranges()
    chosen = recorded.of_files(candidates.files)
    if not chosen.any():
        return candidates
    low, high = recorded.low[chosen], recorded.high[chosen]
    files, groups = recorded.file[chosen], recorded.group[chosen]
    finest = recorded.finest[chosen]
    intervals = query_intervals(
        inputs.expr,
        store.spec,
        arrow_types,
        recorded=np.stack([low[finest], high[finest]], axis=1),
        extra_ranks=extra_ranks,
    )
    if intervals is None:
        return candidates
    meets = ranges_meet(intervals, low, high)
    # per file: its whole range's verdict (row group -1) and its row groups that meet, file by file
    whole = groups == -1
    recorded_file = np.zeros(len(recorded.paths), dtype=bool)
    recorded_file[files[whole]] = True
    file_meets = np.zeros(len(recorded.paths), dtype=bool)
    file_meets[files[whole]] = meets[whole]
    met = ~whole & meets
    order = np.lexsort((groups[met], files[met]))
    met_files, met_groups = files[met][order], groups[met][order]
    bounds = np.searchsorted(met_files, np.arange(len(recorded.paths) + 1)).tolist()
    names = recorded.paths
    gone = {names[i] for i in np.flatnonzero(recorded_file & ~file_meets).tolist()}
    keep = {
        names[i]: tuple(met_groups[bounds[i] : bounds[i + 1]].tolist())
        for i in np.flatnonzero(recorded_file & file_meets).tolist()
    }
    inputs.metadata.prefetch_footers(list(keep))
    totals = {path: inputs.metadata.footer(path).row_groups for path in keep}
    narrowed = candidates.dropped(gone)
    return narrowed.narrowed({p: within(g, narrowed.files[p]) for p, g in keep.items()}, totals)
