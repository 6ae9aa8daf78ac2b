"""Star Schema Benchmark: layouts and indexes side by side on the same data, in one run.

    python bench/ssb.py --scale-factor 1

Configurations: (a) as loaded, (b) Iceberg sort by lo_orderdate, (c) Iceberg zorder, (d) zskip
zorder raw, (e) zskip zorder rank, (f) zskip hilbert rank; zskip's with min/max only, + bloom and
+ bitmap on the filtered lineorder columns.  Queries: the 13 SSB queries and source document 001's
seven lineorder filters (literals drawn from the data, see ``doc001_filters``).  Plain Spark SQL
runs (a)-(c), ``zskip.sql`` runs (d)-(f); every configuration must return the same rows.
Writes docs/benchmarks/ssb.md and docs/benchmarks/ssb-files.png.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import bench_session, machine, markdown_table, timed, write_report
from zskip import create_index, drop_index, optimize
from zskip.datasets import SSB_QUERIES, load_ssb
from zskip.experiments import copy_table, iceberg_rewrite
from zskip.iceberg.files import data_files
from zskip.iceberg.scan_stats import planned_scans
from zskip.planning import sql as zskip_sql
from zskip.planning.footers import read_footer
from zskip.planning.sql import explain_sql
from zskip.units import parse_size

CLUSTER = ["lo_ordtotalprice", "lo_revenue", "lo_quantity"]
INDEXED = ["lo_ordtotalprice", "lo_revenue", "lo_quantity", "lo_discount"]


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


def plain_counts(spark, query: str, lineorder: str) -> dict[str, float]:
    frame = spark.sql(query)
    # a scan's description starts with its table's name: "lake.ssb.lineorder (branch=null) [filters=...]"
    paths = [p for s in planned_scans(frame) if s.table.split(" ")[0] == lineorder for p in s.paths]
    sizes = {f: (r, b) for f, r, b in _file_facts(spark, lineorder)}
    return {
        "files": len(paths),
        "row_groups": sum(read_footer(p).row_groups for p in paths),
        "rows": sum(sizes[p][0] for p in paths if p in sizes),
        "bytes": sum(sizes[p][1] for p in paths if p in sizes),
        "planning": 0.0,
    }


_FACTS: dict[str, list] = {}


def _file_facts(spark, table: str) -> list:
    if table not in _FACTS:
        files = data_files(spark, table)
        _FACTS[table] = list(
            zip(
                files["file_path"].to_pylist(),
                files["record_count"].to_pylist(),
                files["file_size_in_bytes"].to_pylist(),
                strict=True,
            )
        )
    return _FACTS[table]


def zskip_counts(spark, query: str, lineorder: str) -> dict[str, float]:
    plans = [e for e in explain_sql(spark, query) if e.table == lineorder]
    return {
        "files": sum(e.files_read for e in plans),
        "row_groups": sum(e.row_groups_read for e in plans),
        "rows": sum(e.rows_read for e in plans),
        "bytes": sum(e.bytes_read for e in plans),
        "planning": sum(e.planning_seconds for e in plans),
    }


def run_queries(spark, qs: dict[str, str], lineorder: str, *, through_zskip: bool, runs: int) -> dict[str, dict]:
    out = {}
    for name, query in qs.items():
        counts = zskip_counts(spark, query, lineorder) if through_zskip else plain_counts(spark, query, lineorder)
        runner = (
            (lambda q=query: zskip_sql(spark, q).collect())
            if through_zskip
            else (lambda q=query: spark.sql(q).collect())
        )
        result = Counter(map(tuple, runner()))
        seconds = statistics.median(timed(runner)[0] for _ in range(runs))
        out[name] = counts | {"seconds": seconds, "result": result}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=64, help="lineorder data files as loaded")
    parser.add_argument("--row-group-size", default="256KB", help="lineorder row groups (sized for >= 500 at SF 1)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per query (median)")
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    args = parser.parse_args()
    spark = bench_session(args.warehouse)
    ns = "lake.ssb"
    row_group = parse_size(args.row_group_size)
    counts = load_ssb(
        spark,
        ns,
        scale_factor=args.scale_factor,
        data_dir=Path(tempfile.gettempdir()) / "zskip-tpch",
        files=args.files,
        properties={"write.parquet.row-group-size-bytes": str(row_group)},
    )
    base = f"{ns}.lineorder"
    size = sum(data_files(spark, base)["file_size_in_bytes"].to_pylist())
    target = max(size // args.files, 1 << 20)
    qs = queries(spark, ns)
    results: dict[str, dict] = {}
    layout_seconds: dict[str, float] = {}
    index_seconds: dict[str, float] = {}
    plain = {
        "(a) as loaded": None,
        "(b) Iceberg sort lo_orderdate": "lo_orderdate",
        "(c) Iceberg zorder": f"zorder({','.join(CLUSTER)})",
    }
    for label, order in plain.items():
        if order is not None:
            copy_table(spark, base, f"{ns}.lineorder_copy")
            spark.sql(
                f"ALTER TABLE {ns}.lineorder_copy SET TBLPROPERTIES "
                f"('write.parquet.row-group-size-bytes'='{row_group}')"
            )
            layout_seconds[label], _ = timed(
                lambda o=order: iceberg_rewrite(
                    spark, f"{ns}.lineorder_copy", sort_order=o, target_file_size_bytes=target
                )
            )
            layout = f"{ns}.lineorder_copy"
        else:
            layout = base
        _FACTS.clear()  # lineorder_copy is rewritten for each plain layout
        results[label] = run_queries(spark, _swap(qs, base, layout), layout, through_zskip=False, runs=args.runs)
        print(label, flush=True)
    for curve, mapping in (("zorder", "raw"), ("zorder", "rank"), ("hilbert", "rank")):
        layout = f"{ns}.lineorder_{curve}_{mapping}"
        copy_table(spark, base, layout)
        label = {"zorder raw": "(d)", "zorder rank": "(e)", "hilbert rank": "(f)"}[
            f"{curve} {mapping}"
        ] + f" zskip {curve} {mapping}"
        layout_seconds[label], _ = timed(
            lambda t=layout, c=curve, m=mapping: optimize(
                spark, t, by=CLUSTER, curve=c, mapping=m, mode="full", target_file_size=target, row_group_size=row_group
            )
        )
        swapped = _swap(qs, base, layout)
        results[f"{label}, min/max"] = run_queries(spark, swapped, layout, through_zskip=True, runs=args.runs)
        for kind in ("bloom", "bitmap"):
            seconds = 0.0
            for column in INDEXED:
                seconds += timed(lambda t=layout, c=column, k=kind: create_index(spark, t, c, kind=k))[0]
            index_seconds[f"{label}, + {kind}"] = seconds
            results[f"{label}, + {kind}"] = run_queries(spark, swapped, layout, through_zskip=True, runs=args.runs)
            for column in INDEXED:
                drop_index(spark, layout, column, kind)
        print(label, flush=True)
    reference = results["(a) as loaded"]
    for label, per_query in results.items():
        for name, measured in per_query.items():
            if measured["result"] != reference[name]["result"]:
                raise SystemExit(f"{label} returned different rows for {name}")
    report_ssb(args, counts, qs, results, layout_seconds, index_seconds)


def _swap(qs: dict[str, str], base: str, layout: str) -> dict[str, str]:
    return {name: q.replace(f"{base} ", f"{layout} ") for name, q in qs.items()}


def report_ssb(args, counts, qs, results, layout_seconds, index_seconds) -> None:  # type: ignore[no-untyped-def]
    labels = list(results)
    names = list(qs)
    header = ["query", *labels]
    files_rows = [[n] + [f"{results[c][n]['files']}" for c in labels] for n in names]
    group_rows = [[n] + [f"{results[c][n]['row_groups']}" for c in labels] for n in names]
    time_rows = [
        [n] + [f"{results[c][n]['seconds'] / max(results['(a) as loaded'][n]['seconds'], 1e-9):.2f}x" for c in labels]
        for n in names
    ]
    report = [
        "# Star Schema Benchmark",
        "",
        f"One run of `python bench/ssb.py --scale-factor {args.scale_factor:g}` on {machine()}. "
        f"Rows: {', '.join(f'{k} {v:,}' for k, v in counts.items())}. lineorder as loaded: {args.files} files, "
        f"row groups of {args.row_group_size}. Every configuration returned the same rows for every query.",
        "",
        "## Data files of lineorder read",
        "",
        markdown_table(header, files_rows),
        "",
        "## Row groups of lineorder read (zskip: at most)",
        "",
        markdown_table(header, group_rows),
        "",
        f"## Wall time relative to (a) (median of {args.runs})",
        "",
        markdown_table(header, time_rows),
        "",
        "## Layout and index build seconds",
        "",
        markdown_table(
            ["configuration", "seconds"], [[k, f"{v:.1f}"] for k, v in {**layout_seconds, **index_seconds}.items()]
        ),
        "",
        "## Queries",
        "",
        *[f"- {n}: `{q}`" for n, q in qs.items()],
        "",
    ]
    write_report("ssb", report)


if __name__ == "__main__":
    main()
