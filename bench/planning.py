"""Planning and read benchmark: zskip's planning time at 64, 1,000 and 10,000 files (cold and warm,
with and without staging), and a selective read on TPC-H lineitem through zskip.read against plain
Spark + Iceberg.

    python bench/planning.py --scale-factor 1                 # both
    python bench/planning.py --sections time                  # planning time only

Writes docs/benchmarks/planning-time.md (+ .png) and docs/benchmarks/planning.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DOCS, bench_session, machine, markdown_table, pyplot, timed, write_report
from zskip import create_index, explain, optimize, read
from zskip.datasets import LINEITEM_CLUSTER_COLUMNS, load_lineitem
from zskip.iceberg.scan_stats import planned_scans, scanned_rows
from zskip.iceberg.scans import forget_listed_files
from zskip.planning.cache import CACHE
from zskip.units import format_bytes, parse_size
from zskip.viz.figures import save_png

RUNS = 5


def many_files_section(spark, sizes: list[int]) -> tuple[str, list[list[object]]]:
    """Planning time of two filters per table size: a point filter on ``id`` that Iceberg's file
    min/max answers (nothing to stage: zskip hands back Spark's own frame), and an equality on the
    random ``u`` that only a bloom index answers (one file staged)."""
    rows_out = []
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench_plan")
    for files in sizes:
        table = f"lake.bench_plan.files_{files}"
        spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
        # each file holds its own range of id (1,000 rows): a point filter keeps one file
        frame = spark.range(0, files * 1000, 1, numPartitions=files).selectExpr("id", "id % 97 AS k", "uuid() AS u")
        frame.writeTo(table).using("iceberg").tableProperty("read.split.adaptive-size.enabled", "false").create()
        create_index(spark, table, "u", kind="bloom")
        needle = spark.table(table).where(f"id = {files * 1000 // 3}").select("u").first()[0]
        filters = {"id = (file min/max)": f"id = {files * 1000 // 2 + 7}", "u = (bloom, staged)": f"u = '{needle}'"}
        for label, where in filters.items():
            CACHE.clear()
            forget_listed_files(spark)  # and the JVM's file list of the snapshot
            cold_seconds, cold = timed(lambda t=table, w=where: explain(spark, t, w))
            warm = [explain(spark, table, where) for _ in range(RUNS)]
            warm_seconds = statistics.median(e.planning_seconds for e in warm)
            # planning plus staging, as zskip.read does it before Spark executes anything
            read_seconds = statistics.median(timed(lambda t=table, w=where: read(spark, t, w))[0] for _ in range(RUNS))
            stage_ms = ", ".join(f"{s.name} {s.seconds * 1000:.1f}" for s in warm[-1].stages)
            rows_out.append(
                [
                    f"{files:,}",
                    label,
                    cold.files_read,
                    f"{cold.planning_seconds * 1000:.0f}",
                    f"{warm_seconds * 1000:.1f}",
                    f"{warm[-1].analysis_seconds * 1000:.1f}",
                    f"{read_seconds * 1000:.1f}",
                    stage_ms,
                ]
            )
            print(
                f"{files} files, {label}: cold {cold.planning_seconds:.2f}s (call {cold_seconds:.2f}s), "
                f"warm {warm_seconds * 1000:.1f} ms, read() {read_seconds * 1000:.1f} ms",
                flush=True,
            )
    text = markdown_table(
        [
            "data files",
            "filter",
            "files kept",
            "cold planning ms",
            "warm planning ms (median of 5)",
            "of which Spark (analysis + physical planning)",
            "warm zskip.read() call ms (planning + staging)",
            "warm stage ms",
        ],
        rows_out,
    )
    return text, rows_out


def lineitem_section(spark, scale_factor: float, target: int, row_group: int) -> tuple[str, list[list[object]]]:
    table = "lake.bench_plan.lineitem"
    rows = load_lineitem(
        spark, table, scale_factor=scale_factor, data_dir=Path(tempfile.gettempdir()) / "zskip-tpch", files=32
    )
    optimize(
        spark, table, by=list(LINEITEM_CLUSTER_COLUMNS), mode="full", target_file_size=target, row_group_size=row_group
    )
    create_index(spark, table, "l_suppkey", kind="bitmap")
    # tasks of the same kind on both sides: with Iceberg's adaptive split size, plain Spark cuts the
    # few files it reads into hundreds of tiny tasks
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('read.split.adaptive-size.enabled'='false')")
    supp = spark.table(table).select("l_suppkey").orderBy("l_orderkey").first()[0]
    filters = [
        "l_shipdate BETWEEN DATE'1995-01-01' AND DATE'1995-06-30' AND l_shipmode = 'AIR'",
        f"l_shipdate BETWEEN DATE'1995-01-01' AND DATE'1995-06-30' AND l_shipmode = 'AIR' AND l_suppkey = {supp}",
        f"l_partkey BETWEEN 50000 AND 60000 AND l_suppkey = {supp}",
        "l_shipdate >= DATE'1998-09-01' AND l_partkey < 20000",
    ]
    total_groups = None
    rows_out = []
    for where in filters:
        plain = spark.table(table).where(where)
        scans = planned_scans(plain)
        plain_files = sum(s.files for s in scans)
        plain_bytes = sum(s.bytes for s in scans)
        plan = explain(spark, table, where)
        total_groups = plan.row_groups_total
        # rows the Iceberg scan produced once run (after its reader's own row-group skipping)
        plain_frame = spark.table(table).where(where).agg({"l_extendedprice": "sum"})
        plain_frame.collect()
        zskip_frame = read(spark, table, where).agg({"l_extendedprice": "sum"})
        zskip_frame.collect()
        plain_rows, zskip_rows = scanned_rows(plain_frame, table), scanned_rows(zskip_frame, table)
        plain_times, zskip_times = [], []
        for _ in range(RUNS):
            plain_times.append(
                timed(lambda w=where: spark.table(table).where(w).agg({"l_extendedprice": "sum"}).collect())[0]
            )
            zskip_times.append(
                timed(lambda w=where: read(spark, table, w).agg({"l_extendedprice": "sum"}).collect())[0]
            )
        ratio = statistics.median(zskip_times) / statistics.median(plain_times)
        rows_out.append(
            [
                f"`{where}`",
                f"{plain_files} / {plan.files_total}",
                f"{plan.files_read}",
                f"{plan.row_groups_read}",
                f"{plain_rows:,} / {zskip_rows:,}",
                f"{format_bytes(plain_bytes)} / {format_bytes(plan.bytes_planned)}",
                f"{statistics.median(plain_times):.2f} / {statistics.median(zskip_times):.2f}",
                f"{ratio:.2f}x",
            ]
        )
        print(rows_out[-1], flush=True)
    header = [
        "filter",
        "files: Iceberg",
        "files: zskip",
        "row groups: zskip",
        "rows scanned Iceberg / zskip",
        "bytes Iceberg / zskip",
        "median s Iceberg / zskip",
        "zskip time ratio",
    ]
    intro = (
        f"TPC-H lineitem, scale factor {scale_factor:g} ({rows:,} rows), clustered by zskip (Hilbert, rank) on "
        f"{', '.join(LINEITEM_CLUSTER_COLUMNS)} into files of {format_bytes(target)} with row groups of "
        f"{format_bytes(row_group)} ({total_groups} row groups), bitmap index on l_suppkey. Each query sums "
        f"l_extendedprice; times are medians of {RUNS} runs, alternating, in the same session, with Iceberg's "
        "adaptive split size off. Rows scanned: Spark's `numOutputRows` of the Iceberg scan."
    )
    return intro + "\n\n" + markdown_table(header, rows_out), rows_out


def chart(rows: list[list[object]], path: Path) -> None:
    plt = pyplot()

    labels = [f"{r[0]} files\n{str(r[1]).split(' ')[0]}" for r in rows]
    cold = [float(str(r[3])) for r in rows]
    warm = [float(str(r[4])) for r in rows]
    staged = [float(str(r[6])) for r in rows]
    figure, axis = plt.subplots(figsize=(8, 3.8))
    x = range(len(labels))
    axis.bar([i - 0.27 for i in x], cold, 0.27, label="cold planning", color="#999")
    axis.bar(list(x), warm, 0.27, label="warm planning (median of 5)", color="#2a7")
    axis.bar([i + 0.27 for i in x], staged, 0.27, label="warm zskip.read() call", color="#37c")
    axis.set_xticks(list(x), labels, fontsize=8)
    axis.set_yscale("log")
    axis.set_ylabel("milliseconds (log scale)")
    axis.legend(fontsize=8)
    save_png(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--files", default="64,1000,10000", help="file counts of the planning tables")
    parser.add_argument("--target-file-size", default="8MB")
    parser.add_argument("--row-group-size", default="256KB")
    parser.add_argument(
        "--sections",
        default="time,read",
        help="time: planning time by table size (planning-time.md); read: a selective read on lineitem (planning.md)",
    )
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    spark = bench_session(args.warehouse)
    if "time" in sections:
        planning_text, planning_rows = many_files_section(spark, [int(f) for f in args.files.split(",")])
        chart(planning_rows, DOCS / "planning-time.png")
        write_report(
            "planning-time",
            [
                "# Planning time by table size",
                "",
                f"One run of `python bench/planning.py --sections time --files {args.files}` on {machine()}.",
                "",
                "Tables of 1,000-row files, each file its own range of `id` and a random `u` (bloom index on `u`). "
                "`zskip.explain` of a point filter on `id` (Iceberg's file min/max keeps one file: nothing to stage) "
                "and of `u = '...'` (only the bloom index rules files out: one file staged). Cold: the driver cache "
                "and the JVM's file lists emptied first (the file list comes from a Spark job, the JVM's from the "
                "manifests, footers and index blobs from storage); warm: "
                "the same plan again. Planning includes Spark's analysis and physical planning of the filter (its "
                "execution reuses them when nothing is staged). The `zskip.read()` column times the call "
                "(planning and staging, nothing executed).",
                "",
                planning_text,
                "",
                "![planning time](planning-time.png)",
                "",
            ],
        )
    if "read" in sections:
        read_text, _ = lineitem_section(
            spark, args.scale_factor, parse_size(args.target_file_size), parse_size(args.row_group_size)
        )
        write_report(
            "planning",
            [
                "# Planning benchmark: a selective read on lineitem",
                "",
                f"One run of `python bench/planning.py --sections read --scale-factor {args.scale_factor:g}` on "
                f"{machine()}. Planning time by table size: [planning-time.md](planning-time.md).",
                "",
                read_text,
                "",
            ],
        )


if __name__ == "__main__":
    main()
