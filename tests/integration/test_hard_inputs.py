"""Bad input: one clear line (exit 2 on the command line), a named zskip error from the API, and
nothing changed — rows, checksum, snapshots and every file under the table, index files included."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

import zskip
from zskip.errors import (
    InvalidOptionError,
    InvalidPredicateError,
    InvalidQueryError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedStatementError,
)
from zskip.fileindex.puffin import CorruptIndexError
from zskip.iceberg.table import load_table
from zskip.tablefiles.index_manifest import MANIFEST_PROPERTY

from .cli_runner import run
from .jobs import job_environment
from .tables import Fingerprint, fingerprint, make_table

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class TableState:
    data: Fingerprint
    snapshots: int
    files: tuple[str, ...]  # every file under the table's location: data, metadata, zskip's indexes
    properties: tuple[tuple[str, str], ...]


def table_location(spark, table: str) -> Path:
    return Path(load_table(spark, table).location().removeprefix("file:"))


def state(spark, table: str) -> TableState:
    rows = sorted(spark.sql(f"SHOW TBLPROPERTIES {table}").collect())
    return TableState(
        fingerprint(spark, table),
        spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0],
        tuple(sorted(str(p) for p in table_location(spark, table).rglob("*") if p.is_file())),
        tuple((r["key"], r["value"]) for r in rows),
    )


def one_line_error(code: int, err: str) -> str:
    """The CLI's message, after checking it is a single line and the exit code is 2."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith(("error:", "Error:")), err
    return lines[0]


@pytest.fixture(scope="module")
def victim(spark) -> str:
    """A two-file table with a bitmap index; every test leaves it as it found it."""
    table = make_table(spark, "lake.hard.victim", rows=2_000, files=2)
    zskip.create_index(spark, table, "a", kind="bitmap")
    return table


STATEMENTS = {
    "drop": "DROP TABLE {t}",
    "drop purge": "DROP TABLE {t} PURGE",
    "insert": "INSERT INTO {t} SELECT * FROM {t} LIMIT 3",
    "insert overwrite": "INSERT OVERWRITE {t} SELECT * FROM {t} WHERE a < 0",
    "delete": "DELETE FROM {t} WHERE a < 500",
    "update": "UPDATE {t} SET a = 0",
    "merge": "MERGE INTO {t} x USING {t} y ON x.id = y.id WHEN MATCHED THEN DELETE",
    "truncate": "TRUNCATE TABLE {t}",
    "alter": "ALTER TABLE {t} ADD COLUMN z INT",
    "property": "ALTER TABLE {t} SET TBLPROPERTIES ('zskip.fileindex.manifest' = 'gone')",
    "create as select": "CREATE TABLE lake.hard.copy AS SELECT * FROM {t}",
    "call": "CALL lake.system.rewrite_data_files('hard.victim')",
    "set": "SET spark.sql.shuffle.partitions = 1",
    "cache": "CACHE TABLE {t}",
    "uncache": "UNCACHE TABLE {t}",
    "with insert": "WITH x AS (SELECT * FROM {t} LIMIT 1) INSERT INTO {t} SELECT * FROM x",
    "from insert": "FROM {t} INSERT INTO {t} SELECT * LIMIT 1",
    "directory": "INSERT OVERWRITE DIRECTORY '/tmp/zskip-hard' USING parquet SELECT * FROM {t}",
    "two statements": "SELECT 1; DROP TABLE {t}",
    "two statements on two lines": "SELECT count(*) FROM {t};\n  DELETE FROM {t}",
    "explain": "EXPLAIN SELECT * FROM {t}",
    "show": "SHOW TABLES IN lake.hard",
    "use": "USE lake.hard",
    # run by Spark's analyser, not as a command: the parsed plan is no Command, the statement inside
    # runs while the text is analysed (Spark 4)
    "execute immediate": "EXECUTE IMMEDIATE 'DROP TABLE {t}'",
    "execute immediate of a query": "EXECUTE IMMEDIATE 'SELECT * FROM {t}'",
    "sql script": "BEGIN DROP TABLE {t}; END",
}


@pytest.mark.parametrize("statement", list(STATEMENTS.values()), ids=list(STATEMENTS))
def test_zskip_runs_queries_only(spark, capsys, victim: str, statement: str) -> None:
    text = statement.format(t=victim)
    before = state(spark, victim)
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    with pytest.raises(UnsupportedStatementError):
        zskip.sql(spark, text)
    with pytest.raises(UnsupportedStatementError):
        zskip.explain_sql(spark, text)
    message = one_line_error(*run(capsys, "query", text)[::2])
    assert "queries only" in message or "one query at a time" in message
    assert state(spark, victim) == before
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions
    assert not spark.catalog.tableExists("lake.hard.copy")
    assert not spark.catalog.isCached(victim)
    assert spark.catalog.currentCatalog() == "spark_catalog"


def test_advise_runs_no_statement_of_its_workload(spark, victim: str) -> None:
    """A workload query that is a statement (EXECUTE IMMEDIATE runs its text while Spark analyses it)
    is refused with one line naming it, before anything runs: the victim keeps its state."""
    before = state(spark, victim)
    text = f"EXECUTE IMMEDIATE 'DROP TABLE {victim}'"
    with pytest.raises(UnsupportedStatementError) as refused:
        zskip.advise(spark, victim, queries=[text])
    assert "queries only" in str(refused.value) and "\n" not in str(refused.value)
    assert state(spark, victim) == before


@pytest.mark.parametrize(
    "query",
    [
        "SELECT count(*) AS n FROM {t}",
        "WITH x AS (SELECT a FROM {t}) SELECT count(*) AS n FROM x",
        "TABLE {t}",
        "VALUES (1), (2)",
        "FROM {t} SELECT a WHERE a < 3",
        "(SELECT a FROM {t} WHERE a = 1) UNION ALL (SELECT a FROM {t} WHERE a = 2)",
    ],
)
def test_every_kind_of_query_still_runs(spark, victim: str, query: str) -> None:
    text = query.format(t=victim)
    assert sorted(zskip.sql(spark, text).collect()) == sorted(spark.sql(text).collect())


def test_unreadable_manifest_vacuum_deletes_nothing_and_writers_refuse(spark, capsys, victim: str) -> None:
    manifest = Path(load_table(spark, victim).property(MANIFEST_PROPERTY).removeprefix("file:"))
    saved = manifest.read_bytes()
    before = state(spark, victim)
    try:
        manifest.write_bytes(b"PFA1 not a manifest")
        result = zskip.vacuum(spark, victim, older_than=0)
        assert result.files_deleted == 0 and result.files_kept >= 2 and result.warnings
        code, out, err = run(capsys, "vacuum", victim, "--older-than", "0s")
        assert code == 0 and "deleted 0 files" in out and "kept every index file" in err
        with pytest.raises(CorruptIndexError, match="cannot be read"):
            zskip.refresh_indexes(spark, victim)
        with pytest.raises(CorruptIndexError):
            zskip.create_index(spark, victim, "id", kind="bloom")
        with pytest.raises(CorruptIndexError):
            zskip.drop_index(spark, victim, "a", "bitmap")
        message = one_line_error(*run(capsys, "index", "create", victim, "id")[::2])
        assert "UNSET TBLPROPERTIES" in message
        one_line_error(*run(capsys, "index", "list", victim)[::2])
        # reads never depended on the manifest being readable
        assert zskip.read(spark, victim, "a = 5").count() == spark.table(victim).where("a = 5").count()
        assert state(spark, victim) == before
    finally:
        manifest.write_bytes(saved)
    # the manifest is back, and so is every index file it names
    (info,) = zskip.list_indexes(spark, victim)
    assert (info.files_indexed, info.files_missing, info.files_total) == (2, 0, 2)


def test_missing_index_files_are_listed_and_rebuilt(spark, capsys) -> None:
    table = make_table(spark, "lake.hard.missing", rows=2_000, files=2)
    zskip.create_index(spark, table, "a", kind="bitmap")
    zskip.create_index(spark, table, "id", kind="bloom")
    index_files = sorted((table_location(spark, table) / "zskip" / "indexes").glob("index-*.puffin"))
    assert len(index_files) == 4  # one per data file per build
    index_files[0].unlink()
    listed = {(i.column, i.kind): i for i in zskip.list_indexes(spark, table)}
    assert sum(i.files_missing for i in listed.values()) == 1
    assert sum(i.files_indexed for i in listed.values()) == 3
    code, out, _ = run(capsys, "index", "list", table)
    assert code == 0 and "missing" in out and "zskip index refresh" in out
    result = zskip.refresh_indexes(spark, table)
    assert result.files_indexed == 1 and result.entries_dropped == 1 and result.files_already_indexed == 1
    assert all((i.files_indexed, i.files_missing) == (2, 0) for i in zskip.list_indexes(spark, table))
    for where in ("a = 7", "id = 1234", "a = 7 OR id = 3"):
        assert sorted(zskip.read(spark, table, where).collect()) == sorted(spark.table(table).where(where).collect())


@pytest.mark.parametrize("older_than", ["nan", "inf", "-inf", "nand", "infs", "1e400s", "-1h", "NaN"])
def test_vacuum_age_guard_cannot_be_bypassed(spark, capsys, victim: str, older_than: str) -> None:
    before = state(spark, victim)
    message = one_line_error(*run(capsys, "vacuum", victim, "--older-than", older_than)[::2])
    assert "older_than" in message
    assert state(spark, victim) == before


@pytest.mark.parametrize("older_than", [math.nan, math.inf, -math.inf, "nan", True, None, [1]])
def test_vacuum_age_guard_from_the_api(spark, victim: str, older_than: object) -> None:
    before = state(spark, victim)
    with pytest.raises(InvalidOptionError, match="older_than"):
        zskip.vacuum(spark, victim, older_than=older_than)  # type: ignore[arg-type]
    assert state(spark, victim) == before


@pytest.mark.parametrize(
    ("argv", "error", "says"),
    [
        (["optimize", "{t}", "--by", "a,A"], InvalidOptionError, "twice"),
        (["optimize", "{t}", "--by", "a,b,a"], InvalidOptionError, "twice"),
        (["optimize", "{t}", "--by", "a", "--where", "a = = 3"], InvalidPredicateError, "cannot use the filter"),
        (["optimize", "{t}", "--by", "a", "--where", "zz = 1"], UnknownColumnError, "lacks"),
        (["optimize", "lake..t", "--by", "a"], UnknownTableError, "not a table name"),
        (["optimize", "lake.hard.nope", "--by", "a"], UnknownTableError, "no Iceberg table"),
        (["explain", "lake..t", "a = 1"], UnknownTableError, "not a table name"),
        (["explain", "{t}", "zz = 1"], UnknownColumnError, "lacks"),
        (["explain", "{t}", "a = = 1"], InvalidPredicateError, "cannot use the filter"),
        (["explain", "{t}", " "], InvalidPredicateError, "empty"),
        (["query", "SELEC a FROM {t}"], InvalidQueryError, "cannot parse"),
        (["query", "SELECT zz FROM {t}"], UnknownColumnError, "column"),
        (["query", "SELECT a FROM lake.hard.nope"], UnknownTableError, "does not exist"),
        (["query", "SELECT a FROM {t} WHERE a = 'x' + DATE'2020-01-01'"], InvalidQueryError, "Spark cannot run"),
        (["index", "create", "{t}", "s", "--kind", "bloom", "--fpp", "2"], None, "fpp"),
        (["index", "create", "{t}", "zz"], UnknownColumnError, "no column"),
        (["--master", "bogus://x", "query", "SELECT 1"], InvalidOptionError, "not a Spark master"),
        (["query", "SELECT 1", "--limit", "-1"], None, "limit"),
        (["demo", "--scale-factor", "-1"], None, "scale-factor"),
        (["demo", "--scale-factor", "0"], None, "scale-factor"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_bad_input_gets_one_line(spark, capsys, victim: str, argv: list[str], error: type | None, says: str) -> None:
    argv = [a.format(t=victim) for a in argv]
    before = state(spark, victim)
    message = one_line_error(*run(capsys, *argv)[::2])
    assert says in message
    if error is not None and argv[0] in ("optimize", "explain", "query"):
        with pytest.raises(error, match=None):
            if argv[0] == "optimize":
                where = argv[argv.index("--where") + 1] if "--where" in argv else None
                zskip.optimize(spark, argv[1], by=argv[3].split(","), where=where)
            elif argv[0] == "explain":
                zskip.explain(spark, argv[1], argv[2])
            else:
                zskip.sql(spark, argv[1])
    assert state(spark, victim) == before


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda s, t: zskip.create_index(s, t, "s", kind="bloom", fpp="0.1"), "fpp"),
        (lambda s, t: zskip.create_index(s, t, "s", kind="bloom", fpp=True), "fpp"),
        (lambda s, t: zskip.create_index(s, t, "s", kind="bloom", fpp=1.5), "fpp"),
        (lambda s, t: zskip.create_index(s, t, "s", kind="bitmap", fpp=0.1), "takes no options"),
        (lambda s, t: zskip.create_index(s, t, "s", kind=3), "kind"),
        (lambda s, t: zskip.create_index(s, t, ["s"], kind="bloom"), "column"),
        (lambda s, t: zskip.optimize(s, t, by=["a", 1]), "by must be"),
        (lambda s, t: zskip.optimize(s, t, by="a", curve=None), "curve"),
        (lambda s, t: zskip.optimize(s, t, by="a", max_commits="3"), "max_commits"),
        (lambda s, t: zskip.optimize(s, t, by="a", partial_progress="no"), "partial_progress"),
        (lambda s, t: zskip.optimize(s, t, by="a", target_file_size="big"), "target_file_size"),
        (lambda s, t: zskip.optimize(s, t, by="a", where=""), "where"),
        (lambda s, t: zskip.read(s, t, 5), "where must be"),
        (lambda s, t: zskip.explain(s, t, None), "where must be"),
        (lambda s, t: zskip.sql(s, 42), "SQL text"),
        (lambda s, t: zskip.read(s, "", "a = 1"), "table name"),
    ],
)
def test_bad_options_from_the_api(spark, victim: str, call, says: str) -> None:
    before = state(spark, victim)
    with pytest.raises(zskip.ZskipError, match=says):
        call(spark, victim)
    assert state(spark, victim) == before


def test_an_in_subquery_filter_plans_the_tables_own_scan(spark, capsys, victim: str) -> None:
    other = make_table(spark, "lake.hard.keys", rows=200, files=1, seed=9)
    for where in (
        f"a IN (SELECT a FROM {other} WHERE id < 20)",
        f"a IN (SELECT a FROM {victim} WHERE id < 20) AND a < 500",  # the same table inside
        f"a > (SELECT max(a) FROM {other}) - 30",
    ):
        plan = zskip.explain(spark, victim, where)
        assert plan.files_total == 2
        assert ("IN (SELECT" not in where) or any("subquery" in note for note in plan.notes)
        expected = sorted(spark.table(victim).where(where).collect())
        assert sorted(zskip.read(spark, victim, where).collect()) == expected
    code, out, _ = run(capsys, "explain", victim, f"a IN (SELECT a FROM {other}) AND a < 300")
    assert code == 0 and "reads " in out and "note: the filter's subquery" in out


def test_explain_accounts_for_its_time_and_counts_row_groups_of_a_false_filter(spark, victim: str) -> None:
    plan = zskip.explain(spark, victim, "a = 17 AND id > 100")
    stages = sum(s.seconds for s in plan.stages)
    assert 0 < plan.analysis_seconds < plan.planning_seconds
    assert plan.analysis_seconds + stages <= plan.planning_seconds
    # every step is accounted for: Spark's analysis, listing the snapshot's metadata, each stage
    assert plan.stages[0].name == "table metadata (cached per snapshot)"
    assert plan.planning_seconds - plan.analysis_seconds - stages < 0.2 * plan.planning_seconds + 0.02
    never = zskip.explain(spark, victim, "a = 5.5")  # an INT column: Spark proves it false
    assert never.files_read == 0 and never.row_groups_read == 0
    assert never.files_total == 2 and never.row_groups_total >= 2


def test_index_create_counts_data_files_not_entries(spark, capsys) -> None:
    table = make_table(spark, "lake.hard.counts", rows=2_000, files=2)
    code, out, _ = run(capsys, "index", "create", table, "a", "--kind", "bitmap")
    assert code == 0 and "indexed 2 of 2 data files (0 already indexed" in out
    code, out, _ = run(capsys, "index", "create", table, "id")
    assert code == 0 and "indexed 2 of 2 data files (0 already indexed" in out
    code, out, _ = run(capsys, "index", "refresh", table)
    assert code == 0 and "indexed 0 of 2 data files (2 already indexed" in out


def test_string_axes_are_labelled_with_text() -> None:
    from zskip.layout.inspection import key_text, plot_values

    values = plot_values(pa.array(["AIR", "MAIL", "TRUCK", "zebra"]))
    assert [key_text(v) for v in values] == ["AIR", "MAIL", "TRUCK", "zebra"]


SESSION_CHECK = textwrap.dedent(
    """
    import os
    import sys
    import zskip
    from zskip.errors import UnsupportedSessionError

    def refused(call):
        try:
            call()
        except UnsupportedSessionError as exc:
            return str(exc)
        raise SystemExit("zskip did not refuse the session")

    if sys.argv[1] == "connect":
        from pyspark.sql.connect.session import SparkSession
        spark = SparkSession(connection="sc://127.0.0.1:1")  # a Spark Connect client; no server needed to refuse it
    else:
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    print(refused(lambda: zskip.read(spark, "lake.db.t", "a = 1")))
    print(refused(lambda: zskip.sql(spark, "SELECT 1")))
    print(refused(lambda: zskip.optimize(spark, "lake.db.t", by=["a"])))
    print(refused(lambda: zskip.create_index(spark, "lake.db.t", "a")), flush=True)
    # PySpark 4's Connect client tries to reach its (absent) server at exit, retrying for minutes
    os._exit(0)
    """
)


@pytest.mark.parametrize("kind", ["connect", "no-iceberg"])
def test_sessions_zskip_cannot_use_get_a_clear_error(kind: str, tmp_path: Path) -> None:
    script = tmp_path / "check.py"
    script.write_text(SESSION_CHECK)
    done = subprocess.run(
        [sys.executable, str(script), kind],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=job_environment(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 4
    if kind == "connect":
        assert all("Spark Connect" in line for line in lines)
    else:
        assert all("no Apache Iceberg runtime" in line for line in lines)


def test_demo_output_folder_is_ignored_by_git() -> None:
    root = Path(__file__).resolve().parents[2]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "check-ignore", "demo-output/file-boxes.png"], cwd=root, capture_output=True)
    assert done.returncode == 0


def test_branches_tags_and_older_snapshots_are_read_as_they_are(spark) -> None:
    table = make_table(spark, "lake.hard.states", rows=2_000, files=2)
    first = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").first()[0]
    spark.sql(f"ALTER TABLE {table} CREATE BRANCH dev")
    spark.sql(f"ALTER TABLE {table} CREATE TAG v1")
    spark.sql(f"DELETE FROM {table} WHERE a < 500")  # the current state differs from all three
    zskip.create_index(spark, table, "a", kind="bitmap")
    where = "a < 300"
    for name in (f"{table}.branch_dev", f"{table}.tag_v1", f"{table}.snapshot_id_{first}"):
        expected = sorted(spark.table(name).where(where).collect())
        assert len(expected) > 0
        assert sorted(zskip.read(spark, name, where).collect()) == expected
        query = f"SELECT count(*) AS n FROM {name} WHERE {where}"
        assert zskip.sql(spark, query).first()["n"] == len(expected)
        with pytest.raises(InvalidOptionError, match="branch, tag or snapshot"):
            zskip.explain(spark, name, where)
        assert zskip.explain_sql(spark, query) == []  # never raises; one WARNING line says why
    query = f"SELECT count(*) AS n FROM {table} VERSION AS OF {first} WHERE {where}"
    assert zskip.sql(spark, query).first()["n"] == spark.sql(query).first()["n"] > 0
    assert zskip.read(spark, table, where).count() == 0
