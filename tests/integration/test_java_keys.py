"""Curve keys and routes computed in the JVM (CurveKeys.java) equal the numpy definition, bit for bit."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from zskip.curves import (
    ClusteringSpec,
    ColumnMapping,
    DimensionMapping,
    RankMapping,
    RawMapping,
    bits_for_weights,
    order_key_u64,
)
from zskip.iceberg.frames import collect_arrow
from zskip.layout.curve_keys import curve_key_column, signed_key
from zskip.layout.cuts import FileCuts
from zskip.layout.java_keys import java_key_column, java_route_column, key_column, supported
from zskip.layout.routing import U_BITS, pandas_route_column
from zskip.layout.sample_fit import raw_width

pytestmark = pytest.mark.integration


def _nullable(expression: str, salt: int) -> str:
    return f"CASE WHEN pmod(hash(id, {salt}), 11) = 0 THEN NULL ELSE {expression} END"


# every carrier: longs (boolean to timestamp_ntz, narrow decimals), doubles (with NaN, -0.0, infinities)
# and bytes (empty, multi-byte UTF-8, longer than 8 bytes); a tenth of each column null
COLUMNS = {
    "b": "hash(id) % 2 = 0",
    "y": "CAST(hash(id, 1) % 128 AS TINYINT)",
    "s": "CAST(hash(id, 2) % 30000 AS SMALLINT)",
    "i": "hash(id, 3)",
    "l": "CASE WHEN id % 97 = 0 THEN -9223372036854775808L ELSE xxhash64(id, 4) END",
    "f": "CASE id % 13 WHEN 0 THEN CAST('NaN' AS FLOAT) WHEN 1 THEN CAST(-0.0D AS FLOAT) "
    "ELSE CAST(hash(id, 5) / 1000.0 AS FLOAT) END",
    "d": "CASE id % 17 WHEN 0 THEN CAST('NaN' AS DOUBLE) WHEN 1 THEN -0.0D WHEN 2 THEN 0.0D "
    "WHEN 3 THEN CAST('-Infinity' AS DOUBLE) WHEN 4 THEN CAST('Infinity' AS DOUBLE) ELSE hash(id, 6) / 7.0D END",
    "dec": "CAST(hash(id, 7) % 10000000 / 100.0 AS DECIMAL(12, 2))",
    "dt": "date_add(DATE'1950-01-01', CAST(pmod(hash(id, 8), 40000) AS INT))",
    "ts": "timestamp_micros(xxhash64(id, 9) % 4000000000000000)",
    "ntz": "CAST(timestamp_micros(xxhash64(id, 10) % 4000000000000000) AS TIMESTAMP_NTZ)",
    "str": "concat(CASE WHEN id % 5 = 0 THEN 'é' ELSE '' END, substring(sha2(CAST(id AS STRING), 256), 1, "
    "CAST(pmod(hash(id, 11), 12) AS INT)))",
    "bin": "unhex(substring(sha2(CAST(id AS STRING), 256), 1, 2 * CAST(id % 11 AS INT)))",
}
GROUPS = [("b", "y", "s"), ("i", "l", "f"), ("d", "dec", "dt"), ("ts", "ntz", "str"), ("bin", "i", "str", "d")]


@pytest.fixture(scope="module")
def typed(spark):
    columns = ", ".join(f"{_nullable(expr, 100 + n)} AS {name}" for n, (name, expr) in enumerate(COLUMNS.items()))
    frame = spark.sql(f"SELECT id, {columns} FROM range(3000)").cache()
    return frame, {f.name: f.dataType for f in frame.schema}, collect_arrow(frame.orderBy("id"))


def _spec(curve: str, mapping: str, group: tuple[str, ...], table: pa.Table, types) -> ClusteringSpec:
    bits = 64 // len(group)
    mappings = []
    for name in group:
        keys = order_key_u64(table[name])
        if mapping == "rank":
            fitted = RankMapping.fit(keys, bits, max_boundaries=200)
        else:
            valid = ~np.asarray(table[name].is_null().to_numpy(zero_copy_only=False), dtype=bool)
            fitted = RawMapping.fit(keys, valid, bits, raw_width(types[name]))
        mappings.append(ColumnMapping(name, fitted))
    return ClusteringSpec(curve=curve, bits=bits, columns=tuple(mappings))


@pytest.mark.parametrize("mapping", ["rank", "raw"])
@pytest.mark.parametrize("curve", ["hilbert", "zorder", "linear"])
def test_jvm_keys_equal_numpy_keys_for_every_carrier(spark, typed, curve: str, mapping: str) -> None:
    frame, types, table = typed
    specs = [_spec(curve, mapping, group, table, types) for group in GROUPS]
    assert all(supported(spec, types) for spec in specs)
    keyed = frame.orderBy("id").select(
        *[java_key_column(spark, spec, types).alias(f"k{n}") for n, spec in enumerate(specs)]
    )
    got = collect_arrow(keyed)
    for n, spec in enumerate(specs):
        assert got[f"k{n}"].to_pylist() == signed_key(spec.keys(table)).tolist(), spec.column_names


def test_one_column_curves_and_single_bit_ranks(spark, typed) -> None:
    frame, types, table = typed
    specs = [
        ClusteringSpec(
            curve=curve, bits=bits, columns=(ColumnMapping("l", RankMapping.fit(order_key_u64(table["l"]), bits)),)
        )
        for curve in ("hilbert", "zorder", "linear")
        for bits in (1, 32)
    ]
    got = collect_arrow(
        frame.orderBy("id").select(*[java_key_column(spark, s, types).alias(f"k{n}") for n, s in enumerate(specs)])
    )
    for n, spec in enumerate(specs):
        assert got[f"k{n}"].to_pylist() == signed_key(spec.keys(table)).tolist(), (spec.curve, spec.bits)


@pytest.mark.parametrize("curve", ["zorder", "linear"])
def test_jvm_keys_of_weighted_curves_equal_numpy_keys(spark, typed, curve: str) -> None:
    frame, types, table = typed
    specs = []
    for group, weights in (
        (("i", "l", "f"), (3, 1, 1)),
        (("dt", "str"), (1, 4)),
        (("b", "d", "s", "ts"), (1, 2, 5, 1)),
    ):
        widths = bits_for_weights(weights)
        mappings = tuple(
            ColumnMapping(name, RankMapping.fit(order_key_u64(table[name]), width, max_boundaries=200))
            for name, width in zip(group, widths, strict=True)
        )
        specs.append(ClusteringSpec(curve=curve, bits=max(widths), columns=mappings, widths=widths))
    assert all(spec.widths is not None for spec in specs)
    got = collect_arrow(
        frame.orderBy("id").select(*[java_key_column(spark, s, types).alias(f"k{n}") for n, s in enumerate(specs)])
    )
    for n, spec in enumerate(specs):
        assert got[f"k{n}"].to_pylist() == signed_key(spec.keys(table)).tolist(), spec.column_widths


@pytest.mark.parametrize("levels", [False, True])
def test_jvm_keys_through_a_dimension_equal_numpy_keys(spark, levels: bool) -> None:
    frame = spark.sql(
        "SELECT id, CASE WHEN id % 23 = 0 THEN NULL ELSE CAST(pmod(hash(id), 700) AS INT) END AS fk, "
        "CAST(id % 50 AS INT) AS other FROM range(3000)"
    )
    types = {f.name: f.dataType for f in frame.schema}
    table = collect_arrow(frame.orderBy("id"))
    rng = np.random.default_rng(5)
    recorded = rng.permutation(600)  # keys 600..699 are orphans: not recorded
    recorded = np.concatenate([recorded, recorded[:7]])  # a key listed twice keeps its first coordinate
    dimension_keys = order_key_u64(pa.array(recorded, pa.int32()))
    level_cuts = (np.array([0, 150, 400], np.int64), np.array([0, 50, 150, 300, 400, 500], np.int64)) if levels else ()
    dimension = DimensionMapping(bits=21, table="db.dim", key="k", by=("g",), keys=dimension_keys, levels=level_cuts)
    other = RankMapping.fit(order_key_u64(table["other"]), 21)
    for curve in ("hilbert", "zorder"):
        spec = ClusteringSpec(
            curve=curve, bits=21, columns=(ColumnMapping("fk", dimension), ColumnMapping("other", other))
        )
        got = collect_arrow(frame.orderBy("id").select(java_key_column(spark, spec, types).alias("k")))
        assert got["k"].to_pylist() == signed_key(spec.keys(table)).tolist(), curve


@pytest.mark.parametrize(("seed", "cardinality", "files"), [(0, 3, 30), (1, 40, 7), (2, 100_000, 25)])
def test_jvm_routes_equal_numpy_routes_and_the_pandas_udf(spark, seed: int, cardinality: int, files: int) -> None:
    """Cuts inside heavy keys (split by the row hash) and between keys: the same file for every row."""
    rng = np.random.default_rng(seed)
    frame = spark.sql(
        f"SELECT id AS n, CAST(pmod(hash(id, {seed}), {cardinality}) AS BIGINT) AS a, "
        f"CASE WHEN id % 9 = 0 THEN NULL ELSE CAST(pmod(hash(id, 77), 5) AS STRING) END AS b FROM range(5000)"
    )
    types = {f.name: f.dataType for f in frame.schema}
    table = collect_arrow(frame.orderBy("n"))
    curve = str(rng.choice(["hilbert", "zorder", "linear"]))
    spec = ClusteringSpec(
        curve=curve,
        bits=21,
        columns=tuple(ColumnMapping(c, RankMapping.fit(order_key_u64(table[c]), 21, max_boundaries=64)) for c in "ab"),
    )
    keys = spec.keys(table)
    cuts = FileCuts.choose(keys[rng.random(len(keys)) < 0.5], files)
    assert (cuts.fractions > 0).any() == (cardinality == 3)  # 3 x 6 keys for 30 files: cuts inside keys
    tokens = rng.integers(0, 1 << 40, cuts.files)
    tie = F.xxhash64("a", "b", "n")
    routed = frame.select(
        "n",
        tie.alias("tie"),
        java_route_column(spark, spec, types, cuts, tokens, tie).alias("jvm"),
        pandas_route_column(spec, types, cuts, tokens, tie).alias("pandas"),
    )
    got = collect_arrow(
        routed.orderBy("n").select(
            "tie", "jvm.key", "jvm.token", F.col("pandas.key").alias("pk"), F.col("pandas.token").alias("pt")
        )
    )
    u = (got["tie"].to_numpy().view(np.uint64) >> np.uint64(64 - U_BITS)).astype(np.float64) / float(1 << U_BITS)
    assert got["key"].to_pylist() == signed_key(keys).tolist() == got["pk"].to_pylist()
    assert got["token"].to_pylist() == tokens[cuts.route(keys, u)].tolist() == got["pt"].to_pylist()


def test_wide_decimals_keep_the_pandas_udf(spark) -> None:
    frame = spark.sql("SELECT id, CAST(id * 1000000000000000000000 AS DECIMAL(38, 0)) AS w FROM range(100)")
    types = {f.name: f.dataType for f in frame.schema}
    table = collect_arrow(frame.orderBy("id"))
    spec = ClusteringSpec(
        curve="zorder", bits=32, columns=(ColumnMapping("w", RankMapping.fit(order_key_u64(table["w"]), 32)),)
    )
    assert not supported(spec, types)
    got = collect_arrow(
        frame.orderBy("id").select(key_column(spark, spec, types).alias("k"), curve_key_column(spec, types).alias("p"))
    )
    assert got["k"].to_pylist() == got["p"].to_pylist() == signed_key(spec.keys(table)).tolist()
