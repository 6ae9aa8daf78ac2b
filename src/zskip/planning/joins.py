"""Join keys: what a filtered dimension tells a fact scan it is joined to.

``SELECT ... FROM lineorder JOIN customer ON lo_custkey = c_custkey WHERE c_region = 'ASIA'`` keeps
only lineorder rows whose ``lo_custkey`` is the key of an Asian customer.  Spark runs the
dimension's side of the join as a small job (its own filters, on its own snapshot), zskip takes the
distinct keys it yields and rules out fact files and row groups that hold none of them:

- through the clustering spec, when optimize clustered the fact table on that foreign key through
  the dimension (``zskip.Dimension``): the keys' recorded coordinates bound the curve box;
- through each row group's min/max of the foreign key (a sorted search over all row groups at once).

Spark still runs the join and every filter, so results are unchanged.  The JVM helper only offers
joins where that is sound (inner joins, and the kept side of semi and outer joins, with the fact
column reaching the join unchanged).  Keys are cached by what they depend on: the snapshot the
dimension's side reads, its key and every condition of its side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from zskip.curves import ClusteringSpec, DimensionMapping, order_key_u64, point_intervals
from zskip.iceberg.scan_types import JoinKeys
from zskip.iceberg.scans import QueryScans
from zskip.planning.cache import CACHE
from zskip.planning.curve import and_ranks
from zskip.planning.minmax_arrays import StatsColumn

__all__ = [
    "MAX_JOIN_KEYS",
    "JoinFilter",
    "JoinKeysLoader",
    "join_rank_sets",
    "keys_loader",
    "ranges_holding_keys",
    "row_groups_holding_keys",
]

# A dimension filter matching more keys than this prunes nothing (the keys would cost more to
# fetch and search than they save).  SSB at scale factor 10 needs 800,000 (two of five p_mfgr of
# 2,000,000 parts); at 200,000 its Q3.1 and Q4.1 lost the customer and part joins.
MAX_JOIN_KEYS = 1_000_000


@dataclass(frozen=True)
class JoinFilter:
    """One join of a scan with the keys its dimension side yields (distinct; ``None``: too many)."""

    join: JoinKeys
    keys: pa.Array | None  # whole numbers as int64, other keys as the fact column's Arrow type


def keys_loader(scans: QueryScans, cap: int = MAX_JOIN_KEYS) -> JoinKeysLoader:
    return JoinKeysLoader(scans, cap)


class JoinKeysLoader:
    """Loads (and caches by signature) the keys of a query's joins."""

    def __init__(self, scans: QueryScans, cap: int) -> None:
        self.scans = scans
        self.cap = cap

    def __call__(self, join: JoinKeys) -> JoinFilter:
        def load() -> pa.Array | None:
            keys = self.scans.join_keys(join, self.cap)
            return None if keys is None else pc.unique(keys)

        return JoinFilter(join, CACHE.get_or_load(self._key(join), load))

    def all(self, joins: Sequence[JoinKeys]) -> list[JoinFilter]:
        """The keys of every one of ``joins``; the Spark jobs of those not cached run side by side
        (a star query through two dimensions waits for the slower job, not for both in turn)."""
        missing = [j for j in joins if self._key(j) not in CACHE]
        if len(missing) > 1:
            with ThreadPoolExecutor(max_workers=len(missing), thread_name_prefix="zskip-join-keys") as pool:
                for future in [pool.submit(self, join) for join in missing]:
                    future.result()  # a failed job raises here, as it would one join at a time
        return [self(join) for join in joins]

    def all_cached(self, joins: Sequence[JoinKeys]) -> bool:
        """Whether the keys of every one of ``joins`` are cached (asking for them runs nothing)."""
        return all(self._key(j) in CACHE for j in joins)

    def fetched(self, join: JoinKeys) -> JoinFilter | None:
        """The join's keys if a stage fetched them (``None``: no stage asked, so no key job ran)."""
        key = self._key(join)
        return self(join) if key in CACHE else None

    def _key(self, join: JoinKeys) -> tuple[str, str, int]:
        return ("join-keys", join.signature, self.cap)


def ranges_holding_keys(keys: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """For each inclusive range ``[low, high]``, whether one of the sorted ``keys`` lies in it."""
    if len(keys) == 0:
        return np.zeros(len(low), dtype=bool)
    at = np.searchsorted(keys, low, side="left")
    inside = at < len(keys)
    found = np.zeros(len(low), dtype=bool)
    found[inside] = keys[at[inside]] <= high[inside]
    return found


def row_groups_holding_keys(column: StatsColumn, keys: pa.Array, sorted_keys: np.ndarray | None = None) -> np.ndarray:
    """Whether each row group's min/max of a foreign key (``column``'s statistics) holds one of ``keys``.

    Keys and bounds are compared as order keys (``zskip.curves.order_key_u64``): never decreasing in the
    value, so a key inside a row group's bounds is inside their order keys (text compares by its first
    8 bytes, which can only keep more).  A row group without bounds is kept, one of only NULLs is not
    (a NULL key never joins).  ``sorted_keys``: the keys' order keys, distinct and sorted, where the
    caller holds them already (the advisor checks the same keys against every candidate layout)."""
    bounded = column.known & column.has_min_max
    only_nulls = column.known & (column.values == 0)
    bounds = _as_keys(column.low, keys.type), _as_keys(column.high, keys.type)
    if bounds[0] is not None and bounds[1] is not None:
        low, high = order_key_u64(bounds[0]), order_key_u64(bounds[1])
    else:  # bounds of another kind than the keys: none of them bounds anything
        bounded = np.zeros(len(column), dtype=bool)
        low, high = np.zeros(len(column), dtype=np.uint64), np.zeros(len(column), dtype=np.uint64)
    if sorted_keys is None:
        sorted_keys = np.unique(order_key_u64(keys))
    return ranges_holding_keys(sorted_keys, low, high) | (~bounded & ~only_nulls)


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


def join_rank_sets(spec: ClusteringSpec, filters: Sequence[JoinFilter]) -> Mapping[str, np.ndarray]:
    """The ranks of the curve's dimension columns that the joins' keys imply: per column, the rank of
    each key's coordinate (an orphan's: the orphan coordinate's), as inclusive intervals merged only
    where they touch, never the hull between two keys."""
    sets: dict[str, np.ndarray] = {}
    columns = {c.field_id: c for c in spec.columns if c.field_id is not None}
    for item in filters:
        column = columns.get(item.join.field.id)
        if column is None or item.keys is None or not isinstance(column.mapping, DimensionMapping):
            continue
        if len(item.keys) == 0:
            continue
        and_ranks(sets, column.name, point_intervals(np.unique(column.mapping.ranks(order_key_u64(item.keys)))))
    return sets
