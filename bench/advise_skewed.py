"""The advisor against every hand-made layout of a small, skewed table it has not seen.

    python bench/advise_skewed.py

A table of 1.2 million events (a Zipf-distributed user id, a timestamp in arrival order, a skewed
status, a log-normal amount, a Zipf-distributed country, a skewed device: 24 files of row groups of
256 KiB) and nine filters on two or three of its columns each, as a new user would write them.  A
fresh copy gets ``zskip.advise(..., queries=WORKLOAD, apply=True)``; more copies are laid out by hand
with a rank curve over every pair and every triple of the six columns (hilbert), over all six and over
the four the workload filters most (hilbert and zorder): 39 layouts.  Every layout is counted the same
way, by zskip's planner on the real tables: files and row groups the nine filters read.  The advisor's
forecast of files per filter is set beside what its layout then reads.  Writes
docs/benchmarks/advise-skewed.md and advise-skewed.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.advise import forecast_of
from bench.common import DOCS, bench_session, machine, markdown_table, write_report
from zskip import advise, explain
from zskip.iceberg.files import data_files
from zskip.layout.compare import copy_and_lay_out, zskip_layout

TABLE = "lake.bench.events"
ROWS = 1_200_000
FILES = 24
ROW_GROUP = 256 * 1024
COLUMNS = ("user_id", "ts", "status", "amount", "country", "device")
FILTERS = {
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
}
PROPERTIES = {"write.parquet.row-group-size-bytes": str(ROW_GROUP)}


def events(seed: int = 7) -> pa.Table:
    """The skewed events (deterministic for ``seed``), in arrival order."""
    rng = np.random.default_rng(seed)
    seconds = np.sort(rng.integers(0, 365 * 86400, ROWS)) + 1_700_000_000
    countries = np.array([f"c{i}" for i in range(20)])
    return pa.table(
        {
            "user_id": np.minimum(rng.zipf(1.3, ROWS), 100_000).astype(np.int64),
            "ts": pa.array(seconds * 1_000_000, pa.timestamp("us", "UTC")),
            "status": rng.choice(10, ROWS, p=[0.6, 0.2, 0.08, 0.05, 0.03, 0.02, 0.01, 0.005, 0.003, 0.002]).astype(
                np.int32
            ),
            "amount": np.round(rng.lognormal(3, 1.5, ROWS), 2),
            "country": countries[np.minimum(rng.zipf(1.6, ROWS) - 1, 19)],
            "device": rng.choice(["d0", "d1", "d2", "d3", "d4"], ROWS, p=[0.5, 0.3, 0.1, 0.07, 0.03]),
        }
    )


def _load(spark: Any) -> None:
    if spark.catalog.tableExists(TABLE) and len(data_files(spark, TABLE)) == FILES:
        return
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
    spark.sql(f"DROP TABLE IF EXISTS {TABLE} PURGE")
    frame = spark.createDataFrame(events().to_pandas()).repartitionByRange(FILES, "ts").sortWithinPartitions("ts")
    writer = frame.writeTo(TABLE).using("iceberg").tableProperty("format-version", "2")
    for key, value in PROPERTIES.items():
        writer = writer.tableProperty(key, value)
    writer.create()


def _counted(spark: Any, table: str) -> dict[str, dict[str, int]]:
    """Files and row groups each filter reads on ``table``, as zskip's planner keeps them."""
    out = {}
    for name, where in FILTERS.items():
        plan = explain(spark, table, where)
        out[name] = {"files": plan.files_read, "row_groups": plan.row_groups_read}
    return out


def hand_layouts() -> list[tuple[tuple[str, ...], str]]:
    """Every pair and triple of the columns along a hilbert curve; all six and the four most filtered
    along hilbert and zorder."""
    out = [(c, "hilbert") for k in (2, 3) for c in itertools.combinations(COLUMNS, k)]
    most = ("user_id", "ts", "country", "amount")
    return out + [(COLUMNS, curve) for curve in ("hilbert", "zorder")] + [(most, c) for c in ("hilbert", "zorder")]


def run(spark: Any) -> dict[str, Any]:
    _load(spark)
    size = sum(data_files(spark, TABLE)["file_size_in_bytes"].to_pylist())
    target = max(size // FILES, 1 << 20)
    advised_table = f"{TABLE}_advised"
    queries = [f"SELECT * FROM {advised_table} WHERE {w}" for w in FILTERS.values()]

    def advised(table: str) -> Any:
        return advise(spark, table, queries=queries, target_file_size=target, apply=True)

    seconds, advice = copy_and_lay_out(spark, TABLE, advised_table, advised, properties=PROPERTIES)
    measured = _counted(spark, advised_table)
    for name, query in zip(FILTERS, queries, strict=True):
        forecast = forecast_of(spark, advice, query, advised_table)
        measured[name] |= {"forecast_files": forecast.files, "forecast_row_groups": forecast.row_groups}
    print(f"advised {advice.best.label}: {sum(m['files'] for m in measured.values())} files", flush=True)
    hand = {}
    for columns, curve in hand_layouts():
        label = f"{curve} over {', '.join(columns)} (rank)"
        copy_and_lay_out(
            spark,
            TABLE,
            f"{TABLE}_hand",
            zskip_layout(
                spark, list(columns), curve=curve, mapping="rank", target_file_size_bytes=target,
                row_group_size_bytes=ROW_GROUP,
            ),
            properties=PROPERTIES,
        )  # fmt: skip
        hand[label] = _counted(spark, f"{TABLE}_hand")
        print(label, sum(m["files"] for m in hand[label].values()), flush=True)
    return {
        "advice": json.loads(advice.to_json()),
        "advice_text": str(advice),
        "advice_and_apply_seconds": seconds,
        "advised": measured,
        "hand": hand,
    }


def lines(result: dict[str, Any], minutes: float) -> list[str]:
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
            for n, w in FILTERS.items()
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
        f"One run of `python bench/advise_skewed.py` on {machine()}, {minutes:.0f} minutes in all. "
        f"{ROWS:,} events in {FILES} files ({', '.join(COLUMNS)}: user and country Zipf-distributed, status and "
        "device skewed, amount log-normal, timestamps in arrival order), nine filters on two or three columns "
        "each. A fresh copy gets `zskip.advise(..., queries=FILTERS, apply=True)`; "
        f"{len(hand)} more copies are laid out by hand, each a rank curve over every pair and triple of the "
        "columns (hilbert), over all six and over the four most filtered (hilbert and zorder). Files and row "
        "groups are those zskip's planner keeps on the real tables, summed over the nine filters.",
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
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-bench-warehouse"))
    parser.add_argument("--output", default=str(DOCS))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    spark = bench_session(args.warehouse)
    result = run(spark)
    output = Path(args.output)
    write_report("advise-skewed", lines(result, (time.perf_counter() - started) / 60), output)
    (output / "advise-skewed.json").write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
