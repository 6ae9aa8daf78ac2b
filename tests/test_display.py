"""Results show as tables in a notebook and as aligned text in a terminal."""

from __future__ import annotations

from zskip.indexing.api import IndexResult
from zskip.layout.optimize import OptimizeResult
from zskip.planning.read import Explain, StageCount


def test_an_explain_renders_as_an_html_table_and_as_text() -> None:
    explain = Explain(
        table="lake.db.t",
        where="s = '<b>'",
        predicate="s = '<b>'",
        files_total=64,
        files_read=3,
        row_groups_total=2559,
        row_groups_read=7,
        rows_planned=1200,
        bytes_planned=3 * 2**20,
        planning_seconds=0.0123,
        stages=(StageCount("curve range", 3, None, 0.001), StageCount("indexes (bloom, bitmap)", 3, 7, 0.002)),
        analysis_seconds=0.008,
        notes=("a note",),
    )
    page = explain._repr_html_()
    assert page.startswith("<table>") and page.count("<tr>") == 9
    assert "&lt;b&gt;" in page and "<b>'" not in page  # user text is escaped
    assert "2,559" in page and "3 files, 7 row groups (2.0 ms)" in page
    text = str(explain)
    assert text.splitlines()[0] == "explain lake.db.t"
    assert "  row groups read                 7 of 2,559" in text.splitlines()  # labels aligned


def test_optimize_and_index_results_render_their_figures() -> None:
    result = OptimizeResult(
        table="lake.db.t",
        mode="full",
        reason="full mode rewrites every file",
        files_before=64,
        files_after=40,
        bytes_before=2**30,
        bytes_after=2**30,
        files_rewritten=64,
        files_written=40,
        rows_rewritten=6_001_215,
        groups=1,
        commits=1,
        snapshot_id=42,
        duration_seconds=31.5,
        step_seconds={"resolve": 0.5, "rewrite": 29.0},
    )
    assert "64 -&gt; 40" in result._repr_html_() and "6,001,215 rows" in str(result)
    assert "resolve 0.5 s, rewrite 29.0 s" in str(result)
    index = IndexResult(
        table="lake.db.t",
        indexes=("a:bloom",),
        files_indexed=3,
        files_already_indexed=1,
        files_total=4,
        entries_dropped=0,
        index_bytes_written=2048,
        manifest=None,
        duration_seconds=1.25,
    )
    assert "3 indexed now, 1 already, 4 in all" in index._repr_html_()
    assert str(index).startswith("indexes of lake.db.t")
