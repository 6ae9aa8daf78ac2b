"""Rows reach the Spark partition their cut chooses, through Spark's own hash partitioner."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F

from zskip.layout.cuts import FileCuts
from zskip.layout.routing import partition_tokens, route_column

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("partitions", [1, 7, 64])
def test_each_token_hashes_to_its_partition(spark, partitions: int) -> None:
    tokens = partition_tokens(spark, partitions)
    frame = spark.createDataFrame([(int(t), p) for p, t in enumerate(tokens)], "token long, wanted int")
    placed = frame.repartition(partitions, "token").select("wanted", F.spark_partition_id().alias("got")).collect()
    assert sorted((r["wanted"], r["got"]) for r in placed) == [(p, p) for p in range(partitions)]


def test_rows_land_in_the_partition_of_their_cut(spark) -> None:
    rng = np.random.default_rng(2)
    keys = rng.integers(-(1 << 62), 1 << 62, 5000)
    cuts = FileCuts.choose(keys.view(np.uint64) ^ np.uint64(1 << 63), 5)
    tokens = partition_tokens(spark, 5)
    frame = spark.createDataFrame([(int(k),) for k in keys], "key long")
    routed = frame.withColumn("token", route_column(cuts, tokens, F.col("key"), F.xxhash64("key")))
    placed = routed.repartition(5, "token").select("key", F.spark_partition_id().alias("p")).toPandas()
    by_partition = placed.groupby("p")["key"].agg(["min", "max", "count"]).sort_index()
    assert list(by_partition.index) == [0, 1, 2, 3, 4]
    assert (by_partition["max"].to_numpy()[:-1] < by_partition["min"].to_numpy()[1:]).all()  # ordered, disjoint
    assert by_partition["count"].min() > 300
