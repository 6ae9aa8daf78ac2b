"""Range-encoded bit-sliced bitmaps over a data file's rows: exact rows for every comparison,
range, IN, IS NULL and prefix, so AND, OR and NOT of their answers are exact too."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyroaring import BitMap

from zskip.expr import Between, Compare, In, IsNull, Leaf, StartsWith
from zskip.expr.nodes import LEAVES
from zskip.fileindex.answers import Answer, ExactRows
from zskip.fileindex.bitmap import BitmapIndex, head_length, in_blocks, stored_blocks
from zskip.fileindex.bitmap_blocks import keys_of
from zskip.fileindex.kinds.base import IndexKind
from zskip.fileindex.literals import InexactLiteral, keys_as

__all__ = ["BITMAP", "BitmapKind"]


class BitmapKind(IndexKind):
    name = "bitmap"
    blob_type = "zskip-bitmap-v1"  # format 2 blobs keep the type: the blob's first bytes tell them apart
    exact = True
    summary = "bit-sliced bitmaps of the rows: exact for =, <, >, BETWEEN, IN, IS NULL, LIKE 'p%', few distinct values"
    absent_type = pa.null()  # no literal converts to it: every condition on it is FALSE or NULL

    def build(self, row_groups: Sequence[pa.ChunkedArray], options: Mapping[str, Any]) -> bytes:
        kind = row_groups[0].type if row_groups else pa.null()
        return BitmapIndex.build(pa.chunked_array([c for p in row_groups for c in p.chunks], type=kind)).to_bytes()

    def load(self, data: bytes) -> BitmapIndex:
        return BitmapIndex.from_bytes(data)

    compressed_whole = False  # the head stays readable alone; the bit slices are compressed inside

    def head_length(self, blob: bytes) -> int | None:
        return head_length(blob)

    def with_rest(self, index: BitmapIndex, rest: bytes) -> BitmapIndex:
        return index.with_slices(rest)

    def parts_for(self, index: BitmapIndex, values: Sequence[Any] | pa.Array) -> dict[int, tuple[int, int]]:
        """The dictionary blocks that would hold ``values``, of a dictionary in blocks (format 3)."""
        blocks = index.blocks
        if index.dictionary is not None or blocks is None:
            return {}
        needed: set[int] = set()
        if isinstance(values, (pa.Array, pa.ChunkedArray)):  # a join's key set
            try:
                needed = blocks.blocks_of(keys_of(keys_as(values, blocks.value_type)))
            except (InexactLiteral, TypeError, ValueError, pa.ArrowException):
                return {}  # the whole rest answers it, if anything does
        for value in () if isinstance(values, (pa.Array, pa.ChunkedArray)) else values:
            try:
                block = blocks.block_of(blocks.key(value))
            except (InexactLiteral, TypeError, ValueError, pa.ArrowException):
                continue  # the evaluation says what such a value means
            if block is not None:
                needed.add(block)
        read = dict(blocks.loaded)
        return {block: (blocks.start_of(block), blocks.lengths[block]) for block in sorted(needed - set(read))}

    def with_parts(self, index: BitmapIndex, parts: Mapping[int, bytes]) -> BitmapIndex:
        return index.with_blocks(parts)

    def parts_span(self, index: BitmapIndex) -> int:
        return index.blocks_span

    def with_rest_after_parts(
        self, index: BitmapIndex, rest: bytes, part: Callable[[int, int, int], bytes]
    ) -> BitmapIndex:
        blocks = index.blocks
        assert blocks is not None
        return index.with_slices_after_blocks(rest, lambda n: part(n, blocks.start_of(n), blocks.lengths[n]))

    def merged_form(self, blob: bytes) -> bytes:
        return in_blocks(blob)

    def stored_parts(self, blob: bytes) -> list[tuple[int, bytes]]:
        """The dictionary's blocks, each keyed by its first value."""
        return stored_blocks(blob)

    def answers_leaf(self, leaf: Leaf) -> bool:
        return isinstance(leaf, LEAVES)

    def answer(self, index: BitmapIndex, leaf: Leaf, row_group_count: int) -> Answer | None:
        if isinstance(leaf, IsNull):
            return ExactRows(index.nulls(), index.not_null.copy())
        if isinstance(leaf, Compare) and leaf.op == "!=":
            equal = index.codes_between(*index.bounds(leaf.value))
            return ExactRows(index.not_null - equal, equal)
        true = _true_rows(leaf, index)
        return ExactRows(true, index.not_null - true)

    def answer_keys(self, index: BitmapIndex, keys: pa.Array, row_group_count: int) -> Answer | None:
        if pa.types.is_floating(index.value_type):
            return None  # join keys are whole numbers, text, dates, timestamps or decimals
        try:
            true = index.rows_with(keys_as(keys, index.value_type))
        except InexactLiteral:
            return None
        return ExactRows(true, index.not_null - true)

    def forecast_bytes(self, rows: int, distinct: float, row_groups: int) -> int:
        return int(rows * max(1, math.ceil(math.log2(distinct + 1))) / 8)  # a bit slice per bit of a code


@functools.singledispatch
def _true_rows(leaf: Leaf, index: BitmapIndex) -> BitMap:
    """The rows where ``leaf`` is TRUE, from the index's codes (sorted like the values)."""
    raise TypeError(f"no bitmap answer for {type(leaf).__name__}")


@_true_rows.register
def _(leaf: Compare, index: BitmapIndex) -> BitMap:
    below, through = index.bounds(leaf.value)  # codes below the value, and through it
    top = index.cardinality
    ranges = {"=": (below, through), "<": (0, below), "<=": (0, through), ">": (through, top), ">=": (below, top)}
    return index.codes_between(*ranges[leaf.op])


@_true_rows.register
def _(leaf: Between, index: BitmapIndex) -> BitMap:
    low, _ = index.bounds(leaf.low)
    _, high = index.bounds(leaf.high)
    return index.codes_between(low, high)


@_true_rows.register
def _(leaf: In, index: BitmapIndex) -> BitMap:
    true = BitMap()
    for value in leaf.values:
        true |= index.codes_between(*index.bounds(value))
    return true


@_true_rows.register
def _(leaf: StartsWith, index: BitmapIndex) -> BitMap:
    return index.codes_between(*index.prefix_codes(leaf.prefix))


BITMAP = BitmapKind()
