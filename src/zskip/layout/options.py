"""Optimize's options, checked once into one frozen value before anything is read or written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from zskip.curves import CURVES, MAPPINGS
from zskip.errors import InvalidOptionError
from zskip.layout.dimensions import Dimension
from zskip.units import parse_size

__all__ = ["OptimizeOptions"]


@dataclass(frozen=True)
class OptimizeOptions:
    """What ``zskip.optimize`` was asked to do, every option checked (see ``optimize`` for each)."""

    columns: tuple[str, ...]  # as given; a dimension's column is its foreign key
    dimensions: Mapping[str, Dimension]  # by lower-cased foreign key
    curve: str
    mapping: str
    target_file_size: int  # bytes
    row_group_size: int  # bytes
    where: str | None
    mode: str
    max_group_size: int  # bytes
    partial_progress: bool
    max_commits: int
    weights: tuple[float, ...] | None = None  # per column of ``columns``; None: every column alike

    @classmethod
    def check(
        cls,
        *,
        by: Sequence[str | Dimension] | str,
        curve: str,
        mapping: str,
        target_file_size: int | str,
        row_group_size: int | str,
        where: str | None,
        mode: str,
        max_group_size: int | str,
        partial_progress: bool,
        max_commits: int,
        weights: Mapping[str, float] | None = None,
    ) -> OptimizeOptions:
        """The options, or ``InvalidOptionError`` saying which one is wrong and what it should be."""
        for name, value in (("curve", curve), ("mapping", mapping), ("mode", mode)):
            if not isinstance(value, str):
                raise InvalidOptionError(f"{name} must be text, not {type(value).__name__} ({value!r})")
        if not isinstance(max_commits, int) or isinstance(max_commits, bool):
            raise InvalidOptionError(f"max_commits must be a whole number, not {max_commits!r}")
        if not isinstance(partial_progress, bool):
            raise InvalidOptionError(f"partial_progress must be True or False, not {partial_progress!r}")
        if where is not None and (not isinstance(where, str) or not where.strip()):
            raise InvalidOptionError(f"where must be a SQL filter such as 'a > 5', not {where!r}")
        if curve not in CURVES:
            raise InvalidOptionError(f"curve must be one of {', '.join(CURVES)}, not {curve!r}")
        if mapping not in MAPPINGS:
            raise InvalidOptionError(f"mapping must be one of {', '.join(MAPPINGS)}, not {mapping!r}")
        if mode not in ("incremental", "full"):
            raise InvalidOptionError(f"mode must be 'incremental' or 'full', not {mode!r}")
        if max_commits < 1:
            raise InvalidOptionError(f"max_commits must be at least 1, got {max_commits}")
        target = parse_size(target_file_size, name="target_file_size")
        row_group = parse_size(row_group_size, name="row_group_size")
        max_group = parse_size(max_group_size, name="max_group_size")
        columns, dimensions = _columns(by)
        weighted = _weights(weights, columns, curve)
        return cls(
            columns=columns,
            dimensions=MappingProxyType(dimensions),
            curve=curve,
            mapping=mapping,
            target_file_size=target,
            row_group_size=row_group,
            where=where,
            mode=mode,
            max_group_size=max_group,
            partial_progress=partial_progress,
            max_commits=max_commits,
            weights=weighted,
        )


def _weights(weights: Mapping[str, float] | None, columns: tuple[str, ...], curve: str) -> tuple[float, ...] | None:
    """Each column's weight (1 where ``weights`` names none), or ``None`` when they are all alike."""
    if weights is None:
        return None
    if not isinstance(weights, Mapping):
        raise InvalidOptionError(f"weights must map columns of by to numbers, such as {{'a': 2}}, not {weights!r}")
    by_name = {c.lower(): c for c in columns}
    found: dict[str, float] = {}
    for name, weight in weights.items():
        column = by_name.get(str(name).lower())
        if column is None:
            raise InvalidOptionError(
                f"weights names {name!r}, which by does not list ({', '.join(columns)}): weigh columns of by"
            )
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0 or weight == float("inf"):
            raise InvalidOptionError(f"the weight of {name!r} must be a positive number, not {weight!r}")
        found[column] = float(weight)
    chosen = tuple(found.get(c, 1.0) for c in columns)
    if len(set(chosen)) == 1:
        return None
    if curve == "hilbert":
        raise InvalidOptionError(
            "weights need curve='zorder' (or 'linear'): a Hilbert curve turns through cubes, every column "
            "at the same resolution"
        )
    return chosen


def _columns(by: Sequence[str | Dimension] | str) -> tuple[tuple[str, ...], dict[str, Dimension]]:
    """The columns to cluster on (a dimension's: its foreign key) and the dimensions by foreign key;
    a column named twice in any case is refused before any name is resolved."""
    if isinstance(by, str):
        by = [c.strip() for c in by.split(",") if c.strip()]
    if not isinstance(by, Sequence) or not all(
        (isinstance(c, str) and c.strip()) or isinstance(c, Dimension) for c in by
    ):
        raise InvalidOptionError(
            f"by must be a list of column names and zskip.Dimension(...), such as ['a', 'b'], not {by!r}"
        )
    if not by:
        raise InvalidOptionError("by needs at least one column to cluster on")
    dimensions = {c.foreign_key: c for c in by if isinstance(c, Dimension)}
    names = tuple(c.foreign_key if isinstance(c, Dimension) else c for c in by)
    seen: set[str] = set()
    for column in names:  # the same name twice; two names of one column are caught once resolved
        if column in seen:
            raise InvalidOptionError(f"by names the column {column!r} twice: list each column once")
        seen.add(column)
    return names, dimensions
