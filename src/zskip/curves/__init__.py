"""Space-filling-curve keys: order-preserving encodings, rank mapping, Z-order, Hilbert, key ranges.

Pure numpy and pyarrow; nothing here needs Spark.
"""

from __future__ import annotations

from zskip.curves.dimension import DimensionMapping
from zskip.curves.hilbert import hilbert_index, hilbert_inverse
from zskip.curves.interleave import interleave_bytes, z_deinterleave, z_interleave, zorder_raw
from zskip.curves.keys import UnsupportedTypeError, key_width, order_key_bytes, order_key_u64, supports
from zskip.curves.ranges import (
    cap_intervals,
    curve_key_ranges,
    curve_key_ranges_of_sets,
    intersect_intervals,
    linear_key,
    merge_intervals,
    point_intervals,
)
from zskip.curves.rank import RankMapping, RawMapping, bits_for_weights, bits_per_column, mapping_from_json
from zskip.curves.spec import CURVES, MAPPINGS, ClusteringSpec, ColumnMapping

__all__ = [
    "CURVES",
    "MAPPINGS",
    "ClusteringSpec",
    "ColumnMapping",
    "DimensionMapping",
    "RankMapping",
    "RawMapping",
    "UnsupportedTypeError",
    "bits_for_weights",
    "bits_per_column",
    "cap_intervals",
    "curve_key_ranges",
    "curve_key_ranges_of_sets",
    "hilbert_index",
    "hilbert_inverse",
    "interleave_bytes",
    "intersect_intervals",
    "key_width",
    "linear_key",
    "mapping_from_json",
    "merge_intervals",
    "order_key_bytes",
    "order_key_u64",
    "point_intervals",
    "supports",
    "z_deinterleave",
    "z_interleave",
    "zorder_raw",
]
