"""The demo: TPC-H lineitem in a local Iceberg table, and the curve keys zskip clusters it by."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pyspark.sql import SparkSession
from rich.console import Console
from rich.table import Table

from zskip.curves import (
    ClusteringSpec,
    ColumnMapping,
    RankMapping,
    bits_per_column,
    order_key_u64,
    zorder_raw,
)
from zskip.datasets import load_lineitem
from zskip.iceberg.frames import collect_arrow
from zskip.viz import plot_curves

__all__ = ["run_demo"]

COLUMNS = ("l_shipdate", "l_partkey", "l_extendedprice")


def run_demo(spark: SparkSession, *, catalog: str, scale_factor: float, out_dir: Path) -> None:
    console = Console()
    table = f"{catalog}.demo.lineitem"
    with console.status(f"generating TPC-H lineitem (scale factor {scale_factor:g}) into {table}"):
        rows = load_lineitem(spark, table, scale_factor=scale_factor, data_dir=out_dir / "tpch", files=16)
    files = spark.sql(f"SELECT count(*) AS n FROM {table}.files").first()
    console.print(f"[bold]{table}[/]: {rows:,} rows in {files['n'] if files else 0} data files")

    sample = collect_arrow(spark.table(table).select(*COLUMNS).limit(20_000))
    bits = bits_per_column(len(COLUMNS))
    spec_columns = tuple(ColumnMapping(c, RankMapping.fit(order_key_u64(sample[c]), bits)) for c in COLUMNS)
    report = Table(title=f"curve keys of the first rows, clustered by {', '.join(COLUMNS)}")
    for name in (*COLUMNS, "Iceberg-style z-value (raw)", "zskip hilbert (rank)", "zskip zorder (rank)"):
        report.add_column(name)
    raw = zorder_raw([sample[c] for c in COLUMNS]).to_pylist()
    hilbert = ClusteringSpec("hilbert", bits, spec_columns).keys(sample)
    zorder = ClusteringSpec("zorder", bits, spec_columns).keys(sample)
    for row in range(5):
        values = [str(sample[c][row].as_py()) for c in COLUMNS]
        report.add_row(
            *values, raw[row].hex()[:16] + "…", f"{int(hilbert[row]):016x}", f"{int(zorder[row]):016x}"
        )
    console.print(report)
    spread = {
        c: len(np.unique(spec_columns[i].mapping.ranks(order_key_u64(sample[c]))))
        for i, c in enumerate(COLUMNS)
    }
    console.print(f"distinct ranks per column in the sample: {spread}")
    picture = plot_curves(out_dir / "curves.png")
    console.print(f"curve picture: {picture}")
