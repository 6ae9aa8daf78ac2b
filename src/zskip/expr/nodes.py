"""The predicate nodes.  Comparisons follow Spark: NULL compares to nothing, NaN is above every number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "LEAVES",
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "Between",
    "Column",
    "Compare",
    "Expr",
    "In",
    "IsNull",
    "Leaf",
    "Not",
    "Opaque",
    "Or",
    "StartsWith",
    "columns_of",
    "equality_values",
]

OPERATORS = ("=", "!=", "<", "<=", ">", ">=")

# A column as a predicate names it: text as the query wrote it, or, once bound to a table's schema
# (``zskip.expr.bind``), its Iceberg field id, which no rename, drop or re-add can give to another column.
Column = str | int


@dataclass(frozen=True, slots=True)
class Compare:
    """``column <op> value`` with ``op`` one of ``= != < <= > >=``."""

    column: Column
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.op not in OPERATORS:
            raise ValueError(f"unknown comparison {self.op!r}: expected one of {' '.join(OPERATORS)}")
        if self.value is None:
            raise ValueError(f"comparing {self.column} with NULL matches no row; use IsNull")


@dataclass(frozen=True, slots=True)
class Between:
    """``column BETWEEN low AND high`` (both ends included)."""

    column: Column
    low: Any
    high: Any


@dataclass(frozen=True, slots=True)
class In:
    """``column IN (values)``; NULLs in the list match nothing and are dropped."""

    column: Column
    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(v for v in self.values if v is not None))


@dataclass(frozen=True, slots=True)
class IsNull:
    """``column IS NULL``; ``Not(IsNull(c))`` is ``IS NOT NULL``."""

    column: Column


@dataclass(frozen=True, slots=True)
class StartsWith:
    """``column LIKE 'prefix%'`` on a string column."""

    column: Column
    prefix: str


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    children: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Not:
    child: Expr


@dataclass(frozen=True, slots=True)
class AlwaysTrue:
    """TRUE: every row matches (a scan with no pushed filter)."""


@dataclass(frozen=True, slots=True)
class AlwaysFalse:
    """FALSE: no row matches."""


@dataclass(frozen=True, slots=True)
class Opaque:
    """A condition zskip does not understand (kept as text for explain); never prunes."""

    text: str


Leaf = Compare | Between | In | IsNull | StartsWith  # a condition on one column
LEAVES = (Compare, Between, In, IsNull, StartsWith)
Expr = Leaf | And | Or | Not | Opaque | AlwaysTrue | AlwaysFalse


def equality_values(expr: Expr) -> tuple[Any, ...] | None:
    """The values ``expr`` holds its column equal to (``a = 5``: ``(5,)``; ``a IN (1, 2)``: ``(1, 2)``),
    or ``None`` for any other condition."""
    if isinstance(expr, In):
        return expr.values
    if isinstance(expr, Compare) and expr.op == "=":
        return (expr.value,)
    return None


def columns_of(expr: Expr) -> set[Column]:
    """The columns ``expr`` reasons about (names, or field ids once bound; opaque parts name none)."""
    if isinstance(expr, (And, Or)):
        return set().union(*(columns_of(c) for c in expr.children))
    if isinstance(expr, Not):
        return columns_of(expr.child)
    if isinstance(expr, (Opaque, AlwaysTrue, AlwaysFalse)):
        return set()
    return {expr.column}
