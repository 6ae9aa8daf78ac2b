"""The kinds of index zskip builds, and the options each takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from zskip.errors import InvalidOptionError
from zskip.fileindex.bloom import DEFAULT_FPP

__all__ = ["KINDS", "IndexDefinition", "blob_type"]

KINDS = ("bloom", "bitmap")


def blob_type(kind: str) -> str:
    return f"zskip-{kind}-v1"


@dataclass(frozen=True)
class IndexDefinition:
    """An index a user asked for: one column, one kind, its options (``fpp`` for bloom).

    ``field_id`` is the column's Iceberg field id, what the index is of; ``column`` is how the table
    spelled it when the index was defined (shown to users).  ``None``: not known (a manifest written
    before 0.4 whose name could not be tied to one field: such an index is never used).
    """

    column: str
    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)
    field_id: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise InvalidOptionError(f"index kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        allowed = {"bloom": {"fpp"}, "bitmap": set()}[self.kind]
        unknown = set(self.options) - allowed
        if unknown:
            takes = ", ".join(sorted(allowed)) or "no options"
            raise InvalidOptionError(f"a {self.kind} index takes {takes}, not {', '.join(sorted(unknown))}")
        fpp = self.options.get("fpp")
        if fpp is not None and (isinstance(fpp, bool) or not isinstance(fpp, (int, float))):
            raise InvalidOptionError(
                f"fpp (the bloom filter's false-positive rate) must be a number such as 0.01, not {fpp!r}"
            )
        if fpp is not None and not 0 < float(fpp) < 1:
            raise InvalidOptionError(f"fpp (the bloom filter's false-positive rate) must be in (0, 1), got {fpp}")

    @property
    def fpp(self) -> float:
        return float(self.options.get("fpp", DEFAULT_FPP))

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column, "kind": self.kind, "options": dict(self.options), "field_id": self.field_id}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IndexDefinition:
        options = dict(data.get("options", {}))
        if isinstance(options.get("fpp"), str):  # 0.3.0 stored fpp="0.1" given as text as it came
            options["fpp"] = float(options["fpp"])
        field_id = data.get("field_id")
        return cls(str(data["column"]), str(data["kind"]), options, None if field_id is None else int(field_id))

    def label(self) -> str:
        """``column:kind``, as users see an index named."""
        return f"{self.column}:{self.kind}"
