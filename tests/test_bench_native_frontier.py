"""bench/native_frontier.py's report: which filters each layout reads more row groups on than the native
table, and its refusal of weights it cannot lay out (no Spark: the report is built from counts)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ lives in the checkout

from bench import native_frontier
from bench.native_peer import NATIVE


def _side(groups: list[int]) -> dict[str, dict[str, int]]:
    return {
        name: {"files": 1, "row_groups": g, "rows": 100 * g}
        for name, g in zip(native_frontier.FILTERS, groups, strict=True)
    }


def test_the_report_names_the_filters_a_layout_reads_more_row_groups_on() -> None:
    result = {
        "scale_factor": 10,
        "files": 640,
        "row_group_size": 262144,
        "target_file_size": 3 << 20,
        "queries": {"D6": "SELECT 1"},
        "sides": {
            NATIVE: _side([11, 1, 5, 1, 7, 29, 415]),
            "zskip hilbert raw": _side([14, 1, 5, 1, 3, 33, 161]),
            "zskip zorder raw, lo_ordtotalprice x1.5": _side([11, 1, 5, 1, 7, 28, 415]),
        },
    }
    argv = ["--scale-factor", "10", "--output", "/tmp/x", "--output=/tmp/y"]  # where it went: not shown
    lines = native_frontier.report_lines(result, 60.0, argv, "/tmp/x/native-frontier.png")
    text = "\n".join(lines)
    assert "`python bench/native_frontier.py --scale-factor 10`" in text
    assert "| zskip hilbert raw | 14 | 1 | 5 | 1 | 3 | 33 | 161 | 0.46x | D1, D6 |" in text
    assert "| zskip zorder raw, lo_ordtotalprice x1.5 | 11 | 1 | 5 | 1 | 7 | 28 | 415 | 1.00x | none |" in text
    assert f"| {NATIVE} | 11 | 1 | 5 | 1 | 7 | 29 | 415 | 1.00x | - |" in text
    assert "![native-frontier.png](native-frontier.png)" in text


@pytest.mark.parametrize(("given", "message"), [("1,x", "numbers separated by commas"), ("0.5", "at least 1")])
def test_weights_it_cannot_lay_out_are_refused(given: str, message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        native_frontier._weights(given)


def test_weights_are_read_in_order() -> None:
    assert native_frontier._weights("1,1.25,2") == [1.0, 1.25, 2.0]


def test_a_paired_layout_must_be_one_the_run_lays_out(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"--paired 1.25 is not one of --weights 1,1.5"):
        native_frontier.main(["--weights", "1,1.5", "--paired", "1.25", f"--output={tmp_path}"])
