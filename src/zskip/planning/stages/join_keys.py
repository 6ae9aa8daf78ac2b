"""The join-keys stage: files and row groups holding no key a joined dimension's filter matches go."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from zskip.expr import Column
from zskip.planning.cache import CACHE
from zskip.planning.curve_narrowing import curve_narrow
from zskip.planning.index_reading import apply_verdicts, read_indexes_ahead
from zskip.planning.joins import JoinFilter, join_rank_sets, row_groups_holding_keys
from zskip.planning.plan import Candidates, PlanInputs, keep_row_groups, row_group_counts
from zskip.planning.selectivity import as_numbers
from zskip.tablefiles.index_blobs import key_set_verdicts

__all__ = ["join_keys"]

log = logging.getLogger(__name__)


def join_keys(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files and row groups holding no key a joined dimension's filter matches go: by the keys' recorded
    coordinates on the curve (a fact table clustered through that dimension) and by each row group's
    min/max of the foreign key."""
    if not inputs.joins or inputs.join_filter is None or not candidates.files:
        return candidates
    if _row_groups_in_play(inputs, candidates) < 2:
        # one row group left: the keys could only drop the whole scan, which the join itself empties as
        # fast, and the key job (a Spark job over the other side, maybe the big table) is the cost
        return candidates
    filters = [f for f in _keys_while_footers_load(inputs, candidates) if f.keys is not None]
    if any(f.keys is not None and len(f.keys) == 0 for f in filters):
        return Candidates.of({})  # a dimension with no matching row: the inner join is empty
    if not filters:
        return candidates
    store = inputs.metadata.store()
    if store is not None:
        extra = join_rank_sets(store.spec, filters)
        if extra:
            candidates = curve_narrow(inputs, candidates, extra)
    for item in filters:
        assert item.keys is not None
        candidates = _holding_keys(inputs, candidates, item.join.field.id, item.keys)
    manifest = inputs.metadata.manifest()
    if manifest is not None and candidates.files:
        key_sets: list[tuple[Column, pa.Array]] = [(f.join.field.id, f.keys) for f in filters if f.keys is not None]
        candidates = apply_verdicts(
            inputs,
            candidates,
            key_set_verdicts(manifest, list(candidates.files), key_sets, cache=CACHE, access=inputs.metadata.storage),
        )
    return candidates


def _keys_while_footers_load(inputs: PlanInputs, candidates: Candidates) -> list[JoinFilter]:
    """The joins' keys; while a dimension's keys are read (a Spark job, or Iceberg's reader in the
    driver), the candidates' footers, which the row-group search below needs, are read beside them,
    and then, when the keys can hardly rule a row group out, the index blobs the index stage will read."""
    assert inputs.join_filter is not None
    if inputs.join_filter.all_cached(inputs.joins):
        return inputs.join_filter.all(inputs.joins)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="zskip-footers") as pool:
        footers = pool.submit(_read_beside_keys, inputs, candidates)
        try:
            return inputs.join_filter.all(inputs.joins)
        finally:
            footers.result()


def _read_beside_keys(inputs: PlanInputs, candidates: Candidates) -> None:
    inputs.metadata.prefetch_footers(list(candidates.files))
    try:
        if _keys_spread_wide(inputs, candidates):
            read_indexes_ahead(inputs, candidates)
    except Exception as exc:  # reading ahead only: the index stage reads again, and reports
        log.debug("reading the index blobs beside the join keys: %s", exc)


# a row group whose foreign keys span at least this share of all the candidates' span is "wide"
WIDE_SPAN = 0.5


def _keys_spread_wide(inputs: PlanInputs, candidates: Candidates) -> bool:
    """Whether every join's foreign key spans, in most candidate row groups, at least half of what it
    spans over all of them: then a dimension filter's keys fall inside nearly every row group's bounds
    (a layout that does not cluster by the key), and the join stage is unlikely to leave fewer files for
    the index stage than it was given.  ``False`` for a key the table is clustered by, and when unknown
    (keys that are not numbers, dates or timestamps, or no statistics)."""
    paths = list(candidates.files)
    store = inputs.metadata.store()
    clustered = {c.field_id for c in store.spec.columns} if store is not None else set()
    for join in inputs.joins:
        if join.field.id in clustered:
            return False  # the curve's recorded coordinates rule files out by the keys
        column = inputs.metadata.stats_over(paths, join.field.id)
        if column.low is None or column.high is None:
            return False
        low, high = as_numbers(column.low), as_numbers(column.high)
        if low is None or high is None or np.all(np.isnan(low)) or np.all(np.isnan(high)):
            return False
        span = np.nanmax(high) - np.nanmin(low)
        if not span > 0:
            return False
        wide = (high - low) >= WIDE_SPAN * span  # NaN (no bounds) is not wide
        if not np.mean(wide) > 0.5:
            return False
    return True


def _row_groups_in_play(inputs: PlanInputs, candidates: Candidates) -> int:
    if len(candidates.files) > 1:
        return len(candidates.files)
    (path, groups), *_ = candidates.files.items()
    return len(groups) if groups is not None else inputs.metadata.row_groups(path)


def _holding_keys(inputs: PlanInputs, candidates: Candidates, field_id: int, keys: pa.Array) -> Candidates:
    """Row groups whose min/max of the column ``field_id`` holds one of ``keys``, all searched at once."""
    paths = list(candidates.files)
    if not paths:
        return candidates
    counts = row_group_counts(inputs, paths)
    holds = row_groups_holding_keys(inputs.metadata.stats_over(paths, field_id), keys)
    return keep_row_groups(candidates, paths, counts, holds)
