"""Planning one SSB lineorder filter at scale factor 1: what each step costs, warm and cold, Spark's and zskip's.

    python bench/ssb.py --scale-factor 1 --layouts a,c,d --kinds bitmap   # loads and lays out the tables
    python bench/lineorder_planning.py --label current                    # measures the zskip on sys.path
    PYTHONPATH=/path/to/old/src python bench/lineorder_planning.py --label before
    python bench/lineorder_planning.py --report before current            # docs/benchmarks/lineorder-planning.md

For document 001's filters D1-D7 on lineorder as loaded (64 files, 2,559 row groups: nothing for zskip
to rule out beyond Iceberg's own statistics), on Iceberg's zorder rewrite and on zskip's zorder raw
layout with bitmaps (the best configuration of docs/benchmarks/ssb.md), one session times, warm
(medians of ``--runs``, after warm-up runs), the steps before Spark executes anything:

- Spark's own: analysing the query (``spark.sql``) and optimising and planning it physically (what plain
  Spark pays at ``collect()`` too; zskip has Spark do it first and execution reuses it);
- ``zskip.sql``'s call (all of the above, zskip's stages and staging, nothing executed);
- zskip's own part: the call minus Spark's two steps, measured in the same alternation;
- each stage's time as the pipeline records it;

and, cold, the first ``zskip.sql`` call after the driver cache and the JVM's per-snapshot file lists are
emptied (footers, index blobs, the file list and the manifests read again).  Results go to
``docs/benchmarks/lineorder-planning-<label>.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DOCS, bench_session, machine, markdown_table, write_report
from bench.ssb import doc001_filters

TABLES = {
    "(a) as loaded": "lake.ssb.lineorder",
    "(c) Iceberg zorder": "lake.ssb.lineorder_copy",
    "(d) zskip zorder raw + bitmap": "lake.ssb.lineorder_zorder_raw",
}
OWN = "zskip's own ms"
# what the labels of the runs in the report measured (git history holds the earlier reports)
VERSIONS = (
    "*before80-N* is zskip at 6f9954d (`PYTHONPATH=<its src>`, its jar built there), before issue 80's settings "
    "registry, stages that import no other, the hosted planner's state type, the manifest's entry types and "
    "optimize's steps; *after80-N* the commit this report came with (the same behaviour, cut along those seams, "
    "and the rule's workload-record cache no longer sizing each record). Each label ran in its own process, "
    "before and after alternating, on the same tables. The report of 385bb15..s58 (git history holds it and "
    "the earlier ones) compared earlier planners."
)


def _ms(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def _forget_listed_files(spark: Any) -> None:
    """Empty the JVM's per-snapshot file lists too (versions before them have none)."""
    try:
        from zskip.iceberg.scans import forget_listed_files
    except ImportError:
        return
    forget_listed_files(spark)


def measure(label: str, runs: int, warehouse: str) -> Path:
    from zskip.planning import explain_sql
    from zskip.planning import sql as zskip_sql
    from zskip.planning.cache import CACHE

    spark = bench_session(warehouse)
    filters = doc001_filters(spark, TABLES["(a) as loaded"])
    out: dict[str, Any] = {"label": label, "machine": machine(), "runs": runs, "tables": {}}
    for table in TABLES.values():
        if not spark.catalog.tableExists(table):
            raise SystemExit(f"{table} is missing: run bench/ssb.py --layouts a,c,d --kinds bitmap first")
    for _ in range(5):  # the JVM warmed on every query first, so no table is measured on a colder JVM
        for table in TABLES.values():
            for where in filters.values():
                query = f"SELECT count(*) AS n FROM {table} WHERE {where}"
                zskip_sql(spark, query)
                spark.sql(query)._jdf.queryExecution().executedPlan()
    for name, table in TABLES.items():
        per_filter: dict[str, Any] = {}
        for query_name, where in filters.items():
            query = f"SELECT count(*) AS n FROM {table} WHERE {where}"
            CACHE.clear()
            _forget_listed_files(spark)
            cold = _ms(lambda q=query: zskip_sql(spark, q))
            for _ in range(3):  # warm-up: the JVM's and the driver cache's
                zskip_sql(spark, query)
                spark.sql(query)._jdf.queryExecution().executedPlan()
            analyse, physical, call = [], [], []
            for _ in range(runs):  # alternating, so each step meets the same state of the machine
                started = time.perf_counter()
                frame = spark.sql(query)
                analyse.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                frame._jdf.queryExecution().executedPlan()
                physical.append((time.perf_counter() - started) * 1000)
                call.append(_ms(lambda q=query: zskip_sql(spark, q)))
            own = [c - a - p for a, p, c in zip(analyse, physical, call, strict=True)]
            plans = [e for e in explain_sql(spark, query) if e.table == table]
            stages: dict[str, float] = {}
            for plan in plans:
                for stage in plan.stages:
                    stages[stage.name] = stages.get(stage.name, 0.0) + stage.seconds * 1000
            per_filter[query_name] = {
                "cold call ms": cold,
                "Spark analyse ms": statistics.median(analyse),
                "Spark optimise + physical plan ms": statistics.median(physical),
                "zskip.sql call ms": statistics.median(call),
                OWN: statistics.median(own),
                "stages ms": stages,
                "row groups read": sum(p.row_groups_read for p in plans),
                "row groups total": sum(p.row_groups_total for p in plans),
            }
            print(label, name, query_name, {k: v for k, v in per_filter[query_name].items() if k != "stages ms"})
        out["tables"][name] = per_filter
    path = DOCS / f"lineorder-planning-{label}.json"
    path.write_text(json.dumps(out, indent=2))
    return path


def report(labels: list[str]) -> Path:
    runs = {label: json.loads((DOCS / f"lineorder-planning-{label}.json").read_text()) for label in labels}
    first = runs[labels[-1]]
    lines = [
        "# Planning one lineorder filter (SSB, scale factor 1)",
        "",
        f"`python bench/lineorder_planning.py` on {first['machine']}; labels {', '.join(labels)}, each measured "
        f"in its own run on the same tables (medians of {first['runs']} alternating runs, warm).",
        "",
        *([f"Versions: {VERSIONS}", ""] if VERSIONS else []),
        "The SSB lineorder tables of `bench/ssb.py` (64 files as loaded, 2,321-2,559 row groups of 256 KiB "
        "per filter; 59 files after a rewrite), document 001's filters D1-D7. *Spark* is what plain `spark.sql` "
        "pays as well before executing: analysing the query, then optimising and planning it (Iceberg plans "
        "its files there); zskip has Spark do both first and execution reuses them. *zskip's own* is the "
        "`zskip.sql` call minus those two, measured in the same alternation: reading the scans from the JVM, "
        "the stages, the check against Spark's own scan, staging the kept row groups, the workload record. "
        "*Cold*: the first call after the driver cache is emptied (footers, index blobs, the file list read "
        "again). (c) carries the bitmaps on lo_ordtotalprice and lo_revenue that `bench/ssb.py` builds to count "
        "the row groups holding a match, so zskip's stages run on it too. Spark's steps of the same query "
        "wander by several milliseconds between runs and processes (compare the runs of one version, each "
        "in its own process); zskip's own part is taken within one alternation and is the steadier figure.",
        "",
    ]
    header = [
        "table",
        "filter",
        "version",
        "row groups read",
        "Spark: analyse ms",
        "Spark: optimise + plan ms",
        "zskip.sql call ms",
        "zskip's own ms",
        "stages (ms)",
        "cold call ms",
    ]
    rows = []
    for table in first["tables"]:
        for query in first["tables"][table]:
            for label in labels:
                found = runs[label]["tables"].get(table, {}).get(query)
                if found is None:
                    continue
                stages = ", ".join(
                    f"{n} {v:.1f}" for n, v in found["stages ms"].items() if not n.startswith("table metadata")
                )
                rows.append(
                    [
                        table,
                        query,
                        label,
                        f"{found['row groups read']:,} of {found['row groups total']:,}",
                        f"{found['Spark analyse ms']:.1f}",
                        f"{found['Spark optimise + physical plan ms']:.1f}",
                        f"{found['zskip.sql call ms']:.1f}",
                        f"{found[OWN]:.1f}",
                        stages,
                        f"{found['cold call ms']:.0f}",
                    ]
                )
    lines += [markdown_table(header, rows), ""]
    for label in labels:
        own = [q[OWN] for t in runs[label]["tables"].values() for q in t.values()]
        call = [q["zskip.sql call ms"] for t in runs[label]["tables"].values() for q in t.values()]
        spark = [
            q["Spark analyse ms"] + q["Spark optimise + physical plan ms"]
            for t in runs[label]["tables"].values()
            for q in t.values()
        ]
        lines.append(
            f"- {label}: zskip's own part {min(own):.1f}-{max(own):.1f} ms (median {statistics.median(own):.1f}); "
            f"the whole call {min(call):.1f}-{max(call):.1f} ms; Spark's analysis and planning alone "
            f"{min(spark):.1f}-{max(spark):.1f} ms."
        )
    lines += ["", "Warm `zskip.sql` call (planning and staging, nothing executed) on D1-D6, the selective filters:", ""]
    summary = []
    for table in first["tables"]:
        for label in labels:
            found = runs[label]["tables"].get(table, {})
            calls = [found[q]["zskip.sql call ms"] for q in ("D1", "D2", "D3", "D4", "D5", "D6") if q in found]
            spark = [
                found[q]["Spark analyse ms"] + found[q]["Spark optimise + physical plan ms"]
                for q in ("D1", "D2", "D3", "D4", "D5", "D6")
                if q in found
            ]
            own = [found[q][OWN] for q in ("D1", "D2", "D3", "D4", "D5", "D6") if q in found]
            if calls:
                summary.append(
                    [
                        table,
                        label,
                        f"{statistics.median(calls):.1f}",
                        f"{min(calls):.1f}-{max(calls):.1f}",
                        f"{sum(c <= 20.0 for c in calls)} of {len(calls)}",
                        f"{statistics.median(spark):.1f}",
                        f"{statistics.median(own):.1f}",
                    ]
                )
    header = [
        "table",
        "version",
        "median ms",
        "range ms",
        "within 20 ms",
        "Spark's own steps alone, median ms",
        "zskip's own part, median ms",
    ]
    lines += [markdown_table(header, summary)]
    return write_report("lineorder-planning", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="current")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    parser.add_argument("--report", nargs="+", metavar="LABEL", help="write the report from these labels' runs")
    args = parser.parse_args()
    if args.report:
        report(args.report)
    else:
        measure(args.label, args.runs, args.warehouse)


if __name__ == "__main__":
    main()
