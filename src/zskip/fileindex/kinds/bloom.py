"""Bloom filters: one per data file and one per row group, answering equality and IN.

A filter says a value is certainly absent or might be present, so it answers which row groups
might hold a row, never which rows; NOT of its answer says nothing.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from zskip.expr import Leaf, equality_values
from zskip.fileindex.answers import Answer, MaybeRowGroups
from zskip.fileindex.bloom import DEFAULT_FPP, BloomIndex, FilterSet
from zskip.fileindex.hashing import plain_hashes
from zskip.fileindex.kinds.base import IndexKind, JointProbe, KindOption
from zskip.fileindex.literals import InexactLiteral, exact_scalar, keys_as

__all__ = ["BLOOM", "BloomKind", "probe_hashes"]

log = logging.getLogger(__name__)

NOT_HASHABLE = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)
BYTES_PER_VALUE = 1.2  # a filter at 1% false positives, per distinct value it holds


class BloomKind(IndexKind):
    name = "bloom"
    blob_type = "zskip-bloom-v1"
    exact = False
    summary = "bloom filters per file and row group: equality and IN, any number of distinct values"
    options = (KindOption("fpp", DEFAULT_FPP, 0.0, 1.0, "the bloom filter's false-positive rate"),)
    # a filter needs a type it can hash; an empty filter of any type holds no value
    absent_type = pa.int64()

    def build(self, row_groups: Sequence[pa.ChunkedArray], options: Mapping[str, Any]) -> bytes:
        return BloomIndex.build(list(row_groups), fpp=self.option(options, "fpp")).to_bytes()

    def load(self, data: bytes) -> BloomIndex:
        return BloomIndex.from_bytes(data)

    def answers_leaf(self, leaf: Leaf) -> bool:
        return equality_values(leaf) is not None

    def answer(self, index: BloomIndex, leaf: Leaf, row_group_count: int) -> Answer | None:
        values = equality_values(leaf)
        if values is None:
            return None
        try:
            in_file, groups = index.might_contain_hashes(probe_hashes(index.value_type, values))
        except NOT_HASHABLE as exc:
            log.debug("bloom filter cannot answer %s: %s", leaf, exc)
            return None
        if len(groups) != row_group_count:  # an index of another version of the file
            return None
        return MaybeRowGroups(groups & in_file)

    def answer_keys(self, index: BloomIndex, keys: pa.Array, row_group_count: int) -> Answer | None:
        try:
            in_file, groups = index.might_contain_hashes(plain_hashes(keys_as(keys, index.value_type)))
        except (InexactLiteral, *NOT_HASHABLE) as exc:
            log.debug("bloom filter cannot answer a join's keys: %s", exc)
            return None
        return MaybeRowGroups(groups & in_file) if len(groups) == row_group_count else None

    has_joint_probe = True

    def joint_probe(self, by_file: Mapping[str, Any]) -> JointProbe | None:
        types = {index.value_type for index in by_file.values()}
        if len(types) != 1:
            return None  # no files, or files that disagree on the type: no joint probe
        paths = list(by_file)
        return _JointBlooms(
            types.pop(), {p: i for i, p in enumerate(paths)}, FilterSet.of([by_file[p].file for p in paths])
        )

    def forecast_bytes(self, rows: int, distinct: float, row_groups: int) -> int:
        return int(BYTES_PER_VALUE * min(rows, distinct * row_groups))


@dataclass(frozen=True)
class _JointBlooms(JointProbe):
    """The file-level bloom filters of one column for every data file the manifest indexes."""

    value_type: pa.DataType
    position: dict[str, int]
    filters: FilterSet

    def ruled_out(self, leaf: Leaf, files: Sequence[str]) -> set[str]:
        values = equality_values(leaf)
        if values is None or not values:
            return set()
        try:
            hashes = probe_hashes(self.value_type, tuple(values))
        except NOT_HASHABLE:
            return set()
        candidates = [path for path in files if path in self.position]
        which = np.array([self.position[path] for path in candidates], dtype=np.int64)
        found = self.filters.might_contain_hashes(which, hashes)
        return {path for path, hit in zip(candidates, found.tolist(), strict=True) if not hit}


@functools.lru_cache(maxsize=256)
def probe_hashes(value_type: pa.DataType, values: tuple[Any, ...]) -> np.ndarray:
    """The hashes of a query's literals as the column's type (computed once, not once per file)."""
    probes = pa.array([exact_scalar(v, value_type) for v in values], type=value_type)
    return plain_hashes(probes)


BLOOM = BloomKind()
