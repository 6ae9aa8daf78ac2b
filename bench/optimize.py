"""Optimize benchmark: zskip's curves and mappings vs Iceberg's zorder rewrite vs a plain sort, in one run.

    python bench/optimize.py --scale-factor 1

Writes docs/benchmarks/optimize.md and docs/benchmarks/optimize-files.png.  Files read are what
Iceberg's planner keeps for each filter (min/max pruning), next to the ideal: the matching rows
packed into files of the layout's average row count.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import functions as F

from bench.common import DOCS, bench_session, machine, markdown_table, pyplot, timed, write_report
from bench.layouts import Laid, lay_out
from zskip import optimize
from zskip.datasets import LINEITEM_CLUSTER_COLUMNS, lineitem_queries, load_lineitem
from zskip.iceberg.files import data_files
from zskip.layout.compare import Layout, count_files_read, iceberg_layout, zskip_layout
from zskip.layout.optimize import STEPS
from zskip.units import parse_size
from zskip.viz.figures import save_png

REQUIRED = ("Iceberg sort", "Iceberg zorder", "zskip hilbert rank")  # the ratios and the incremental run need them
ZSKIP = [(curve, mapping) for curve in ("hilbert", "zorder", "linear") for mapping in ("rank", "raw")]


def step_lines(steps: dict[str, dict[str, float]], seconds: dict[str, float]) -> list[str]:
    """Where each zskip layout's time went, by optimize's steps (``OptimizeResult.step_seconds``)."""
    if not steps:
        return []
    rows = [
        [label, f"{seconds[label]:.1f}", *[f"{measured.get(step, 0.0):.1f}" for step in STEPS]]
        for label, measured in steps.items()
    ]
    return [
        "",
        "zskip's wall time by step (seconds; *rewrite* is sampling each group's keys, computing curve keys, the "
        "shuffle, the sort and the write, all one Spark job per group; *fit spec* samples the table once):",
        "",
        markdown_table(["layout", "total s", *STEPS], rows),
    ]


def recipes(spark, by: list[str], target: int, row_group: int) -> dict[str, Layout]:
    """Iceberg's zorder and sort rewrites and every zskip curve and mapping, on the same options."""
    out: dict[str, Layout] = {
        "Iceberg zorder": iceberg_layout(
            spark, f"zorder({','.join(by)})", target_file_size_bytes=target, row_group_size_bytes=row_group
        ),
        "Iceberg sort": iceberg_layout(
            spark, ",".join(by), target_file_size_bytes=target, row_group_size_bytes=row_group
        ),
    }
    for curve, mapping in ZSKIP:
        out[f"zskip {curve} {mapping}"] = zskip_layout(
            spark, by, curve=curve, mapping=mapping, target_file_size_bytes=target, row_group_size_bytes=row_group
        )
    return out


def same_round(laid: dict[str, Laid], label: str, other: str) -> str:
    """Median over rounds of ``label``'s time over ``other``'s in the same round."""
    if label not in laid or other not in laid:
        return ""
    ratios = [mine / theirs for mine, theirs in zip(laid[label].runs, laid[other].runs, strict=True)]
    return f"{statistics.median(ratios):.2f}x"


def incremental_lines(
    spark, laid: Laid, base: str, by: list[str], curve: str, mapping: str, fraction: float
) -> list[str]:
    """Time of an incremental optimize after appending a handful of rows (its fixed cost) and after
    appending ``fraction`` of the table's rows, against the full optimize of the same layout."""
    table = laid.table
    rows = spark.table(base).count()
    source = spark.table(base)
    row_hash = F.pmod(F.xxhash64(*[F.col(f"`{name}`") for name in source.columns]), F.lit(1_000_000))

    def append_and_optimize(where, limit: int | None = None) -> tuple[int, float, object]:
        appended = source.where(where) if limit is None else source.where(where).limit(limit)
        count = appended.count()
        appended.writeTo(table).append()
        seconds, result = timed(lambda: optimize(spark, table, by=by, curve=curve, mapping=mapping))
        return count, seconds, result

    few, fixed, fixed_result = append_and_optimize(row_hash < 1000, limit=20)
    many, seconds, result = append_and_optimize((row_hash >= 1000) & (row_hash < 1000 + round(fraction * 1_000_000)))
    full = laid.seconds
    budget = 0.05 * full + fixed
    verdict = "within" if seconds <= budget else "over"
    print(f"incremental: {few} rows {fixed:.1f}s, {many} rows {seconds:.1f}s, full {full:.1f}s", flush=True)
    return [
        "",
        f"**Incremental optimize** (zskip {curve} {mapping}, after the full one): appending {few} rows and "
        f"optimizing took {fixed:.1f} s ({fixed_result.files_rewritten} files rewritten): the fixed cost of a run "
        f"that rewrites anything (metadata, sampling, one Spark job, key ranges, the commit). Appending "
        f"{many:,} rows ({many / max(rows, 1):.1%} of the table) and optimizing took {seconds:.1f} s "
        f"({result.files_rewritten} files rewritten): {seconds / full:.1%} of the full optimize's {full:.1f} s "
        f"(median), {verdict} the budget of 5% of a full optimize plus the fixed cost ({budget:.1f} s).",
    ]


def lineitem_section(
    spark, scale_factor: float, target: int, row_group: int, files: int, repeats: int, wanted: set[str] | None
) -> tuple[str, dict]:
    base = "lake.bench.lineitem"
    rows = load_lineitem(
        spark, base, scale_factor=scale_factor, data_dir=Path(tempfile.gettempdir()) / "zskip-tpch", files=files
    )
    by = list(LINEITEM_CLUSTER_COLUMNS)
    chosen = {k: v for k, v in recipes(spark, by, target, row_group).items() if wanted is None or k in wanted}
    laid = lay_out(spark, base, chosen, "lake.bench.li", repeats=repeats)
    built = {"as loaded": (base, 0.0), **{label: (item.table, item.seconds) for label, item in laid.items()}}
    steps = {label: item.median_steps() for label, item in laid.items() if item.steps}
    queries = lineitem_queries(spark, base)
    counts = {label: count_files_read(spark, table, queries) for label, (table, _) in built.items()}
    sort_seconds = laid["Iceberg sort"].seconds
    header = ["layout", "files", "layout s (median)", "runs s", "vs Iceberg sort", "vs Iceberg zorder"]
    header += ["vs Iceberg sort, same round", "vs Iceberg zorder, same round"]
    header += [f"Q{i + 1}" for i in range(len(queries))]
    header += ["total files read", "vs Iceberg zorder", "total ideal"]
    iceberg_total = sum(c.files_read for c in counts["Iceberg zorder"])
    iceberg_seconds = built["Iceberg zorder"][1]
    rows_out = []
    for label, (_table, seconds) in built.items():
        total = sum(c.files_read for c in counts[label])
        rows_out.append(
            [
                label,
                counts[label][0].files_total,
                f"{seconds:.1f}" if seconds else "",
                ", ".join(f"{run:.1f}" for run in laid[label].runs) if label in laid else "",
                f"{seconds / sort_seconds:.2f}x" if seconds else "",
                f"{seconds / iceberg_seconds:.2f}x" if seconds else "",
                same_round(laid, label, "Iceberg sort"),
                same_round(laid, label, "Iceberg zorder"),
                *[c.files_read for c in counts[label]],
                total,
                f"{total / iceberg_total:.2f}x",
                sum(c.ideal_files for c in counts[label]),
            ]
        )
    text = [
        f"### TPC-H lineitem, scale factor {scale_factor:g} ({rows:,} rows), clustered by {', '.join(by)}",
        "",
        f"Target file size {target / 2**20:.1f} MiB, row groups {row_group / 2**20:.2f} MiB; the source table "
        f"is written as {files} files with rows spread at random. Each layout ran {repeats} times on a fresh copy, "
        "rounds in rotated order (a session's first job warms the JVM and Python workers); times are medians. "
        "*Same round*: the median over rounds of the layout's time divided by the other's in the same round, "
        "which a slow spell of the machine affects less than a ratio of medians. "
        "Files read per filter (Iceberg's own min/max pruning), out of the layout's file count:",
        "",
        markdown_table(header, rows_out),
        *step_lines(steps, {label: seconds for label, (_t, seconds) in built.items()}),
        *incremental_lines(spark, laid["zskip hilbert rank"], base, by, "hilbert", "rank", 0.01),
        "",
        "Filters (matching rows):",
        "",
    ]
    for i, (where, count) in enumerate(zip(queries, counts["as loaded"], strict=True)):
        text.append(f"- Q{i + 1}: `{where}` ({count.rows_matching:,} rows)")
    return "\n".join(text), counts


def skewed_section(spark, target_files: int, repeats: int) -> tuple[str, dict]:
    """Two int columns, c1 squeezed into [0, 10000) with a heavy head, c2 uniform over the int range."""
    base = "lake.bench.skewed"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
    spark.sql(f"DROP TABLE IF EXISTS {base} PURGE")
    frame = spark.range(1_000_000).selectExpr(
        "CAST(floor(pow(rand(1), 3) * 10000) AS INT) AS c1",
        "CAST(floor(rand(2) * 2147483647) AS INT) AS c2",
        "id",
    )
    frame.repartition(target_files).writeTo(base).using("iceberg").create()
    size = sum(data_files(spark, base)["file_size_in_bytes"].to_pylist())
    target = size // target_files
    out = {}
    probes = spark.sql(
        "SELECT percentile_approx(c1, array(0.1, 0.5, 0.9)) AS a, "
        f"percentile_approx(c2, array(0.1, 0.5, 0.9)) AS b FROM {base}"
    ).first()
    wheres = [f"c1 = {v}" for v in probes["a"]] + [f"c2 = {v}" for v in probes["b"]]
    by = ["c1", "c2"]
    chosen = {
        "Iceberg zorder": iceberg_layout(
            spark, "zorder(c1,c2)", target_file_size_bytes=target, row_group_size_bytes=target // 4
        )
    }
    for curve in ("hilbert", "zorder"):
        for mapping in ("rank", "raw"):
            chosen[f"zskip {curve} {mapping}"] = zskip_layout(
                spark, by, curve=curve, mapping=mapping, target_file_size_bytes=target, row_group_size_bytes=target // 4
            )
    laid = lay_out(spark, base, chosen, f"{base}_laid", repeats=repeats)
    rows_out = []
    steps = {label: item.median_steps() for label, item in laid.items() if item.steps}
    layout_seconds = {label: item.seconds for label, item in laid.items()}
    zorder_seconds = laid["Iceberg zorder"].seconds
    for label, item in laid.items():
        counts = count_files_read(spark, item.table, wheres)
        out[label] = counts
        skipped = [1 - c.files_read / c.files_total for c in counts]
        c1 = sum(skipped[:3]) / 3
        c2 = sum(skipped[3:]) / 3
        rows_out.append(
            [
                label,
                counts[0].files_total,
                f"{item.seconds:.1f}",
                f"{item.seconds / zorder_seconds:.2f}x",
                same_round(laid, label, "Iceberg zorder"),
                f"{c1:.3f}",
                f"{c2:.3f}",
            ]
        )
        print(f"skewed {label}: c1 {c1:.3f} c2 {c2:.3f}", flush=True)
    text = [
        "### Skewed two-column table (1,000,000 rows)",
        "",
        "`c1` holds 0..9,999 with a heavy head (`floor(rand^3 * 10000)`), `c2` is uniform over the int range. "
        "Share of files skipped by point filters at the 10th, 50th and 90th percentile of each column "
        "(the Hudi benchmark's measure):",
        "",
        markdown_table(
            [
                "layout",
                "files",
                "layout s (median)",
                "vs Iceberg zorder",
                "vs Iceberg zorder, same round",
                "skipped, c1 = v",
                "skipped, c2 = v",
            ],
            rows_out,
        ),
        *step_lines(steps, layout_seconds),
    ]
    return "\n".join(text), out


def chart(counts: dict, path: Path) -> None:
    plt = pyplot()

    labels = list(counts)
    totals = [sum(c.files_read for c in counts[label]) for label in labels]
    ideal = sum(c.ideal_files for c in counts["Iceberg zorder"])
    figure, axis = plt.subplots(figsize=(10, 4.5))
    colors = ["#999" if not label.startswith("zskip") else "#2a7" for label in labels]
    axis.barh(labels, totals, color=colors)
    axis.axvline(ideal, color="#c33", linestyle="--", label=f"ideal ({ideal})")
    axis.set_xlabel("data files read over the query set (fewer is better)")
    axis.invert_yaxis()
    axis.legend()
    save_png(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--target-file-size", default="4MB")
    parser.add_argument("--row-group-size", default="512KB")
    parser.add_argument("--files", type=int, default=64, help="files the source table is written as")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each layout (median reported)")
    parser.add_argument(
        "--layouts",
        help="comma-separated layouts to run (default: all); Iceberg sort, Iceberg zorder and zskip hilbert rank "
        "always run, e.g. for scale factor 10: 'zskip zorder rank'",
    )
    parser.add_argument("--no-skewed", action="store_true", help="leave out the 1M-row skewed table")
    parser.add_argument("--report", default="optimize", help="report name under docs/benchmarks (default optimize)")
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    args = parser.parse_args()
    wanted = None if not args.layouts else {x.strip() for x in args.layouts.split(",")} | set(REQUIRED)
    spark = bench_session(args.warehouse)
    target, row_group = parse_size(args.target_file_size), parse_size(args.row_group_size)
    lineitem_text, counts = lineitem_section(
        spark, args.scale_factor, target, row_group, args.files, args.repeats, wanted
    )
    skewed_text = "" if args.no_skewed else skewed_section(spark, 200, args.repeats)[0]
    chart_name = f"{args.report}-files.png"
    chart(counts, DOCS / chart_name)
    report = [
        "# Optimize benchmark",
        "",
        f"One run of `python bench/optimize.py {shlex.join(sys.argv[1:])}` on "
        f"{machine()}. Every layout starts from a copy of the same table; times are medians of the wall-clock "
        "seconds of the layout step alone, in the same run.",
        "",
        lineitem_text,
        "",
        f"![files read per layout]({chart_name})",
        "",
        skewed_text,
        "",
    ]
    write_report(args.report, report)


if __name__ == "__main__":
    main()
