"""The join-keys stage: files and row groups holding no key a joined dimension's filter matches go."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from zskip.curves import order_key_u64
from zskip.expr import Column
from zskip.planning.cache import CACHE
from zskip.planning.joins import join_rank_bounds, ranges_holding_keys
from zskip.planning.plan import Candidates, PlanInputs, keep_row_groups, row_group_counts
from zskip.planning.stages.curve_range import curve_narrow
from zskip.planning.stages.indexes import apply_verdicts
from zskip.tablefiles.index_blobs import key_set_verdicts

__all__ = ["join_keys"]


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
    filters = [f for f in inputs.join_filter.all(inputs.joins) if f.keys is not None]
    if any(f.keys is not None and len(f.keys) == 0 for f in filters):
        return Candidates.of({})  # a dimension with no matching row: the inner join is empty
    if not filters:
        return candidates
    store = inputs.metadata.store()
    if store is not None:
        extra = join_rank_bounds(store.spec, filters)
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


def _row_groups_in_play(inputs: PlanInputs, candidates: Candidates) -> int:
    if len(candidates.files) > 1:
        return len(candidates.files)
    (path, groups), *_ = candidates.files.items()
    return len(groups) if groups is not None else inputs.metadata.row_groups(path)


def _holding_keys(inputs: PlanInputs, candidates: Candidates, field_id: int, keys: pa.Array) -> Candidates:
    """Row groups whose min/max of the column ``field_id`` holds one of ``keys``, all searched at once.

    Keys and bounds are compared as order keys (``zskip.curves.order_key_u64``): never decreasing in the
    value, so a key inside a row group's bounds is inside their order keys (text compares by its first
    8 bytes, which can only keep more)."""
    paths = list(candidates.files)
    if not paths:
        return candidates
    counts = row_group_counts(inputs, paths)
    column = inputs.metadata.stats_over(paths, field_id)
    bounded = column.known & column.has_min_max
    only_nulls = column.known & (column.values == 0)  # only NULLs: never joins
    bounds = _as_keys(column.low, keys.type), _as_keys(column.high, keys.type)
    if bounds[0] is not None and bounds[1] is not None:
        low, high = order_key_u64(bounds[0]), order_key_u64(bounds[1])
    else:  # bounds of another kind than the keys: none of them bounds anything
        bounded = np.zeros(len(column), dtype=bool)
        low, high = np.zeros(len(column), dtype=np.uint64), np.zeros(len(column), dtype=np.uint64)
    holds = ranges_holding_keys(np.unique(order_key_u64(keys)), low, high) | (~bounded & ~only_nulls)
    return keep_row_groups(candidates, paths, counts, holds)


def _as_keys(bounds: pa.Array | None, kind: pa.DataType) -> pa.Array | None:
    """Row-group bounds as values of the keys' type (``None``: not comparable with them)."""
    if bounds is None:
        return None
    if bounds.type == kind:
        return bounds
    if pa.types.is_integer(bounds.type) != pa.types.is_integer(kind):
        return None
    try:
        return bounds.cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
