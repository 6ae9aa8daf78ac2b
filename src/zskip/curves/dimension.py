"""Dimension mapping: a foreign key's coordinate is its row's position in the dimension sorted by a hierarchy.

A fact table clustered on ``lo_custkey`` through ``customer`` ordered by ``(c_region, c_nation,
c_city)`` places the facts of one region, one nation or one city next to each other on that axis
of the curve: each level of the hierarchy is a contiguous run of coordinates.  The mapping holds
the dimension's keys in coordinate order (as order keys, see ``zskip.curves.keys``), recorded when
optimize ran; a query maps the keys its dimension filter matches through this record, never through
the dimension's attributes of today, so a dimension that changed since cannot mislead the planner.

Keys the record does not hold (NULL foreign keys, keys added to the dimension later, orphans) all
get one coordinate of their own, ``ORPHAN`` = one past the last dimension row.
"""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DimensionMapping"]


@dataclass(frozen=True, eq=False)
class DimensionMapping:
    """Foreign-key order keys to ranks in ``[0, 2**bits)`` through the recorded dimension order.

    ``keys``: the dimension's key column as ``uint64`` order keys, in coordinate order (the
    dimension sorted by ``by`` and then by key).  A key listed twice takes its first coordinate.

    >>> m = DimensionMapping(bits=2, table="db.dim", key="k", by=("region",), keys=np.array([30, 10, 20], np.uint64))
    >>> m.coordinates(np.array([10, 20, 30, 99], np.uint64)).tolist()
    [1, 2, 0, 3]
    """

    bits: int
    table: str
    key: str
    by: tuple[str, ...]
    keys: np.ndarray
    snapshot_id: int | None = None
    _sorted: np.ndarray = field(init=False, repr=False)
    _order: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        keys = np.ascontiguousarray(self.keys, dtype=np.uint64)
        object.__setattr__(self, "keys", keys)
        order = np.argsort(keys, kind="stable")  # stable: a duplicated key keeps its first coordinate
        object.__setattr__(self, "_sorted", keys[order])
        object.__setattr__(self, "_order", order.astype(np.int64))

    @property
    def orphan(self) -> int:
        """The coordinate of keys the record does not hold (NULL, unknown or added later)."""
        return len(self.keys)

    def coordinates(self, keys: np.ndarray) -> np.ndarray:
        """Coordinate (``int64``) of each foreign-key order key; ``orphan`` where the record lacks it."""
        keys = np.asarray(keys, dtype=np.uint64)
        if len(self._sorted) == 0:
            return np.full(len(keys), self.orphan, dtype=np.int64)
        at = np.searchsorted(self._sorted, keys, side="left")
        inside = at < len(self._sorted)
        found = np.zeros(len(keys), dtype=bool)
        found[inside] = self._sorted[at[inside]] == keys[inside]
        coords = np.full(len(keys), self.orphan, dtype=np.int64)
        coords[found] = self._order[at[found]]
        return coords

    def coordinate_ranks(self, coords: np.ndarray) -> np.ndarray:
        """Ranks of coordinates ``0 .. orphan``: spread over the whole range, order kept."""
        coords = np.asarray(coords, dtype=np.uint64)
        # (orphan + 1) coordinates share 2**bits ranks in proportion; exact in Python ints for any size
        slots = np.uint64(self.orphan + 1)
        if self.bits + int(slots).bit_length() <= 64:
            return (coords << np.uint64(self.bits)) // slots
        return np.array([(int(c) << self.bits) // int(slots) for c in coords], dtype=np.uint64)

    def ranks(self, keys: np.ndarray) -> np.ndarray:
        return self.coordinate_ranks(self.coordinates(keys))

    def rank(self, key: int) -> int:
        return int(self.ranks(np.asarray([key], dtype=np.uint64))[0])

    def to_json(self) -> dict[str, Any]:
        packed = base64.b64encode(zlib.compress(self.keys.astype("<u8").tobytes(), 6)).decode()
        return {
            "kind": "dimension",
            "bits": self.bits,
            "table": self.table,
            "key": self.key,
            "by": list(self.by),
            "snapshot_id": None if self.snapshot_id is None else str(self.snapshot_id),
            "rows": len(self.keys),
            "keys": packed,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DimensionMapping:
        raw = zlib.decompress(base64.b64decode(data["keys"]))
        keys = np.frombuffer(raw, dtype="<u8").astype(np.uint64)
        if len(keys) != int(data["rows"]):
            table, rows = data["table"], data["rows"]
            raise ValueError(f"dimension mapping of {table}: {len(keys)} keys recorded, {rows} expected")
        snapshot = data.get("snapshot_id")
        return cls(
            bits=int(data["bits"]),
            table=str(data["table"]),
            key=str(data["key"]),
            by=tuple(data["by"]),
            keys=keys,
            snapshot_id=None if snapshot is None else int(snapshot),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DimensionMapping):
            return NotImplemented
        return (self.bits, self.table, self.key, self.by, self.snapshot_id) == (
            other.bits,
            other.table,
            other.key,
            other.by,
            other.snapshot_id,
        ) and np.array_equal(self.keys, other.keys)

    def __hash__(self) -> int:
        return hash((self.bits, self.table, self.key, self.by, self.snapshot_id, len(self.keys)))

    def same_dimension(self, table: str, key: str, by: tuple[str, ...]) -> bool:
        """Whether this mapping records ``table`` through ``key``, ordered by ``by`` (names case-insensitive)."""
        return (
            self.table.lower() == table.lower()
            and self.key.lower() == key.lower()
            and [b.lower() for b in self.by] == [b.lower() for b in by]
        )
