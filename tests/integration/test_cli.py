"""The command line: every verb has help, index verbs work on a real table, bad input exits 2 with a message."""

from __future__ import annotations

import json

import pytest

from .cli_runner import run
from .tables import make_table

pytestmark = pytest.mark.integration

VERBS = [
    ["optimize"],
    ["inspect"],
    ["demo"],
    ["index"],
    ["index", "create"],
    ["index", "refresh"],
    ["index", "list"],
    ["index", "drop"],
    ["vacuum"],
    ["status"],
    ["workload"],
    ["explain"],
    ["query"],
    ["bench"],
]


@pytest.mark.parametrize("verb", VERBS, ids=" ".join)
def test_every_verb_has_help(capsys, verb: list[str]) -> None:
    code, out, _ = run(capsys, *verb, "--help")
    assert code == 0 and "Usage: zskip" in out and len(out.splitlines()) > 4


def test_every_benchmark_the_bench_verb_names_is_a_script_that_answers_help() -> None:
    import subprocess
    import sys
    from pathlib import Path

    from zskip.cli.bench import SCRIPTS

    bench = Path(__file__).resolve().parents[2] / "bench"
    for name, script in SCRIPTS.items():
        done = subprocess.run([sys.executable, str(bench / script), "--help"], capture_output=True, text=True)
        assert done.returncode == 0 and "usage:" in done.stdout, (name, done.stderr[-2000:])


def test_index_verbs_on_a_table(spark, capsys) -> None:
    table = make_table(spark, "lake.cli.t", rows=5_000, files=3)
    code, out, _ = run(capsys, "index", "create", table, "a", "--kind", "bitmap")
    assert code == 0 and "indexed 3 of 3 data files" in out
    code, out, _ = run(capsys, "index", "create", table, "id", "--fpp", "0.05", "--json")
    assert code == 0 and json.loads(out[out.index("{") :])["files_indexed"] == 3
    code, out, _ = run(capsys, "index", "list", table, "--json")
    listed = json.loads(out)
    assert [(i["column"], i["kind"], i["files_indexed"]) for i in listed] == [("a", "bitmap", 3), ("id", "bloom", 3)]
    code, out, _ = run(capsys, "index", "refresh", table)
    assert code == 0 and "indexed 0 of 3" in out
    code, out, _ = run(capsys, "index", "drop", table, "id", "--kind", "bloom")
    assert code == 0 and "dropped the bloom index of id: 3 entries" in out
    code, out, _ = run(capsys, "vacuum", table, "--older-than", "0s")
    assert code == 0 and "deleted 5 files" in out


def test_bad_input_exits_2_with_a_message(spark, capsys) -> None:
    table = make_table(spark, "lake.cli.bad", rows=1_000, files=1)
    code, _, err = run(capsys, "index", "create", table, "nope")
    assert code == 2 and "no column 'nope'" in err
    code, _, err = run(capsys, "index", "drop", table, "a", "--kind", "bitmap")
    assert code == 2 and "no bitmap index" in err
    code, _, err = run(capsys, "vacuum", table, "--older-than", "soon")
    assert code == 2 and "older_than must be a duration like" in err
    code, _, err = run(capsys, "index", "create", table, "s", "--kind", "sums")
    assert code == 2 and "a sums index takes a number or decimal column, not string" in err
    code, out, _ = run(capsys, "index", "create", table, "m", "--kind", "sums")
    assert code == 0 and "indexed 1 of 1 data files" in out
    code, _, err = run(capsys, "index", "create", table, "p", "--kind", "cube", "--measure", "s")
    assert code == 2 and "a cube's measures are number or decimal columns, not string" in err
    code, out, _ = run(capsys, "index", "create", table, "p", "--kind", "cube", "--measure", "m", "--max-groups", "8")
    assert code == 0 and "indexed 1 of 1 data files" in out
    code, out, _ = run(capsys, "index", "list", table)
    assert code == 0 and "cube" in out and "measures: m" in out
    grouped = f"SELECT p, sum(m), max(m), count(*) FROM {table} WHERE a >= 0 GROUP BY p"  # every row matches
    code, out, _ = run(capsys, "explain", "--sql", grouped, "--analyze")
    assert code == 0 and "answered from cubes" in out and "measured: its scans produced 0 rows" in out, out
    code, out, _ = run(capsys, "explain", "--sql", grouped, "--analyze", "--json")
    (scans,) = json.loads(out)
    assert scans["rows_scanned"] == 0 and "from cubes" in scans["notes"][0], scans


def test_explain_and_query(spark, capsys) -> None:
    table = make_table(spark, "lake.cli.q", rows=5_000, files=3)
    code, out, _ = run(capsys, "explain", table, "a = 17")
    assert code == 0 and "planning stages" in out and "curve range" in out and "reads " in out
    code, out, _ = run(capsys, "explain", table, "a = 17", "--json")
    assert code == 0 and json.loads(out)["files_total"] == 3 and json.loads(out)["rows_scanned"] is None
    code, out, _ = run(capsys, "explain", table, "a = 17", "--analyze", "--json")
    measured = json.loads(out)
    assert code == 0 and measured["rows_scanned"] == 5_000 and measured["files_scanned"] == 3  # nothing skips
    code, out, _ = run(capsys, "explain", table, "a = 17", "--analyze")
    assert code == 0 and "measured: the scan produced 5,000 rows" in out
    code, _, err = run(capsys, "explain", "--sql", f"DROP TABLE {table}", "--analyze")
    assert code == 2 and "zskip runs queries only" in err and spark.catalog.tableExists(table)
    code, out, _ = run(capsys, "query", f"SELECT count(*) AS n FROM {table} WHERE a < 0")
    assert code == 0 and "n" in out and "0" in out
    code, _, err = run(capsys, "explain", table, "a = ")
    assert code == 2 and "cannot use the filter" in err
