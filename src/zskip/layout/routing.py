"""Sending each row to the Spark partition (and so the output file) its curve key chooses.

``repartition(n, column)`` places a row in partition ``pmod(hash(column), n)``.  For each partition
``p`` zskip finds a small number whose Spark hash lands in ``p`` and gives that number to every row
routed to ``p``, so the cuts decide the files exactly while the shuffle stays Spark's own (no
sampling job of its own, unlike ``repartitionByRange``, which computes every row's key twice).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from zskip.curves import ClusteringSpec
from zskip.iceberg.frames import collect_arrow
from zskip.layout import java_keys
from zskip.layout.curve_keys import curve_key_inputs, signed_key
from zskip.layout.cuts import FileCuts

__all__ = ["U_BITS", "keyed_route_column", "pandas_route_column", "partition_tokens"]

# A row hash becomes ``u`` in [0, 1) (which splits a key too heavy for one file) from its top
# ``U_BITS`` bits: exact in a double, so the same hash always routes the same way.
U_BITS = 53


# (Spark version, partitions) -> tokens: the hash is fixed per version, and finding tokens is a Spark
# job (0.15-0.3 s warm) that every rewritten group of every optimize would otherwise repeat.
_TOKENS: dict[tuple[str, int], np.ndarray] = {}


def partition_tokens(spark: SparkSession, partitions: int) -> np.ndarray:
    """For each partition ``p`` of ``partitions``, a ``bigint`` whose ``pmod(hash(x), partitions)`` is ``p``."""
    known = _TOKENS.get((spark.version, partitions))
    if known is None:
        known = _TOKENS.setdefault((spark.version, partitions), _find_tokens(spark, partitions))
    return known.copy()


def _find_tokens(spark: SparkSession, partitions: int) -> np.ndarray:
    tokens = np.full(partitions, -1, dtype=np.int64)
    span = 16 * partitions
    start = 0
    while (tokens < 0).any():
        # Spark computes the hash, so the tokens match its partitioner whatever its version does.
        found = collect_arrow(
            spark.range(start, start + span)
            .selectExpr("id", f"pmod(hash(id), {partitions}) AS p")
            .groupBy("p")
            .min("id")
        )
        for p, token in zip(found.column(0).to_pylist(), found.column(1).to_pylist(), strict=True):
            if tokens[p] < 0:
                tokens[p] = token
        start += span
    return tokens


def keyed_route_column(
    spark: SparkSession,
    spec: ClusteringSpec,
    types: Mapping[str, DataType],
    cuts: FileCuts,
    tokens: np.ndarray,
    tie: Column,
) -> Column:
    """A struct of each row's signed curve ``key`` and its partition ``token``, computed by one UDF:
    a Java UDF when the JVM can key every column (``zskip.layout.java_keys``), else a pandas UDF."""
    if len(tokens) != cuts.files:
        raise ValueError(f"{len(tokens)} partition tokens for {cuts.files} files")
    if java_keys.supported(spec, types):
        return java_keys.java_route_column(spark, spec, types, cuts, tokens, tie)
    return pandas_route_column(spec, types, cuts, tokens, tie)


def pandas_route_column(
    spec: ClusteringSpec, types: Mapping[str, DataType], cuts: FileCuts, tokens: np.ndarray, tie: Column
) -> Column:
    """``keyed_route_column`` as a pandas UDF: one Python round trip per batch for key and route."""
    arguments, codec = curve_key_inputs(spec, types)

    @F.pandas_udf("key long, token long")  # type: ignore[call-overload]
    def key_and_route(*series: pd.Series) -> pd.DataFrame:
        keys = codec.keys(series[: codec.width])
        return pd.DataFrame({"key": signed_key(keys), "token": _tokens_of(cuts, tokens, keys, series[codec.width])})

    return key_and_route(*arguments, tie)


def _tokens_of(cuts: FileCuts, tokens: np.ndarray, keys: np.ndarray, ties: pd.Series) -> np.ndarray:
    """The partition token of each row's file, from its unsigned curve key and signed row hash."""
    top = ties.to_numpy(dtype=np.int64).view(np.uint64) >> np.uint64(64 - U_BITS)
    return tokens[cuts.route(keys, top.astype(np.float64) / float(1 << U_BITS))]
