"""The README's main job runs end to end on a tiny scale factor and reports real counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from zskip.demo import run_demo

pytestmark = pytest.mark.integration


def test_demo_runs_and_draws_its_pictures(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_demo(spark, catalog="lake", scale_factor=0.01, out_dir=tmp_path, files=8)
    printed = capsys.readouterr().out
    assert "60,175 rows in 8 data files" in printed  # TPC-H lineitem at scale factor 0.01
    assert "zskip hilbert" in printed and "Iceberg zorder" in printed
    assert "8/8" in printed  # the unclustered table reads every file for a filter
    # not a terminal: every step says when it starts and how long it took
    assert printed.count("done in") >= 6 and "laying out: zskip hilbert (rank) ..." in printed
    assert "layout time (s)" in printed and "file counts differ" in printed
    assert (tmp_path / "file-boxes.png").stat().st_size > 10_000
    assert (tmp_path / "curves.png").stat().st_size > 10_000
