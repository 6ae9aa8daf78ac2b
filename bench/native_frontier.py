"""Can one zskip layout read no more of lineorder than the native peer on every one of D1-D7?

The native peer (Iceberg's zorder over lo_ordtotalprice, lo_revenue, lo_quantity with Parquet bloom
filters, ``bench.native_peer``) reads few row groups on D6, a narrow band of lo_ordtotalprice alone,
because Iceberg's byte interleave happens to give that column two more levels of the curve than
lo_revenue; on D7, a box over both columns, it reads many.  This lays out copies of lineorder as zskip
curves over the two columns D1-D7 filter (raw mapping, a bitmap on lo_ordtotalprice: what the advisor
chooses for D1-D7) with lo_ordtotalprice weighted from 1 to 2, reads D1-D7 on each through
``zskip.enable`` and on the native table with plain Spark, and counts from the run what each read
(``zskip.iceberg.scan_stats.measure_read``: files, row groups, rows), to show where the layouts zskip
can write sit against the native one::

    python bench/ssb.py --scale-factor 10 --files 640 --layouts a,i ...   # loads SSB, lays out (i)
    python bench/native_frontier.py --scale-factor 10 --files 640 --warehouse /tmp/zskip-bench-sf10
    python bench/native_frontier.py ... --no-hilbert --weights 1.25 --paired 1.25  # one layout, timed too

``--paired`` times one of the layouts against the native table query by query, in interleaved pairs
(``bench.native_peer.head_to_head``, as bench/ssb.py times (j) against (i)).  The script reuses the SSB
tables and the native table of an earlier ``bench/ssb.py`` run in ``--warehouse`` (or loads and lays
them out as that run would) and writes ``docs/benchmarks/<report>.md``, ``.json`` and charts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DOCS, bench_session, machine, markdown_table, pyplot, write_report
from bench.layouts import lay_out_once
from bench.native_peer import BLOOM_BYTES, NATIVE, PAIR_SECONDS, head_to_head, measured_read, native_chart, native_lines
from bench.ssb import FAIR, _fair_reads, _swap, lay_out_native, load_or_reuse, queries, table_options
from zskip import create_index, disable, enable
from zskip.iceberg.files import data_files
from zskip.iceberg.table import load_table
from zskip.layout.compare import zskip_layout
from zskip.units import parse_size
from zskip.viz.figures import save_png

FILTERS = ("D1", "D2", "D3", "D4", "D5", "D6", "D7")
COLUMNS = ("lo_ordtotalprice", "lo_revenue")  # the columns D1-D7 filter
INDEXED_COLUMN = "lo_ordtotalprice"  # the advisor's bitmap for D1-D7
WEIGHTS = (1.0, 1.25, 1.5, 2.0)  # lo_ordtotalprice's weight against lo_revenue's 1 (zorder)


def options() -> argparse.ArgumentParser:
    parser = table_options(
        argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    )
    parser.add_argument(
        "--weights",
        default=",".join(f"{w:g}" for w in WEIGHTS),
        help="lo_ordtotalprice's zorder weights to lay out (comma-separated, each at least 1)",
    )
    parser.add_argument(
        "--hilbert",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="lay out the hilbert curve too (the layout zskip's advisor chooses for D1-D7)",
    )
    parser.add_argument(
        "--paired",
        type=float,
        help="one of --weights: time that layout against the native table, query by query, in paired runs",
    )
    parser.add_argument("--paired-runs", type=int, default=21, help="pairs at least (with --paired)")
    parser.add_argument(
        "--pair-seconds",
        type=float,
        default=PAIR_SECONDS,
        help="a quick query runs more pairs, until the native side has run this long (with --paired)",
    )
    parser.add_argument("--output", default=str(DOCS), help="where the report and its chart go")
    parser.add_argument("--report", default="native-frontier", help="report name: <output>/<report>.md, .json, .png")
    return parser


def _weights(text: str) -> list[float]:
    try:
        weights = [float(w) for w in text.split(",")]
    except ValueError:
        raise SystemExit(f"--weights must be numbers separated by commas, such as 1,1.5,2; not {text!r}") from None
    if not weights or any(not w >= 1 for w in weights):
        raise SystemExit(f"--weights must each be at least 1 (lo_revenue's weight is 1), not {text!r}")
    return weights


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    weights = _weights(args.weights)
    if args.paired is not None and args.paired not in weights:
        raise SystemExit(f"--paired {args.paired:g} is not one of --weights {args.weights}: it times a layout laid out")
    clock = time.perf_counter()
    spark = bench_session(args.warehouse)
    ns = "lake.ssb"
    row_group = parse_size(args.row_group_size)
    args.reuse_loaded = True  # load_or_reuse: the tables of an earlier run if it left them
    load_or_reuse(spark, ns, args)
    base = f"{ns}.lineorder"
    _fair_reads(spark, base)
    size = sum(data_files(spark, base)["file_size_in_bytes"].to_pylist())
    target = max(size // args.files, 1 << 20)
    qs = {name: query for name, query in queries(spark, ns).items() if name in FILTERS}
    native_table = f"{ns}.lineorder_native"
    if not spark.catalog.tableExists(native_table):  # as bench/ssb.py's (i) lays it out
        lay_out_native(spark, base, native_table, base, target, row_group)
    disable(spark)
    sides: dict[str, dict[str, dict[str, Any]]] = {
        NATIVE: {name: measured_read(spark, q) for name, q in _swap(qs, base, native_table).items()}
    }
    print(NATIVE, {n: r["row_groups"] for n, r in sides[NATIVE].items()}, flush=True)
    table = f"{ns}.lineorder_frontier"
    layouts = [("hilbert", None)] if args.hilbert else []
    layouts += [("zorder", w) for w in weights]
    paired: dict[str, Any] = {}
    for curve, weight in layouts:
        label = f"zskip {curve} raw" + (f", lo_ordtotalprice x{weight:g}" if weight not in (None, 1.0) else "")
        recipe = zskip_layout(
            spark,
            list(COLUMNS),
            curve=curve,
            mapping="raw",
            weights={COLUMNS[0]: weight} if weight not in (None, 1.0) else None,
            target_file_size_bytes=target,
            row_group_size_bytes=row_group,
        )

        def indexed(copy: str, lay: Any = recipe) -> None:
            lay(copy)
            create_index(spark, copy, INDEXED_COLUMN, kind="bitmap")

        lay_out_once(spark, base, table, indexed, properties=FAIR)
        enable(spark)
        try:
            sides[label] = {name: measured_read(spark, q) for name, q in _swap(qs, base, table).items()}
        finally:
            disable(spark)
        print(label, {n: r["row_groups"] for n, r in sides[label].items()}, flush=True)
        different = [n for n, r in sides[label].items() if r["result"] != sides[NATIVE][n]["result"]]
        if different:  # before anything is timed or written
            raise SystemExit(f"{label} returned other rows than the native table on {', '.join(different)}")
        if weight is not None and weight == args.paired:  # timed now: the next layout replaces this table
            paired = {
                "layout": label,
                "runs": args.paired_runs,
                "pair_seconds": args.pair_seconds,
                "bloom": int(load_table(spark, native_table).property(BLOOM_BYTES) or 0),
                "queries": head_to_head(
                    spark,
                    _swap(qs, base, native_table),
                    _swap(qs, base, table),
                    runs=args.paired_runs,
                    pair_seconds=args.pair_seconds,
                ),
            }
    result = {
        "scale_factor": args.scale_factor,
        "files": args.files,
        "row_group_size": row_group,
        "target_file_size": target,
        "queries": qs,
        "sides": {label: {n: {k: v for k, v in r.items() if k != "result"} for n, r in side.items()}
                  for label, side in sides.items()},
    }  # fmt: skip
    if paired:
        result["paired"] = paired
    output = Path(args.output)
    chart = _chart(result, output, args.report)
    write_report(
        args.report,
        report_lines(result, time.perf_counter() - clock, argv, chart, _timed(result, output, args.report)),
        output,
    )
    (output / f"{args.report}.json").write_text(json.dumps(result, indent=2))
    return result


def report_lines(
    result: dict[str, Any], seconds: float, argv: list[str] | None, chart: str, timed: Sequence[str] = ()
) -> list[str]:
    """The report: each layout's row groups per filter beside the native table's, which filters read
    more, then ``timed`` (the paired section, if any) and the queries."""
    sides = result["sides"]
    native = sides[NATIVE]
    command = " ".join(["python bench/native_frontier.py", *_shown(argv if argv is not None else sys.argv[1:])])
    body = []
    for label, side in sides.items():
        more = [n for n in FILTERS if side[n]["row_groups"] > native[n]["row_groups"]]
        rows = sum(r["rows"] for r in side.values()) / max(1, sum(r["rows"] for r in native.values()))
        body.append(
            [
                label,
                *(f"{side[n]['row_groups']:,}" for n in FILTERS),
                f"{rows:.2f}x",
                "-" if label == NATIVE else (", ".join(more) if more else "none"),
            ]
        )
    return [
        "# zskip's layouts against the native peer, filter by filter",
        "",
        f"One run of `{command}` on {machine()}, {seconds / 60:.0f} minutes in all. SSB scale factor "
        f"{result['scale_factor']:g} lineorder as loaded in {result['files']} files, copied and laid out "
        f"into files of {result['target_file_size'] / 2**20:.1f} MiB with row groups of "
        f"{result['row_group_size'] // 1024} KiB, adaptive split size off on every table. The native table is "
        f"{NATIVE} (bench/ssb.py's (i)), read by plain Spark; each zskip layout is a curve over "
        f"{' and '.join(COLUMNS)} (raw mapping) with a bitmap on {INDEXED_COLUMN}, read through "
        "`zskip.enable`. Row groups and rows are measured from each query's run "
        "(`zskip.iceberg.scan_stats.measure_read`), not taken from a plan. Every layout returned the native "
        "table's rows for every filter.",
        "",
        "## Row groups of lineorder read",
        "",
        markdown_table(
            ["layout", *FILTERS, "rows read over D1-D7, over native", "filters reading more row groups than native"],
            body,
        ),
        "",
        f"![{Path(chart).name}]({Path(chart).name})",
        "",
        "D6 is a narrow band of lo_ordtotalprice alone and D7 a box over both columns: each level of the curve "
        "given to lo_ordtotalprice halves the row groups a band of it reads and doubles those a band of "
        "lo_revenue reads, so on these two filters a layout trades one against the other. The native "
        "table's place on that trade comes from Iceberg's byte interleave (lo_ordtotalprice's values are about "
        "four times lo_revenue's, so its high bits lead by two levels), not from a choice.",
        "",
        *timed,
        "Queries:",
        "",
        *(f"- {name}: `{query}`" for name, query in result["queries"].items()),
        "",
    ]


def _timed(result: dict[str, Any], output: Path, report: str) -> list[str]:
    """The paired section of the report and its chart (none without ``--paired``)."""
    paired = result.get("paired")
    if not paired:
        return []
    head = paired["queries"]
    name = native_chart(head, output, report)
    return [*native_lines(head, paired["layout"], paired["runs"], paired["bloom"], paired["pair_seconds"]),
            f"![{name}]({name})", ""]  # fmt: skip


def _shown(argv: Sequence[str]) -> list[str]:
    """The run's options as a report shows them: where the report went is left out."""
    shown: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--output":
            skip = True
        elif not arg.startswith("--output="):
            shown.append(arg)
    return shown


def _chart(result: dict[str, Any], output: Path, report: str) -> str:
    """D6's row groups against D7's, one point per layout: where the trade between the two sits."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6.5, 4.5))
    for label, side in result["sides"].items():
        d6, d7 = side["D6"]["row_groups"], side["D7"]["row_groups"]
        native = label == NATIVE
        axes.scatter([d7], [d6], marker="s" if native else "o", color="tab:red" if native else "tab:blue", zorder=3)
        short = "native (i)" if native else label.replace("zskip ", "").replace(", lo_ordtotalprice", "")
        axes.annotate(short, (d7, d6), textcoords="offset points", xytext=(6, -12 if native else 4), fontsize=8)
    axes.set_xlabel("D7 row groups read (box over both columns)")
    axes.set_ylabel("D6 row groups read (band of lo_ordtotalprice)")
    axes.set_title(f"SSB SF {result['scale_factor']:g}: zskip's layouts and the native peer")
    axes.grid(alpha=0.3)
    return str(save_png(figure, output / f"{report}.png"))


if __name__ == "__main__":
    main()
