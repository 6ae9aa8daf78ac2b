"""zskip's planner hosted by its Spark extension, against the planner in the Python driver.

    python bench/hosted_planning.py [--runs 21] [--wall-runs 7]

1. *Planning cost*: one application with zskip's extension configured; a session whose Python driver
   enabled zskip (``zskip.enable``: the rule calls the driver) and a session the extension turned zskip
   on in (the rule calls the planner process the JVM hosts), side by side with zskip off, in rotation:
   Spark's planning of each query (analysis, optimisation, physical plan), medians, with every run
   asking the planner (its remembered answers emptied) and with answers remembered.  On a table zskip
   never touched, a zskip-clustered table (no filter, skips nothing / little / much, a star join), and
   SSB scale factor 1 filters D1-D7 and star queries Q2.1-Q4.3 on (d) (zorder raw + bitmaps).
   Beside Spark's whole planning, the time in zskip's rule alone (Spark's rule metering): what the
   two planners differ by, without the swings of the rest of Spark's planning.
2. *Wall time through Spark Connect*: a Connect server with the extension on the same warehouse; SSB's
   star queries Q2.1-Q4.3 on (g) (zskip's star layout, made here when missing) from a Connect client
   with zskip, one without, the classic session with ``zskip.enable`` and a classic session without
   zskip, in whole rounds (every query on every side per round), with the rows each returned and the
   lineorder rows each scanned (the classic sessions' and the server's SQL metrics).

Needs the SSB tables of ``bench/ssb.py --layouts a,d`` in ``--ssb-warehouse`` (scale factor 1).
Writes docs/benchmarks/hosted-planning.md and .json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.spark_apps import CONNECT_SERVER, Executions, free_port, server, settings

from bench.common import DOCS, bench_session, machine, markdown_table, write_report
from bench.sql_overhead import build_clustered, clustered_cases, planning_ms, rule_ms
from bench.ssb import queries

SSB = "lake.ssb"
LINEORDER = f"{SSB}.lineorder_zorder_raw"  # (d): zorder raw, bitmaps on the indexed columns
STAR = f"{SSB}.lineorder_star"  # (g): hilbert rank through the dimensions the star queries filter
FLOOR = "floor: a 2,556-row table"
STAR_QUERIES = ("Q2.1", "Q2.2", "Q2.3", "Q3.1", "Q3.2", "Q3.3", "Q3.4", "Q4.1", "Q4.2", "Q4.3")
FILTERS = ("D1", "D2", "D3", "D4", "D5", "D6", "D7")
# what each part of the benchmark puts in its results (--only keeps the other part's from the last report)
PART_KEYS = {"planning": ("planning", "runs"), "connect": ("connect", "wall_runs", "connect_table")}
SIDES = ("off", "driver, asked", "hosted, asked", "driver, remembered", "hosted, remembered")


def ssb_cases(
    spark: Any, table: str = LINEORDER, names: tuple[str, ...] = (*FILTERS, *STAR_QUERIES)
) -> dict[str, tuple[str, str]]:
    swapped = {n: q.replace(f"{SSB}.lineorder ", f"{table} ") for n, q in queries(spark, SSB).items()}
    return {f"SSB {name}": (table, swapped[name]) for name in names}


def star_table(spark: Any) -> str:
    """(g), as ``bench/ssb.py --layouts g`` makes it (same file and row-group sizes as the loaded table's)."""
    from bench.layouts import lay_out_once
    from bench.ssb import FAIR, star_layout
    from zskip.iceberg.files import data_files

    if not spark.catalog.tableExists(STAR):
        base = f"{SSB}.lineorder"
        files = data_files(spark, base)
        target = max(sum(files["file_size_in_bytes"].to_pylist()) // len(files), 1 << 20)
        row_group = int(spark.sql(f"SHOW TBLPROPERTIES {base} ('write.parquet.row-group-size-bytes')").first()[1])
        recipe = star_layout(spark, SSB, target_file_size_bytes=target, row_group_size_bytes=row_group)
        seconds = lay_out_once(spark, base, STAR, recipe, properties=FAIR).seconds
        print(f"laid out {STAR} in {seconds:.0f} s", flush=True)
    return STAR


def _ready(spark: Any) -> None:
    hosted = spark.sparkContext._jvm.io.zskip.hosted.HostedPlanner
    deadline = time.monotonic() + 120
    while not str(hosted.status()).startswith("ready"):
        if time.monotonic() > deadline:
            raise SystemExit(f"zskip's hosted planner did not start: {hosted.status()}")
        time.sleep(0.2)


def planning_costs(spark: Any, cases: dict[str, tuple[str, str]], runs: int) -> dict[str, dict[str, float]]:
    """Per case and side: the median planning ms, and the median ms in zskip's rule (Spark's rule metering)."""
    import zskip
    from zskip.planning.enable import forget_answers

    hosted = spark.newSession()  # zskip's extension turns zskip on in it: the hosted planner plans
    hosted.sql("SELECT 1").collect()
    _ready(spark)
    zskip.enable(spark)
    sessions = {"driver": spark, "hosted": hosted}
    meter = spark.sparkContext._jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
    out: dict[str, dict[str, float]] = {}
    for name, (_, query) in cases.items():
        for session in sessions.values():
            session.conf.set("spark.zskip.enabled", "false")
        expected = sorted(spark.sql(query).collect())
        for who, session in sessions.items():
            session.conf.set("spark.zskip.enabled", "true")
            assert sorted(session.sql(query).collect()) == expected, (name, who)
        samples: dict[str, list[float]] = {side: [] for side in SIDES}
        rule: dict[str, list[float]] = {side: [] for side in SIDES[1:]}
        for i in range(runs + 2):  # two warm-up rounds, then in rotation
            for side in SIDES[i % len(SIDES) :] + SIDES[: i % len(SIDES)]:
                who = "hosted" if side.startswith("hosted") else "driver"
                session = sessions[who]
                session.conf.set("spark.zskip.enabled", "false" if side == "off" else "true")
                if side.endswith("asked"):
                    forget_answers(spark)
                meter.resetMetrics()
                ms = planning_ms(session, query)
                if i >= 2:
                    samples[side].append(ms)
                    if side != "off":
                        rule[side].append(rule_ms(str(meter.dumpTimeSpent()), "PlanHook"))
        out[name] = {side: statistics.median(values) for side, values in samples.items()}
        out[name] |= {f"{side} rule": statistics.median(values) for side, values in rule.items()}
        out[name] |= {
            f"{side} added": statistics.median(b - a for a, b in zip(samples["off"], samples[side], strict=True))
            for side in SIDES[1:]
        }
        print(name, json.dumps(out[name]), flush=True)
    return out


def connect_wall_times(spark: Any, ssb_warehouse: Path, runs: int, table: str) -> dict[str, dict[str, Any]]:
    """SSB's star queries through a Connect server with zskip's extension (zskip on and off) and through
    the classic session with zskip.enable: median wall ms, rows, lineorder rows scanned."""
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    from zskip.iceberg.scan_stats import scanned_rows

    directory = Path(tempfile.mkdtemp(prefix="zskip-connect-bench-"))
    port = free_port()
    conf = settings(ssb_warehouse, directory, **{"spark.connect.grpc.binding.port": str(port)})
    # the classic session's settings, so that only the path differs
    conf |= {
        "spark.driver.memory": "12g",
        "spark.sql.shuffle.partitions": "8",
        "spark.cleaner.periodicGC.interval": "3min",
    }
    qs = {n: q for n, (_, q) in ssb_cases(spark, table, STAR_QUERIES).items()}
    qs[FLOOR] = f"SELECT count(*) FROM {SSB}.dates WHERE d_year = 1997"  # what any query pays on each path
    out: dict[str, dict[str, Any]] = {}
    with server(CONNECT_SERVER, conf, port, directory / "server.log", directory):
        executions = Executions(int(conf["spark.ui.port"]))
        with_zskip = RemoteSession.builder.remote(f"sc://127.0.0.1:{port}").create()
        without = RemoteSession.builder.remote(f"sc://127.0.0.1:{port}").create()
        with_zskip.conf.set("spark.zskip.enabled", "true")
        without.conf.set("spark.zskip.enabled", "false")
        spark.conf.set("spark.zskip.enabled", "true")
        plain = spark.newSession()  # the classic path without zskip: what Connect's own transport costs
        plain.conf.set("spark.zskip.enabled", "false")
        sessions: dict[str, Any] = {
            "classic, zskip": spark,
            "Connect, zskip": with_zskip,
            "classic, no zskip": plain,
            "Connect, no zskip": without,
        }
        rows: dict[str, dict[str, Any]] = {}
        for name, query in qs.items():  # rows and rows scanned, every side: also the first warm-up round
            entry: dict[str, Any] = {}
            for side, run in (("Connect, zskip", with_zskip), ("Connect, no zskip", without)):
                executions.mark()
                entry[f"{side} rows"] = sorted(tuple(r) for r in run.sql(query).collect())
                entry[f"{side} scanned"] = executions.scanned(table)
            for side, run in (("classic, zskip", spark), ("classic, no zskip", plain)):
                frame = run.sql(query)
                entry[f"{side} rows"] = sorted(tuple(r) for r in frame.collect())
                entry[f"{side} scanned"] = scanned_rows(frame, table)
            rows[name] = entry
        for query in qs.values():  # a second round over every query and side before any is timed
            for session in sessions.values():
                session.sql(query).collect()
        # whole rounds: each round runs every query on every side (the side order rotating), so that a slow
        # stretch of the machine or of one JVM spreads over all queries and sides instead of one query's runs
        sides = list(sessions)
        times: dict[str, dict[str, list[float]]] = {name: {side: [] for side in sides} for name in qs}
        for i in range(runs):
            for name, query in qs.items():
                for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
                    started = time.perf_counter()
                    sessions[side].sql(query).collect()
                    times[name][side].append((time.perf_counter() - started) * 1000)
        for name in qs:
            entry = rows[name]
            entry |= {f"{side} ms": statistics.median(values) for side, values in times[name].items()}
            returned = [entry.pop(key) for key in list(entry) if key.endswith(" rows")]
            entry |= {"same rows": all(r == returned[0] for r in returned), "result rows": len(returned[0])}
            print(name, json.dumps(entry), flush=True)
            out[name] = entry
    return out


def lines(results: dict[str, Any]) -> list[str]:
    costs, wall = results["planning"], results["connect"]
    header = [
        "query", "off ms", *(f"{side}: added ms" for side in SIDES[1:]), "hosted - driver, asked (ms)",
        "rule ms, driver asked", "rule ms, hosted asked", "rule: hosted - driver (ms)",
    ]  # fmt: skip
    rows = []
    for name, c in costs.items():
        rows.append(
            [name, f"{c['off']:.1f}", *(f"{c[f'{side} added']:+.1f}" for side in SIDES[1:]),
             f"{c['hosted, asked added'] - c['driver, asked added']:+.1f}",
             f"{c['driver, asked rule']:.2f}", f"{c['hosted, asked rule']:.2f}",
             f"{c['hosted, asked rule'] - c['driver, asked rule']:+.2f}"]
        )  # fmt: skip
    same = all(e["same rows"] for e in wall.values())
    wall_rows = [
        [name, f"{e['classic, zskip ms']:.0f}", f"{e['Connect, zskip ms']:.0f}",
         f"{e['Connect, zskip ms'] / e['classic, zskip ms']:.2f}x",
         *((f"{e['classic, no zskip ms']:.0f}", f"{e['Connect, no zskip ms']:.0f}",
            f"{e['Connect, no zskip ms'] / e['classic, no zskip ms']:.2f}x") if "classic, no zskip ms" in e
           else ("", f"{e['Connect, no zskip ms']:.0f}", "")),
         f"{e['classic, zskip scanned']:,}", f"{e['Connect, zskip scanned']:,}", f"{e['Connect, no zskip scanned']:,}"]
        for name, e in wall.items()
    ]  # fmt: skip
    stars = [e for name, e in wall.items() if name != FLOOR]
    sides = ("zskip", "no zskip")
    ratio, added = {}, {}
    if all(f"classic, {side} ms" in e for e in stars for side in sides):
        for side in sides:
            ratio[side] = statistics.median(e[f"Connect, {side} ms"] / e[f"classic, {side} ms"] for e in stars)
            added[side] = statistics.median(e[f"Connect, {side} ms"] - e[f"classic, {side} ms"] for e in stars)
    return [
        "# zskip's hosted planner (Spark extension) against the planner in the Python driver",
        "",
        f"`python bench/hosted_planning.py --runs {results['runs']} --wall-runs {results['wall_runs']}` on "
        f"{results['machine']}. One application with zskip's extension configured "
        "(`io.zskip.extensions.ZskipSparkSessionExtensions`): a session whose Python driver enabled zskip "
        "(*driver*: the rule calls the driver back) and a session the extension turned zskip on in (*hosted*: "
        "the rule calls the planner process the JVM hosts, `python -m zskip.hosted`), with zskip off "
        "beside them, in rotation. Each run is Spark's planning of a fresh `spark.sql(q)` (analysis, "
        "optimisation, physical plan); *added* is the median of each run's difference from the zskip-off run "
        "beside it. *Asked*: every run asks the planner (the rule's remembered answers emptied first); "
        "*remembered*: the rule answers alone, as for a repeated query (the same JVM code on both sides). "
        "*Rule ms*: the median time Spark's rule executor metered in zskip's rule in each asked run (the call "
        "to the planner and back included): where the two planners differ, without the 5-20 ms swings of the "
        "rest of Spark's planning between single runs.",
        "",
        markdown_table(header, rows),
        "",
        "Targets (issue 60): hosted planning adds at most 1 ms per query on a table zskip never touched, and "
        "at most 3 ms over in-driver planning on zskip's tables.",
        "",
        "## SSB star queries through Spark Connect",
        "",
        f"A Spark Connect server with zskip's extension on the SSB warehouse (scale factor 1, "
        f"`{results['connect_table']}`: (g), zskip's star layout, which zskip prunes for the star queries); a "
        f"Connect client with zskip on, one with zskip off (`spark.zskip.enabled`), and two classic sessions "
        f"in the benchmark's process, one with `zskip.enable`, one with zskip off: medians of "
        f"{results['wall_runs']} runs of `.collect()` after two rounds of every query on every side, taken in "
        "whole rounds (each round runs every query on every side, the side order rotating). *Connect / "
        "classic* with zskip off is what Spark Connect's own path costs, zskip aside. Lineorder rows scanned: "
        "the SQL metrics of each application (the server's through its UI's REST API). "
        + ("**Every side returned the same rows for every query.**" if same else "**Rows differ.**"),
        "",
        markdown_table(
            [
                "query",
                "classic, zskip ms",
                "Connect, zskip ms",
                "Connect / classic, zskip",
                "classic, no zskip ms",
                "Connect, no zskip ms",
                "Connect / classic, no zskip",
                "classic scanned",
                "Connect, zskip scanned",
                "Connect, no zskip scanned",
            ],
            wall_rows,
        ),
        "",
        *(
            [
                f"Star queries, medians over Q2.1-Q4.3: Connect / classic {ratio['zskip']:.2f}x with zskip, "
                f"{ratio['no zskip']:.2f}x without; what Connect adds to the classic session's time "
                f"{added['zskip']:+.0f} ms with zskip, {added['no zskip']:+.0f} ms without.",
                "",
            ]
            if ratio
            else []
        ),
        "Target (issue 60): through Spark Connect, the star queries scan the lineorder rows a classic session "
        "with `zskip.enable` scans, and run within 1.1x of its wall time.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="planning runs per side and query (medians)")
    parser.add_argument("--wall-runs", type=int, default=7, help="wall-time runs per side and star query")
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--ssb-warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    parser.add_argument(
        "--only",
        choices=("planning", "connect"),
        help="measure one part again, keeping the other from the last report's JSON",
    )
    args = parser.parse_args()
    from zskip.iceberg.extension import EXTENSION
    from zskip.iceberg.session import ICEBERG_EXTENSIONS

    extension = {"spark.sql.extensions": f"{ICEBERG_EXTENSIONS},{EXTENSION}", "spark.pyspark.python": sys.executable}
    spark = bench_session(args.ssb_warehouse, conf=extension)
    results: dict[str, Any] = {"machine": machine(), "runs": args.runs, "wall_runs": args.wall_runs}
    if args.only:  # the other part's results, and what they were measured with, from the last report
        kept = json.loads((DOCS / "hosted-planning.json").read_text())
        other = "connect" if args.only == "planning" else "planning"
        results |= {key: kept[key] for key in PART_KEYS[other]}
    if args.only != "connect":
        build_clustered(spark, args.rows, args.files)
        results["planning"] = planning_costs(spark, clustered_cases() | ssb_cases(spark), args.runs)
    if args.only != "planning":
        results["connect_table"] = star_table(spark)
        results["connect"] = connect_wall_times(
            spark, Path(args.ssb_warehouse), args.wall_runs, results["connect_table"]
        )
    (DOCS / "hosted-planning.json").write_text(json.dumps(results, indent=2, default=str))
    print(write_report("hosted-planning", lines(results)))


if __name__ == "__main__":
    main()
