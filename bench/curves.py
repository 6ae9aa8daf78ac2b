"""Curve-key throughput: zskip's keys in numpy and inside Spark, next to Iceberg's z-order UDF, in one run.

    python bench/curves.py

Writes docs/benchmarks/curves.md.  Rows per second are medians of several runs on the same data.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_session, machine, markdown_table, median_seconds, write_report
from zskip.curves import (
    ClusteringSpec,
    ColumnMapping,
    RankMapping,
    bits_per_column,
    order_key_bytes,
    order_key_u64,
    zorder_raw,
)

RUNS = 3


def numpy_section(rows: int) -> list[list[Any]]:
    rng = np.random.default_rng(0)
    arrays = {
        "int64": pa.array(rng.integers(-(2**62), 2**62, rows)),
        "double": pa.array(rng.normal(size=rows)),
        "decimal(15,2)": pa.array(rng.integers(-(10**12), 10**12, rows))
        .cast(pa.decimal128(38, 2))
        .cast(pa.decimal128(15, 2)),
        "decimal(38,2)": pa.array(rng.integers(-(10**12), 10**12, rows)).cast(pa.decimal128(38, 2)),
        "date": pa.array(rng.integers(-20000, 20000, rows).astype(np.int32)).cast(pa.date32()),
        "timestamp": pa.array(rng.integers(0, 2**50, rows)).cast(pa.timestamp("us")),
        "string (8-byte prefix)": pa.array([f"key-{v:012d}" for v in rng.integers(0, 10**12, rows)]),
    }
    out = []
    for name, array in arrays.items():
        seconds = median_seconds(lambda a=array: order_key_u64(a), runs=RUNS)
        out.append([f"order key: {name}", f"{rows / seconds:,.0f}"])
    three = [arrays["int64"], arrays["date"], arrays["string (8-byte prefix)"]]
    seconds = median_seconds(lambda: zorder_raw(three), runs=RUNS)
    out.append(["raw z-value, 3 columns (Iceberg layout, 24 bytes)", f"{rows / seconds:,.0f}"])
    bits = bits_per_column(3)
    table = pa.table({"a": three[0], "d": three[1], "s": three[2]})
    mappings = tuple(
        ColumnMapping(c, RankMapping.fit(order_key_u64(table[c])[:100_000], bits, max_boundaries=4096)) for c in "ads"
    )
    for curve in ("zorder", "hilbert"):
        spec = ClusteringSpec(curve=curve, bits=bits, columns=mappings)
        seconds = median_seconds(lambda s=spec: s.keys(table), runs=RUNS)
        out.append([f"rank mapping + {curve}, 3 columns (64-bit key)", f"{rows / seconds:,.0f}"])
    seconds = median_seconds(lambda: order_key_bytes(arrays["string (8-byte prefix)"], prefix_bytes=16), runs=RUNS)
    out.append(["order key: string, 16-byte prefix", f"{rows / seconds:,.0f}"])
    return out


def iceberg_zorder_column(spark: Any, frame: Any, columns: list[str]) -> Any:
    """Iceberg's own z-value column (SparkZOrderUDF, package-private, reached by reflection)."""
    from pyspark.sql import Column

    jvm = spark.sparkContext._jvm
    gateway = spark.sparkContext._gateway
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    cls = jvm.java.lang.Class.forName("org.apache.iceberg.spark.actions.SparkZOrderUDF", True, loader)
    int_type = jvm.java.lang.Integer.TYPE
    parameter_types = gateway.new_array(jvm.java.lang.Class, 3)
    for i in range(3):
        parameter_types[i] = int_type
    constructor = cls.getDeclaredConstructor(parameter_types)
    constructor.setAccessible(True)
    arguments = gateway.new_array(jvm.java.lang.Object, 3)
    arguments[0] = jvm.java.lang.Integer(len(columns))
    arguments[1] = jvm.java.lang.Integer(8)
    arguments[2] = jvm.java.lang.Integer(2**31 - 1)
    udf = constructor.newInstance(arguments)
    column_class = jvm.java.lang.Class.forName("org.apache.spark.sql.Column", True, loader)
    type_class = jvm.java.lang.Class.forName("org.apache.spark.sql.types.DataType", True, loader)
    signature = gateway.new_array(jvm.java.lang.Class, 2)
    signature[0], signature[1] = column_class, type_class
    sorted_bytes = cls.getDeclaredMethod("sortedLexicographically", signature)
    sorted_bytes.setAccessible(True)
    parts = []
    for name in columns:
        call = gateway.new_array(jvm.java.lang.Object, 2)
        call[0] = frame[name]._jc
        call[1] = frame._jdf.schema().apply(name).dataType()
        parts.append(sorted_bytes.invoke(udf, call))
    array = jvm.org.apache.spark.sql.functions.array(jvm.PythonUtils.toSeq(parts))
    one = gateway.new_array(jvm.java.lang.Class, 1)
    one[0] = column_class
    interleave = cls.getDeclaredMethod("interleaveBytes", one)
    interleave.setAccessible(True)
    call = gateway.new_array(jvm.java.lang.Object, 1)
    call[0] = array
    return Column(interleave.invoke(udf, call))


def spark_section(rows: int, warehouse: str) -> list[list[Any]]:
    from pyspark.sql import functions as F

    from zskip.iceberg.frames import collect_arrow
    from zskip.layout.curve_keys import curve_key_column
    from zskip.layout.java_keys import java_key_column

    spark = bench_session(warehouse, master="local[2]")
    frame = (
        spark.range(rows)
        .selectExpr(
            "id * 7919 % 1000003 AS a",
            "date_add(DATE'1990-01-01', CAST(id % 9000 AS INT)) AS d",
            "concat('key-', CAST(id * 31 % 100000 AS STRING)) AS s",
        )
        .cache()
    )
    frame.count()
    columns = ["a", "d", "s"]
    types = {f.name: f.dataType for f in frame.schema.fields}
    sample = collect_arrow(frame.sample(0.05, seed=1).limit(100_000))
    bits = bits_per_column(3)
    mappings = tuple(
        ColumnMapping(c, RankMapping.fit(order_key_u64(sample[c]), bits, max_boundaries=4096)) for c in columns
    )

    def consume(column: Any) -> None:
        frame.select(F.sum(F.hash(column))).collect()

    out = []
    baseline = median_seconds(lambda: consume(F.col("a")), runs=RUNS)
    out.append(["read the cached columns only (baseline)", f"{rows / baseline:,.0f}"])
    for curve in ("zorder", "hilbert"):
        spec = ClusteringSpec(curve=curve, bits=bits, columns=mappings)
        seconds = median_seconds(lambda s=spec: consume(curve_key_column(s, types)), runs=RUNS)
        out.append([f"zskip rank + {curve} (pandas UDF)", f"{rows / seconds:,.0f}"])
        seconds = median_seconds(lambda s=spec: consume(java_key_column(spark, s, types)), runs=RUNS)
        out.append([f"zskip rank + {curve} (JVM UDF, what optimize uses)", f"{rows / seconds:,.0f}"])
    iceberg = iceberg_zorder_column(spark, frame, columns)
    seconds = median_seconds(lambda: consume(iceberg), runs=RUNS)
    out.append(["Iceberg SparkZOrderUDF, raw z-value (JVM UDF)", f"{rows / seconds:,.0f}"])
    spark.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--spark-rows", type=int, default=4_000_000)
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-curves"))
    args = parser.parse_args()
    numpy_rows = numpy_section(args.rows)
    spark_rows = spark_section(args.spark_rows, args.warehouse)
    report = [
        "# Curve-key throughput",
        "",
        f"One run of `python bench/curves.py` on {machine()}; medians of {RUNS} runs.",
        "",
        f"## numpy, one core ({args.rows:,} rows)",
        "",
        markdown_table(["key", "rows / second"], numpy_rows),
        "",
        f"## inside Spark, local[2] ({args.spark_rows:,} cached rows: a bigint, a date and a string)",
        "",
        "Each row computes the key of `a, d, s` and Spark sums a hash of it, so every key is materialised.",
        "",
        markdown_table(["key", "rows / second"], spark_rows),
        "",
        "Iceberg's UDF builds its raw z-value without a date contribution (Spark 3.5 casts dates to long as null).",
        "",
    ]
    write_report("curves", report)


if __name__ == "__main__":
    main()
