"""Planning against remote storage: the same SSB tables on an S3 server and on local disk, side by side.

    python bench/object_storage.py --scale-factor 1

One Spark session holds two catalogs: ``lake`` (a hadoop catalog on local disk) and ``s3lake`` (a hadoop
catalog on ``s3a://`` on S3Proxy, a real S3 server on a loopback port, reached through a counting
relay: ``bench/s3_requests.py``).  Both get the same SSB data, laid out the same way (lineorder in a
zskip Z-order over document 001's columns, with bitmaps on the four filtered lineorder columns).
For each query (document 001's D1-D7, Q1.1-Q1.3 and the star query Q2.1), on each storage:

- **planning, cold**: every table of the query refreshed (``REFRESH TABLE``: Iceberg reloads its
  metadata), Iceberg's manifest cache and zskip's caches emptied before each run; **warm**: the same
  query planned again.  Both catalogs keep manifests in Iceberg's manifest cache
  (``io.manifest.cache-enabled``), as ``zskip.session`` sets it up for a warehouse on an object store:
  without it Spark reads each table's manifest again on every plan, warm too;
- **Spark's own planning**: ``spark.sql`` through the physical plan and Iceberg's file planning
  (``planInputPartitions``, which Spark calls when the query starts); **zskip's planning**:
  ``zskip.sql`` until it returns the frame to run (Spark's planning included); zskip's part is the
  difference of the two medians;
- **requests**: what the relay saw during zskip's planning, by client (zskip reads through pyarrow,
  whose S3 client is the AWS SDK for C++; Spark and Iceberg through the AWS SDK for Java), with the
  bytes answered;
- **wall time**: ``spark.sql(q).collect()`` against ``zskip.sql(q).collect()``, runs alternating,
  warm; both must return the same rows, and the rows lineorder's scan produced are measured.

Then, with ``--faults SEED`` (the default), the S3 catalog's queries again and lineorder's bitmaps
rebuilt, with the relay misbehaving as a store under load does (``bench/storage_faults.py``); with
``--baseline``, the fault-free planning beside an earlier run's.  ``--server moto`` runs it all on
moto's S3 server instead of S3Proxy.

Writes docs/benchmarks/object-storage.md, object-storage.json and object-storage.png (with ``--server
moto``: object-storage-moto.*).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.integration.object_store import S3Server, missing, moto_server, s3_server

from bench.common import DOCS, bench_session, machine, markdown_table, pyplot, write_report
from bench.s3_requests import JVM, ZSKIP, Faults, RelayCounts, RequestCounts, counting_relay
from bench.ssb import CLUSTER, INDEXED, doc001_filters
from bench.storage_faults import baseline_lines, faults_lines, index_build
from zskip import create_index, drop_index, optimize
from zskip.datasets import SSB_QUERIES, load_ssb
from zskip.iceberg.files import data_files
from zskip.iceberg.scan_stats import scanned_rows
from zskip.planning import sql as zskip_sql
from zskip.planning.cache import CACHE
from zskip.planning.workload import flush_workload
from zskip.retries import counts as retry_counts
from zskip.storage import forget_open_objects
from zskip.units import parse_size
from zskip.viz.figures import save_png

BUCKET = "zskip-bench"
STORAGES = {"local disk": "lake", "S3 server": "s3lake"}
SSB_PICKED = ("Q1.1", "Q1.2", "Q1.3", "Q2.1")  # Q1.x, and one star query through two dimensions
TABLES = ("lineorder", "dates", "part", "supplier", "customer")


def s3_catalog(s3: S3Server) -> dict[str, str]:
    """Catalog ``s3lake``: a hadoop catalog on the S3 server, through Hadoop's S3A; both catalogs with
    Iceberg's manifest cache."""
    return {
        "spark.sql.catalog.s3lake": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.s3lake.type": "hadoop",
        "spark.sql.catalog.s3lake.warehouse": f"s3a://{BUCKET}/warehouse",
        **{f"spark.sql.catalog.{catalog}.io.manifest.cache-enabled": "true" for catalog in STORAGES.values()},
    } | s3.hadoop_conf()


def spark_planning(spark: Any, query: str) -> None:
    """What Spark plans for ``query`` before its first task: analysis, optimisation, the physical plan
    and each Iceberg scan's file planning (``planInputPartitions``, as ``BatchScanExec`` calls it)."""
    plan = spark.sql(query)._jdf.queryExecution().sparkPlan()
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() == "BatchScanExec":
            leaf.scan().toBatch().planInputPartitions()


def tables_of(query: str, ns: str) -> list[str]:
    return [f"{ns}.{t}" for t in TABLES if f"{ns}.{t} " in query + " "]


def forget(spark: Any, tables: list[str]) -> None:
    """Cold: Iceberg reloads each table's metadata and forgets its manifests, and zskip's caches and
    open objects start empty."""
    for table in tables:
        spark.sql(f"REFRESH TABLE {table}")
    drop_manifest_caches(spark)
    CACHE.clear()
    forget_open_objects()  # the handles kept for ranged reads know each object's length


def drop_manifest_caches(spark: Any) -> None:
    """Empty Iceberg's manifest cache of every FileIO.  ``ManifestFiles.dropCache`` drops one FileIO's,
    and the one a loaded table answers is not always the one its scans read through (a cold plan
    still found its manifests cached), so the whole cache is emptied."""
    java_class = spark.sparkContext._jvm.org.apache.iceberg.ManifestFiles._java_lang_class
    caches = java_class.getDeclaredField("CONTENT_CACHES")
    caches.setAccessible(True)
    caches.get(None).invalidateAll()


def planning(spark: Any, query: str, tables: list[str], counts: RelayCounts, runs: dict[str, int]) -> dict[str, Any]:
    """Median planning seconds, cold and warm (``runs`` of each), of plain Spark and of zskip; the
    requests of zskip's."""

    def timed(action: Callable[[], Any], *, cold: bool) -> tuple[float, dict[str, int]]:
        if cold:
            forget(spark, tables)
        before = counts.snapshot()
        started = time.perf_counter()
        action()
        seconds = time.perf_counter() - started
        return seconds, RequestCounts.since(before, counts.snapshot())

    out: dict[str, Any] = {}
    for state in ("cold", "warm"):
        plain_runs, zskip_runs = [], []
        if state == "warm":  # once each before the warm runs
            spark_planning(spark, query)
            zskip_sql(spark, query)
        for _ in range(runs[state]):  # alternating: both sides see the same machine
            plain_runs.append(timed(lambda: spark_planning(spark, query), cold=state == "cold"))
            zskip_runs.append(timed(lambda: zskip_sql(spark, query), cold=state == "cold"))
        out[state] = {
            "spark_seconds": statistics.median(s for s, _ in plain_runs),
            "zskip_seconds": statistics.median(s for s, _ in zskip_runs),
            "spark_requests": _median_requests([r for _, r in plain_runs]),
            "zskip_requests": _median_requests([r for _, r in zskip_runs]),
        }
    return out


def _median_requests(runs: list[dict[str, int]]) -> dict[str, float]:
    keys = sorted({key for run in runs for key in run})
    return {key: statistics.median(run.get(key, 0) for run in runs) for key in keys}


def wall(spark: Any, query: str, lineorder: str, runs: int) -> dict[str, Any]:
    """Warm wall time of plain Spark and of zskip, runs alternating; the rows each returned and the rows
    lineorder's scan produced."""
    plain_frame, zskip_frame = spark.sql(query), zskip_sql(spark, query)
    plain_rows, zskip_rows = Counter(map(tuple, plain_frame.collect())), Counter(map(tuple, zskip_frame.collect()))
    if plain_rows != zskip_rows:
        raise SystemExit(f"zskip returned different rows than Spark for {query}")
    pairs = []
    for _ in range(runs):
        started = time.perf_counter()
        spark.sql(query).collect()
        middle = time.perf_counter()
        zskip_sql(spark, query).collect()
        pairs.append((middle - started, time.perf_counter() - middle))
    return {
        "spark_seconds": statistics.median(p[0] for p in pairs),
        "zskip_seconds": statistics.median(p[1] for p in pairs),
        "spark_scanned_rows": scanned_rows(plain_frame, lineorder),
        "zskip_scanned_rows": scanned_rows(zskip_frame, lineorder),
        "result_rows": sum(plain_rows.values()),
    }


def load(spark: Any, ns: str, args: argparse.Namespace) -> dict[str, Any]:
    """The SSB tables in ``ns``, lineorder laid out in zskip's Z-order with bitmaps (seconds per step)."""
    row_group = parse_size(args.row_group_size)
    steps: dict[str, Any] = {}
    started = time.perf_counter()
    counts = load_ssb(
        spark,
        ns,
        scale_factor=args.scale_factor,
        data_dir=Path(args.data_dir),
        files=args.files,
        properties={"write.parquet.row-group-size-bytes": str(row_group), "read.split.adaptive-size.enabled": "false"},
    )
    steps["load seconds"] = time.perf_counter() - started
    lineorder = f"{ns}.lineorder"
    size = sum(data_files(spark, lineorder)["file_size_in_bytes"].to_pylist())
    started = time.perf_counter()
    optimize(
        spark,
        lineorder,
        by=list(CLUSTER),
        curve="zorder",
        mapping="raw",
        target_file_size=max(size // args.files, 1 << 20),
        row_group_size=row_group,
    )
    steps["optimize seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    for column in INDEXED:
        create_index(spark, lineorder, column, kind="bitmap")
    steps["index seconds"] = time.perf_counter() - started
    steps["rows"] = counts
    return steps


def rebuild_indexes(spark: Any, lineorder: str) -> float:
    """Drop lineorder's bitmaps and build them again (an earlier zskip may have written them); seconds."""
    started = time.perf_counter()
    for column in INDEXED:
        drop_index(spark, lineorder, column, "bitmap")
        create_index(spark, lineorder, column, kind="bitmap")
    return time.perf_counter() - started


def layout_facts(spark: Any, lineorder: str) -> dict[str, int]:
    files = data_files(spark, lineorder)
    return {"files": files.num_rows, "bytes": int(sum(files["file_size_in_bytes"].to_pylist()))}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=64, help="lineorder data files as loaded")
    parser.add_argument("--row-group-size", default="256KB", help="lineorder row groups")
    parser.add_argument("--runs", type=int, default=11, help="cold planning runs per query (median)")
    parser.add_argument("--warm-runs", type=int, default=15, help="warm planning runs per query (median)")
    parser.add_argument("--wall-runs", type=int, default=3, help="paired warm runs per query (median)")
    parser.add_argument("--queries", help="comma-separated names (default: D1-D7,Q1.1-Q1.3,Q2.1)")
    parser.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "zskip-bench-object-storage"))
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir()) / "zskip-tpch"), help="TPC-H files")
    parser.add_argument("--reuse-loaded", action="store_true", help="keep the tables an earlier run left in --work")
    parser.add_argument(
        "--rebuild-indexes", action="store_true", help="with --reuse-loaded: drop and build lineorder's bitmaps again"
    )
    parser.add_argument("--server", choices=("s3proxy", "moto"), default="s3proxy", help="the S3 server to start")
    parser.add_argument("--faults", type=int, default=1, metavar="SEED", help="seed of the run under faults")
    parser.add_argument("--no-faults", action="store_true", help="skip the run under faults")
    parser.add_argument("--fault-runs", type=int, default=5, help="cold and warm planning runs under faults")
    parser.add_argument("--baseline", help="an earlier run's object-storage.json, to compare fault-free planning")
    parser.add_argument("--baseline-label", default="an earlier run", help="what --baseline was run on")
    parser.add_argument("--output", default=str(DOCS))
    args = parser.parse_args(argv)
    why = missing()
    if why:
        raise SystemExit(f"cannot start the S3 server: {why}")
    if args.server == "moto" and args.reuse_loaded:
        raise SystemExit("--reuse-loaded needs --server s3proxy: moto's server keeps its buckets in memory")
    work = Path(args.work)
    clock = time.perf_counter()
    server = s3_server(work / "s3") if args.server == "s3proxy" else moto_server()
    with server as s3, counting_relay(s3.endpoint) as (relay, counts):
        s3.create_bucket(BUCKET)
        spark = bench_session(work / "warehouse", conf=s3_catalog(replace(s3, endpoint=relay)))
        built: dict[str, Any] = {}
        for storage, catalog in STORAGES.items():
            ns = f"{catalog}.ssb"
            if args.reuse_loaded and spark.catalog.tableExists(f"{ns}.lineorder"):
                built[storage] = {"reused": True}
                if args.rebuild_indexes:
                    built[storage]["index seconds"] = rebuild_indexes(spark, f"{ns}.lineorder")
            else:
                built[storage] = load(spark, ns, args)
            built[storage] |= layout_facts(spark, f"{ns}.lineorder")
            print(storage, "ready", built[storage], flush=True)
        results: dict[str, dict[str, Any]] = {}
        for storage, catalog in STORAGES.items():
            ns = f"{catalog}.ssb"
            qs = queries(spark, ns, args.queries)
            for name, query in qs.items():
                tables = tables_of(query, ns)
                measured = planning(spark, query, tables, counts, {"cold": args.runs, "warm": args.warm_runs})
                measured["wall"] = wall(spark, query, f"{ns}.lineorder", args.wall_runs)
                results.setdefault(name, {})[storage] = measured
                print(storage, name, _brief(measured), flush=True)
        faulty: dict[str, Any] = {}
        if not args.no_faults:
            faulty = under_faults(spark, counts, Faults.typical(seed=args.faults), args)
        flush_workload()  # while the S3 server still answers
        spark.stop()
    total = time.perf_counter() - clock
    report(args, built, results, total, faulty)
    return results


def under_faults(spark: Any, counts: RelayCounts, faults: Faults, args: argparse.Namespace) -> dict[str, Any]:
    """The S3 catalog's queries and an index rebuild, fault-free (the rebuild) and under ``faults``."""
    ns = f"{STORAGES['S3 server']}.ssb"
    lineorder = f"{ns}.lineorder"
    builds = {"clean": index_build(spark, lineorder, INDEXED, counts)}
    print("index rebuild, fault-free:", builds["clean"], flush=True)
    counts.set_faults(faults)
    try:
        measured: dict[str, Any] = {}
        for name, query in queries(spark, ns, args.queries).items():
            before = retry_counts.total()
            runs = {"cold": args.fault_runs, "warm": args.fault_runs}
            measured[name] = planning(spark, query, tables_of(query, ns), counts, runs)
            measured[name]["wall"] = wall(spark, query, lineorder, args.wall_runs)
            measured[name]["zskip_retried"] = retry_counts.total() - before
            print("under faults", name, _brief(measured[name]), flush=True)
        builds["faults"] = index_build(spark, lineorder, INDEXED, counts)
        print("index rebuild, under faults:", builds["faults"], flush=True)
    finally:
        counts.set_faults(Faults())
    for build in builds.values():  # a build that failed is built again, the store behaving
        for column in build["failures"]:
            create_index(spark, lineorder, column, kind="bitmap")
    return {"faults": faults.__dict__, "queries": measured, "builds": builds}


def queries(spark: Any, ns: str, wanted: str | None) -> dict[str, str]:
    out = {
        name: f"SELECT count(*) AS n FROM {ns}.lineorder WHERE {where}"
        for name, where in doc001_filters(spark, f"{ns}.lineorder").items()
    }
    out |= {name: SSB_QUERIES[name].format(ns=ns) for name in SSB_PICKED}
    if wanted:
        names = wanted.split(",")
        unknown = sorted(set(names) - set(out))
        if unknown:
            raise SystemExit(f"unknown queries {unknown}; known: {', '.join(out)}")
        out = {name: out[name] for name in names}
    return out


def _brief(measured: dict[str, Any]) -> str:
    cold, warm = measured["cold"], measured["warm"]
    return (
        f"cold {cold['spark_seconds'] * 1000:.0f}/{cold['zskip_seconds'] * 1000:.0f} ms, "
        f"warm {warm['spark_seconds'] * 1000:.0f}/{warm['zskip_seconds'] * 1000:.0f} ms, "
        f"zskip GETs {cold['zskip_requests'].get(f'{ZSKIP} GET', 0):.0f}"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _requests(requests: dict[str, float], *clients: str) -> str:
    gets = sum(requests.get(f"{client} GET", 0) for client in clients)
    heads = sum(requests.get(f"{client} HEAD", 0) for client in clients)
    kib = sum(requests.get(f"{client} bytes", 0) for client in clients) / 1024
    return f"{gets:.0f} GET + {heads:.0f} HEAD, {kib:,.0f} KiB"


def report(
    args: argparse.Namespace,
    built: dict[str, Any],
    results: dict[str, dict[str, Any]],
    total: float,
    faulty: dict[str, Any],
) -> None:
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    name = "object-storage" if args.server == "s3proxy" else f"object-storage-{args.server}"
    (output / f"{name}.json").write_text(
        json.dumps({"server": args.server, "built": built, "results": results, "faults": faulty}, indent=1)
    )
    local, s3 = "local disk", "S3 server"
    server = {"s3proxy": "S3Proxy", "moto": "moto's S3 server"}[args.server]
    lines = [
        "# Planning against remote storage",
        "",
        f"One run of `python bench/object_storage.py --scale-factor {args.scale_factor:g} --runs {args.runs} "
        f"--warm-runs {args.warm_runs} --wall-runs {args.wall_runs}{' --reuse-loaded' if args.reuse_loaded else ''}"
        f"{f' --server {args.server}' if args.server != 's3proxy' else ''}"
        f"{' --no-faults' if args.no_faults else f' --faults {args.faults} --fault-runs {args.fault_runs}'}"
        f"{' --baseline ...' if args.baseline else ''}"
        f"{' --rebuild-indexes' if args.reuse_loaded and args.rebuild_indexes else ''}` on {machine()}, "
        f"{total / 60:.0f} minutes in all"
        + (
            " (the tables an earlier run of the same command loaded and laid out"
            + ("; lineorder's bitmaps built again in this run)." if args.rebuild_indexes else ").")
            if args.reuse_loaded
            else "."
        ),
        "",
        f"The same SSB tables in two catalogs of one Spark session: on local disk, and on {server} (a real S3 "
        "server on a loopback port) through Hadoop's S3A, with every request passing a counting relay "
        "(`bench/s3_requests.py`). lineorder is laid out in zskip's Z-order over "
        f"{', '.join(CLUSTER)} with bitmaps on {', '.join(INDEXED)}.",
        "",
        markdown_table(
            ["storage", "lineorder files", "lineorder MiB"],
            [[storage, facts["files"], f"{facts['bytes'] / 2**20:,.0f}"] for storage, facts in built.items()],
        ),
        "",
        "Both catalogs keep manifests in Iceberg's manifest cache (`io.manifest.cache-enabled=true`), as "
        "`zskip.session` sets it up for a warehouse on an object store. "
        "**Cold**: before each run every table of the query is refreshed (Iceberg reloads its metadata), its "
        "manifests are dropped from that cache, and zskip's caches are emptied; **warm**: the query planned "
        "again. **Spark** is Spark's own planning: "
        "`spark.sql` through the physical plan and Iceberg's file planning (`planInputPartitions`, as Spark "
        "calls it when the query starts). **zskip** is `zskip.sql` until it hands back the frame to run, "
        f"Spark's planning included. Medians of {args.runs} runs cold and {args.warm_runs} warm, the two sides "
        "alternating. Milliseconds.",
        "",
        "## Planning time on the S3 server",
        "",
        markdown_table(
            [
                "query",
                "Spark cold",
                "zskip cold",
                "zskip / Spark cold",
                "Spark warm",
                "zskip warm",
                "zskip warm, S3 minus local",
                "zskip's part warm (zskip - Spark), S3 minus local",
            ],
            [
                [
                    name,
                    _ms(r[s3]["cold"]["spark_seconds"]),
                    _ms(r[s3]["cold"]["zskip_seconds"]),
                    f"{r[s3]['cold']['zskip_seconds'] / r[s3]['cold']['spark_seconds']:.2f}",
                    _ms(r[s3]["warm"]["spark_seconds"]),
                    _ms(r[s3]["warm"]["zskip_seconds"]),
                    f"{(r[s3]['warm']['zskip_seconds'] - r[local]['warm']['zskip_seconds']) * 1000:+,.0f}",
                    f"{(_part(r[s3]['warm']) - _part(r[local]['warm'])) * 1000:+,.0f}",
                ]
                for name, r in results.items()
            ],
        ),
        "",
        "## Planning time on local disk",
        "",
        markdown_table(
            ["query", "Spark cold", "zskip cold", "zskip / Spark cold", "Spark warm", "zskip warm"],
            [
                [
                    name,
                    _ms(r[local]["cold"]["spark_seconds"]),
                    _ms(r[local]["cold"]["zskip_seconds"]),
                    f"{r[local]['cold']['zskip_seconds'] / r[local]['cold']['spark_seconds']:.2f}",
                    _ms(r[local]["warm"]["spark_seconds"]),
                    _ms(r[local]["warm"]["zskip_seconds"]),
                ]
                for name, r in results.items()
            ],
        ),
        "",
        "## Requests to the S3 server while planning (medians)",
        "",
        "zskip's own metadata reads (footers, index manifest and blobs, clustering store) go through pyarrow; "
        "the JVM's are Spark's and Iceberg's (table metadata, manifests, and the file listing zskip asks "
        "Spark for).",
        "",
        markdown_table(
            [
                "query",
                "cold, Spark planning: JVM",
                "cold, zskip.sql: JVM",
                "cold, zskip.sql: zskip's reads (pyarrow)",
                "warm, Spark planning: all",
                "warm, zskip.sql: all",
            ],
            [
                [
                    name,
                    _requests(r[s3]["cold"]["spark_requests"], JVM),
                    _requests(r[s3]["cold"]["zskip_requests"], JVM),
                    _requests(r[s3]["cold"]["zskip_requests"], ZSKIP),
                    _requests(r[s3]["warm"]["spark_requests"], JVM, ZSKIP),
                    _requests(r[s3]["warm"]["zskip_requests"], JVM, ZSKIP),
                ]
                for name, r in results.items()
            ],
        ),
        "",
        "## Wall time, warm (seconds; paired runs, medians) and rows lineorder's scan produced",
        "",
        markdown_table(
            [
                "query",
                "storage",
                "Spark s",
                "zskip s",
                "Spark / zskip",
                "rows scanned: Spark",
                "rows scanned: zskip",
                "result rows",
            ],
            [
                [
                    name,
                    storage,
                    f"{w['spark_seconds']:.2f}",
                    f"{w['zskip_seconds']:.2f}",
                    f"{w['spark_seconds'] / w['zskip_seconds']:.2f}",
                    f"{w['spark_scanned_rows']:,}",
                    f"{w['zskip_scanned_rows']:,}",
                    w["result_rows"],
                ]
                for name, r in results.items()
                for storage, w in ((st, r[st]["wall"]) for st in STORAGES)
            ],
        ),
        "",
    ]
    lines += verdict(results)
    chart(results, output / f"{name}.png")
    lines += ["", f"![planning time]({name}.png)", ""]
    if faulty:
        lines += faults_lines(
            Faults(**faulty["faults"]), {n: r[s3] for n, r in results.items()}, faulty["queries"], faulty["builds"]
        )
    if args.baseline:
        lines += baseline_lines(json.loads(Path(args.baseline).read_text()), results, args.baseline_label)
    write_report(name, lines, output)


def _part(measured: dict[str, Any]) -> float:
    """What zskip adds to Spark's own planning (medians of the alternating runs)."""
    return float(measured["zskip_seconds"] - measured["spark_seconds"])


def verdict(results: dict[str, dict[str, Any]]) -> list[str]:
    """Where the targets hold and where they do not, from the figures above."""
    s3, local = "S3 server", "local disk"
    cold = {n: r[s3]["cold"]["zskip_seconds"] / r[s3]["cold"]["spark_seconds"] for n, r in results.items()}
    warm = {n: (r[s3]["warm"]["zskip_seconds"] - r[local]["warm"]["zskip_seconds"]) * 1000 for n, r in results.items()}
    part = {n: (_part(r[s3]["warm"]) - _part(r[local]["warm"])) * 1000 for n, r in results.items()}
    over_cold = [n for n, ratio in cold.items() if ratio > 2]
    over_part = [n for n, ms in part.items() if ms > 10]
    over_warm = [n for n, ms in warm.items() if ms > 10]

    def held(over: list[str]) -> str:
        return f"Over the target: {', '.join(over)}." if over else "Every query within it."

    return [
        "## Against the targets",
        "",
        f"- Cold planning on the S3 server, zskip over Spark's own: {min(cold.values()):.2f}x to "
        f"{max(cold.values()):.2f}x (target: at most 2x). {held(over_cold)}",
        f"- Warm planning, S3 server minus local disk: {min(warm.values()):+.0f} ms to {max(warm.values()):+.0f} ms "
        f"(target: at most +10 ms). {held(over_warm)} What zskip adds to Spark's own warm planning (zskip "
        f"minus Spark), S3 server minus local disk: {min(part.values()):+.0f} ms to {max(part.values()):+.0f} ms. "
        f"{held(over_part)}",
    ]


def chart(results: dict[str, dict[str, Any]], path: Path) -> None:
    plt = pyplot()
    names = list(results)
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=False)
    width = 0.2
    for axis, state in zip(axes, ("cold", "warm"), strict=True):
        for i, (storage, side, label) in enumerate(
            [
                ("local disk", "spark_seconds", "Spark, local"),
                ("local disk", "zskip_seconds", "zskip, local"),
                ("S3 server", "spark_seconds", "Spark, S3"),
                ("S3 server", "zskip_seconds", "zskip, S3"),
            ]
        ):
            values = [results[n][storage][state][side] * 1000 for n in names]
            axis.bar([x + (i - 1.5) * width for x in range(len(names))], values, width, label=label)
        axis.set_xticks(range(len(names)), names, rotation=45)
        axis.set_ylabel("planning, ms (median)")
        axis.set_title(f"{state} planning")
        axis.legend(fontsize=8)
    save_png(figure, path)


if __name__ == "__main__":
    main()
