"""The advised layout on the trade-off frontier of SSB's two halves, drawn from measured runs.

Reads docs/benchmarks/advise-tradeoff.json (`bench/advise.py --datasets ssb-tradeoff`: zorders
weighting (g)'s dimension axes against D1-D7's columns, with (g) and (d)) and
docs/benchmarks/advise-mixed.json (`--datasets ssb-mixed`: the advised layout beside (a), (c), (d)
and (g)), and places every layout measured in them as a point: row groups read over Q2.1-Q4.3
against row groups read over D1-D7, both counted by zskip's planner on the real tables.  No Spark:
it draws what those runs measured.  The frontier joins the layouts no other reads fewer row groups
than on both halves.

    python bench/advise_frontier.py     # writes docs/benchmarks/advise-frontier.md and .png
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ lives in the checkout

from bench.common import DOCS, markdown_table, pyplot, write_report

STAR_QUERIES = ("Q2.", "Q3.", "Q4.")


@dataclass(frozen=True)
class Point:
    """One layout as one run measured it: row groups read over the star queries and over D1-D7."""

    label: str
    run: str  # the report it comes from
    stars: int
    doc001: int

    def beats(self, other: Point) -> bool:
        """Reads no more on either half and fewer on one."""
        return (
            self.stars <= other.stars
            and self.doc001 <= other.doc001
            and (self.stars < other.stars or self.doc001 < other.doc001)
        )


def halves(row_groups: dict[str, float]) -> tuple[int, int]:
    """Row groups over Q2.1-Q4.3 and over D1-D7 of one layout's per-query counts."""
    stars = sum(v for q, v in row_groups.items() if q.startswith(STAR_QUERIES))
    doc001 = sum(v for q, v in row_groups.items() if q.startswith("D"))
    return round(stars), round(doc001)


def points(tradeoff: dict[str, Any], mixed: dict[str, Any]) -> list[Point]:
    """Every layout of both runs; a layout a run did not run both halves on is left out."""
    out = []
    for label, counts in tradeoff["row_groups"].items():
        out.append(Point(label, "advise-tradeoff", *halves(counts)))
    for label, side in mixed["sides"].items():
        counts = {q: r["row_groups"] for q, r in side.items()}
        if any(q.startswith(STAR_QUERIES) for q in counts) and any(q.startswith("D") for q in counts):
            out.append(Point(label, "advise-mixed", *halves(counts)))
    return out


def frontier(found: list[Point]) -> list[Point]:
    """The points no other point beats, by star queries' row groups."""
    return sorted((p for p in found if not any(o.beats(p) for o in found)), key=lambda p: (p.stars, p.doc001))


def draw(found: list[Point], best: list[Point], advised: str, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    for run, marker in (("advise-tradeoff", "o"), ("advise-mixed", "s")):
        mine = [p for p in found if p.run == run and p.label != advised]
        ax.scatter([p.stars for p in mine], [p.doc001 for p in mine], marker=marker, color="#777", label=f"{run}.md")
    ax.plot(
        [p.stars for p in best],
        [p.doc001 for p in best],
        color="#2a7",
        linewidth=1,
        drawstyle="steps-post",
        label="frontier",
    )
    named = set()
    for p in found:  # a layout both runs measured is named once: its two points nearly meet
        if p.label not in named:
            named.add(p.label)
            ax.annotate(p.label, (p.stars, p.doc001), fontsize=7, xytext=(4, 3), textcoords="offset points")
    chosen = [p for p in found if p.label == advised]
    ax.scatter([p.stars for p in chosen], [p.doc001 for p in chosen], marker="*", s=180, color="#d33", label="advised")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("row groups read, Q2.1-Q4.3 (star queries)")
    ax.set_ylabel("row groups read, D1-D7")
    ax.set_title("SSB SF 1 lineorder: every measured layout, fewer is better on both axes")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def lines(found: list[Point], best: list[Point], advised: str, mixed: dict[str, Any]) -> list[str]:
    chosen = next(p for p in found if p.label == advised)
    beaten_by = [p for p in found if p.beats(chosen)]
    table = markdown_table(
        ["layout", "run", "row groups, Q2.1-Q4.3", "row groups, D1-D7", "on the frontier"],
        [
            [p.label, p.run, f"{p.stars:,}", f"{p.doc001:,}", "yes" if p in best else ""]
            for p in sorted(found, key=lambda p: (p.stars, p.doc001))
        ],
    )
    return [
        "# The advised layout on the trade-off frontier",
        "",
        "`python bench/advise_frontier.py`: every layout of SSB SF 1 lineorder measured in "
        "[advise-tradeoff.md](advise-tradeoff.md) and [advise-mixed.md](advise-mixed.md), as row groups read "
        "over the star queries (Q2.1-Q4.3) against row groups read over D1-D7, each counted by zskip's planner "
        "on the real tables in those runs (two runs: (g) and (d) appear once from each). The advised layout is "
        f"the mixed run's: {mixed['advice']['best']}.",
        "",
        "![frontier](advise-frontier.png)",
        "",
        "- Layouts reading fewer row groups than the advised one on both halves: "
        + (", ".join(f"{p.label} ({p.run})" for p in beaten_by) if beaten_by else "none")
        + ".",
        f"- On the frontier: {len(best)} of {len(found)} layouts"
        + (", the advised one among them." if chosen in best else "; the advised one is not."),
        "",
        table,
        "",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", default=str(DOCS), help="where the runs' JSON is (default: docs/benchmarks)")
    parser.add_argument("--output", default=str(DOCS))
    args = parser.parse_args(argv)
    source = Path(args.input)
    tradeoff = json.loads((source / "advise-tradeoff.json").read_text())
    mixed = json.loads((source / "advise-mixed.json").read_text())
    found = points(tradeoff, mixed)
    best = frontier(found)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    draw(found, best, "advised", output / "advise-frontier.png")
    write_report("advise-frontier", lines(found, best, "advised", mixed), output)


if __name__ == "__main__":
    main()
