"""How well the range gate's estimate tells which row groups hold no match, on a table zskip laid out.

    python bench/range_estimate.py [--work DIR] [--boxes 150] [--seed 1]

Reads lineorder of the SSB tables ``bench/object_storage.py`` loaded and laid out (its ``--work``
folder, local catalog): every row group's min/max and values of the curve's three columns and
lo_discount.  For random boxes (two or three of those columns, each a band of 0.1% to 60% of the
table's values, mostly on the curve's columns) and for document 001's D5 and D7, each row group the
statistics leave gets two estimates of its matches:

- **independent** (what ``zskip.planning.selectivity`` gives): the shares of different columns
  multiply;
- **least overlap** (what the gate assumed between a curve's columns before): ``max(0, sum of
  shares - (columns - 1))``, the least the shares can hold together.

A row group "at stake" is one the estimate puts under 4 matches (the default of
``spark.zskip.planning.bitmapRangeRows``): the gate reads bitmaps for those only.  The report gives,
per estimate, how many row groups were at stake, how many of them held no match (what bitmaps can
rule out), and how many matches they held; and, by expected matches, the share of row groups that
held none.  Writes docs/benchmarks/range-estimate.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DOCS, bench_session, machine, markdown_table

CURVE = ("lo_ordtotalprice", "lo_revenue", "lo_quantity")
OTHER = ("lo_discount",)
WIDTHS = (0.001, 0.01, 0.05, 0.2, 0.6)
AT_STAKE = 4.0
BINS = ((0.0, 0.001), (0.001, 1.0), (1.0, 2.0), (2.0, 4.0), (4.0, 8.0), (8.0, 16.0), (16.0, 64.0), (64.0, np.inf))


def row_groups(paths: list[str]) -> list[np.ndarray]:
    """Each row group's values of the four columns (one row per column)."""
    out = []
    for path in paths:
        parquet = pq.ParquetFile(path)
        for group in range(parquet.metadata.num_row_groups):
            table = parquet.read_row_group(group, columns=[*CURVE, *OTHER])
            out.append(np.stack([table[c].to_numpy().astype(np.float64) for c in (*CURVE, *OTHER)]))
    return out


def estimates(groups: list[np.ndarray], box: list[tuple[int, float, float]]) -> tuple[np.ndarray, ...]:
    """(matches, independent, least overlap) of each row group whose min/max leave it, for ``box``:
    (column, low, high) bands, inclusive, of whole numbers spread evenly between a row group's bounds."""
    truth, independent, least = [], [], []
    for values in groups:
        rows = values.shape[1]
        shares, curve = [], []
        for column, low, high in box:
            lo, hi = values[column].min(), values[column].max()
            share = min(1.0, max(0.0, min(hi, high) - max(lo, low) + 1) / (hi - lo + 1))
            shares.append(share)
            if column < len(CURVE):
                curve.append(share)
        if min(shares) == 0:
            continue  # the statistics rule it out
        matches = np.ones(rows, dtype=bool)
        for column, low, high in box:
            matches &= (values[column] >= low) & (values[column] <= high)
        other = float(np.prod([s for (c, _, _), s in zip(box, shares, strict=True) if c >= len(CURVE)]))
        truth.append(int(matches.sum()))
        independent.append(rows * float(np.prod(shares)))
        least.append(rows * other * (max(0.0, sum(curve) - (len(curve) - 1)) if curve else 1.0))
    return np.asarray(truth), np.asarray(independent), np.asarray(least)


def boxes(values: np.ndarray, count: int, seed: int) -> list[list[tuple[int, float, float]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        columns = rng.choice(
            len(CURVE) if rng.random() < 0.7 else len(CURVE) + len(OTHER), size=rng.choice([2, 3]), replace=False
        )
        box = []
        for column in columns.tolist():
            width = float(rng.choice(WIDTHS))
            start = float(rng.uniform(0.0, 1.0 - width))
            low, high = np.quantile(values[column], [start, start + width])
            box.append((column, float(low), float(high)))
        out.append(box)
    return out


def summary(name: str, truth: np.ndarray, estimate: np.ndarray) -> list[object]:
    stake = estimate < AT_STAKE
    empty = truth == 0
    return [
        name,
        f"{len(truth):,}",
        f"{int(empty.sum()):,}",
        f"{int(stake.sum()):,}",
        f"{int((stake & empty).sum()):,}",
        f"{(stake & empty).sum() / max(1, stake.sum()):.0%}",
        f"{(stake & empty).sum() / max(1, empty.sum()):.0%}",
        f"{int(truth[stake].sum()):,}",
        f"{estimate.sum():,.0f}",
        f"{int(truth.sum()):,}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/zskip-bench-object-storage"))
    parser.add_argument("--boxes", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    spark = bench_session(args.work / "warehouse")
    paths = [r.file_path for r in spark.sql("SELECT file_path FROM lake.ssb.lineorder.files").collect()]
    spark.stop()
    paths = [p.removeprefix("file:") for p in paths]
    groups = row_groups(paths)
    values = np.concatenate(groups, axis=1)
    price, revenue = CURVE.index("lo_ordtotalprice"), CURVE.index("lo_revenue")
    p = np.quantile(values[price], [0.2, 0.8, 0.999])
    r = np.quantile(values[revenue], [0.4, 0.401])
    named = {
        "D5": [(price, float(np.floor(p[2])) + 1, values[price].max()), (revenue, r[0], r[1])],
        "D7": [(price, p[0], float(np.ceil(p[1])) - 1), (revenue, r[0], r[1])],
    }
    header = [
        "workload", "estimate", "row groups left", "held no match", "at stake", "at stake, no match",
        "at stake that held none", "of those that held none", "matches in those at stake",
        "matches expected", "matches",
    ]  # fmt: skip
    rows, bins = [], {"independent": [], "least overlap": []}
    workloads = {
        f"{args.boxes} random boxes": boxes(values, args.boxes, args.seed),
        **{k: [v] for k, v in named.items()},
    }
    for workload, queries in workloads.items():
        found = [estimates(groups, box) for box in queries]
        truth = np.concatenate([f[0] for f in found])
        for name, column in (("independent", 1), ("least overlap", 2)):
            estimate = np.concatenate([f[column] for f in found])
            rows.append([workload, *summary(name, truth, estimate)])
            if workload.endswith("boxes"):
                bins[name] = [(estimate, truth)]
    calibration = []
    for low, high in BINS:
        line: list[object] = [f"{low:g} to {high:g}"]
        for name in ("independent", "least overlap"):
            estimate, truth = bins[name][0]
            inside = (estimate >= low) & (estimate < high)
            line += [f"{int(inside.sum()):,}", f"{(truth[inside] == 0).mean():.0%}" if inside.any() else "-"]
        calibration.append(line)
    text = "\n\n".join(
        [
            "# The range gate's estimate against what the row groups hold",
            f"One run of `python bench/range_estimate.py --boxes {args.boxes} --seed {args.seed}` on {machine()}.",
            f"SSB scale factor 1 lineorder as `bench/object_storage.py` lays it out (zskip's Z-order over "
            f"{', '.join(CURVE)}): {len(paths)} files, {len(groups):,} row groups. Each box holds two or three "
            f"of {', '.join((*CURVE, *OTHER))} to a band of {', '.join(f'{w:.1%}' for w in WIDTHS)} of the "
            "table's values (in 30% of the boxes the columns are drawn from all four, else from the curve's "
            "three); D5 and D7 are document 001's. A row group is at "
            f"stake when its estimate is under {AT_STAKE:g} matches: the range gate reads bitmaps for those only, "
            "and bitmaps rule out only the row groups that hold no match.",
            markdown_table(header, rows),
            "## Row groups that held no match, by the matches each estimate expected (the random boxes)",
            markdown_table(
                ["expected matches", "independent: row groups", "held none", "least overlap: row groups", "held none"],
                calibration,
            ),
        ]
    )
    DOCS.mkdir(parents=True, exist_ok=True)
    (DOCS / "range-estimate.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
