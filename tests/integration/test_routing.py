"""Rows reach the Spark partition their cut chooses, through Spark's own hash partitioner."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from zskip.curves import ClusteringSpec, ColumnMapping, RankMapping, RawMapping, order_key_u64
from zskip.iceberg.frames import collect_arrow
from zskip.layout.curve_keys import signed_key
from zskip.layout.cuts import FileCuts
from zskip.layout.routing import U_BITS, keyed_route_column, partition_tokens

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
    frame = spark.createDataFrame([(int(k),) for k in keys], "key long")
    table = collect_arrow(frame)
    spec = ClusteringSpec(curve="linear", bits=32, columns=(ColumnMapping("key", RawMapping(32)),))
    cuts = FileCuts.choose(spec.keys(table), 5)
    tokens = partition_tokens(spark, 5)
    routed = frame.select(
        keyed_route_column(spark, spec, {"key": LongType()}, cuts, tokens, F.xxhash64("key")).alias("r")
    )
    placed = (
        routed.select("r.key", "r.token").repartition(5, "token").select("key", F.spark_partition_id().alias("p"))
    ).toPandas()
    by_partition = placed.groupby("p")["key"].agg(["min", "max", "count"]).sort_index()
    assert list(by_partition.index) == [0, 1, 2, 3, 4]
    assert (by_partition["max"].to_numpy()[:-1] < by_partition["min"].to_numpy()[1:]).all()  # ordered, disjoint
    assert by_partition["count"].min() > 300


def test_one_udf_gives_each_row_its_numpy_key_and_the_token_of_its_cut(spark) -> None:
    """The rewrite's single Python round trip: key equal to ``ClusteringSpec.keys``, token equal to
    ``FileCuts.route``, also where cuts fall inside one heavy key's rows (the row hash decides)."""
    frame = spark.sql(
        "SELECT CAST(id % 2 AS INT) AS a, CASE WHEN id % 9 = 0 THEN NULL ELSE CAST(id % 3 AS STRING) END AS b, "
        "id AS n FROM range(4000)"
    )
    types = {f.name: f.dataType for f in frame.schema}
    table = collect_arrow(frame.orderBy("n"))
    spec = ClusteringSpec(
        curve="hilbert",
        bits=21,
        columns=tuple(
            ColumnMapping(name, RankMapping.fit(order_key_u64(table[name]), 21, max_boundaries=64)) for name in "ab"
        ),
    )
    keys = spec.keys(table)
    cuts = FileCuts.choose(keys, 9)
    assert (cuts.fractions > 0).any()  # 2 x 4 distinct keys for 9 files: cuts split keys
    tokens = np.arange(9, dtype=np.int64) * 10 + 3
    tie = F.xxhash64("a", "b", "n")
    routed = frame.select("n", tie.alias("tie"), keyed_route_column(spark, spec, types, cuts, tokens, tie).alias("r"))
    got = collect_arrow(routed.orderBy("n").select("tie", "r.key", "r.token"))
    assert got["key"].to_pylist() == signed_key(keys).tolist()
    u = (got["tie"].to_numpy().view(np.uint64) >> np.uint64(64 - U_BITS)).astype(np.float64) / float(1 << U_BITS)
    assert got["token"].to_pylist() == tokens[cuts.route(keys, u)].tolist()
    per_file = np.bincount((got["token"].to_numpy() - 3) // 10, minlength=9)
    assert per_file.min() > 4000 / 9 / 3  # heavy keys split in proportion, no file starved
