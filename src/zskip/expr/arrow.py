"""A predicate evaluated row by row on an Arrow table, with SQL's three-valued logic.

The advisor uses it to count which rows of a sample a query matches (what an exact index would leave
to read).  A node Arrow cannot evaluate (``Opaque``, or literals it cannot compare) counts as TRUE
for every row, so an estimate built on it errs towards reading more, never less.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from zskip.expr.nodes import AlwaysFalse, AlwaysTrue, And, Between, Compare, Expr, In, IsNull, Not, Or, StartsWith

__all__ = ["matching_rows"]

_TRUE = pc.scalar(True)
_FALSE = pc.scalar(False)


def matching_rows(table: pa.Table, expr: Expr) -> np.ndarray:
    """A boolean per row of ``table``: whether ``expr`` might be TRUE for it (NULL is not TRUE).

    Exact for the leaves; a part Arrow cannot evaluate (``Opaque``, an uncomparable literal) makes
    the answer an upper bound: rows it might match count as matching.

    >>> matching_rows(pa.table({"a": [1, 5, None]}), Compare("a", ">", 2)).tolist()
    [False, True, False]
    """
    names = {name: name for name in table.column_names}
    try:
        return _evaluate(table, _arrow(expr, names, True))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError):
        return np.ones(table.num_rows, dtype=bool)  # cannot evaluate: every row might match


def _evaluate(table: pa.Table, expression: pc.Expression) -> np.ndarray:
    rows = table.append_column("__zskip_row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    kept = ds.dataset(rows).to_table(columns=["__zskip_row"], filter=expression)
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[kept.column(0).to_numpy()] = True
    return mask


# ``upper``: an expression TRUE wherever ``expr`` might be TRUE; otherwise one TRUE only where it
# surely is.  They differ only around parts Arrow cannot evaluate; NOT swaps them.


@functools.singledispatch
def _arrow(expr: Expr, names: dict[str, str], upper: bool) -> pc.Expression:
    return _TRUE if upper else _FALSE  # a node not known here


def _field(column: str | int, names: dict[str, str]) -> pc.Expression:
    name = names.get(column) if isinstance(column, str) else None
    if name is None:
        raise ValueError(f"column {column!r} is not in the sample")
    return pc.field(name)


@_arrow.register
def _(expr: Compare, names: dict[str, str], upper: bool) -> pc.Expression:
    field, value = _field(expr.column, names), pc.scalar(expr.value)
    return {
        "=": field == value,
        "!=": field != value,
        "<": field < value,
        "<=": field <= value,
        ">": field > value,
        ">=": field >= value,
    }[expr.op]


@_arrow.register
def _(expr: Between, names: dict[str, str], upper: bool) -> pc.Expression:
    field = _field(expr.column, names)
    return (field >= pc.scalar(expr.low)) & (field <= pc.scalar(expr.high))


@_arrow.register
def _(expr: In, names: dict[str, str], upper: bool) -> pc.Expression:
    if not expr.values:
        return _FALSE
    return _field(expr.column, names).isin(pa.array(list(expr.values)))


@_arrow.register
def _(expr: IsNull, names: dict[str, str], upper: bool) -> pc.Expression:
    return _field(expr.column, names).is_null()


@_arrow.register
def _(expr: StartsWith, names: dict[str, str], upper: bool) -> pc.Expression:
    return pc.starts_with(_field(expr.column, names), expr.prefix)


@_arrow.register
def _(expr: And, names: dict[str, str], upper: bool) -> pc.Expression:
    return functools.reduce(lambda a, b: a & b, (_arrow(c, names, upper) for c in expr.children), _TRUE)


@_arrow.register
def _(expr: Or, names: dict[str, str], upper: bool) -> pc.Expression:
    return functools.reduce(lambda a, b: a | b, (_arrow(c, names, upper) for c in expr.children), _FALSE)


@_arrow.register
def _(expr: Not, names: dict[str, str], upper: bool) -> pc.Expression:
    return ~_arrow(expr.child, names, not upper)


@_arrow.register
def _(expr: AlwaysTrue, names: dict[str, str], upper: bool) -> pc.Expression:
    return _TRUE


@_arrow.register
def _(expr: AlwaysFalse, names: dict[str, str], upper: bool) -> pc.Expression:
    return _FALSE
