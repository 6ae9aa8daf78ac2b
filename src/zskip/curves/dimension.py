"""Dimension mapping: a foreign key's coordinate is its row's position in the dimension sorted by a hierarchy.

A fact table clustered on ``lo_custkey`` through ``customer`` ordered by ``(c_region, c_nation,
c_city)`` places the facts of one region, one nation or one city next to each other on that axis
of the curve: each level of the hierarchy is a contiguous run of coordinates.  The mapping holds
the dimension's keys in coordinate order (as order keys, see ``zskip.curves.keys``), recorded when
optimize ran; a query maps the keys its dimension filter matches through this record, never through
the dimension's attributes of today, so a dimension that changed since cannot mislead the planner.

Keys the record does not hold (NULL foreign keys, keys added to the dimension later, orphans) all
get one coordinate of their own, ``ORPHAN`` = one past the last dimension row.

Coordinates become the curve's ranks in one of two ways.  With the hierarchy's group boundaries
recorded (``levels``, what optimize records since 0.4), the rank is built level by level: the
group's number within its parent at each level, each level in as many bits as its largest family
needs, the row's place within its finest group last.  Every group at every
level then fills one aligned block of ranks (``c_region = 'ASIA'`` is one cell of the curve's top
bits, not a run straddling two), so a curve cuts along the hierarchy and a filter on one level
reads the files of that group only.  The coarsest level keeps one spare number for orphans, so
their rank sits above every recorded key's.  Without ``levels`` (specs written before) the
coordinates are spread over the rank range in proportion, as they were then.
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
    levels: tuple[np.ndarray, ...] = ()
    # the dimension's key and ``by`` columns as field ids of its table (``None``: not recorded, before 0.4)
    key_field_id: int | None = None
    by_field_ids: tuple[int, ...] | None = None
    _sorted: np.ndarray = field(init=False, repr=False)
    _order: np.ndarray = field(init=False, repr=False)
    _ranks: np.ndarray | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        keys = np.ascontiguousarray(self.keys, dtype=np.uint64)
        object.__setattr__(self, "keys", keys)
        order = np.argsort(keys, kind="stable")  # stable: a duplicated key keeps its first coordinate
        object.__setattr__(self, "_sorted", keys[order])
        object.__setattr__(self, "_order", order.astype(np.int64))
        levels = tuple(np.ascontiguousarray(level, dtype=np.int64) for level in self.levels)
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "_ranks", hierarchy_ranks(levels, len(keys), self.bits) if levels else None)

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
        if self._ranks is not None:
            return self._ranks[np.minimum(np.asarray(coords, dtype=np.int64), self.orphan)]
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
        packed = _pack(self.keys.astype("<u8"))
        levels = {"levels": [_pack(level.astype("<i8")) for level in self.levels]} if self.levels else {}
        return {
            "kind": "dimension",
            "bits": self.bits,
            "table": self.table,
            "key": self.key,
            "by": list(self.by),
            "snapshot_id": None if self.snapshot_id is None else str(self.snapshot_id),
            "rows": len(self.keys),
            "keys": packed,
            **levels,
            **({"key_field_id": self.key_field_id} if self.key_field_id is not None else {}),
            **({"by_field_ids": list(self.by_field_ids)} if self.by_field_ids is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DimensionMapping:
        keys = _unpack(data["keys"], "<u8").astype(np.uint64)
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
            levels=tuple(_unpack(level, "<i8").astype(np.int64) for level in data.get("levels", ())),
            key_field_id=None if data.get("key_field_id") is None else int(data["key_field_id"]),
            by_field_ids=None if data.get("by_field_ids") is None else tuple(int(i) for i in data["by_field_ids"]),
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
        ) and (
            np.array_equal(self.keys, other.keys)
            and len(self.levels) == len(other.levels)
            and all(np.array_equal(a, b) for a, b in zip(self.levels, other.levels, strict=True))
        )

    def __hash__(self) -> int:
        return hash((self.bits, self.table, self.key, self.by, self.snapshot_id, len(self.keys)))

    def same_dimension(
        self,
        table: str,
        key: str,
        by: tuple[str, ...],
        *,
        key_field_id: int | None = None,
        by_field_ids: tuple[int, ...] | None = None,
    ) -> bool:
        """Whether this mapping records ``table`` through ``key``, ordered by ``by``: the same field ids
        where both sides know them (a renamed dimension column is the same column), else the same names
        (case-insensitive, as recorded before field ids)."""
        if self.table.lower() != table.lower():
            return False
        if self.key_field_id is not None and key_field_id is not None and self.by_field_ids is not None:
            return self.key_field_id == key_field_id and self.by_field_ids == by_field_ids
        return self.key.lower() == key.lower() and [b.lower() for b in self.by] == [b.lower() for b in by]


def _pack(values: np.ndarray) -> str:
    return base64.b64encode(zlib.compress(values.tobytes(), 6)).decode()


def _unpack(text: str, dtype: str) -> np.ndarray:
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype)


def _bits_for(count: int) -> int:
    """Bits that number ``count`` things (0 for one thing)."""
    return max(int(count) - 1, 0).bit_length()


def hierarchy_ranks(levels: tuple[np.ndarray, ...], rows: int, bits: int) -> np.ndarray:
    """Rank in ``[0, 2**bits)`` of each coordinate ``0 .. rows`` (the last: the orphan coordinate).

    ``levels[i]``: the coordinates where a group of level ``i`` starts (coarsest level first, each
    starting with 0); a finer level's groups nest in the coarser ones'.  A coordinate's code is the
    number of its group within its parent at each level, then its place in its finest group; each
    part takes as many bits as its largest family needs.  A code longer than ``bits`` loses its
    lowest bits (order kept, coarse groups still aligned); a shorter one is shifted to the top.

    >>> hierarchy_ranks((np.array([0, 3]),), 5, 4).tolist()  # groups of 3 and 2 rows, orphan above
    [0, 1, 2, 4, 5, 8]
    """
    if rows == 0:
        return np.zeros(1, dtype=np.uint64)
    positions = np.arange(rows, dtype=np.int64)
    parts: list[tuple[np.ndarray, int]] = []  # (code of each row, its width in bits)
    parent_starts = np.zeros(1, dtype=np.int64)
    for depth, given in enumerate(levels):
        starts = np.union1d(given[(given >= 0) & (given < rows)], parent_starts)  # nested, starts at 0
        parent = np.searchsorted(parent_starts, starts, side="right") - 1  # each group's parent group
        first_child = np.searchsorted(parent, np.arange(len(parent_starts)), side="left")
        number = np.arange(len(starts)) - first_child[parent]  # the group's number within its parent
        spare = 1 if depth == 0 else 0  # the coarsest level's spare number: the orphan group
        width = _bits_for(int(number.max()) + 1 + spare)
        group = np.searchsorted(starts, positions, side="right") - 1
        parts.append((number[group], width))
        parent_starts = starts
    group = np.searchsorted(parent_starts, positions, side="right") - 1
    place = positions - parent_starts[group]
    parts.append((place, _bits_for(int(place.max()) + 1)))
    total = sum(width for _, width in parts)
    wide = total > 63  # then codes are Python ints until they are cut to ``bits``
    code = np.zeros(rows + 1, dtype=object if wide else np.int64)
    shift = total
    for values, width in parts:
        shift -= width
        code[:rows] += values.astype(code.dtype) << shift if not wide else [int(v) << shift for v in values]
    code[rows] = (int(parts[0][0].max()) + 1) << (total - parts[0][1])  # the orphan group
    if wide:
        return np.array([int(c) >> max(total - bits, 0) << max(bits - total, 0) for c in code], dtype=np.uint64)
    if total > bits:
        return (code >> (total - bits)).astype(np.uint64)
    return code.astype(np.uint64) << np.uint64(bits - total)
