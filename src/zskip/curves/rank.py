"""Rank mapping: a column's keys become ``bits``-bit ranks among boundaries drawn from a sample.

Raw keys waste bits on skewed or narrow columns (a column holding 0..9999 as longs varies only in
its lowest 14 of 64 bits, so a z-curve over raw keys barely clusters it).  Ranks spread every
column over the whole ``[0, 2**bits)`` range by its distribution, as Delta's and Bilibili's
sampled range ids do; unlike a random noise byte, the mapping is deterministic and stored, so the
planner maps query literals exactly as optimize mapped values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zskip.curves.dimension import DimensionMapping

__all__ = ["RankMapping", "RawMapping", "bits_for_weights", "bits_per_column", "mapping_from_json"]

MAX_BITS_PER_COLUMN = 32


def bits_per_column(columns: int, *, key_bits: int = 64) -> int:
    """Bits each of ``columns`` columns gets in a ``key_bits``-bit key (at most 32).

    >>> bits_per_column(3)
    21
    """
    if columns < 1:
        raise ValueError("a curve needs at least one column")
    bits = min(MAX_BITS_PER_COLUMN, key_bits // columns)
    if bits < 1:
        raise ValueError(
            f"{columns} columns do not fit a {key_bits}-bit key: each would get "
            f"{key_bits / columns:.2f} bits; cluster by at most {key_bits} columns"
        )
    return bits


def bits_for_weights(weights: Sequence[float], *, key_bits: int = 64) -> tuple[int, ...]:
    """Each column's width for relative ``weights``: in proportion, as many bits as fit a
    ``key_bits``-bit key with no column over 32, every column at least one.  Equal weights give
    ``bits_per_column``'s widths.

    >>> bits_for_weights([1, 1, 1])
    (21, 21, 21)
    >>> bits_for_weights([3, 1])
    (32, 10)
    """
    if not weights:
        raise ValueError("a curve needs at least one column")
    if len(weights) > key_bits:
        bits_per_column(len(weights), key_bits=key_bits)  # raises its message
    if any(not w > 0 for w in weights):
        raise ValueError(f"weights must be positive numbers, not {list(weights)}")
    if len(set(weights)) == 1:
        return (bits_per_column(len(weights), key_bits=key_bits),) * len(weights)
    scale = min(key_bits / sum(weights), MAX_BITS_PER_COLUMN / max(weights))
    widths = [max(1, int(w * scale)) for w in weights]
    while sum(widths) > key_bits:  # the one-bit floors of tiny weights took bits from the rest
        widest = widths.index(max(widths))
        widths[widest] -= 1
    return tuple(widths)


@dataclass(frozen=True, slots=True)
class RankMapping:
    """Maps order-preserving ``uint64`` keys to ranks in ``[0, 2**bits)``, monotonically.

    A key's rank is the number of boundaries at or below it, scaled so the largest rank uses the
    top of the range.  Equal keys get equal ranks and a larger key never gets a smaller rank.
    """

    bits: int
    boundaries: tuple[int, ...]

    @classmethod
    def fit(cls, sample_keys: np.ndarray, bits: int, *, max_boundaries: int | None = None) -> RankMapping:
        """Boundaries from a sample: every distinct key when they fit, else evenly spaced quantiles.

        ``max_boundaries`` caps the count (and so the size of the stored spec) below ``2**bits - 1``;
        ranks still span the whole ``[0, 2**bits)`` range.
        """
        if not 1 <= bits <= MAX_BITS_PER_COLUMN:
            raise ValueError(f"bits must be in [1, {MAX_BITS_PER_COLUMN}], got {bits}")
        ordered = np.sort(np.asarray(sample_keys, dtype=np.uint64))
        distinct = np.unique(ordered)
        capacity = (1 << bits) - 1
        if max_boundaries is not None:
            capacity = max(1, min(capacity, max_boundaries))
        if len(distinct) <= capacity:
            chosen = distinct
        else:
            # Quantiles of the sample (duplicates included), so a heavy value takes the ranks its
            # frequency earns and the tail is not starved.
            positions = (np.arange(1, capacity + 1, dtype=np.float64) * len(ordered) / (capacity + 1)).astype(np.int64)
            chosen = np.unique(ordered[positions])
        return cls(bits=bits, boundaries=tuple(int(b) for b in chosen))

    def ranks(self, keys: np.ndarray) -> np.ndarray:
        """Ranks (``uint64``) of ``keys``."""
        bounds = np.asarray(self.boundaries, dtype=np.uint64)
        position = np.searchsorted(bounds, np.asarray(keys, dtype=np.uint64), side="right").astype(np.uint64)
        return (position << np.uint64(self.bits)) // np.uint64(len(bounds) + 1)

    def rank(self, key: int) -> int:
        """Rank of one key (for query literals)."""
        return int(self.ranks(np.asarray([key], dtype=np.uint64))[0])

    def to_json(self) -> dict[str, Any]:
        return {"kind": "rank", "bits": self.bits, "boundaries": [str(b) for b in self.boundaries]}


@dataclass(frozen=True, slots=True)
class RawMapping:
    """Maps ``uint64`` keys to ``bits`` bits of the value itself, in proportion: no sample of ranks.

    ``width`` is the type's natural size (32 for int and date, 8 for byte, 1 for boolean, 64 for
    the rest): an int's key varies only in its low 32 bits.  ``low`` and ``span`` place the bits
    on the values the column holds: the value minus ``low`` (clamped to ``[0, 2**span)``), top
    ``bits`` of its ``span`` bits.  A long column holding money up to 2**26 spans 26 bits, not 64;
    taking the top bits of 64 would give every row the same key.  The defaults (``low`` 0, ``span``
    ``width``) are the type's whole range.
    """

    bits: int
    width: int = 64
    low: int = 0
    span: int | None = None  # None: the whole width

    @classmethod
    def fit(cls, keys: np.ndarray, valid: np.ndarray | None, bits: int, width: int = 64) -> RawMapping:
        """Place the bits on the range of the non-null ``keys`` (``valid``: which are not null)."""
        whole = cls(bits=bits, width=width)
        values = whole._offsets(np.asarray(keys, dtype=np.uint64))
        if valid is not None:
            values = values[np.asarray(valid, dtype=bool)]
        if values.size == 0:
            return whole
        low, high = int(values.min()), int(values.max())
        return cls(bits=bits, width=width, low=low, span=max(1, (high - low).bit_length()))

    def _offsets(self, keys: np.ndarray) -> np.ndarray:
        """Keys as offsets into the type's ``width``-bit range (nulls, key 0, clamp to 0)."""
        if self.width >= 64:
            return keys
        base = np.uint64((1 << 63) - (1 << (self.width - 1))) if self.width > 1 else np.uint64(1 << 63)
        top = np.uint64((1 << self.width) - 1)
        return np.minimum(np.where(keys < base, base, keys) - base, top)

    def ranks(self, keys: np.ndarray) -> np.ndarray:
        keys = self._offsets(np.asarray(keys, dtype=np.uint64))
        span = self.width if self.span is None else self.span
        if self.low or span < 64:
            low = np.uint64(self.low)
            keys = np.where(keys < low, low, keys) - low
            if span < 64:
                keys = np.minimum(keys, np.uint64((1 << span) - 1))
        if span >= self.bits:
            return keys >> np.uint64(span - self.bits)
        return keys << np.uint64(self.bits - span)

    def rank(self, key: int) -> int:
        return int(self.ranks(np.asarray([key], dtype=np.uint64))[0])

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": "raw", "bits": self.bits, "width": self.width}
        if self.span is not None:
            data |= {"low": str(self.low), "span": self.span}
        return data


def mapping_from_json(data: dict[str, Any] | str) -> RankMapping | RawMapping | DimensionMapping:
    """Inverse of ``to_json`` (accepts the dict or its JSON text)."""
    if isinstance(data, str):
        data = json.loads(data)
    assert isinstance(data, dict)
    if data["kind"] == "dimension":
        return DimensionMapping.from_json(data)
    if data["kind"] == "rank":
        return RankMapping(bits=int(data["bits"]), boundaries=tuple(int(b) for b in data["boundaries"]))
    if data["kind"] == "raw":
        span = data.get("span")
        return RawMapping(
            bits=int(data["bits"]),
            width=int(data.get("width", 64)),
            low=int(data.get("low", 0)),
            span=None if span is None else int(span),
        )
    raise ValueError(f"unknown mapping kind {data['kind']!r}")
