"""A clustering spec fitted on a sample of the table: rank boundaries or raw widths per column.

Optimize fits the spec it writes by; the advisor fits every candidate layout the same way on its own
sample, so what it simulates is what optimize would write.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
from pyspark.sql.types import BooleanType, ByteType, DataType, DateType, IntegerType, ShortType

from zskip.curves import (
    ClusteringSpec,
    ColumnMapping,
    DimensionMapping,
    RankMapping,
    RawMapping,
    order_key_u64,
)

__all__ = ["MAX_BOUNDARIES", "SAMPLE_ROWS", "raw_width", "spec_from_sample"]

SAMPLE_ROWS = 200_000  # rows sampled to fit a spec
MAX_BOUNDARIES = 4096  # rank boundaries kept per column


def spec_from_sample(
    sample: pa.Table,
    types: Mapping[str, DataType],
    *,
    curve: str,
    mapping: str,
    bits: int | Mapping[str, int],
    fixed: Mapping[str, DimensionMapping] | None = None,
) -> ClusteringSpec:
    """The spec clustering ``types``' columns (in order) along ``curve``, each column mapped by
    ``mapping`` fitted on ``sample``'s values, except the columns ``fixed`` maps already.  ``bits``:
    every column's rank width, or each one's (a weighted curve)."""
    fixed = fixed or {}
    widths = {column: bits for column in types} if isinstance(bits, int) else dict(bits)
    mappings = []
    for column, dtype in types.items():
        width = widths[column]
        fitted: RankMapping | RawMapping | DimensionMapping
        if column in fixed:
            fitted = fixed[column]
        else:
            keys = order_key_u64(sample[column]) if sample.num_rows else np.zeros(0, np.uint64)
            if mapping == "raw":
                valid = sample[column].is_valid().to_numpy(zero_copy_only=False) if sample.num_rows else None
                fitted = RawMapping.fit(keys, valid, width, raw_width(dtype))
            else:
                fitted = RankMapping.fit(keys, width, max_boundaries=MAX_BOUNDARIES)
        mappings.append(ColumnMapping(column, fitted))
    column_widths = tuple(widths[column] for column in types)
    weighted = len(set(column_widths)) > 1
    return ClusteringSpec(
        curve=curve, bits=max(column_widths), columns=tuple(mappings), widths=column_widths if weighted else None
    )


def raw_width(dtype: DataType) -> int:
    """Bits a value of ``dtype`` really spans in its 64-bit key (see ``RawMapping``)."""
    if isinstance(dtype, BooleanType):
        return 1
    if isinstance(dtype, ByteType):
        return 8
    if isinstance(dtype, ShortType):
        return 16
    if isinstance(dtype, (IntegerType, DateType)):
        return 32
    return 64
