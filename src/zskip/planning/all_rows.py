"""Does every row of a row group make the predicate TRUE?  Proven from its statistics, many row groups at once.

A row group answers an aggregate from its statistics only where every row matches the filter: then
its rows, null counts and bounds are the aggregate's input exactly.  Every row makes ``P`` TRUE when
no row can make it FALSE and none can make it NULL.  The first is ``NOT P`` proven impossible by the
min/max check (``zskip.planning.minmax_arrays``, which keeps Spark's rules: NaN above every number and
missing from float statistics, bounds of strings possibly cut).  The second holds when the columns
``P`` compares hold no NULL (a NULL makes a comparison NULL; ``IS NULL`` never is).  Whatever the
statistics do not prove is "some rows", and the row group is read.

>>> from zskip.expr import Compare
>>> from zskip.planning.footers import ColumnStats
>>> col = StatsColumn.of([ColumnStats(1, 5, True, 0, 3), ColumnStats(7, 9, True, 0, 2), ColumnStats(7, 8, True, 1, 2)])
>>> every_row_arrays(Compare(1, ">", 6), {1: col}, frozenset(), 3).tolist()
[False, True, False]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from zskip.expr import LEAVES, AlwaysFalse, AlwaysTrue, And, Column, Expr, IsNull, Not, Opaque, Or
from zskip.expr.rewrite import rewrite_not
from zskip.planning.minmax_arrays import StatsColumn, might_match_arrays

__all__ = ["compared_columns", "every_row_arrays"]


def every_row_arrays(expr: Expr, columns: Mapping[Any, StatsColumn], floats: frozenset[Column], n: int) -> np.ndarray:
    """For each of ``n`` row groups: do its statistics prove every row makes ``expr`` TRUE?

    ``columns``: statistics by column (a column missing proves nothing)."""
    if isinstance(expr, AlwaysTrue):
        return np.ones(n, dtype=bool)
    if _has_opaque(expr):
        return np.zeros(n, dtype=bool)
    false_somewhere = might_match_arrays(rewrite_not(Not(expr)), columns, floats, n)
    proven = ~false_somewhere
    for column in compared_columns(expr):
        stats = columns.get(column)
        if stats is None:
            return np.zeros(n, dtype=bool)
        proven &= stats.known & (stats.null_count == 0)  # NaN (unknown) compares False
    return proven


def compared_columns(expr: Expr) -> set[Column]:
    """The columns of ``expr``'s leaves other than ``IS NULL`` (where a NULL makes the leaf NULL)."""
    if isinstance(expr, (And, Or)):
        out: set[Column] = set()
        for child in expr.children:
            out |= compared_columns(child)
        return out
    if isinstance(expr, Not):
        return compared_columns(expr.child)
    if isinstance(expr, IsNull) or not isinstance(expr, LEAVES):
        return set()
    return {expr.column}


def _has_opaque(expr: Expr) -> bool:
    if isinstance(expr, (And, Or)):
        return any(_has_opaque(child) for child in expr.children)
    if isinstance(expr, Not):
        return _has_opaque(expr.child)
    return isinstance(expr, Opaque) or not isinstance(expr, (*LEAVES, AlwaysTrue, AlwaysFalse))
