"""Star Schema Benchmark: layouts and indexes side by side on the same data, in one run.

    python bench/ssb.py --scale-factor 1

Configurations: (a) as loaded, (b) Iceberg sort by lo_orderdate, (c) Iceberg zorder, (d) zskip
zorder raw, (e) zskip zorder rank, (f) zskip hilbert rank; zskip's with min/max only, + bloom and
+ bitmap on the filtered lineorder columns; (g) zskip's star layout, through lineorder's dimensions; (h)
(c)'s table read through zskip; (i) the native peer, (c) with Iceberg's own Parquet bloom filters
(``bench.native_peer``); (j) what zskip's advisor lays out and indexes for the run's own queries
(``zskip.advise(..., apply=True)`` on a copy of (a)), the side the native peer is measured against
when the run has it.  Queries: the 13 SSB queries and source document 001's
seven lineorder filters (literals drawn from the data, see ``doc001_filters``).  Plain Spark SQL
runs (a)-(c), ``zskip.sql`` runs (d)-(f); every configuration must return the same rows.

Counted the same way for every configuration (``zskip.explain_sql``): data files of lineorder
opened, row groups read (plain Spark: those whose statistics cannot rule the filter out, as
Iceberg's reader skips the others; zskip: those its stages kept), their bytes; and, measured while
the query runs, the rows lineorder's scan produced (Spark's ``numOutputRows``).  Iceberg's adaptive
split size is turned off on every table so each configuration reads its files in the same kind of
tasks (with it on, plain Spark split the 64 files as loaded into 512 tasks).
Writes docs/benchmarks/ssb.md, its PNG charts, and every figure in ssb.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DOCS, bench_session, machine, markdown_table, pyplot, timed, write_report
from bench.layouts import lay_out_once
from bench.native_peer import (
    NATIVE,
    PAIR_SECONDS,
    bloom_bytes,
    bloom_properties,
    native_chart,
    native_lines,
    rows_per_row_group,
)
from bench.native_peer import head_to_head as native_head_to_head
from zskip import Dimension, create_index, disable, drop_index, enable, list_indexes
from zskip.datasets import SSB_QUERIES, load_ssb
from zskip.iceberg.files import data_files
from zskip.iceberg.scan_stats import scanned_rows
from zskip.layout.compare import Layout, copy_and_lay_out, iceberg_layout, zskip_layout
from zskip.layout.optimize import ROW_GROUP_PROPERTY
from zskip.maintenance.advise import advise as zskip_advise
from zskip.planning import explain_sql
from zskip.planning import sql as zskip_sql
from zskip.planning.plan import ICEBERG_STAGE
from zskip.units import parse_size
from zskip.viz.figures import save_png

CLUSTER = ["lo_ordtotalprice", "lo_revenue", "lo_quantity"]
STAR_PLAIN = "(g) zskip star, plain spark.sql, zskip off"
STAR_ENABLED = "(g) zskip star, plain spark.sql, zskip.enable"
INDEXED = ["lo_ordtotalprice", "lo_revenue", "lo_quantity", "lo_discount"]
ADVISED = "(j) zskip as advised for the run's queries"


def doc001_filters(spark, lineorder: str) -> dict[str, str]:
    """Document 001's Q1-Q7 shapes on lo_ordtotalprice and lo_revenue, literals drawn from the data.

    An order's total price and one of its lines' revenue make Q1-Q4 match a handful of rows; Q5 takes
    the largest totals, Q6 a narrow band of the smallest, Q7 a wide band with a narrow revenue range.
    """
    row = (
        spark.table(lineorder).orderBy("lo_orderkey", "lo_linenumber").select("lo_ordtotalprice", "lo_revenue").first()
    )
    price, revenue = row[0], row[1]
    other = (
        spark.table(lineorder)
        .orderBy("lo_orderkey", "lo_linenumber")
        .select("lo_ordtotalprice", "lo_revenue")
        .tail(1)[0]
    )
    q = spark.sql(
        f"SELECT percentile_approx(lo_ordtotalprice, array(0.001, 0.002, 0.2, 0.8, 0.999)) AS p, "
        f"percentile_approx(lo_revenue, array(0.4, 0.401)) AS r FROM {lineorder}"
    ).first()
    p, r = q["p"], q["r"]
    return {
        "D1": f"lo_ordtotalprice = {price}",
        "D2": f"lo_ordtotalprice = {price} AND lo_revenue = {revenue}",
        "D3": f"lo_ordtotalprice = {price} AND lo_revenue >= {revenue}",
        "D4": f"lo_ordtotalprice = {other[0]} AND lo_revenue >= {other[1] - 100} AND lo_revenue <= {other[1] + 100}",
        "D5": f"lo_ordtotalprice > {p[4]} AND lo_revenue >= {r[0]} AND lo_revenue <= {r[1]}",
        "D6": f"lo_ordtotalprice >= {p[0]} AND lo_ordtotalprice < {p[1]}",
        "D7": f"lo_ordtotalprice >= {p[2]} AND lo_ordtotalprice < {p[3]} "
        f"AND lo_revenue >= {r[0]} AND lo_revenue <= {r[1]}",
    }


def queries(spark, ns: str) -> dict[str, str]:
    out = {name: text.format(ns=ns) for name, text in SSB_QUERIES.items()}
    for name, where in doc001_filters(spark, f"{ns}.lineorder").items():
        out[name] = f"SELECT count(*) AS n FROM {ns}.lineorder WHERE {where}"
    return out


LAYOUTS = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")  # the configurations, by letter
KINDS = ("minmax", "bloom", "bitmap")  # the skipping the zskip layouts (d)-(f) are measured with
FAIR = {"read.split.adaptive-size.enabled": "false"}  # every table read in tasks of the same kind
FAIR_READS = ", ".join(f"'{key}'='{value}'" for key, value in FAIR.items())
DOC001 = ("D1", "D2", "D3", "D4", "D5", "D6")  # document 001's selective filters; D7 is its wide one
CHARTED = (
    "(a) as loaded",
    "(b) Iceberg sort lo_orderdate",
    "(c) Iceberg zorder",
    "(d) zskip zorder raw, + bitmap",
    "(e) zskip zorder rank, + bitmap",
    "(f) zskip hilbert rank, min/max",
    "(f) zskip hilbert rank, + bitmap",
)


def _stage(plan, name: str):  # type: ignore[no-untyped-def]
    """The stage of an ``Explain`` called ``name``."""
    return next(stage for stage in plan.stages if stage.name == name)


def counts(spark, query: str, lineorder: str, *, through_zskip: bool) -> dict[str, float]:
    """What a query reads of ``lineorder``.  Plain Spark opens every file Iceberg plans (stage one)
    and its reader skips the row groups whose statistics rule the filter out, as zskip counts them."""
    # plain Spark prunes nothing by joins: its counts come from a plan without zskip's join stage
    plans = [e for e in explain_sql(spark, query, join_keys=through_zskip) if e.table == lineorder]
    return {
        "files": sum(e.files_read if through_zskip else _stage(e, ICEBERG_STAGE).files_kept for e in plans),
        "row_groups": sum(e.row_groups_read for e in plans),
        "bytes": sum(e.bytes_planned for e in plans),
        "rows_planned": sum(e.rows_planned for e in plans),
        "planning": sum(e.planning_seconds for e in plans) if through_zskip else 0.0,
    }


def run_queries(
    spark, qs: dict[str, str], lineorder: str, *, through_zskip: bool, runs: int, enabled: bool = False
) -> dict[str, dict]:
    """Counts, rows scanned (measured), result and median seconds of each query: through ``zskip.sql``,
    or plain ``spark.sql`` (``enabled``: with zskip enabled in the session, so its rule plans the scans;
    files, row groups and bytes are then those zskip's stages keep, and the rows are measured)."""
    out = {}
    if enabled:
        enable(spark)
    try:
        for name, query in qs.items():
            measured = counts(spark, query, lineorder, through_zskip=through_zskip or enabled)
            make = (lambda q=query: zskip_sql(spark, q)) if through_zskip else (lambda q=query: spark.sql(q))
            frame = make()  # the first run warms up, gives the result and the scan's row count
            result = Counter(map(tuple, frame.collect()))
            measured["rows"] = scanned_rows(frame, lineorder)
            seconds = statistics.median(timed(lambda m=make: m().collect())[0] for _ in range(runs))
            out[name] = measured | {"seconds": seconds, "result": result}
    finally:
        if enabled:
            disable(spark)
    return out


def run_off_and_on(spark, qs: dict[str, str], lineorder: str, *, runs: int) -> tuple[dict[str, dict], dict[str, dict]]:
    """Plain ``spark.sql`` with zskip off and with zskip enabled, each query's timed runs interleaved
    (off, on, then on, off, ...): both sides see the machine in the same state.  Counts and rows as
    ``run_queries`` gives them."""
    sides: dict[bool, dict[str, dict]] = {False: {}, True: {}}
    try:
        for name, query in qs.items():
            for on in (False, True):
                (enable if on else disable)(spark)
                measured = counts(spark, query, lineorder, through_zskip=on)
                frame = spark.sql(query)  # the first run warms up, gives the result and the scan's row count
                result = Counter(map(tuple, frame.collect()))
                measured["rows"] = scanned_rows(frame, lineorder)
                sides[on][name] = measured | {"result": result}
            samples: dict[bool, list[float]] = {False: [], True: []}
            for i in range(runs):
                for on in (False, True) if i % 2 == 0 else (True, False):
                    (enable if on else disable)(spark)
                    samples[on].append(timed(lambda q=query: spark.sql(q).collect())[0])
            for on in (False, True):
                sides[on][name]["seconds"] = statistics.median(samples[on])
    finally:
        disable(spark)
    return sides[False], sides[True]


def _fair_reads(spark, table: str) -> None:
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ({FAIR_READS})")


def lay_out_native(spark: Any, base: str, table: str, sized_by: str, target: int, row_group: int) -> tuple[float, int]:
    """``table`` a copy of ``base`` laid out as the native peer (i): Iceberg's zorder as (c) lays it out,
    with Parquet bloom filters on the indexed columns sized for a row group of ``sized_by``.  Returns
    the layout's seconds and each bloom filter's bytes."""
    bloom = bloom_bytes(rows_per_row_group(spark, sized_by))
    recipe = iceberg_layout(
        spark, f"zorder({','.join(CLUSTER)})", target_file_size_bytes=target, row_group_size_bytes=row_group
    )
    laid = lay_out_once(spark, base, table, recipe, properties=FAIR | bloom_properties(INDEXED, bloom))
    return laid.seconds, bloom


def table_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options saying which SSB tables a bench loads or reuses (``load_or_reuse``)."""
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=64, help="lineorder data files as loaded")
    parser.add_argument("--row-group-size", default="256KB", help="lineorder row groups (sized for >= 500 at SF 1)")
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir()) / "zskip-tpch"), help="TPC-H files")
    return parser


def options() -> argparse.ArgumentParser:
    """The benchmark's command line."""
    parser = table_options(
        argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    )
    parser.add_argument("--runs", type=int, default=3, help="timed runs per query after one warm-up (median)")
    parser.add_argument("--queries", help="comma-separated names (default: all), e.g. Q1.1,D1,D5")
    parser.add_argument("--output", default=str(DOCS), help="where ssb.md and its charts go")
    parser.add_argument(
        "--layouts",
        default=",".join(LAYOUTS),
        help="which configurations, e.g. a,c,d (see the report; h: (c)'s table read through zskip with bitmaps; "
        "i: Iceberg zorder + Parquet bloom filters, against (j) if the run has it, else (d) + bitmap, through "
        "zskip.enable; j: the layout and indexes zskip's advisor chooses for the run's queries)",
    )
    parser.add_argument("--kinds", default=",".join(KINDS), help="skipping of the zskip layouts: minmax, bloom, bitmap")
    parser.add_argument("--report", default="ssb", help="report name: <output>/<report>.md, .json and charts")
    parser.add_argument(
        "--paired-runs", type=int, default=15, help="alternating runs of (c) and the best zskip configuration"
    )
    parser.add_argument(
        "--pair-seconds",
        type=float,
        default=PAIR_SECONDS,
        help="against the native peer, a quick query runs more than --paired-runs pairs, until the native side "
        "has run this long (at most 101 pairs; 0: --paired-runs only)",
    )
    parser.add_argument(
        "--reuse-loaded",
        action="store_true",
        help="keep the SSB tables an earlier run loaded into --warehouse (same scale factor and row groups)",
    )
    parser.add_argument("--compare", help="an earlier run's JSON (e.g. docs/benchmarks/ssb.json): a growth table")
    return parser


def main(argv: list[str] | None = None) -> dict[str, dict]:
    args = options().parse_args(argv)
    layouts = set(args.layouts.split(","))
    kinds = args.kinds.split(",")
    for given, known, option in ((layouts, LAYOUTS, "--layouts"), (set(kinds), KINDS, "--kinds")):
        if not given <= set(known):  # a letter the run does not know would silently measure nothing
            unknown = ", ".join(sorted(given - set(known)))
            raise SystemExit(f"{option}: unknown {unknown}; choose from {','.join(known)}")
    clock = time.perf_counter()
    spark = bench_session(args.warehouse)
    ns = "lake.ssb"
    row_group = parse_size(args.row_group_size)
    load_seconds, counts_by_table = load_or_reuse(spark, ns, args)
    for table in counts_by_table:
        _fair_reads(spark, f"{ns}.{table}")
    base = f"{ns}.lineorder"
    size = sum(data_files(spark, base)["file_size_in_bytes"].to_pylist())
    target = max(size // args.files, 1 << 20)
    qs = queries(spark, ns)
    if args.queries:
        wanted = args.queries.split(",")
        unknown = sorted(set(wanted) - set(qs))
        if unknown:
            raise SystemExit(f"unknown queries {unknown}; known: {', '.join(qs)}")
        qs = {name: qs[name] for name in wanted}
    results: dict[str, dict] = {}
    build: dict[str, dict[str, float]] = {}  # per configuration: layout / index seconds, index bytes
    plain = {
        label: order
        for label, order in {
            "(a) as loaded": None,
            "(b) Iceberg sort lo_orderdate": "lo_orderdate",
            "(c) Iceberg zorder": f"zorder({','.join(CLUSTER)})",
        }.items()
        if label[1] in layouts or label.startswith("(a)")  # (a) is every ratio's reference
    }
    copy = f"{ns}.lineorder_copy"

    def laid_out(recipe: Layout, table: str) -> float:
        """``table`` a copy of lineorder laid out by ``recipe``, read in tasks as every other table is."""
        return lay_out_once(spark, base, table, recipe, properties=FAIR).seconds

    for label, order in plain.items():
        layout = base
        if order is not None:
            layout = copy
            build[label] = {
                "layout": laid_out(
                    iceberg_layout(spark, order, target_file_size_bytes=target, row_group_size_bytes=row_group), copy
                )
            }
        results[label] = run_queries(spark, _swap(qs, base, layout), layout, through_zskip=False, runs=args.runs)
        print(label, flush=True)
    if "(c) Iceberg zorder" in results:
        for name in [q for q in DOC001 if q in qs]:  # the row groups of (c) holding a match, from the data
            results["(c) Iceberg zorder"][name]["matching"] = row_groups_holding(
                spark, _swap(qs, base, copy)[name], copy
            )
        # bitmaps on (c) too: bench/lineorder_planning.py plans zskip's stages on every table of this run,
        # and (h) reads (c)'s table through zskip with bitmaps on every indexed column
        for column in INDEXED if "h" in layouts else ("lo_ordtotalprice", "lo_revenue"):
            create_index(spark, copy, column, kind="bitmap")
        if "h" in layouts:  # the same table read through zskip: what its planning and indexes alone change
            build[SAME_TABLE] = {"index_bytes": sum(i.index_bytes for i in list_indexes(spark, copy))}
            results[SAME_TABLE] = run_queries(spark, _swap(qs, base, copy), copy, through_zskip=True, runs=args.runs)
            for name in [q for q in DOC001 if q in qs]:
                results[SAME_TABLE][name]["matching"] = results["(c) Iceberg zorder"][name]["matching"]
            print(SAME_TABLE, flush=True)
    native_table, bloom = f"{ns}.lineorder_native", 0
    if "i" in layouts:
        sized_by = copy if "c" in layouts else base
        seconds, bloom = lay_out_native(spark, base, native_table, sized_by, target, row_group)
        build[NATIVE] = {"layout": seconds}
        print(NATIVE, flush=True)
    zskip_layouts = {"d": ("zorder", "raw"), "e": ("zorder", "rank"), "f": ("hilbert", "rank")}
    tables: dict[str, tuple[str, str | None]] = {}  # zskip configuration: its table, its index kind
    advised_label = ADVISED  # with the layout the advice chose, once it ran
    for curve, mapping in [zskip_layouts[letter] for letter in sorted(zskip_layouts) if letter in layouts]:
        layout = f"{ns}.lineorder_{curve}_{mapping}"
        label = {"zorder raw": "(d)", "zorder rank": "(e)", "hilbert rank": "(f)"}[
            f"{curve} {mapping}"
        ] + f" zskip {curve} {mapping}"
        seconds = laid_out(
            zskip_layout(
                spark,
                CLUSTER,
                curve=curve,
                mapping=mapping,
                target_file_size_bytes=target,
                row_group_size_bytes=row_group,
            ),
            layout,
        )
        build[f"{label}, min/max"] = {"layout": seconds}
        swapped = _swap(qs, base, layout)
        # the row groups holding a match, from the data (what read ranges join is read, not matched)
        holding = {name: row_groups_holding(spark, swapped[name], layout) for name in DOC001 if name in swapped}
        if "minmax" in kinds:
            results[f"{label}, min/max"] = run_queries(spark, swapped, layout, through_zskip=True, runs=args.runs)
        for kind in [k for k in ("bloom", "bitmap") if k in kinds]:
            seconds = sum(
                timed(lambda t=layout, c=column, k=kind: create_index(spark, t, c, kind=k))[0] for column in INDEXED
            )
            index_bytes = sum(i.index_bytes for i in list_indexes(spark, layout) if i.kind == kind)
            build[f"{label}, + {kind}"] = {"index": seconds, "index_bytes": index_bytes}
            results[f"{label}, + {kind}"] = run_queries(spark, swapped, layout, through_zskip=True, runs=args.runs)
            tables[f"{label}, + {kind}"] = (layout, kind)
            if kind != kinds[-1]:  # the last kind stays for the head-to-head runs
                for column in INDEXED:
                    drop_index(spark, layout, column, kind)
        for name, held in holding.items():
            for configuration in [c for c in results if c.startswith(f"{label},")]:
                results[configuration][name]["matching"] = held
        tables[f"{label}, min/max"] = (layout, None)
        print(label, flush=True)
    if "j" in layouts:  # what zskip's advisor lays out and indexes for this run's queries, applied to a copy
        layout = f"{ns}.lineorder_advised"
        advised = _swap(qs, base, layout)

        def advise_and_apply(table: str) -> str:
            advice = zskip_advise(spark, table, queries=list(advised.values()), target_file_size=target, apply=True)
            return advice.best.label

        seconds, chosen = copy_and_lay_out(
            spark, base, layout, advise_and_apply, properties=FAIR | {ROW_GROUP_PROPERTY: str(row_group)}
        )
        label = ADVISED
        build[label] = {"layout": seconds, "index_bytes": sum(i.index_bytes for i in list_indexes(spark, layout))}
        results[label] = run_queries(spark, advised, layout, through_zskip=True, runs=args.runs)
        for name in [q for q in DOC001 if q in advised]:
            results[label][name]["matching"] = row_groups_holding(spark, advised[name], layout)
        tables[label] = (layout, None)  # the indexes the advice built stay as they are
        advised_label = f"{label}: {chosen}"
        print(advised_label, flush=True)
    if "g" in layouts:
        layout = f"{ns}.lineorder_star"
        label = "(g) zskip star, min/max"
        seconds = laid_out(
            star_layout(spark, ns, target_file_size_bytes=target, row_group_size_bytes=row_group), layout
        )
        build[label] = {"layout": seconds}
        swapped = _swap(qs, base, layout)
        results[label] = run_queries(spark, swapped, layout, through_zskip=True, runs=args.runs)
        for name, query in swapped.items():  # the ideal, measured from the data
            results[label][name]["matching"] = row_groups_holding(spark, query, layout)
        tables[label] = (layout, None)
        # the same table through plain spark.sql: Spark alone, and with zskip enabled in the session
        # (the two interleaved, run by run, so neither sees a quieter machine)
        results[STAR_PLAIN], results[STAR_ENABLED] = run_off_and_on(spark, swapped, layout, runs=args.runs)
        for other in (STAR_PLAIN, STAR_ENABLED):
            for name in swapped:
                results[other][name]["matching"] = results[label][name]["matching"]
        if "bitmap" in kinds:  # bitmaps on the foreign keys, probed with each dimension's key set
            seconds = sum(
                timed(lambda c=column: create_index(spark, layout, c, kind="bitmap"))[0] for column in FOREIGN_KEYS
            )
            index_bytes = sum(i.index_bytes for i in list_indexes(spark, layout))
            indexed = "(g) zskip star, + bitmap"
            build[indexed] = {"index": seconds, "index_bytes": index_bytes}
            results[indexed] = run_queries(spark, swapped, layout, through_zskip=True, runs=args.runs)
            for name in swapped:
                results[indexed][name]["matching"] = results[label][name]["matching"]
            tables[indexed] = (layout, "bitmap")
        print(label, flush=True)
    reference = results["(a) as loaded"]
    for label, per_query in results.items():
        for name, measured in per_query.items():
            if measured["result"] != reference[name]["result"]:
                raise SystemExit(f"{label} returned different rows for {name}")
    head: dict[str, dict[str, float]] = {}
    if "(c) Iceberg zorder" in results and tables and args.paired_runs > 0:
        best = best_zskip(results)
        head = head_to_head(spark, qs, results, best, tables[best], base=base, copy=copy, runs=args.paired_runs)
        print("head to head", flush=True)
    same: dict[str, dict[str, float]] = {}
    if SAME_TABLE in results and args.paired_runs > 0:
        same = head_to_head(
            spark, qs, results, SAME_TABLE, (copy, "bitmap"), base=base, copy=copy, runs=args.paired_runs
        )
        print("same table head to head", flush=True)
    native: dict[str, Any] = {}
    # zskip's side against the native table: the layout advised for these queries where the run has one
    peer = ADVISED if ADVISED in tables else "(d) zskip zorder raw, + bitmap"
    if "i" in layouts and peer in tables and args.paired_runs > 0:
        native = {
            "head": native_head_to_head(
                spark,
                _swap(qs, base, native_table),
                _swap(qs, base, tables[peer][0]),
                runs=args.paired_runs,
                pair_seconds=args.pair_seconds,
            ),
            "zskip": (advised_label if peer == ADVISED else peer) + ", zskip.enable",
            "bloom_bytes": bloom,
        }
        print("native head to head", flush=True)
    total = time.perf_counter() - clock
    report_ssb(
        args,
        counts_by_table,
        qs,
        results,
        build,
        head,
        same,
        load_seconds=load_seconds,
        total_seconds=total,
        native=native,
    )
    return results


def head_to_head(
    spark: Any,
    qs: dict[str, str],
    results: dict[str, dict],
    best: str,
    table: tuple[str, str | None],
    *,
    base: str,
    copy: str,
    runs: int,
) -> dict[str, dict[str, float]]:
    """(c) Iceberg zorder through spark.sql against the best zskip configuration through zskip.sql, runs
    alternating (one of each, then the next pair), on document 001's filters and on every query where
    zskip reads at most half of (c)'s row groups.  On a machine whose timings wander by 2x from run
    to run, the median of the paired ratios says more than two medians taken minutes apart."""
    layout, kind = table
    indexed = FOREIGN_KEYS if "star" in best else INDEXED
    if kind is not None:  # the best configuration's indexes (its kind may not be the one left in place)
        present = {(i.column, i.kind) for i in list_indexes(spark, layout)}
        for column in indexed:
            if (column, kind) not in present:
                create_index(spark, layout, column, kind=kind)
        for other in {k for _, k in present} - {kind}:
            for column in indexed:
                drop_index(spark, layout, column, other)
    c, z = results["(c) Iceberg zorder"], results[best]
    names = [n for n in qs if n.startswith("D") or 2 * z[n]["row_groups"] <= c[n]["row_groups"]]
    plain, through = _swap(qs, base, copy), _swap(qs, base, layout)
    out = {}
    for name in names:
        spark.sql(plain[name]).collect()
        zskip_sql(spark, through[name]).collect()
        pairs = []
        for _ in range(runs):
            plain_seconds = timed(lambda n=name: spark.sql(plain[n]).collect())[0]
            zskip_seconds = timed(lambda n=name: zskip_sql(spark, through[n]).collect())[0]
            pairs.append((plain_seconds, zskip_seconds))
        out[name] = {
            "c_seconds": statistics.median(p[0] for p in pairs),
            "zskip_seconds": statistics.median(p[1] for p in pairs),
            "ratio": statistics.median(p[0] / p[1] for p in pairs),
        }
    return out


SSB_TABLES = ("part", "supplier", "customer", "dates", "lineorder")
FOREIGN_KEYS = ("lo_orderdate", "lo_custkey", "lo_suppkey", "lo_partkey")
STAR_QUERIES = ("Q2.1", "Q2.2", "Q2.3", "Q3.1", "Q3.2", "Q3.3", "Q3.4", "Q4.1", "Q4.2", "Q4.3")


def star_dimensions(ns: str) -> list[Dimension]:
    """(g): lineorder clustered through its four dimensions, each by its hierarchy (the SSB paper's idea)."""
    return [
        Dimension("lo_orderdate", f"{ns}.dates", key="d_datekey", by=["d_year", "d_yearmonthnum"]),
        Dimension("lo_custkey", f"{ns}.customer", key="c_custkey", by=["c_region", "c_nation", "c_city"]),
        Dimension("lo_suppkey", f"{ns}.supplier", key="s_suppkey", by=["s_region", "s_nation", "s_city"]),
        Dimension("lo_partkey", f"{ns}.part", key="p_partkey", by=["p_mfgr", "p_category", "p_brand1"]),
    ]


def star_layout(spark: Any, ns: str, *, target_file_size_bytes: int, row_group_size_bytes: int) -> Layout:
    """(g) as a layout: hilbert (rank) through ``star_dimensions``."""
    return zskip_layout(
        spark,
        star_dimensions(ns),
        curve="hilbert",
        mapping="rank",
        target_file_size_bytes=target_file_size_bytes,
        row_group_size_bytes=row_group_size_bytes,
    )


def row_groups_holding(spark: Any, query: str, table: str, *, alias: str | None = None) -> int:
    """Row groups of ``table`` holding a row the query keeps, measured from the data: the positions of
    the matching rows (Iceberg's ``_file`` and ``_pos``) placed in each file's row groups by pyarrow.
    ``alias``: the name the query gives ``table`` (else it names it in full, and one is given here)."""
    import numpy as np

    from zskip.iceberg.frames import collect_arrow
    from zskip.iceberg.table import load_table

    body = query.split(" FROM ", 1)[1]
    for clause in (" GROUP BY ", " ORDER BY "):
        body = body.split(clause, 1)[0]
    if alias is None:
        alias = "zskip_fact"
        body = body.replace(f"{table} ", f"{table} AS {alias} ", 1)
    rows = collect_arrow(spark.sql(f"SELECT DISTINCT {alias}._file, {alias}._pos FROM {body}"))
    if rows.num_rows == 0:
        return 0
    held = 0
    files = rows.column(0).to_numpy(zero_copy_only=False)
    positions = rows.column(1).to_numpy()
    access = load_table(spark, table).file_access()
    for path in np.unique(files):
        metadata = access.open_parquet(str(path)).metadata
        ends = np.cumsum([metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)])
        held += len(np.unique(np.searchsorted(ends, positions[files == path], side="right")))
    return held


def load_or_reuse(spark, ns: str, args: argparse.Namespace) -> tuple[float, dict[str, int]]:  # type: ignore[no-untyped-def]
    """The SSB tables in ``ns``, loaded as the benches' options say (``--scale-factor``, ``--data-dir``,
    ``--files``, ``--row-group-size``; ``--reuse-loaded``: unless an earlier run left them there): the
    seconds the load took and each table's row count."""
    loaded = _loaded(spark, ns, args.files) if args.reuse_loaded else None
    if loaded is not None:
        print(f"reusing the SSB tables in {ns} ({loaded['lineorder']:,} lineorder rows)", flush=True)
        return 0.0, loaded
    row_group = parse_size(args.row_group_size)
    return timed(
        lambda: load_ssb(
            spark,
            ns,
            scale_factor=args.scale_factor,
            data_dir=Path(args.data_dir),
            files=args.files,
            properties={"write.parquet.row-group-size-bytes": str(row_group)},
        )
    )


def _loaded(spark, ns: str, files: int) -> dict[str, int] | None:  # type: ignore[no-untyped-def]
    """Row counts of SSB tables an earlier run left in ``ns`` with ``files`` lineorder files, or None.

    The generated data are deterministic for a scale factor, so a rerun can skip loading them; the
    caller must pass the same --scale-factor and --row-group-size as the run that loaded them."""
    if not all(spark.catalog.tableExists(f"{ns}.{t}") for t in SSB_TABLES):
        return None
    if len(data_files(spark, f"{ns}.lineorder")) != files:
        return None
    return {t: int(spark.table(f"{ns}.{t}").count()) for t in SSB_TABLES}


def _swap(qs: dict[str, str], base: str, layout: str) -> dict[str, str]:
    return {name: q.replace(f"{base} ", f"{layout} ") for name, q in qs.items()}


def best_zskip(results: dict[str, dict]) -> str:
    """The zskip layout reading the fewest row groups over document 001's filters D1-D6 ((h) is
    Iceberg's own layout, reported beside them)."""
    zskip_labels = [
        label for label in results if "zskip" in label and label not in (SAME_TABLE, STAR_PLAIN, STAR_ENABLED)
    ]
    present = [q for q in DOC001 if q in results["(a) as loaded"]]
    return min(zskip_labels, key=lambda label: sum(results[label][q]["row_groups"] for q in present))


def _held(measured: dict) -> str:
    """Row groups read, and of them those holding a match where the run measured it."""
    held = measured.get("matching")
    return f"{measured['row_groups']:,}" + (f" ({held:,} hold a match)" if held is not None else "")


def summary(results: dict[str, dict], head: dict[str, dict[str, float]] | None = None) -> list[str]:
    """D1-D6 for (a), (c) and the best zskip configuration; the speed-up over (c) from the head-to-head
    runs where they exist (nothing without a zskip configuration in the run)."""
    if not any("zskip" in label for label in results):
        return ["No zskip configuration in this run (see --layouts)."]
    best = best_zskip(results)
    head = head or {}
    a, c = results["(a) as loaded"], results.get("(c) Iceberg zorder", results["(a) as loaded"])
    rows = []
    for q in [q for q in DOC001 if q in a]:
        b = results[best][q]
        rows.append(
            [
                q,
                f"{a[q]['row_groups']:,}",
                _held(c[q]),
                _held(b),
                f"{a[q]['row_groups'] / max(b['row_groups'], 1):.1f}x",
                f"{c[q]['row_groups'] / max(b['row_groups'], 1):.2f}x",
                f"{a[q]['seconds'] / b['seconds']:.1f}x",
                f"{head[q]['ratio']:.2f}x (paired)" if q in head else f"{c[q]['seconds'] / b['seconds']:.2f}x",
            ]
        )
    return [
        f"Best zskip configuration on document 001's selective filters (fewest row groups over D1-D6): **{best}**.",
        "",
        markdown_table(
            [
                "filter",
                "(a) row groups",
                "(c) Iceberg zorder row groups",
                "best zskip row groups",
                "(a) / zskip",
                "(c) / zskip",
                "speed-up over (a)",
                "speed-up over (c)",
            ],
            rows,
        ),
    ]


def charts(results: dict[str, dict], names: list[str], directory: Path, prefix: str = "ssb") -> list[str]:
    plt = pyplot()
    labels = [label for label in CHARTED if label in results] or list(results)
    files = []
    for metric, title, log in (
        ("files", "lineorder data files read", True),
        ("row_groups", "lineorder row groups read", True),
        ("speedup", "speed-up over (a) as loaded (median wall time)", False),
    ):
        figure, axis = plt.subplots(figsize=(12, 4.8))
        width = 0.8 / len(labels)
        for i, label in enumerate(labels):
            if metric == "speedup":
                values = [results["(a) as loaded"][n]["seconds"] / results[label][n]["seconds"] for n in names]
            else:
                values = [max(results[label][n][metric], 0.8) for n in names]
            axis.bar([x + i * width for x in range(len(names))], values, width, label=label)
        axis.set_xticks([x + 0.4 - width / 2 for x in range(len(names))], names, rotation=0, fontsize=8)
        if log:
            axis.set_yscale("log")
        else:
            axis.axhline(1.0, color="black", linewidth=0.6)
        axis.set_title(title)
        axis.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.08), frameon=False)
        name = f"{prefix}-{metric.replace('_', '-')}.png"
        save_png(figure, directory / name)
        files.append(name)
    return files


STAR = "(g) zskip star, min/max"
SAME_TABLE = "(h) Iceberg zorder, read through zskip + bitmap"


def same_table_lines() -> list[str]:
    return [
        "(h) is (c)'s own table, with zskip's bitmaps on the indexed columns and read through `zskip.sql`: "
        "both sides of each pair read the same table, so the ratio is what zskip's planning and indexes "
        "alone change. Where zskip rules out nothing beyond Spark's own scan it returns the query as Spark "
        "planned it and pays only its planning.",
        "",
    ]


def star_lines(results: dict[str, dict]) -> list[str]:
    """(g) on every query: what it reads against (a) and (c), the ideal measured from the data, and time."""
    a, g = results["(a) as loaded"], results[STAR]
    c = results.get("(c) Iceberg zorder", a)
    bitmap = results.get("(g) zskip star, + bitmap")
    rows = []
    for name in g:
        rows.append(
            [
                name,
                f"{a[name]['row_groups']:,}",
                f"{c[name]['row_groups']:,}",
                f"{g[name]['row_groups']:,}",
                *([f"{bitmap[name]['row_groups']:,} ({bitmap[name]['seconds']:.2f} s)"] if bitmap else []),
                f"{g[name]['matching']:,}",
                f"{a[name]['row_groups'] / max(g[name]['row_groups'], 1):.1f}x",
                f"{a[name]['seconds'] / g[name]['seconds']:.2f}x",
                f"{c[name]['seconds'] / g[name]['seconds']:.2f}x",
            ]
        )
    return [
        "## (g) zskip star: lineorder clustered through its dimensions",
        "",
        "lineorder clustered (hilbert) by `lo_orderdate` through dates (d_year, d_yearmonthnum), `lo_custkey` "
        "through customer (c_region, c_nation, c_city), `lo_suppkey` through supplier (s_region, s_nation, s_city) "
        "and `lo_partkey` through part (p_mfgr, p_category, p_brand1); no column copied. On each foreign key's axis "
        "every group of every level (a region, a nation, a city) owns an aligned block of positions, so it is one "
        "cell of the curve, not a run straddling two. `zskip.sql` runs each "
        "query's dimension filters as small Spark jobs and reads only the lineorder row groups whose recorded "
        "coordinates and foreign-key min/max can hold a matching key. *Hold a match*: row groups holding a "
        "lineorder row the query keeps, measured from the data (Iceberg's `_file` and `_pos` of every matching "
        "row, placed in row groups with pyarrow).",
        "",
        markdown_table(
            [
                "query",
                "(a) row groups",
                "(c) row groups",
                "(g) row groups",
                *(["(g) + bitmap on the foreign keys: row groups (time)"] if bitmap else []),
                "(g) hold a match",
                "(a) / (g)",
                "speed-up over (a)",
                "speed-up over (c)",
            ],
            rows,
        ),
        "",
        *_where_star_does_not_help(a, c, g),
    ]


def enabled_lines(results: dict[str, dict]) -> list[str]:
    """(g) through plain ``spark.sql``: Spark alone against zskip enabled in the session, with ``zskip.sql``."""
    off, on, via = results[STAR_PLAIN], results[STAR_ENABLED], results[STAR]
    rows = []
    for name in on:
        rows.append(
            [
                name,
                f"{off[name]['rows']:,}",
                f"{via[name]['rows']:,}",
                f"{on[name]['rows']:,}",
                f"{on[name]['rows'] / max(via[name]['rows'], 1):.3f}",
                f"{off[name]['seconds']:.2f}",
                f"{on[name]['seconds']:.2f}",
                f"{off[name]['seconds'] / on[name]['seconds']:.2f}x",
            ]
        )
    slower = [n for n in on if on[n]["seconds"] > off[n]["seconds"]]
    return [
        "## Plain `spark.sql` on (g), zskip off and zskip enabled",
        "",
        "The same table (g) and queries through plain `spark.sql`: Spark alone (`spark.zskip.enabled` false), and "
        "with zskip enabled in the session (`zskip.enable`), which plans every Iceberg scan through zskip's stages "
        "from Spark's optimizer. *Rows scanned* are measured while the query runs (Spark's `numOutputRows` of "
        "lineorder's scan); the enabled run should scan what `zskip.sql` scans. The seconds are medians of runs "
        "interleaved query by query (off, on, on, off, ...).",
        "",
        markdown_table(
            [
                "query",
                "rows scanned: zskip off",
                "rows scanned: zskip.sql",
                "rows scanned: zskip.enable",
                "enable / zskip.sql",
                "seconds: zskip off",
                "seconds: zskip.enable",
                "speed-up",
            ],
            rows,
        ),
        "",
        (
            f"Slower with zskip enabled than without: {', '.join(slower)}."
            if slower
            else "No query ran slower with zskip enabled."
        ),
        "",
    ]


def _where_star_does_not_help(a: dict, c: dict, g: dict) -> list[str]:
    """The queries (g) reads at least half the row groups of as loaded for, in figures."""
    weak = [n for n in g if a[n]["row_groups"] < 2 * g[n]["row_groups"]]
    if not weak:
        return []
    read = [g[n]["row_groups"] for n in weak]
    totals = [a[n]["row_groups"] for n in weak]
    versus_c = [c[n]["seconds"] / g[n]["seconds"] for n in weak]
    return [
        f"**Where (g) does not help:** {', '.join(weak)} filter lineorder's own columns and no dimension it is "
        f"clustered through: (g) reads {min(read):,}-{max(read):,} of their {min(totals):,}-{max(totals):,} row "
        f"groups and runs at {min(versus_c):.2f}x-{max(versus_c):.2f}x of (c)'s speed, (c) being clustered on those "
        "columns. For such filters, cluster on the filtered columns (the zskip layouts (d)-(f)); a fact table "
        "clustered through its dimensions serves the queries that filter the dimensions.",
        "",
    ]


def head_lines(head: dict[str, dict[str, float]], best: str, runs: int) -> list[str]:
    rows = [
        [
            name,
            f"{h['c_seconds'] * 1000:.0f}",
            f"{h['zskip_seconds'] * 1000:.0f}",
            f"{h['ratio']:.2f}x" + ("" if h["ratio"] >= 1 else " (zskip slower)"),
        ]
        for name, h in head.items()
    ]
    return [
        f"## Head to head: (c) Iceberg zorder against {best}, {runs} alternating runs",
        "",
        "Each pair runs the query once on (c) with `spark.sql` and once on zskip's table with `zskip.sql` "
        "(planning included), one right after the other, so both meet the same state of the machine. "
        "Speed-up: the median over the pairs of (c)'s time divided by zskip's.",
        "",
        markdown_table(["query", "(c) median ms", "zskip median ms", "speed-up over (c)"], rows),
        "",
    ]


def growth(earlier_json: Path, results: dict[str, dict], scale_factor: float) -> list[str]:
    """How files, row groups, planning time and wall time grow from an earlier run to this one."""
    earlier = json.loads(earlier_json.read_text())["results"]
    rows = []
    for label in [label for label in results if label in earlier]:
        for name in [n for n in results[label] if n in earlier[label]]:
            then, now = earlier[label][name], results[label][name]
            rows.append(
                [
                    label,
                    name,
                    f"{then['files']} -> {now['files']}",
                    f"{then['row_groups']:,} -> {now['row_groups']:,}",
                    f"{then['planning'] * 1000:.0f} -> {now['planning'] * 1000:.0f}" if "zskip" in label else "-",
                    f"{then['seconds']:.2f} -> {now['seconds']:.2f}",
                ]
            )
    return [
        f"## Growth from the earlier run ({earlier_json.name}) to scale factor {scale_factor:g}",
        "",
        markdown_table(["configuration", "query", "files", "row groups", "planning ms", "wall s"], rows),
        "",
    ]


def _other_options(args: argparse.Namespace) -> str:
    """The run's options beyond scale, runs, layouts and kinds, where they differ from the defaults."""
    defaults = vars(options().parse_args([]))
    out = [
        f" --{name.replace('_', '-')} {getattr(args, name)}"
        for name in ("files", "row_group_size", "queries", "paired_runs", "pair_seconds")
        if getattr(args, name) != defaults[name]
    ]
    if args.reuse_loaded:
        out.append(" --reuse-loaded")
    if args.report != "ssb":
        out.append(f" --report {args.report}")
    return "".join(out)


def report_ssb(
    args, counts_by_table, qs, results, build, head, same, *, load_seconds, total_seconds, native=None
) -> None:  # type: ignore[no-untyped-def]
    labels = list(results)
    names = list(qs)
    header = ["query", *labels]

    def table(cell) -> str:  # type: ignore[no-untyped-def]
        return markdown_table(header, [[n] + [cell(results[c][n], c, n) for c in labels] for n in names])

    pngs = charts(results, names, Path(args.output), args.report)
    reference = results["(a) as loaded"]
    report = [
        "# Star Schema Benchmark",
        "",
        f"One run of `python bench/ssb.py --scale-factor {args.scale_factor:g} --runs {args.runs}"
        + (f" --layouts {args.layouts} --kinds {args.kinds}" if args.layouts != ",".join(LAYOUTS) else "")
        + _other_options(args)
        + f"` on {machine()}, "
        f"{total_seconds / 60:.0f} minutes in all "
        + (
            "(the SSB tables of an earlier run reused: --reuse-loaded). "
            if args.reuse_loaded and not load_seconds
            else f"(generating and loading the data: {load_seconds:.0f} s). "
        )
        + f"Rows: {', '.join(f'{k} {v:,}' for k, v in counts_by_table.items())}. "
        f"lineorder as loaded: {args.files} files "
        f"in arrival order (orders by key), row groups of {args.row_group_size} so SF 1 has over 500. "
        "**Every configuration returned the same rows for every query.**",
        "",
        "Counted the same way for every configuration with `zskip.explain_sql`: lineorder data files opened "
        "(plain Spark: every file Iceberg plans); row groups read (plain Spark: those whose statistics cannot rule "
        "the filter out, as Iceberg's reader skips the others; zskip: the row groups its stages kept, read in byte "
        "ranges of consecutive row groups joined across small gaps, see `zskip.planning.row_groups`); their bytes. "
        "*Rows scanned* is measured: "
        "Spark's `numOutputRows` of the "
        "lineorder scan in the warm-up run. Wall time is the median of "
        f"{args.runs} runs after one warm-up, zskip's planning included. Iceberg's adaptive split size is off "
        "on every table so every configuration reads in tasks of the same kind.",
        "",
        "## Summary",
        "",
        *summary(results, head),
        "",
        *[f"![{p}]({p})" for p in pngs],
        "",
        *[
            line
            for title, cell in (
                ("Data files of lineorder read", lambda m, c, n: f"{m['files']}"),
                ("Row groups of lineorder read", lambda m, c, n: f"{m['row_groups']}"),
                ("Rows of lineorder scanned (measured, thousands)", lambda m, c, n: f"{m['rows'] / 1000:,.0f}"),
                ("Bytes of lineorder read (MiB)", lambda m, c, n: f"{m['bytes'] / 2**20:,.1f}"),
                (
                    "zskip planning of the lineorder scan: the query's first plan, Spark's analysis included (ms)",
                    lambda m, c, n: f"{m['planning'] * 1000:.0f}" if "zskip" in c else "-",
                ),
            )
            for line in (f"## {title}", "", table(cell), "")
        ],
        f"## Wall time (median of {args.runs}): seconds for (a), ratio to (a) for the others",
        "",
        table(
            lambda m, c, n: (
                f"{m['seconds']:.2f} s"
                if c == "(a) as loaded"
                else f"{m['seconds'] / max(reference[n]['seconds'], 1e-9):.2f}x"
            )
        ),
        "",
        *(
            [
                *native_lines(
                    native["head"], native["zskip"], args.paired_runs, native["bloom_bytes"], args.pair_seconds
                ),
                f"![{args.report}-native.png]({native_chart(native['head'], Path(args.output), args.report)})",
                "",
            ]
            if native
            else []
        ),
        *(head_lines(head, best_zskip(results), args.paired_runs) if head else []),
        *(head_lines(same, SAME_TABLE, args.paired_runs) + same_table_lines() if same else []),
        *(star_lines(results) if STAR in results else []),
        *(enabled_lines(results) if STAR_ENABLED in results else []),
        *(growth(Path(args.compare), results, args.scale_factor) if args.compare else []),
        "## Layout and index builds",
        "",
        markdown_table(
            ["configuration", "layout seconds", "index seconds (4 columns)", "index size (MiB)"],
            [
                [
                    k,
                    f"{v['layout']:.1f}" if "layout" in v else "",
                    f"{v['index']:.1f}" if "index" in v else "",
                    f"{v['index_bytes'] / 2**20:.1f}" if "index_bytes" in v else "",
                ]
                for k, v in build.items()
            ],
        ),
        "",
        "## Queries",
        "",
        f"Clustered on {', '.join(CLUSTER)} (document 001's filter columns, and SSB Q1's quantity); bloom and "
        f"bitmap indexes on {', '.join(INDEXED)}. Document 001's filters D1-D7 take their literals from the data "
        "(`doc001_filters` in bench/ssb.py): D1-D3 the total price and revenue of the first line of the first "
        "order, D4 the last line's total price with a revenue band of +-100 around its revenue, D5 total prices "
        "above the 99.9th percentile with revenue between its 40th and 40.1st percentiles, D6 total prices between "
        "the 0.1st and 0.2nd percentiles, D7 the 20th-80th percentile band of total price with that revenue band.",
        "",
        *[f"- {n}: `{q}`" for n, q in qs.items()],
        "",
    ]
    write_report(args.report, report, Path(args.output))
    # every measured figure, for anyone who wants to draw it differently
    figures = {c: {n: {k: v for k, v in m.items() if k != "result"} for n, m in r.items()} for c, r in results.items()}
    everything = {
        "queries": qs,
        "build": build,
        "results": figures,
        "head_to_head": head,
        "same_table": same,
        "native": native,
    }
    (Path(args.output) / f"{args.report}.json").write_text(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
