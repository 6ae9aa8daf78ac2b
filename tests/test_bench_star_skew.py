"""bench/star_skew.py's report: the geometry's bound for a single value, the single values read past
it, and each list against the union of its values (no Spark: the report is built from counts)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ lives in the checkout

from bench import star_skew


def test_the_bound_is_one_and_a_half_times_the_share_plus_a_cell() -> None:
    assert star_skew.bound(0.0, 1000) == pytest.approx(1.5 * 0.1 * 1000)  # a cell: 1000 ** (-1/3)
    assert star_skew.bound(0.5, 1000) == pytest.approx(1.5 * 0.6 * 1000)


def _row(read: int, holding: int, result: int) -> dict[str, object]:
    return {"row_groups": read, "rows": 0, "files": 1, "result": [[result, 0.0]], "holding": holding}


def test_the_report_names_the_single_values_read_past_their_bound() -> None:
    names = ("tzone = Denver", "tzone = Phoenix", "tzone IN (Denver, Phoenix): distant")
    reads = {"tzone = Denver": 60, "tzone = Phoenix": 500, "tzone IN (Denver, Phoenix): distant": 540}
    matched = {"tzone = Denver": 10_000, "tzone = Phoenix": 1_000, "tzone IN (Denver, Phoenix): distant": 11_000}
    zskip_rows = {
        n: _row(reads[n], 5, matched[n]) | {"stages": {"iceberg": 1000, "join keys": reads[n]}} for n in names
    }
    result = {
        "files": 8,
        "row_group_size": 16384,
        "total_rows": 100_000,
        "matched": matched,
        "unions": {"tzone IN (Denver, Phoenix): distant": 520},
        "sides": {
            "plain Spark": {"row_groups": 1000, "queries": {n: _row(1000, 5, matched[n]) for n in names}},
            "zskip star": {"row_groups": 1000, "queries": zskip_rows},
        },
    }
    text = "\n".join(star_skew.report_lines(result, 60.0, ["--files", "8", "--output", "/tmp/x"], "star-skew.png"))
    assert "`python bench/star_skew.py --files 8`" in text  # where the report went is not shown
    # Denver: 10% of the rows, bound 1.5 x (0.1 + 0.1) x 1000 = 300, read 60; Phoenix: bound 165, read 500
    assert "Single values over the bound: tzone = Phoenix." in text
    assert "| tzone IN (Denver, Phoenix): distant | 540 | 520 |" in text
    assert "| tzone = Phoenix | 1,000 (1.0%) | 1,000 of 1,000 | 500 of 1,000 | 5 | 165 |" in text
