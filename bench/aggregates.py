"""Aggregates answered from statistics: dashboard aggregates over SSB lineorder, side by side in one run.

    python bench/ssb.py --scale-factor 1 --layouts a --runs 1 --queries D1   # loads lineorder once
    python bench/aggregates.py --scale-factor 1                               # docs/benchmarks/aggregates.md

Four configurations of the same rows, each a copy of lineorder as loaded, in files and row groups of
the same sizes, adaptive split size off, all through plain ``spark.sql``:

- **zskip on**: laid out by zskip's Hilbert curve over ``lo_orderdate, lo_discount, lo_quantity``
  (ranks), a bitmap on ``lo_discount``, sums indexes on the measures and cubes of the measures by
  ``lo_discount`` and by ``lo_shipmode`` (the grouped queries' columns), with ``zskip.enable``;
- **zskip off**: the same table with zskip off (Spark's and Iceberg's own planning);
- **Iceberg zorder**: Iceberg's ``rewrite_data_files`` zorder over the same columns;
- **Iceberg zorder + blooms**: the same, with Parquet bloom filters on ``lo_discount`` and
  ``lo_quantity`` sized for a row group (Iceberg's aggregate pushdown is on in every configuration:
  its default).

Counted from each run: rows the lineorder scan decoded (Spark's ``numOutputRows``), row groups and
files read (from the files), and, for zskip, the floor: the rows of the row groups the filter's
boundary cuts through (statistics say some rows match, not all) among those its plan keeps.  Time:
paired medians, the configurations alternating in each round.  Every configuration must return the
same rows.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DOCS, bench_session, machine, markdown_table, pyplot, write_report
from bench.layouts import lay_out_once
from bench.native_peer import bloom_bytes, bloom_properties, rows_per_row_group
from bench.ssb import FAIR, load_or_reuse, table_options
from zskip import create_index, disable, enable
from zskip.iceberg.scan_stats import measure_read
from zskip.layout.compare import iceberg_layout, zskip_layout
from zskip.units import parse_size
from zskip.viz.figures import save_png

CLUSTER = ["lo_orderdate", "lo_discount", "lo_quantity"]
MEASURES = ["lo_revenue", "lo_extendedprice", "lo_quantity", "lo_supplycost"]
BLOOMED = ["lo_discount", "lo_quantity"]
CUBES = ["lo_discount", "lo_shipmode"]  # grouped by in G1 and G2
ZSKIP_ON = "zskip on"
ZSKIP_OFF = "zskip off, same table"
ZORDER = "Iceberg zorder"
NATIVE = "Iceberg zorder + blooms"
CONFIGS = (ZSKIP_ON, ZSKIP_OFF, ZORDER, NATIVE)

# {t}: the table; lo_orderdate holds yyyymmdd as an int
QUERIES: dict[str, str] = {
    "A1 count, 4 years": "SELECT count(*) FROM {t} WHERE lo_orderdate BETWEEN 19930101 AND 19961231",
    "A2 sum+count, year, discount": "SELECT sum(lo_revenue), count(*) FROM {t} "
    "WHERE lo_orderdate BETWEEN 19940101 AND 19941231 AND lo_discount BETWEEN 4 AND 6",
    "A3 min/max, 4 years, quantity": "SELECT min(lo_quantity), max(lo_quantity), max(lo_orderdate), count(*) FROM {t} "
    "WHERE lo_orderdate >= 19950101 AND lo_quantity < 25",
    "A4 avg, 2 years": "SELECT avg(lo_extendedprice), count(lo_extendedprice) FROM {t} "
    "WHERE lo_orderdate BETWEEN 19920101 AND 19931231",
    "A5 sums, 2 years, quantity": "SELECT sum(lo_revenue), sum(lo_supplycost) FROM {t} "
    "WHERE lo_orderdate BETWEEN 19960101 AND 19971231 AND lo_quantity BETWEEN 10 AND 40",
    "G1 by discount, 3 years": "SELECT lo_discount, count(*), sum(lo_revenue) FROM {t} "
    "WHERE lo_orderdate BETWEEN 19930101 AND 19951231 GROUP BY lo_discount",
    "G2 by ship mode, 2 years": "SELECT lo_shipmode, count(*), sum(lo_revenue), avg(lo_quantity), "
    "max(lo_supplycost) FROM {t} WHERE lo_orderdate BETWEEN 19940101 AND 19951231 GROUP BY lo_shipmode",
    "G3 by ship mode, discount": "SELECT lo_shipmode, sum(lo_extendedprice), min(lo_quantity) FROM {t} "
    "WHERE lo_orderdate BETWEEN 19920101 AND 19961231 AND lo_discount BETWEEN 2 AND 8 GROUP BY lo_shipmode",
    "Q1.1 (lineorder only)": "SELECT sum(lo_extendedprice * lo_discount) FROM {t} "
    "WHERE lo_orderdate BETWEEN 19930101 AND 19931231 AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25",
    "Q1.2 (lineorder only)": "SELECT sum(lo_extendedprice * lo_discount) FROM {t} "
    "WHERE lo_orderdate BETWEEN 19940101 AND 19940131 AND lo_discount BETWEEN 4 AND 6 "
    "AND lo_quantity BETWEEN 26 AND 35",
    "Q1.3 (lineorder only)": "SELECT sum(lo_extendedprice * lo_discount) FROM {t} "
    "WHERE lo_orderdate BETWEEN 19940204 AND 19940210 AND lo_discount BETWEEN 5 AND 7 "
    "AND lo_quantity BETWEEN 26 AND 35",
}


def options() -> argparse.ArgumentParser:
    parser = table_options(
        argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    )
    parser.add_argument("--runs", type=int, default=7, help="alternating timed rounds after a warm-up (medians)")
    parser.add_argument(
        "--min-seconds",
        type=float,
        default=3.0,
        help="a short query gets more rounds, up to --max-runs, until each configuration is timed this long",
    )
    parser.add_argument("--max-runs", type=int, default=41, help="rounds a short query gets at most")
    parser.add_argument("--output", default=str(DOCS), help="where aggregates.md and its chart go")
    parser.add_argument("--report", default="aggregates", help="report name: <output>/<report>.md, .json, .png")
    parser.add_argument("--relayout", action="store_true", help="lay the three tables out again")
    parser.add_argument(
        "--reuse-loaded", action="store_true", help="keep the SSB tables an earlier run loaded into --warehouse"
    )
    parser.add_argument("--queries", help="comma-separated query names' prefixes (default: all), e.g. A1,G1")
    parser.add_argument("--render", help="write the report again from this run's JSON (nothing is run)")
    return parser


def _exists(spark: Any, table: str) -> bool:
    return bool(spark.catalog.tableExists(table))


def lay_out_tables(spark: Any, ns: str, args: argparse.Namespace) -> dict[str, str]:
    """The three tables (zskip's, Iceberg's zorder, and it with blooms), laid out where missing."""
    base = f"{ns}.lineorder"
    size = sum(f.stat().st_size for f in Path(args.warehouse, *ns.split(".")[1:], "lineorder", "data").glob("*"))
    target = max(size // args.files, 1 << 20)
    row_group = parse_size(args.row_group_size)
    tables = {
        ZSKIP_ON: f"{ns}.lineorder_agg_zskip",
        ZORDER: f"{ns}.lineorder_agg_zorder",
        NATIVE: f"{ns}.lineorder_agg_native",
    }
    if args.relayout or not _exists(spark, tables[ZSKIP_ON]):
        recipe = zskip_layout(spark, CLUSTER, target_file_size_bytes=target, row_group_size_bytes=row_group)
        laid = lay_out_once(spark, base, tables[ZSKIP_ON], recipe, properties=FAIR)
        print(f"{ZSKIP_ON}: laid out in {laid.seconds:.0f} s", flush=True)
        create_index(spark, tables[ZSKIP_ON], "lo_discount", kind="bitmap")
        for measure in MEASURES:
            create_index(spark, tables[ZSKIP_ON], measure, kind="sums")
    _cubes(spark, tables[ZSKIP_ON])
    order = f"zorder({','.join(CLUSTER)})"
    if args.relayout or not _exists(spark, tables[ZORDER]):
        recipe = iceberg_layout(spark, order, target_file_size_bytes=target, row_group_size_bytes=row_group)
        laid = lay_out_once(spark, base, tables[ZORDER], recipe, properties=FAIR)
        print(f"{ZORDER}: laid out in {laid.seconds:.0f} s", flush=True)
    if args.relayout or not _exists(spark, tables[NATIVE]):
        bloom = bloom_bytes(rows_per_row_group(spark, tables[ZORDER]))
        recipe = iceberg_layout(spark, order, target_file_size_bytes=target, row_group_size_bytes=row_group)
        laid = lay_out_once(spark, base, tables[NATIVE], recipe, properties=FAIR | bloom_properties(BLOOMED, bloom))
        print(f"{NATIVE}: laid out in {laid.seconds:.0f} s (blooms of {bloom:,} bytes)", flush=True)
    return tables


def _cubes(spark: Any, table: str) -> None:
    """The cubes of the grouped queries' columns, where the table lacks them."""
    from zskip import list_indexes

    have = {(i.column, i.kind) for i in list_indexes(spark, table)}
    for column in CUBES:
        if (column, "cube") not in have:
            started = time.perf_counter()
            create_index(spark, table, column, kind="cube", measures=MEASURES)
            print(f"cube of {column}: built in {time.perf_counter() - started:.0f} s", flush=True)


def floor_rows(spark: Any, query: str) -> tuple[int, int]:
    """Of the row groups zskip's plan of ``query`` keeps: the rows of those the filter's boundary cuts
    through (their statistics do not prove every row matches), and the rows of all of them."""
    from zskip.planning.aggregate_answers import boundary_rows
    from zskip.planning.sql import scanned_queries

    return boundary_rows(scanned_queries(spark, query)[0].plan)


def run(spark: Any, name: str, config: str, table: str) -> tuple[float, Any]:
    """One timed run of query ``name`` on ``table`` as ``config`` reads it: seconds and its rows."""
    query = QUERIES[name].format(t=table)
    (enable if config == ZSKIP_ON else disable)(spark)
    started = time.perf_counter()
    rows = sorted(map(tuple, spark.sql(query).collect()), key=repr)
    return time.perf_counter() - started, rows


def main(argv: list[str] | None = None) -> Path:
    args = options().parse_args(argv)
    if args.render:
        data = json.loads(Path(args.render).read_text())
        out = Path(args.output)
        chart = _chart(data["results"], out, args.report)
        return write_report(args.report, report_lines(data["results"], argparse.Namespace(**data["args"]), chart), out)
    spark = bench_session(args.warehouse)
    ns = "lake.ssb"
    load_or_reuse(spark, ns, args)
    tables = lay_out_tables(spark, ns, args)
    tables[ZSKIP_OFF] = tables[ZSKIP_ON]
    names = [n for n in QUERIES if not args.queries or any(n.startswith(p) for p in args.queries.split(","))]
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        item: dict[str, Any] = {"reads": {}, "seconds": {c: [] for c in CONFIGS}}
        answers = {}
        warm = []
        for config in CONFIGS:
            run(spark, name, config, tables[config])  # warm-up
            seconds, answers[config] = run(spark, name, config, tables[config])
            warm.append(seconds)
            (enable if config == ZSKIP_ON else disable)(spark)
            read = measure_read(spark.sql(QUERIES[name].format(t=tables[config])), tables[config])
            item["reads"][config] = {"rows": read.rows, "row_groups": read.row_groups, "files": read.files}
        if len({repr(a) for a in answers.values()}) != 1:
            _same_but_doubles(answers, name)
        disable(spark)
        item["floor"], item["kept"] = floor_rows(spark, QUERIES[name].format(t=tables[ZSKIP_ON]))
        # a query of 100 ms swings by more than zskip's difference from one round to the next: it gets
        # as many rounds as make each configuration's timed total --min-seconds
        item["rounds"] = rounds(args, max(warm))
        for round_ in range(item["rounds"]):
            order = CONFIGS[round_ % len(CONFIGS) :] + CONFIGS[: round_ % len(CONFIGS)]
            for config in order:
                item["seconds"][config].append(run(spark, name, config, tables[config])[0])
        disable(spark)
        results[name] = item
        on = item["reads"][ZSKIP_ON]["rows"]
        print(f"{name}: zskip decodes {on:,} rows, floor {item['floor']:,}, off {item['reads'][ZSKIP_OFF]['rows']:,}")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.report}.json").write_text(
        json.dumps({"machine": machine(), "args": vars(args), "results": results}, indent=1)
    )
    chart = _chart(results, out, args.report)
    return write_report(args.report, report_lines(results, args, chart), out)


def rounds(args: argparse.Namespace, seconds: float) -> int:
    """The timed rounds of a query whose slowest warm run took ``seconds``."""
    return max(args.runs, min(args.max_runs, math.ceil(args.min_seconds / max(seconds, 1e-3))))


def _same_but_doubles(answers: dict[str, Any], name: str) -> None:
    """The configurations' rows equal but for the last digits of doubles (sums added in another order)."""
    first = next(iter(answers.values()))
    for config, rows in answers.items():
        assert len(rows) == len(first), (name, config)
        for a, b in zip(rows, first, strict=True):
            for x, y in zip(a, b, strict=True):
                same = math.isclose(x, y, rel_tol=1e-9) if isinstance(x, float) else x == y
                assert same, (name, config, a, b)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report_lines(results: dict[str, dict[str, Any]], args: argparse.Namespace, chart: str) -> list[str]:
    lines = [
        "# Aggregates answered from statistics",
        "",
        f"SSB lineorder at scale factor {args.scale_factor:g}, four configurations of the same rows side by side "
        "(`bench/aggregates.py`; what each is, and how it is counted, is in its docstring). "
        f"Time: medians of alternating rounds after a warm-up ({_rounds_text(results, args)}), "
        "as a ratio to the faster Iceberg table. "
        "*floor*: the rows of the row groups zskip's plan keeps whose statistics do not prove every row matches "
        "(the row groups the filter's boundary cuts through), which any reader of these files must decode.",
        "",
        f"Machine: {machine()}.",
        "",
    ]
    header = [
        "query",
        "rows decoded: zskip on",
        "floor",
        "on / floor",
        "zskip off",
        ZORDER,
        NATIVE,
        "row groups: on / zorder",
    ]
    rows = []
    for name, item in results.items():
        reads = item["reads"]
        on = reads[ZSKIP_ON]["rows"]
        rows.append(
            [
                name,
                f"{on:,}",
                f"{item['floor']:,}",
                f"{on / item['floor']:.2f}x" if item["floor"] else ("1x" if on == 0 else "n/a"),
                f"{reads[ZSKIP_OFF]['rows']:,}",
                f"{reads[ZORDER]['rows']:,}",
                f"{reads[NATIVE]['rows']:,}",
                f"{reads[ZSKIP_ON]['row_groups']} / {reads[ZORDER]['row_groups']}",
            ]
        )
    lines += [markdown_table(header, rows), ""]
    header = [
        "query",
        "zskip on (ms)",
        "zskip off (ms)",
        f"{ZORDER} (ms)",
        f"{NATIVE} (ms)",
        "on / best Iceberg",
        "paired, 95% interval",
    ]
    rows = []
    ratios = []
    for name, item in results.items():
        med = {c: _median(item["seconds"][c]) * 1000 for c in CONFIGS}
        best = min(med[ZORDER], med[NATIVE])
        ratios.append(med[ZSKIP_ON] / best)
        low, high = paired_interval(item)
        rows.append(
            [name, *(f"{med[c]:.0f}" for c in CONFIGS), f"{med[ZSKIP_ON] / best:.2f}x", f"{low:.2f}-{high:.2f}"]
        )
    lines += [markdown_table(header, rows), "", f"![rows decoded]({chart})", ""]
    total_on = sum(_median(i["seconds"][ZSKIP_ON]) for i in results.values())
    total_best = sum(min(_median(i["seconds"][ZORDER]), _median(i["seconds"][NATIVE])) for i in results.values())
    lines += [
        f"Whole workload: the medians add up to {total_on / total_best:.2f}x the faster Iceberg table's, query by "
        f"query (median ratio {statistics.median(ratios):.2f}x).",
        "",
        *_where_zskip_loses(results),
    ]
    return lines


def paired_interval(item: dict[str, Any], *, draws: int = 2000) -> tuple[float, float]:
    """A 95% bootstrap interval of the median of zskip on's time over the faster Iceberg table's (by
    median), round by round (each round runs every configuration once, one after the other)."""
    seconds = item["seconds"]
    best = min((ZORDER, NATIVE), key=lambda c: _median(seconds[c]))
    ratios = [a / b for a, b in zip(seconds[ZSKIP_ON], seconds[best], strict=True)]
    draw = random.Random(0)
    medians = sorted(statistics.median(draw.choices(ratios, k=len(ratios))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def _rounds_text(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    counts = [item.get("rounds", args.runs) for item in results.values()]
    if not counts or min(counts) == max(counts):
        return f"{counts[0] if counts else args.runs} per query"
    return f"{min(counts)} to {max(counts)} per query: more for a short one, until each side ran {args.min_seconds:g} s"


def _where_zskip_loses(results: dict[str, dict[str, Any]]) -> list[str]:
    """The queries zskip is slower on, and those where it decodes more than 1.25x the floor, with why."""
    slower = []
    above = []
    for name, item in results.items():
        med = {c: _median(item["seconds"][c]) for c in CONFIGS}
        ratio = med[ZSKIP_ON] / min(med[ZORDER], med[NATIVE])
        if ratio > 1.0:
            reads = item["reads"]
            off = f"; zskip off on the same table {med[ZSKIP_OFF] * 1000:.0f} ms"
            if med[ZSKIP_ON] <= med[ZSKIP_OFF] * 1.05:
                off += ": the layout's time, not zskip's planning"
            low, high = paired_interval(item)
            surely = "slower in 95% of resamples" if low > 1.0 else f"paired interval {low:.2f}-{high:.2f} holds 1"
            slower.append(
                f"{name} ({ratio:.2f}x, {surely}; {reads[ZSKIP_ON]['row_groups']} row groups in "
                f"{reads[ZSKIP_ON]['files']} files read to {reads[ZORDER]['row_groups']} in {reads[ZORDER]['files']} "
                f"on Iceberg's zorder{off})"
            )
        on, floor = item["reads"][ZSKIP_ON]["rows"], item["floor"]
        if floor and on > 1.25 * floor:
            above.append(f"{name} ({on / floor:.2f}x)")
    lines = ["## Where zskip loses", ""]
    lines.append(
        "Slower than the faster Iceberg table: " + ("; ".join(slower) if slower else "none") + ". A query whose "
        "filter's box is cut by every row group it keeps has nothing to answer; where zskip on is as fast as zskip "
        "off on the same table, what is left is how the box falls across files and row groups (each file a task "
        "opens and whose footer it reads, each row group it decodes), which one layout wins by chance of where "
        "its cuts fall."
    )
    lines.append("")
    lines.append(
        "Decoding more than 1.25x the floor: " + ("; ".join(above) if above else "none") + ". "
        "SSB Q1.x's `sum(lo_extendedprice * lo_discount)` is answered only in the row groups where `lo_discount` "
        "holds one value (then it is that value times the sums index's sum); the others are read."
    )
    lines.append("")
    return lines


def _chart(results: dict[str, dict[str, Any]], directory: Path, prefix: str) -> str:
    plt = pyplot()
    names = list(results)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.16
    series = [(ZSKIP_ON, lambda i: i["reads"][ZSKIP_ON]["rows"]), ("floor", lambda i: i["floor"])] + [
        (c, lambda i, c=c: i["reads"][c]["rows"]) for c in (ZSKIP_OFF, ZORDER, NATIVE)
    ]
    for k, (label, value) in enumerate(series):
        ax.bar(
            [x + (k - 2) * width for x in range(len(names))],
            [max(value(results[n]), 1) for n in names],
            width,
            label=label,
        )
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), [n.split(" ")[0] for n in names])
    ax.set_ylabel("rows decoded by the lineorder scan (log)")
    ax.legend(fontsize=8)
    ax.set_title("Rows decoded per aggregate: zskip answers whole row groups from statistics")
    name = f"{prefix}-rows.png"
    save_png(fig, directory / name)
    return name


if __name__ == "__main__":
    print(main())
