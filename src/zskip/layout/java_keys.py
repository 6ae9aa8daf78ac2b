"""Curve keys and file routes as Java UDFs: a spec (and a group's cuts) packed for ``CurveKeys.java``.

The JVM computes the same keys as ``ClusteringSpec.keys`` and the same files as ``FileCuts.route``
(tests/integration/test_java_keys.py compares them), without sending rows to a Python worker.  A
column whose carrier is a wide decimal (precision over 18) has no JVM key: specs with one keep the
pandas UDF of ``zskip.layout.curve_keys``.

The payload is a sequence of big-endian 64-bit words::

    version, curve, bits, columns,
    weighted key bits (0: every column has ``bits``), then per key bit from the top the column it
    comes from and that bit's shift in the column's rank (``weighted_bit_order``),
    per column: carrier, mapping, mapping bits, then
        rank:      n, n boundaries
        raw:       width, low, span
        dimension: n, n keys ascending, the rank of each, the rank of a key not recorded
    cuts, the cut keys, the cut scales (run * 2.0 + fraction, as double bits), the cut runs,
    cuts + 1 partition tokens
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, LongType, StructField, StructType

from zskip.curves import ClusteringSpec, DimensionMapping, RankMapping, RawMapping
from zskip.curves.interleave import weighted_bit_order
from zskip.iceberg.java_udfs import java_udf_column
from zskip.layout.curve_keys import carrier_value, curve_key_column
from zskip.layout.cuts import FileCuts

__all__ = ["java_key_column", "java_route_column", "key_column", "payload", "supported"]

VERSION = 2
_CARRIERS = {"long": 0, "double": 1, "bytes": 2}
_CURVES = {"hilbert": 0, "zorder": 1, "linear": 2}
_ROUTE_TYPE = StructType([StructField("key", LongType(), False), StructField("token", LongType(), False)])


def supported(spec: ClusteringSpec, types: Mapping[str, DataType]) -> bool:
    """Whether the JVM computes this spec's keys (every column's carrier is a long, double or bytes)."""
    return all(carrier_value(c.name, types[c.name])[1].kind in _CARRIERS for c in spec.columns)


def java_key_column(spark: SparkSession, spec: ClusteringSpec, types: Mapping[str, DataType]) -> Column:
    """A ``bigint`` column of each row's signed curve key, computed in the JVM."""
    data = payload(spec, types, FileCuts(np.zeros(0, np.uint64), np.zeros(0, np.float64)), np.zeros(1, np.int64))
    return java_udf_column(spark, "CurveKeys$Key", data, [_carriers(spec, types)], LongType())


def java_route_column(
    spark: SparkSession,
    spec: ClusteringSpec,
    types: Mapping[str, DataType],
    cuts: FileCuts,
    tokens: np.ndarray,
    tie: Column,
) -> Column:
    """A struct of each row's signed curve ``key`` and its file's partition ``token``, computed in the JVM."""
    data = payload(spec, types, cuts, tokens)
    return java_udf_column(spark, "CurveKeys$Route", data, [_carriers(spec, types), tie], _ROUTE_TYPE)


def _carriers(spec: ClusteringSpec, types: Mapping[str, DataType]) -> Column:
    return F.struct(*[carrier_value(c.name, types[c.name])[0] for c in spec.columns])


def payload(spec: ClusteringSpec, types: Mapping[str, DataType], cuts: FileCuts, tokens: np.ndarray) -> bytes:
    """The words ``CurveKeys.java`` reads: the spec, the cuts and one token per file."""
    if len(tokens) != cuts.files:
        raise ValueError(f"{len(tokens)} partition tokens for {cuts.files} files")
    words: list[np.ndarray | list[int]] = [[VERSION, _CURVES[spec.curve], spec.bits, len(spec.columns)]]
    if spec.widths is None:
        words.append([0])
    else:
        order = weighted_bit_order(spec.widths)
        words += [
            [len(order)],
            [column for column, _ in order],
            [spec.widths[column] - 1 - bit for column, bit in order],
        ]
    for column in spec.columns:
        kind = carrier_value(column.name, types[column.name])[1].kind
        if kind not in _CARRIERS:
            raise ValueError(f"column {column.name!r} has no JVM curve key (carrier {kind})")
        mapping = column.mapping
        if isinstance(mapping, RankMapping):
            boundaries = np.asarray(mapping.boundaries, dtype=np.uint64)
            words += [[_CARRIERS[kind], 0, mapping.bits, len(boundaries)], boundaries]
        elif isinstance(mapping, RawMapping):
            span = mapping.width if mapping.span is None else mapping.span
            words += [[_CARRIERS[kind], 1, mapping.bits, mapping.width], np.asarray([mapping.low], np.uint64), [span]]
        elif isinstance(mapping, DimensionMapping):
            keys = np.sort(mapping.keys, kind="stable")
            orphan = mapping.coordinate_ranks(np.asarray([mapping.orphan], dtype=np.int64))
            words += [[_CARRIERS[kind], 2, mapping.bits, len(keys)], keys, mapping.ranks(keys), orphan]
        else:  # pragma: no cover - the spec's mapping union is closed
            raise TypeError(f"unknown mapping {type(mapping).__name__}")
    scales = np.asarray(cuts.scales(), dtype=np.float64)
    words += [[len(cuts.keys)], cuts.keys, scales.view(np.uint64), cuts.runs(), np.asarray(tokens, np.int64)]
    return b"".join(_big_endian(part) for part in words)


def _big_endian(part: np.ndarray | list[int]) -> bytes:
    array = np.asarray(part)
    if array.dtype != np.uint64:
        array = array.astype(np.int64).view(np.uint64)
    return array.astype(">u8").tobytes()


def key_column(spark: SparkSession, spec: ClusteringSpec, types: Mapping[str, DataType]) -> Column:
    """Each row's signed curve key: in the JVM when it can key every column, else by a pandas UDF."""
    if supported(spec, types):
        return java_key_column(spark, spec, types)
    return curve_key_column(spec, types)
