"""bench/advise_frontier.py: which measured layouts make the frontier of SSB's two halves (no Spark)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ lives in the checkout

from bench.advise_frontier import Point, frontier, halves, points


def test_the_halves_sum_the_star_queries_and_d1_to_d7_and_leave_q1_out() -> None:
    assert halves({"Q1.1": 100, "Q2.1": 5, "Q4.3": 7, "D1": 2, "D7": 3.0}) == (12, 5)


def test_a_layout_beaten_on_both_halves_is_off_the_frontier_and_a_tie_on_one_is_not_a_win() -> None:
    star, doc, between, beaten = (
        Point("star", "r", 10, 1000),
        Point("doc", "r", 1000, 10),
        Point("between", "r", 100, 100),
        Point("beaten", "r", 200, 200),
    )
    same_stars = Point("same stars, more D", "r", 10, 1001)
    assert frontier([beaten, doc, between, star, same_stars]) == [star, between, doc]


def test_a_run_that_measured_only_one_half_of_a_layout_leaves_it_out() -> None:
    tradeoff = {"row_groups": {"zorder 1:1": {"Q2.1": 3, "D1": 4}}}
    mixed = {
        "sides": {
            "advised": {"Q3.1": {"row_groups": 5}, "D2": {"row_groups": 6}},
            "(g) zskip star": {"Q3.1": {"row_groups": 1}},  # run on its own half only (--own-halves)
        }
    }
    assert points(tradeoff, mixed) == [
        Point("zorder 1:1", "advise-tradeoff", 3, 4),
        Point("advised", "advise-mixed", 5, 6),
    ]
