"""Evaluate a predicate against one data file's indexes: MIGHT_MATCH or CANNOT_MATCH per file and row group.

Each condition is answered by the column's indexes, exact kinds first (``zskip.fileindex.kinds``):
exact answers are kept as the rows where the condition is TRUE and where it is FALSE (the rest are
NULL, SQL's unknown), so AND, OR and NOT combine them exactly.  Other kinds give, per row group,
"might be true" flags; NOT of such a flag, and any condition no index answers, is "might be true"
everywhere.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from zskip.expr import AlwaysFalse, And, Column, Compare, Expr, Leaf, Not, Or
from zskip.fileindex.answers import Answer, ExactRows, MaybeRowGroups, RestNotRead, row_groups_of
from zskip.fileindex.kinds import IndexKind

__all__ = [
    "FileIndexes",
    "LoadedIndex",
    "Match",
    "Verdict",
    "evaluate",
    "exactly_answered",
    "key_sets_verdict",
    "matching_rows",
]

log = logging.getLogger(__name__)

# what a kind's answer may raise on a literal or key its index's type cannot take: that index says nothing
UNANSWERABLE = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)


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


class LoadedIndex(NamedTuple):
    """One index of one column of a data file, as its kind loaded it."""

    kind: IndexKind
    index: Any


@dataclass(frozen=True)
class FileIndexes:
    """The indexes of one data file, with where each row group starts (``row_group_starts[-1]`` = rows),
    by column as the predicates evaluated against them name columns (field ids when planning), exact
    kinds first."""

    row_group_starts: tuple[int, ...]
    by_column: Mapping[Column, tuple[LoadedIndex, ...]]

    @classmethod
    def of(cls, row_group_starts: Sequence[int], indexes: Iterable[tuple[Column, IndexKind, Any]]) -> FileIndexes:
        """From ``(column, kind, index)`` triples."""
        by_column: dict[Column, list[LoadedIndex]] = {}
        for column, kind, index in indexes:
            by_column.setdefault(column, []).append(LoadedIndex(kind, index))
        ordered = {c: tuple(sorted(found, key=lambda f: not f.kind.exact)) for c, found in by_column.items()}
        return cls(tuple(row_group_starts), ordered)

    @property
    def rows(self) -> int:
        return self.row_group_starts[-1]

    @property
    def row_group_count(self) -> int:
        return len(self.row_group_starts) - 1


def evaluate(expr: Expr, indexes: FileIndexes) -> Verdict:
    """Which of the file and its row groups might hold a row where ``expr`` is TRUE."""
    groups = _groups(_true_rows(expr, indexes), indexes)
    if not groups.any():
        file = Match.MIGHT_MATCH if indexes.row_group_count == 0 else Match.CANNOT_MATCH
        return Verdict(file, (Match.CANNOT_MATCH,) * indexes.row_group_count)
    verdicts = tuple(Match.MIGHT_MATCH if g else Match.CANNOT_MATCH for g in groups.tolist())
    return Verdict(Match.MIGHT_MATCH, verdicts)


def key_sets_verdict(indexes: FileIndexes, key_sets: Sequence[tuple[Column, pa.Array]]) -> Verdict | None:
    """Which row groups might hold a row whose ``column`` is one of ``keys`` for every ``(column, keys)``
    (distinct keys: whole numbers as ``int64``, or values of the column's type), from each column's first index that
    answers (exact rows are intersected across columns); ``None`` when no column's index answers.

    Vectorised over the keys: a bitmap looks its dictionary up in the keys at once and takes each run
    of consecutive codes as one range; a bloom filter hashes all keys in one call.
    """
    parts: list[Answer] = []
    for column, keys in key_sets:
        for found in indexes.by_column.get(column, ()):
            try:
                answer = found.kind.answer_keys(found.index, keys, indexes.row_group_count)
            except UNANSWERABLE as exc:
                log.debug("the %s index on %s cannot answer a key set: %s", found.kind.name, column, exc)
                continue
            if answer is not None:
                parts.append(answer)
                break
    if not parts:
        return None
    exact = [p for p in parts if isinstance(p, ExactRows)]
    result: Answer
    if len(exact) == len(parts):
        true = exact[0].true.copy()
        for part in exact[1:]:
            true &= part.true
        result = ExactRows(true, BitMap())
    else:
        result = MaybeRowGroups(np.logical_and.reduce([_groups(p, indexes) for p in parts]))
    groups = _groups(result, indexes)
    verdicts = tuple(Match.MIGHT_MATCH if g else Match.CANNOT_MATCH for g in groups)
    return Verdict(Match.MIGHT_MATCH if groups.any() else Match.CANNOT_MATCH, verdicts)


def matching_rows(expr: Expr, indexes: FileIndexes) -> BitMap | None:
    """The exact rows where ``expr`` is TRUE when exact indexes answer all of it, else ``None``."""
    result = _eval(expr, indexes)
    return result.true if isinstance(result, ExactRows) else None


def exactly_answered(expr: Expr, kinds: Mapping[Column, Collection[IndexKind]]) -> bool:
    """Whether the exact indexes of ``kinds`` (each column's, as ``expr`` names columns) decide every row
    of ``expr``: every condition is one an exact kind on its column answers.  Known from the predicate
    alone, before any index is read (a literal the column's type cannot hold still leaves its condition
    to "might be true" when it is evaluated)."""
    return _exactly(expr, kinds)


@functools.singledispatch
def _exactly(expr: Expr, kinds: Mapping[Column, Collection[IndexKind]]) -> bool:
    if isinstance(expr, Leaf):
        return any(kind.exact and kind.answers_leaf(expr) for kind in kinds.get(expr.column, ()))
    return False  # Opaque, TRUE, FALSE: evaluate leaves them to "might be true" per row group


@_exactly.register(And)
@_exactly.register(Or)
def _(expr: And | Or, kinds: Mapping[Column, Collection[IndexKind]]) -> bool:
    return all(_exactly(child, kinds) for child in expr.children)


@_exactly.register
def _(expr: Not, kinds: Mapping[Column, Collection[IndexKind]]) -> bool:
    return _exactly(expr.child, kinds)


def _true_rows(expr: Expr, indexes: FileIndexes) -> Answer:
    """``_eval`` where only the rows making ``expr`` TRUE matter (a whole predicate, not a part under
        NOT): the parts of a top-level AND are taken equalities first, the AND stops at the first part
        that leaves no row (a part that needs what an index's head lacks is passed over until then), and no
    part's FALSE rows are built.  The ``false`` of an exact answer here is
        empty, not the FALSE rows."""
    if not isinstance(expr, And):
        return _eval(expr, indexes)
    true: BitMap | None = None
    groups: np.ndarray | None = None
    unread: RestNotRead | None = None
    for child in sorted(expr.children, key=_cost):
        try:
            part = _true_rows(child, indexes)
        except RestNotRead as exc:  # another part may still leave no row with the heads alone
            unread = exc
            continue
        if isinstance(part, ExactRows):
            true = part.true if true is None else true & part.true
            if not true:
                return ExactRows(BitMap(), BitMap())
        else:
            groups = part.groups if groups is None else groups & part.groups
            if not groups.any():
                return MaybeRowGroups(groups)
    if unread is not None:
        raise unread
    if groups is None:
        assert true is not None
        return ExactRows(true, BitMap())
    return MaybeRowGroups(groups if true is None else groups & _groups(ExactRows(true, BitMap()), indexes))


def _cost(expr: Expr) -> int:
    """How early an AND takes ``expr``: an equality costs one bitmap operation per bit slice (a range,
    two) and most often leaves no row of a file at all."""
    if isinstance(expr, Compare) and expr.op == "=":
        return 0
    return 1 if isinstance(expr, Leaf) else 2


def _groups(result: Answer, indexes: FileIndexes) -> np.ndarray:
    return row_groups_of(result, indexes.row_group_starts)


def _everywhere(indexes: FileIndexes) -> MaybeRowGroups:
    return MaybeRowGroups(np.ones(indexes.row_group_count, dtype=bool))


@functools.singledispatch
def _eval(expr: Expr, indexes: FileIndexes) -> Answer:
    return _everywhere(indexes)  # a node the indexes do not know: every row group might match


@_eval.register
def _(expr: And, indexes: FileIndexes) -> Answer:
    parts = [_eval(c, indexes) for c in expr.children]
    exact = [p for p in parts if isinstance(p, ExactRows)]
    if len(exact) < len(parts):
        return MaybeRowGroups(np.logical_and.reduce([_groups(p, indexes) for p in parts]))
    true, false = exact[0].true.copy(), exact[0].false.copy()
    for p in exact[1:]:
        true &= p.true
        false |= p.false
    return ExactRows(true, false)


@_eval.register
def _(expr: Or, indexes: FileIndexes) -> Answer:
    parts = [_eval(c, indexes) for c in expr.children]
    exact = [p for p in parts if isinstance(p, ExactRows)]
    if len(exact) < len(parts):
        return MaybeRowGroups(np.logical_or.reduce([_groups(p, indexes) for p in parts]))
    true, false = exact[0].true.copy(), exact[0].false.copy()
    for p in exact[1:]:
        true |= p.true
        false &= p.false
    return ExactRows(true, false)


@_eval.register
def _(expr: Not, indexes: FileIndexes) -> Answer:
    inner = _eval(expr.child, indexes)
    return ExactRows(inner.false, inner.true) if isinstance(inner, ExactRows) else _everywhere(indexes)


@_eval.register
def _(expr: AlwaysFalse, indexes: FileIndexes) -> Answer:
    return MaybeRowGroups(np.zeros(indexes.row_group_count, dtype=bool))


@_eval.register
def _(expr: Leaf, indexes: FileIndexes) -> Answer:
    for found in indexes.by_column.get(expr.column, ()):  # exact kinds first
        if not found.kind.answers_leaf(expr):
            continue
        try:
            answer = found.kind.answer(found.index, expr, indexes.row_group_count)
        except UNANSWERABLE as exc:
            log.debug("the %s index on %s cannot answer %s: %s", found.kind.name, expr.column, expr, exc)
            continue
        if answer is not None:
            return answer
    return _everywhere(indexes)
