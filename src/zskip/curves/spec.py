"""A clustering spec: which columns, which curve, how each column maps to ranks.

The spec is what optimize records with the table and what the planner reads back: it turns rows
into curve keys, and a query box (per-column key bounds) into curve key intervals, the same way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from zskip.curves.dimension import DimensionMapping
from zskip.curves.hilbert import hilbert_index
from zskip.curves.interleave import z_interleave, z_interleave_widths
from zskip.curves.keys import order_key_u64
from zskip.curves.ranges import curve_key_ranges, curve_key_ranges_of_sets, linear_key
from zskip.curves.rank import RankMapping, RawMapping, mapping_from_json

__all__ = ["CURVES", "MAPPINGS", "ClusteringSpec", "ColumnMapping"]

CURVES = ("hilbert", "zorder", "linear")
MAPPINGS = ("rank", "raw")
# 2: each column carries its Iceberg field id and type (1 named columns only; read through
# ``zskip.tablefiles.clustering_store``, which finds the field ids they meant).  3: columns of unequal
# widths (a weighted curve); a spec of equal widths is still written as version 2, so an older zskip
# reads it, and refuses a weighted one rather than key it as if every column had ``bits``.
SPEC_VERSION = 3
_EQUAL_WIDTHS_VERSION = 2


@dataclass(frozen=True, slots=True)
class ColumnMapping:
    """One clustered column and how its keys become ranks.

    ``field_id`` and ``iceberg_type`` say which column of the table it is and what type its keys
    were computed from; ``name`` is how the table spelled it then (what rows are keyed by, and what
    a user is shown).  ``None``: not known (a spec built outside a table, or written before 0.4).
    """

    name: str
    mapping: RankMapping | RawMapping | DimensionMapping
    field_id: int | None = None
    iceberg_type: str | None = None

    def ranks(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        return self.mapping.ranks(order_key_u64(values))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "mapping": self.mapping.to_json()}
        if self.field_id is not None:
            out["field_id"] = self.field_id
        if self.iceberg_type is not None:
            out["type"] = self.iceberg_type
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ColumnMapping:
        field_id = data.get("field_id")
        return cls(
            str(data["name"]),
            mapping_from_json(data["mapping"]),
            None if field_id is None else int(field_id),
            data.get("type"),
        )


@dataclass(frozen=True, slots=True)
class ClusteringSpec:
    """Columns, curve and mappings; serialisable to JSON for table properties.

    ``bits``: each column's rank width, unless ``widths`` gives each its own (a weighted curve: a
    wider column takes more of every key prefix, see ``zskip.curves.interleave.weighted_bit_order``;
    the zorder and linear curves only).  ``bits`` is then the widest.

    >>> spec = ClusteringSpec(curve="zorder", bits=2, columns=(
    ...     ColumnMapping("a", RawMapping(2)), ColumnMapping("b", RawMapping(2))))
    >>> ClusteringSpec.from_json(spec.to_json()) == spec
    True
    """

    curve: str
    bits: int
    columns: tuple[ColumnMapping, ...]
    version: int = _EQUAL_WIDTHS_VERSION
    widths: tuple[int, ...] | None = None  # None: every column has ``bits``

    def __post_init__(self) -> None:
        if self.curve not in CURVES:
            raise ValueError(f"unknown curve {self.curve!r}: expected one of {', '.join(CURVES)}")
        if not self.columns:
            raise ValueError("a clustering spec needs at least one column")
        if self.widths is None:
            if len(self.columns) * self.bits > 64:
                raise ValueError(f"{len(self.columns)} columns of {self.bits} bits do not fit a 64-bit key")
            return
        widths = tuple(int(w) for w in self.widths)
        if len(widths) != len(self.columns) or min(widths) < 1:
            raise ValueError(f"widths {list(widths)} do not give each of {len(self.columns)} columns its bits")
        if len(set(widths)) == 1:  # not weighted after all: the plain form, so equal specs compare equal
            object.__setattr__(self, "widths", None)
            object.__setattr__(self, "bits", widths[0])
            object.__setattr__(self, "version", min(self.version, _EQUAL_WIDTHS_VERSION))
            return
        if sum(widths) > 64:
            raise ValueError(f"columns of {list(widths)} bits do not fit a 64-bit key")
        for column, width in zip(self.columns, widths, strict=True):
            if column.mapping.bits != width:
                raise ValueError(
                    f"column {column.name!r} is mapped to {column.mapping.bits} bits, not its width {width}"
                )
        if self.curve == "hilbert":
            raise ValueError(
                "columns of unequal widths (weights) need curve='zorder' or 'linear': a Hilbert curve "
                "turns through cubes, every column at the same resolution"
            )
        object.__setattr__(self, "widths", widths)
        object.__setattr__(self, "bits", max(widths))
        object.__setattr__(self, "version", SPEC_VERSION)

    @property
    def column_widths(self) -> tuple[int, ...]:
        """Each column's rank width in bits."""
        return self.widths if self.widths is not None else (self.bits,) * len(self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def field_ids(self) -> tuple[int | None, ...]:
        return tuple(c.field_id for c in self.columns)

    def column_of(self, field_id: int) -> ColumnMapping | None:
        """The clustered column that is field ``field_id``, if any."""
        return next((c for c in self.columns if c.field_id is not None and c.field_id == field_id), None)

    def with_columns(self, columns: Sequence[ColumnMapping]) -> ClusteringSpec:
        """This spec with its columns replaced (same curve, bits and mappings; new names or ids)."""
        return ClusteringSpec(curve=self.curve, bits=self.bits, columns=tuple(columns), widths=self.widths)

    def keys(self, table: pa.Table | Mapping[str, pa.Array | pa.ChunkedArray]) -> np.ndarray:
        """Curve key (``uint64``) of every row of ``table``."""
        ranks = [c.ranks(table[c.name]) for c in self.columns]
        return self.index(ranks)

    def index(self, ranks: Sequence[np.ndarray]) -> np.ndarray:
        if self.curve == "hilbert":
            return hilbert_index(ranks, self.bits)
        if self.curve == "zorder":
            return z_interleave(ranks, self.bits) if self.widths is None else z_interleave_widths(ranks, self.widths)
        return linear_key(ranks, self.column_widths)

    def key_ranges(
        self,
        bounds: Mapping[str, tuple[int | None, int | None]],
        *,
        max_intervals: int | None = 256,
        recorded: np.ndarray | None = None,
    ) -> np.ndarray:
        """Key intervals covering every row whose column keys lie in ``bounds``.

        ``bounds`` maps a column name to inclusive ``(low_key, high_key)`` order keys (``None`` for
        no bound); columns not named are unbounded.  A column mapped through a dimension is bounded
        only by a single key (its coordinates do not follow the key's order).  ``recorded``: the key
        ranges the cover is for (see ``curve_key_ranges``).
        """
        ranks: dict[str, tuple[int | None, int | None]] = {}
        for column in self.columns:
            low_key, high_key = bounds.get(column.name, (None, None))
            if isinstance(column.mapping, DimensionMapping) and (low_key is None or low_key != high_key):
                continue
            ranks[column.name] = (
                None if low_key is None else column.mapping.rank(low_key),
                None if high_key is None else column.mapping.rank(high_key),
            )
        return self.rank_ranges(ranks, max_intervals=max_intervals, recorded=recorded)

    def rank_ranges(
        self,
        ranks: Mapping[str, tuple[int | None, int | None]],
        *,
        max_intervals: int | None = 256,
        recorded: np.ndarray | None = None,
    ) -> np.ndarray:
        """Key intervals covering the box of inclusive per-column rank bounds ``ranks``."""
        lo, hi = [], []
        for column, width in zip(self.columns, self.column_widths, strict=True):
            low, high = ranks.get(column.name, (None, None))
            lo.append(0 if low is None else low)
            hi.append((1 << width) - 1 if high is None else high)
        widths = self.bits if self.widths is None else self.widths
        return curve_key_ranges(self.curve, lo, hi, widths, max_intervals=max_intervals, recorded=recorded)

    def rank_set_ranges(
        self,
        sets: Mapping[str, np.ndarray],
        *,
        max_intervals: int | None = 256,
        recorded: np.ndarray | None = None,
    ) -> np.ndarray:
        """Key intervals covering the points whose rank in each column named in ``sets`` lies in one of
        its inclusive intervals (``(m, 2)``); columns not named are unbounded."""
        full = [np.asarray([[0, (1 << width) - 1]], dtype=np.uint64) for width in self.column_widths]
        chosen = [sets.get(column.name, whole) for column, whole in zip(self.columns, full, strict=True)]
        widths = self.bits if self.widths is None else self.widths
        return curve_key_ranges_of_sets(self.curve, chosen, widths, max_intervals=max_intervals, recorded=recorded)

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "version": self.version,
            "curve": self.curve,
            "bits": self.bits,
            "columns": [c.to_json() for c in self.columns],
        }
        if self.widths is not None:
            data["widths"] = list(self.widths)
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | dict[str, Any]) -> ClusteringSpec:
        data = json.loads(text) if isinstance(text, str) else text
        if int(data.get("version", 0)) > SPEC_VERSION:
            raise ValueError(
                f"clustering spec version {data['version']} is newer than this zskip understands "
                f"({SPEC_VERSION}); upgrade zskip"
            )
        columns = tuple(ColumnMapping.from_json(c) for c in data["columns"])
        widths = data.get("widths")
        return cls(
            curve=data["curve"],
            bits=int(data["bits"]),
            columns=columns,
            version=int(data.get("version", 1)),
            widths=None if widths is None else tuple(int(w) for w in widths),
        )
