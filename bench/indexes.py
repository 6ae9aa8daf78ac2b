"""Index benchmark: build time and size of bloom and bitmap indexes on TPC-H lineitem, and what they skip.

    python bench/indexes.py --scale-factor 1

Writes docs/benchmarks/indexes.md and docs/benchmarks/indexes.png.  Sizes are compared with the
indexed column's own compressed Parquet bytes (Iceberg's ``column_sizes``) and with the table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DOCS, bench_session, machine, markdown_table, pyplot, timed, write_report
from zskip import create_index, drop_index, list_indexes, vacuum
from zskip.datasets import load_lineitem
from zskip.expr import And, Between, Compare, Expr, In
from zskip.iceberg.files import data_files
from zskip.iceberg.table import load_table
from zskip.indexing import index_verdicts
from zskip.tablefiles.index_manifest import read_manifest
from zskip.units import format_bytes, parse_size
from zskip.viz.figures import save_png

COLUMNS = [
    ("l_partkey", "high-cardinality bigint"),
    ("l_shipdate", "date"),
    ("l_shipmode", "low-cardinality string"),
]


def column_bytes(spark, table: str) -> dict[str, int]:
    """Compressed Parquet bytes of each column over the table's data files."""
    schema = load_table(spark, table).java.schema()
    ids = {column: int(schema.findField(column).fieldId()) for column, _ in COLUMNS}
    sizes = spark.sql(f"SELECT explode(column_sizes) AS (id, bytes) FROM {table}.files").groupBy("id").sum("bytes")
    by_id = {int(r[0]): int(r[1]) for r in sizes.collect()}
    return {column: by_id[i] for column, i in ids.items()}


def skipping(spark, table: str, probes: list[tuple[str, Expr]]) -> list[list[object]]:
    manifest, _ = read_manifest(load_table(spark, table))
    live = data_files(spark, table)["file_path"].to_pylist()
    rows = []
    for label, expr in probes:
        found = index_verdicts(manifest, live, expr)
        groups = sum(len(v.row_groups) for v in found.values())
        kept = sum(v.row_groups_kept for v in found.values())
        files_kept = sum(v.file.name == "MIGHT_MATCH" for v in found.values())
        matching = spark.table(table).where(label).select("_file").distinct().count()
        rows.append([f"`{label}`", f"{files_kept} / {len(live)}", matching, f"{kept} / {groups}"])
    return rows


def chart(results: list[tuple[str, str, str, float, int]], columns: dict[str, int], path: Path) -> None:
    plt = pyplot()

    names = [c for c, _ in COLUMNS]
    figure, axis = plt.subplots(figsize=(8, 3.8))
    width = 0.27
    for offset, (label, color) in enumerate([("column data", "#999"), ("bloom", "#48c"), ("bitmap", "#2a7")]):
        values = [
            columns[c] if label == "column data" else next(r[4] for r in results if r[0] == c and r[2] == label)
            for c in names
        ]
        axis.bar(
            [i + (offset - 1) * width for i in range(len(names))],
            [v / 2**20 for v in values],
            width,
            label=label,
            color=color,
        )
    axis.set_xticks(range(len(names)), names)
    axis.set_ylabel("MiB (compressed)")
    axis.set_title("index size next to the indexed column's own Parquet bytes")
    axis.legend()
    save_png(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=32, help="data files of the table")
    parser.add_argument("--row-group-size", default="1MB", help="Parquet row-group size of the table")
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    args = parser.parse_args()
    spark = bench_session(args.warehouse)
    table = "lake.bench_idx.lineitem"
    rows = load_lineitem(
        spark,
        table,
        scale_factor=args.scale_factor,
        data_dir=Path(tempfile.gettempdir()) / "zskip-tpch",
        files=args.files,
        properties={"write.parquet.row-group-size-bytes": str(parse_size(args.row_group_size))},
    )
    table_bytes = sum(data_files(spark, table)["file_size_in_bytes"].to_pylist())
    columns = column_bytes(spark, table)
    results = []
    for column, description in COLUMNS:
        for kind in ("bloom", "bitmap"):
            seconds, _ = timed(lambda c=column, k=kind: create_index(spark, table, c, kind=k))
            size = next(i.index_bytes for i in list_indexes(spark, table) if i.column == column and i.kind == kind)
            results.append((column, description, kind, seconds, size))
            print(f"{column} {kind}: {seconds:.1f}s {format_bytes(size)}", flush=True)
    gib = table_bytes / 2**30
    header = ["column", "kind", "build s", "s per GiB of table", "index size", "vs column data", "vs table"]
    body = [
        [
            f"{c} ({d})",
            k,
            f"{s:.1f}",
            f"{s / gib:.0f}",
            format_bytes(size),
            f"{size / columns[c]:.2f}x",
            f"{size / table_bytes:.3f}x",
        ]
        for c, d, k, s, size in results
    ]
    partkey = spark.table(table).select("l_partkey").first()[0]
    probes: list[tuple[str, Expr]] = [
        (f"l_partkey = {partkey}", Compare("l_partkey", "=", partkey)),
        (
            "l_shipmode = 'AIR' AND l_shipdate = DATE'1995-03-15'",
            And(
                (
                    Compare("l_shipmode", "=", "AIR"),
                    Compare("l_shipdate", "=", date(1995, 3, 15)),
                )
            ),
        ),
        (
            "l_shipdate BETWEEN DATE'1998-11-01' AND DATE'1998-12-01' AND l_shipmode IN ('RAIL', 'FOB') "
            "AND l_partkey < 5000",
            And(
                (
                    Between("l_shipdate", date(1998, 11, 1), date(1998, 12, 1)),
                    In("l_shipmode", ("RAIL", "FOB")),
                    Compare("l_partkey", "<", 5000),
                )
            ),
        ),
    ]
    skip_rows = skipping(spark, table, probes)
    for column, _ in COLUMNS:
        drop_index(spark, table, column, "bloom")
    vacuum(spark, table, older_than=0)
    report = [
        "# Index benchmark",
        "",
        f"One run of `python bench/indexes.py --scale-factor {args.scale_factor:g}` on {machine()}.",
        "",
        f"TPC-H lineitem, scale factor {args.scale_factor:g}: {rows:,} rows in {len(data_files(spark, table))} "
        f"data files, {format_bytes(table_bytes)}, row groups of {args.row_group_size}. Each index is built by "
        "its own `zskip.create_index` call (a Spark job, one task per data file); sizes are the stored "
        "(zstd-compressed) blobs, compared with the column's compressed Parquet bytes and with the whole table.",
        "",
        markdown_table(header, body),
        "",
        "What the indexes above skip with no help from min/max (rows are spread at random, so every file's "
        "min/max overlaps every filter): data files and row groups the index stage keeps, next to the files "
        "that really hold a matching row.",
        "",
        markdown_table(["filter", "files kept", "files holding a match", "row groups kept"], skip_rows),
        "",
        "![index sizes](indexes.png)",
        "",
    ]
    chart(results, columns, DOCS / "indexes.png")
    write_report("indexes", report)


if __name__ == "__main__":
    main()
