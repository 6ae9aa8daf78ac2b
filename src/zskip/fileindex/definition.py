"""An index a user asked for: one column, one kind, that kind's options (and a cube's measures)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zskip.errors import InvalidOptionError
from zskip.fileindex.kinds import IndexKind, kind_named

__all__ = ["IndexDefinition"]


@dataclass(frozen=True)
class IndexDefinition:
    """An index a user asked for: one column, one kind, its options (``fpp`` for bloom).

    ``field_id`` is the column's Iceberg field id, what the index is of; ``column`` is how the table
    spelled it when the index was defined (shown to users).  ``None``: not known (a manifest written
    before 0.4 whose name could not be tied to one field: such an index is never used).

    ``measures``: the field ids of the columns a kind that aggregates by this column (a cube) keeps
    partial aggregates of, and ``measure_columns`` their names as the table spelled them then.
    """

    column: str
    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)
    field_id: int | None = None
    measures: tuple[int, ...] = ()
    measure_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", self.index_kind.checked_options(self.options))
        if (self.measures or self.measure_columns) and not self.index_kind.takes_measures:
            raise InvalidOptionError(f"a {self.kind} index takes no measures (a cube index does)")

    @property
    def index_kind(self) -> IndexKind:
        return kind_named(self.kind)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "column": self.column,
            "kind": self.kind,
            "options": dict(self.options),
            "field_id": self.field_id,
        }
        if self.measures:
            out |= {"measures": list(self.measures), "measure_columns": list(self.measure_columns)}
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IndexDefinition:
        options = dict(data.get("options", {}))
        if isinstance(options.get("fpp"), str):  # 0.3.0 stored fpp="0.1" given as text as it came
            options["fpp"] = float(options["fpp"])
        field_id = data.get("field_id")
        return cls(
            str(data["column"]),
            str(data["kind"]),
            options,
            None if field_id is None else int(field_id),
            tuple(int(i) for i in data.get("measures", ())),
            tuple(str(c) for c in data.get("measure_columns", ())),
        )

    def label(self) -> str:
        """``column:kind``, as users see an index named."""
        return f"{self.column}:{self.kind}"

    def same_build(self, other: IndexDefinition) -> bool:
        """Whether ``other`` builds the same blobs (same options and measures: its entries still serve)."""
        return dict(self.options) == dict(other.options) and self.measures == other.measures
