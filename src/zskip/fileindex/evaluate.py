"""Evaluate a predicate against one data file's indexes: MIGHT_MATCH or CANNOT_MATCH per file and row group.

Bitmap-indexed columns give exact row sets, kept as the rows where the predicate is TRUE and the
rows where it is FALSE (the rest are NULL, SQL's unknown), so AND, OR and NOT combine them
exactly.  Bloom filters and everything else give, per row group, "might be true" flags; NOT of such
a flag, and any predicate no index answers, is "might be true" everywhere.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from zskip.expr import (
    AlwaysFalse,
    And,
    Between,
    Column,
    Compare,
    Expr,
    In,
    IsNull,
    Leaf,
    Not,
    Or,
    StartsWith,
    equality_values,
)
from zskip.fileindex.bitmap import BitmapIndex
from zskip.fileindex.bloom import BloomIndex
from zskip.fileindex.hashing import plain_hashes
from zskip.fileindex.literals import exact_scalar

__all__ = [
    "FileIndexes",
    "Match",
    "Verdict",
    "bitmaps_answer",
    "evaluate",
    "key_sets_verdict",
    "matching_rows",
    "probe_hashes",
]

log = logging.getLogger(__name__)


class Match(Enum):
    MIGHT_MATCH = "might match"
    CANNOT_MATCH = "cannot match"


@dataclass(frozen=True)
class Verdict:
    file: Match
    row_groups: tuple[Match, ...]

    @property
    def row_groups_kept(self) -> int:
        return sum(m is Match.MIGHT_MATCH for m in self.row_groups)


@dataclass(frozen=True)
class FileIndexes:
    """The indexes of one data file, with where each row group starts (``row_group_starts[-1]`` = rows),
    by column as the predicates evaluated against them name columns (field ids when planning)."""

    row_group_starts: tuple[int, ...]
    bitmaps: Mapping[Column, BitmapIndex]
    blooms: Mapping[Column, BloomIndex]

    @property
    def rows(self) -> int:
        return self.row_group_starts[-1]

    @property
    def row_group_count(self) -> int:
        return len(self.row_group_starts) - 1


@dataclass(frozen=True)
class _Exact:
    true: BitMap
    false: BitMap


@dataclass(frozen=True)
class _Maybe:
    groups: np.ndarray  # bool per row group: might be true


def evaluate(expr: Expr, indexes: FileIndexes) -> Verdict:
    """Which of the file and its row groups might hold a row where ``expr`` is TRUE."""
    groups = _groups(_true_rows(expr, indexes), indexes)
    if not groups.any():
        file = Match.MIGHT_MATCH if indexes.row_group_count == 0 else Match.CANNOT_MATCH
        return Verdict(file, (Match.CANNOT_MATCH,) * indexes.row_group_count)
    verdicts = tuple(Match.MIGHT_MATCH if g else Match.CANNOT_MATCH for g in groups.tolist())
    return Verdict(Match.MIGHT_MATCH, verdicts)


def key_sets_verdict(indexes: FileIndexes, key_sets: Sequence[tuple[Column, np.ndarray]]) -> Verdict | None:
    """Which row groups might hold a row whose ``column`` is one of ``keys`` for every ``(column, keys)``
    (sorted, distinct ``int64`` keys of whole-number columns), from those columns' bitmaps (exact rows,
    intersected across columns) or bloom filters; ``None`` when no column has an index.

    Vectorised over the keys: a bitmap looks its dictionary up in the keys at once and takes each run
    of consecutive codes as one range; a bloom filter hashes all keys in one call.
    """
    parts: list[_Exact | _Maybe] = []
    for column, keys in key_sets:
        bitmap = indexes.bitmaps.get(column)
        bloom = indexes.blooms.get(column)
        try:
            if bitmap is not None and pa.types.is_integer(bitmap.dictionary.type):
                true = bitmap.rows_with(keys)
                parts.append(_Exact(true, bitmap.not_null - true))
            elif bloom is not None and pa.types.is_integer(bloom.value_type):
                typed = _within_type(keys, bloom.value_type)
                in_file, groups = bloom.might_contain_hashes(plain_hashes(typed))
                if len(groups) == indexes.row_group_count:
                    parts.append(_Maybe(groups & in_file))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
            log.debug("the index on %s cannot answer a key set: %s", column, exc)
    if not parts:
        return None
    exact = [p for p in parts if isinstance(p, _Exact)]
    result: _Exact | _Maybe
    if len(exact) == len(parts):
        true = exact[0].true.copy()
        for part in exact[1:]:
            true &= part.true
        result = _Exact(true, BitMap())
    else:
        result = _Maybe(np.logical_and.reduce([_groups(p, indexes) for p in parts]))
    groups = _groups(result, indexes)
    verdicts = tuple(Match.MIGHT_MATCH if g else Match.CANNOT_MATCH for g in groups)
    return Verdict(Match.MIGHT_MATCH if groups.any() else Match.CANNOT_MATCH, verdicts)


def _within_type(keys: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``keys`` as an Arrow array of the integer type ``kind``, dropping those it cannot hold (they match nothing)."""
    info = np.iinfo(kind.to_pandas_dtype())
    keys = keys[(keys >= info.min) & (keys <= info.max)]
    return pa.array(keys.astype(kind.to_pandas_dtype()), type=kind)


def matching_rows(expr: Expr, indexes: FileIndexes) -> BitMap | None:
    """The exact rows where ``expr`` is TRUE when bitmaps answer all of it, else ``None``."""
    result = _eval(expr, indexes)
    return result.true if isinstance(result, _Exact) else None


@functools.singledispatch
def bitmaps_answer(expr: Expr, columns: Collection[Column]) -> bool:
    """Whether bitmaps on ``columns`` (as ``expr`` names them) decide every row of ``expr``: each leaf is one a
    bitmap answers, on one of them.  Known from the predicate alone, before any index is read (a literal
    the column's type cannot hold still leaves its leaf to "might be true" when it is evaluated)."""
    return False  # Opaque, TRUE, FALSE: evaluate leaves them to "might be true" per row group


@bitmaps_answer.register(And)
@bitmaps_answer.register(Or)
def _(expr: And | Or, columns: Collection[Column]) -> bool:
    return all(bitmaps_answer(child, columns) for child in expr.children)


@bitmaps_answer.register
def _(expr: Not, columns: Collection[Column]) -> bool:
    return bitmaps_answer(expr.child, columns)


@bitmaps_answer.register(Compare)
@bitmaps_answer.register(Between)
@bitmaps_answer.register(In)
@bitmaps_answer.register(IsNull)
@bitmaps_answer.register(StartsWith)
def _(expr: Leaf, columns: Collection[Column]) -> bool:
    return expr.column in columns


def _true_rows(expr: Expr, indexes: FileIndexes) -> _Exact | _Maybe:
    """``_eval`` where only the rows making ``expr`` TRUE matter (a whole predicate, not a part under
    NOT): the parts of a top-level AND are taken equalities first, the AND stops at the first part
    that leaves no row, and no part's FALSE rows are built.  The ``false`` of an exact answer here is
    empty, not the FALSE rows."""
    if not isinstance(expr, And):
        return _eval(expr, indexes)
    true: BitMap | None = None
    groups: np.ndarray | None = None
    for child in sorted(expr.children, key=_cost):
        part = _true_rows(child, indexes)
        if isinstance(part, _Exact):
            true = part.true if true is None else true & part.true
            if not true:
                return _Exact(BitMap(), BitMap())
        else:
            groups = part.groups if groups is None else groups & part.groups
            if not groups.any():
                return _Maybe(groups)
    if groups is None:
        assert true is not None
        return _Exact(true, BitMap())
    return _Maybe(groups if true is None else groups & _groups(_Exact(true, BitMap()), indexes))


def _cost(expr: Expr) -> int:
    """How early an AND takes ``expr``: an equality costs one bitmap operation per bit slice (a range,
    two) and most often leaves no row of a file at all."""
    if isinstance(expr, Compare) and expr.op == "=":
        return 0
    return 1 if isinstance(expr, Leaf) else 2


def _groups(result: _Exact | _Maybe, indexes: FileIndexes) -> np.ndarray:
    if isinstance(result, _Maybe):
        return result.groups
    if not result.true:  # the usual answer for most files: no row
        return np.zeros(indexes.row_group_count, dtype=bool)
    starts = indexes.row_group_starts
    if len(result.true) > 64 * indexes.row_group_count:  # many rows: count each row group's instead
        return np.array(
            [result.true.range_cardinality(starts[g], starts[g + 1]) > 0 for g in range(indexes.row_group_count)],
            dtype=bool,
        )
    # the row groups a few TRUE rows fall in, all at once (rows are ascending)
    rows = np.frombuffer(result.true.to_array(), dtype=np.uint32)
    holding = np.zeros(indexes.row_group_count, dtype=bool)
    found = np.searchsorted(np.asarray(starts, dtype=np.int64), rows, side="right") - 1
    holding[found[(found >= 0) & (found < indexes.row_group_count)]] = True
    return holding


def _everywhere(indexes: FileIndexes) -> _Maybe:
    return _Maybe(np.ones(indexes.row_group_count, dtype=bool))


Answer = _Exact | _Maybe


@functools.singledispatch
def _eval(expr: Expr, indexes: FileIndexes) -> Answer:
    return _everywhere(indexes)  # a node the indexes do not know: every row group might match


@_eval.register
def _(expr: And, indexes: FileIndexes) -> Answer:
    parts = [_eval(c, indexes) for c in expr.children]
    exact = [p for p in parts if isinstance(p, _Exact)]
    if len(exact) < len(parts):
        return _Maybe(np.logical_and.reduce([_groups(p, indexes) for p in parts]))
    true, false = exact[0].true.copy(), exact[0].false.copy()
    for p in exact[1:]:
        true &= p.true
        false |= p.false
    return _Exact(true, false)


@_eval.register
def _(expr: Or, indexes: FileIndexes) -> Answer:
    parts = [_eval(c, indexes) for c in expr.children]
    exact = [p for p in parts if isinstance(p, _Exact)]
    if len(exact) < len(parts):
        return _Maybe(np.logical_or.reduce([_groups(p, indexes) for p in parts]))
    true, false = exact[0].true.copy(), exact[0].false.copy()
    for p in exact[1:]:
        true |= p.true
        false &= p.false
    return _Exact(true, false)


@_eval.register
def _(expr: Not, indexes: FileIndexes) -> Answer:
    inner = _eval(expr.child, indexes)
    return _Exact(inner.false, inner.true) if isinstance(inner, _Exact) else _everywhere(indexes)


@_eval.register
def _(expr: AlwaysFalse, indexes: FileIndexes) -> Answer:
    return _Maybe(np.zeros(indexes.row_group_count, dtype=bool))


@_eval.register
def _(expr: Leaf, indexes: FileIndexes) -> Answer:
    bitmap = indexes.bitmaps.get(expr.column)
    if bitmap is not None:
        try:
            return _bitmap_leaf(expr, bitmap)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
            log.debug("bitmap on %s cannot answer %s: %s", expr.column, expr, exc)
    bloom = indexes.blooms.get(expr.column)
    values = equality_values(expr)  # what a bloom filter can be probed with
    if bloom is None or values is None:
        return _everywhere(indexes)
    try:
        in_file, groups = bloom.might_contain_hashes(probe_hashes(bloom.value_type, values))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        log.debug("bloom on %s cannot answer %s: %s", expr.column, expr, exc)
        return _everywhere(indexes)
    if len(groups) != indexes.row_group_count:  # an index of another version of the file
        return _everywhere(indexes)
    return _Maybe(groups & in_file)


@functools.lru_cache(maxsize=256)
def probe_hashes(value_type: pa.DataType, values: tuple[Any, ...]) -> np.ndarray:
    """The hashes of a query's literals as the column's type (computed once, not once per file)."""
    probes = pa.array([exact_scalar(v, value_type) for v in values], type=value_type)
    return plain_hashes(probes)


def _bitmap_leaf(leaf: Leaf, index: BitmapIndex) -> _Exact:
    """The rows where ``leaf`` is TRUE and where it is FALSE (NULL rows are in neither)."""
    if isinstance(leaf, IsNull):
        return _Exact(index.nulls(), index.not_null.copy())
    if isinstance(leaf, Compare) and leaf.op == "!=":
        equal = index.codes_between(*index.bounds(leaf.value))
        return _Exact(index.not_null - equal, equal)
    true = _bitmap_true(leaf, index)
    return _Exact(true, index.not_null - true)


@functools.singledispatch
def _bitmap_true(leaf: Leaf, index: BitmapIndex) -> BitMap:
    """The rows where ``leaf`` is TRUE, from the index's codes (sorted like the values)."""
    raise TypeError(f"no bitmap answer for {type(leaf).__name__}")


@_bitmap_true.register
def _(leaf: Compare, index: BitmapIndex) -> BitMap:
    below, through = index.bounds(leaf.value)  # codes below the value, and through it
    top = index.cardinality
    ranges = {"=": (below, through), "<": (0, below), "<=": (0, through), ">": (through, top), ">=": (below, top)}
    return index.codes_between(*ranges[leaf.op])


@_bitmap_true.register
def _(leaf: Between, index: BitmapIndex) -> BitMap:
    low, _ = index.bounds(leaf.low)
    _, high = index.bounds(leaf.high)
    return index.codes_between(low, high)


@_bitmap_true.register
def _(leaf: In, index: BitmapIndex) -> BitMap:
    true = BitMap()
    for value in leaf.values:
        true |= index.codes_between(*index.bounds(value))
    return true


@_bitmap_true.register
def _(leaf: StartsWith, index: BitmapIndex) -> BitMap:
    return index.codes_between(*index.prefix_codes(leaf.prefix))
