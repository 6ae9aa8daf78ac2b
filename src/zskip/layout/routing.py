"""Sending each row to the Spark partition (and so the output file) its curve key chooses.

``repartition(n, column)`` places a row in partition ``pmod(hash(column), n)``.  For each partition
``p`` zskip finds a small number whose Spark hash lands in ``p`` and gives that number to every row
routed to ``p``, so the cuts decide the files exactly while the shuffle stays Spark's own (no
sampling job of its own, unlike ``repartitionByRange``, which computes every row's key twice).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from zskip.iceberg.frames import collect_arrow
from zskip.layout.curve_keys import SIGN
from zskip.layout.cuts import FileCuts

__all__ = ["partition_tokens", "route_column"]


def partition_tokens(spark: SparkSession, partitions: int) -> np.ndarray:
    """For each partition ``p`` of ``partitions``, a ``bigint`` whose ``pmod(hash(x), partitions)`` is ``p``."""
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


def route_column(cuts: FileCuts, tokens: np.ndarray, key: Column, tie: Column) -> Column:
    """The partition token of each row, from its signed curve ``key`` and a ``bigint`` row hash ``tie``."""
    if len(tokens) != cuts.files:
        raise ValueError(f"{len(tokens)} partition tokens for {cuts.files} files")

    @F.pandas_udf("long")  # type: ignore[call-overload]
    def route(keys: pd.Series, ties: pd.Series) -> pd.Series:
        unsigned = keys.to_numpy(dtype=np.int64).view(np.uint64) ^ SIGN
        u = ties.to_numpy(dtype=np.int64).view(np.uint64) / float(1 << 64)
        return pd.Series(tokens[cuts.route(unsigned, np.minimum(u, 1 - 2**-53))])

    return route(key, tie)
