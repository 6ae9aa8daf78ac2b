"""zskip from configuration alone: ``spark.sql.extensions`` names zskip's extension, and applications that
never import zskip (a PySpark job through spark-submit, spark-sql, the Spark Connect and Thrift JDBC
servers) have their queries of zskip's tables pruned by the planner zskip's JVM half hosts, with the
rows zskip off returns.  Scans are counted by each application itself (its SQL metrics)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
import pytest

import zskip
from tests.integration.jobs import JIT_OPTIONS, run_job
from tests.integration.planner_processes import listening_ports
from tests.integration.spark_apps import (
    CONNECT_SERVER,
    THRIFT_SERVER,
    Executions,
    conf_options,
    free_port,
    planner_pids,
    run,
    server,
    settings,
)
from tests.integration.stars import make_star
from tests.integration.tables import fingerprint, make_table
from zskip.iceberg.jvm_dependencies import spark_major

pytestmark = pytest.mark.integration
# The spark-sql and Thrift server tests run on Spark 3.5 (the smoke suite), where zskip's extension parses
# CALL itself; on Spark 4.1 the same extension, hosted planner and procedures are driven through Spark
# Connect below (the rule, the planner's start and the procedures are one code for both lines). CI's time
# is budgeted: on 4.1 the two took 40-75 s each.
SPARK_35_ONLY = pytest.mark.skipif(
    spark_major(pyspark.__version__) >= 4, reason="runs in the Spark 3.5 suite; Spark Connect covers 4.1"
)

NS = "lake.ext"
TABLE = f"{NS}.t"
STAR = f"{NS}.star"
FACT = f"{STAR}.fact"

STAR_JOIN = (
    f"SELECT d.nation, count(*), sum(f.b_key) FROM {FACT} f JOIN {STAR}.dim_a d ON f.a_key = d.a_id "
    "WHERE d.region = 'r2' GROUP BY d.nation"
)


@pytest.fixture(scope="module")
def queries(spark: Any, warehouse: Path) -> dict[str, dict[str, str]]:
    """A table clustered by zskip along (a, b) with bitmaps on b, a star schema laid out through its
    dimensions, and the queries: a filter zskip's bitmaps narrow (a value of b absent from the table,
    inside some files' ranges of b, and one present), one that skips nothing, a star join."""
    make_table(spark, TABLE, rows=40_000, files=6)
    zskip.optimize(spark, TABLE, by=["a", "b"], target_file_size=60_000, row_group_size=4_000)
    zskip.create_index(spark, TABLE, "b", kind="bitmap")
    present = {row[0] for row in spark.sql(f"SELECT DISTINCT b FROM {TABLE} WHERE b >= 20000").collect()}
    absent = next(v for v in range(20_000, 100_000) if v not in present)
    make_star(spark, STAR)
    by = [
        zskip.Dimension("a_key", f"{STAR}.dim_a", key="a_id", by=["region", "nation"]),
        zskip.Dimension("b_key", f"{STAR}.dim_b", key="b_id", by=["colour"]),
    ]
    zskip.optimize(spark, FACT, by=by, target_file_size=40_000, row_group_size=8_000, mode="full")
    return {
        "filter": {
            "sql": f"SELECT count(*), sum(id) FROM {TABLE} WHERE b IN ({absent}, {max(present)})",
            "table": TABLE,
        },
        "skips nothing": {"sql": f"SELECT count(*), sum(id) FROM {TABLE} WHERE p = 2", "table": TABLE},
        # answered from row-group statistics in the row groups inside the range
        "aggregate": {
            "sql": f"SELECT count(*), min(b), max(d) FROM {TABLE} WHERE a BETWEEN 100 AND 900",
            "table": TABLE,
        },
        "star join": {"sql": STAR_JOIN, "table": FACT},
    }


def _pruned_with_sparks_rows(report: dict[str, Any], queries: dict[str, Any]) -> None:
    """Every query returned zskip off's rows; those zskip can prune scanned fewer, and say so in EXPLAIN."""
    for name in queries:
        off, on = report[name]["false"], report[name]["true"]
        assert on["rows"] == off["rows"], name
        (line,) = report[name]["explain"]
        if name == "skips nothing":
            assert on["scanned"] == off["scanned"], (name, on, off)
            assert "zskip: reads what Iceberg planned" in line, line
        elif name == "aggregate":
            assert 0 <= on["scanned"] * 2 < off["scanned"], (name, on["scanned"], off["scanned"])
            assert "row groups" in line and "answered from their statistics" in line, line
        else:
            assert 0 < on["scanned"] < off["scanned"], (name, on["scanned"], off["scanned"])
            assert "zskip: reads" in line and "ruled out by" in line, line


@pytest.mark.cluster
def test_a_pyspark_job_that_never_imports_zskip_is_pruned_on_a_cluster(
    queries: dict[str, Any], warehouse: Path, tmp_path: Path
) -> None:
    listed = tmp_path / "queries.json"
    listed.write_text(json.dumps(queries))
    conf = settings(warehouse, tmp_path, **{"spark.executor.extraJavaOptions": JIT_OPTIONS})
    job = Path(__file__).with_name("extension_job.py")
    done = run(
        "spark-submit",
        ["--master", "local-cluster[2,1,1024]", *conf_options(conf), str(job), str(listed)],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["imported zskip"] is False
    assert report["executors"] == 2
    assert report["planner"].startswith("ready "), report["planner"]
    _pruned_with_sparks_rows(report, queries)
    assert "zskip's planner is ready" in done.stderr
    assert planner_pids(report["application"]) == []  # the planner process ended with the job


@pytest.fixture(scope="module")
def connect(queries: dict[str, Any], warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connect]:
    """A Spark Connect server started as start-connect-server.sh does, with zskip's extension."""
    directory = tmp_path_factory.mktemp("connect")
    port = free_port()
    conf = settings(warehouse, directory, **{"spark.connect.grpc.binding.port": str(port)})
    conf["spark.zskip.planner.timeout"] = "5s"
    log = directory / "server.log"
    # a module the server's working directory holds, which the planner process must not import
    (directory / "argparse.py").write_text(
        f"open({str(directory / IMPORTED_FROM_THE_SERVERS_DIRECTORY)!r}, 'w').close()\nraise SystemExit(3)\n"
    )
    with server(CONNECT_SERVER, conf, port, log, directory):
        yield Connect(port, int(conf["spark.ui.port"]), log, directory)


IMPORTED_FROM_THE_SERVERS_DIRECTORY = "argparse-was-imported"


@dataclass(frozen=True)
class Connect:
    port: int
    ui_port: int
    log: Path
    directory: Path

    def client(self, queries: dict[str, Any]) -> dict[str, Any]:
        """Run the Connect client job with ``queries``; its report."""
        listed = self.directory / "queries.json"
        listed.write_text(json.dumps(queries))
        return run_job("connect_client_job.py", str(self.port), str(self.ui_port), str(listed))  # type: ignore[no-any-return]

    def sessions(self, steps: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """Run ``steps`` (session ``a`` or ``b``, statement) in two sessions of one Connect client."""
        listed = self.directory / "steps.json"
        listed.write_text(json.dumps(steps))
        report: list[dict[str, Any]] = run_job("sessions_client_job.py", str(self.port), str(listed))
        assert report.pop() == {"imported zskip": False}
        return report

    def sql(self, statements: list[str]) -> list[dict[str, Any]]:
        """Run ``statements`` through a Connect client; per statement its columns and rows, or its error."""
        listed = self.directory / "statements.json"
        listed.write_text(json.dumps(statements))
        report: list[dict[str, Any]] = run_job("sql_client_job.py", str(self.port), str(listed))
        assert report.pop() == {"imported zskip": False}
        return report


def test_spark_connect_clients_are_pruned_and_see_zskip_in_explain(connect: Connect, queries: dict[str, Any]) -> None:
    report = connect.client(queries)
    assert report["imported zskip"] is False
    _pruned_with_sparks_rows(report, queries)


PROCEDURE_TABLE = f"{NS}.proc"


def _unauthenticated_call(port: int) -> bytes:
    """What a py4j call of a registered function (``p0``) without authenticating first gets from ``port``:
    ``b""`` when the connection is closed without an answer, or none comes in 10 s (with bytes enough
    after the call for a server that reads a token of its own length first, as PySpark's accumulator
    server in the planner process does; that one serves one connection at a time, the JVM's)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(b"c\np0\napply\nsstatus\ne\n" + b"x" * 512)
        try:
            return connection.recv(4096)
        except (ConnectionResetError, TimeoutError):
            return b""


def test_every_call_runs_in_its_callers_session(spark: Any, connect: Connect, tmp_path: Path) -> None:
    """Two Connect sessions with different current namespaces, one with a catalog of its own: a bare
    table name in a CALL is each session's own table, a session reaches no catalog it does not have,
    and EXECUTE IMMEDIATE in a workload runs nothing.  The planner process listens on no socket that
    takes a call without the application's secret, and imported nothing from the server's directory."""
    for namespace, rows, files in (("ns_a", 1_000, 2), ("ns_b", 3_000, 3)):
        make_table(spark, f"lake.{namespace}.t", rows=rows, files=files)
    victim = make_table(spark, "lake.ns_a.victim", rows=500, files=1)
    secret = tmp_path / "secret"
    statuses = [
        ("a", "CALL zskip.system.status(table => 't')"),
        ("b", "CALL zskip.system.status(table => 't')"),
        ("a", "CALL zskip.system.status(table => 'secretcat.s.t')"),
        ("b", "CALL zskip.system.status(table => 'secretcat.s.t')"),
        ("b", "SELECT count(*) FROM secretcat.s.t"),
        ("a", f"CALL zskip.system.advise(table => 't', queries => array(\"EXECUTE IMMEDIATE 'DROP TABLE {victim}'\"))"),
        (
            "a",
            "CALL zskip.system.optimize(table => 't', by => array('a'), "
            f"where => \"a IN (EXECUTE IMMEDIATE 'DROP TABLE {victim}')\")",
        ),
    ]
    answers = connect.sessions(
        [
            ("a", "USE lake.ns_a"),
            ("b", "USE lake.ns_b"),
            ("a", "SET spark.sql.catalog.secretcat=org.apache.iceberg.spark.SparkCatalog"),
            ("a", "SET spark.sql.catalog.secretcat.type=hadoop"),
            ("a", f"SET spark.sql.catalog.secretcat.warehouse={secret.as_uri()}"),
            ("a", "CREATE TABLE secretcat.s.t (id BIGINT) USING iceberg"),
            ("a", "INSERT INTO secretcat.s.t SELECT id FROM range(123)"),
            *statuses,
        ]
    )[7:]
    own_a, own_b, secret_a, secret_b, select_b, advised, optimized = answers
    assert _named(own_a)[0]["table"] == "lake.ns_a.t" and _named(own_a)[0]["rows"] == 1_000, own_a
    assert _named(own_b)[0]["table"] == "lake.ns_b.t" and _named(own_b)[0]["rows"] == 3_000, own_b
    assert _named(secret_a)[0]["rows"] == 123, secret_a  # session a's own catalog
    assert "error" in select_b, select_b  # session b cannot name a's catalog in a query ...
    assert "error" in secret_b and "secretcat" in secret_b["message"], secret_b  # ... nor in a CALL
    assert "error" in advised and "queries only" in advised["message"], advised
    assert "error" in optimized and "files" not in optimized["message"], optimized  # refused, not lost
    assert spark.catalog.tableExists(victim)
    assert spark.sql(f"SELECT count(*) FROM {victim}").first()[0] == 500

    # the planner process: every socket it listens on refuses a call without the secret
    application = connect.client({})["application"]
    (pid,) = planner_pids(application)
    ports = listening_ports(pid)
    assert ports, "the planner process listens on no socket"
    for port in ports:
        assert _unauthenticated_call(port) == b"", port  # closed without an answer
    assert not (connect.directory / IMPORTED_FROM_THE_SERVERS_DIRECTORY).exists()


def _named(answer: dict[str, Any]) -> list[dict[str, Any]]:
    assert "error" not in answer, answer
    return [dict(zip(answer["columns"], row, strict=True)) for row in answer["rows"]]


def test_procedures_through_spark_connect_do_what_the_api_does(spark: Any, connect: Connect) -> None:
    """CALL zskip.system.* from a Connect client that never imports zskip: each verb's figures equal
    the Python API's on an identical table, a query afterwards is pruned, bad input gets the API's
    one-line message and changes nothing."""
    copy = f"{PROCEDURE_TABLE}_api"
    for name in (PROCEDURE_TABLE, copy):
        make_table(spark, name, rows=20_000, files=4)
    spark.sql(f"DROP TABLE IF EXISTS {NS}.nested PURGE")
    spark.sql(f"CREATE TABLE {NS}.nested (id INT, info STRUCT<k: INT, v: STRING>) USING iceberg")
    spark.sql(f"INSERT INTO {NS}.nested VALUES (1, named_struct('k', 1, 'v', 'a'))")
    sizes = "target_file_size => '64KB', row_group_size => '16KB'"
    where = "a < 100 AND s = 'k7'"
    good = [
        f"CALL zskip.system.optimize(table => '{PROCEDURE_TABLE}', by => array('a', 'b'), {sizes})",
        f"CALL zskip.system.create_index(table => '{PROCEDURE_TABLE}', column => 's', kind => 'bitmap')",
        f"CALL zskip.system.list_indexes(table => '{PROCEDURE_TABLE}')",
        f"CALL zskip.system.create_index(table => '{PROCEDURE_TABLE}', column => 'p', kind => 'cube', "
        "measures => array('b', 'm'), max_groups => 16)",
        f"INSERT INTO {PROCEDURE_TABLE} SELECT * FROM {PROCEDURE_TABLE} WHERE a < 20",
        f"CALL zskip.system.refresh_indexes('{PROCEDURE_TABLE}')",
        f"CALL zskip.system.maintain(table => '{PROCEDURE_TABLE}')",
        f"CALL zskip.system.status(table => '{PROCEDURE_TABLE}')",
        f"CALL zskip.system.vacuum(table => '{PROCEDURE_TABLE}', older_than => '0s')",
        f"CALL zskip.system.advise(table => '{PROCEDURE_TABLE}', queries => array("
        f'"SELECT * FROM {PROCEDURE_TABLE} WHERE {where}"), top => 3)',
        # a value of s no row holds, inside every file's min/max of s (k0..k9): only the bitmap rules files out
        f"EXPLAIN SELECT count(*) FROM {PROCEDURE_TABLE} WHERE s = 'k5x'",
        f"EXPLAIN SELECT p, sum(b), max(m), count(*) FROM {PROCEDURE_TABLE} WHERE a < 900 GROUP BY p",
        f"CALL zskip.system.optimize(table => '{FACT}', mode => 'full', "
        f"dimensions => array('a_key={STAR}.dim_a.a_id:region,nation'), {sizes})",
    ]
    bad = [
        f"CALL zskip.system.optimize(table => '{NS}.nosuch', by => array('a'))",
        f"CALL zskip.system.optimize(table => '{PROCEDURE_TABLE}', by => array('nosuch'))",
        f"CALL zskip.system.optimize(table => '{PROCEDURE_TABLE}', by => array('a'), curve => 'spiral')",
        f"CALL zskip.system.create_index(table => '{NS}.nested', column => 'info.k')",
        f"CALL zskip.system.create_index(table => '{PROCEDURE_TABLE}', column => 'p', kind => 'cube', "
        "measures => array('s'))",
        f"CALL zskip.system.optimize(table => '{NS}.nested', by => array('info'))",
    ]
    answers = connect.sql(good)
    optimized, created, listed, cubed, _, refreshed, maintained, status, vacuumed, advised, explained, grouped, star = (
        answers
    )

    api = zskip.optimize(spark, copy, by=["a", "b"], target_file_size="64KB", row_group_size="16KB")
    (row,) = _named(optimized)
    for figure in ("files_before", "files_after", "files_rewritten", "files_written", "rows_rewritten", "commits"):
        assert row[figure] == getattr(api, figure), (figure, row, api)
    api_index = zskip.create_index(spark, copy, "s", kind="bitmap")
    (row,) = _named(created)
    assert row["files_indexed"] == api_index.files_indexed > 0 and row["indexes"] == ["s:bitmap"], row
    assert [(r["column"], r["kind"], r["files_indexed"]) for r in _named(listed)] == [
        (i.column, i.kind, i.files_indexed) for i in zskip.list_indexes(spark, copy)
    ]
    assert _named(cubed)[0]["indexes"] == ["s:bitmap", "p:cube"]
    assert _named(refreshed)[0]["files_indexed"] >= 1  # the appended file
    assert _named(maintained)[0]["reason"]
    (row,) = _named(status)
    assert row["up_to_date"] is True and row["clustered_share"] == 1.0, row
    assert row["indexes"] == ["s:bitmap", "p:cube"], row
    assert _named(vacuumed)[0]["files_deleted"] >= 1  # the files optimize and maintain replaced
    ranked = _named(advised)
    assert 1 <= len(ranked) <= 3 and ranked[0]["rank"] == 1 and ranked[0]["applied"] is False, ranked
    plan = "\n".join(str(r[0]) for r in explained["rows"])
    assert "zskip: reads" in plan and "ruled out by" in plan, plan  # by the bitmap the CALL built
    plan = "\n".join(str(r[0]) for r in grouped["rows"])
    assert "answered from cubes" in plan, plan  # the cube the CALL built
    (row,) = _named(star)
    assert row["commits"] >= 1 and row["files_rewritten"] > 0, row

    spark.sql(f"REFRESH TABLE {PROCEDURE_TABLE}")  # the server committed: not this session's cached table
    snapshots = spark.sql(f"SELECT count(*) FROM {PROCEDURE_TABLE}.snapshots").first()[0]
    errors = connect.sql(bad)
    through_api = [
        lambda: zskip.optimize(spark, f"{NS}.nosuch", by=["a"]),
        lambda: zskip.optimize(spark, PROCEDURE_TABLE, by=["nosuch"]),
        lambda: zskip.optimize(spark, PROCEDURE_TABLE, by=["a"], curve="spiral"),
        lambda: zskip.create_index(spark, f"{NS}.nested", "info.k"),
        lambda: zskip.create_index(spark, PROCEDURE_TABLE, "p", kind="cube", measures=["s"]),
        lambda: zskip.optimize(spark, f"{NS}.nested", by=["info"]),
    ]
    for statement, answer, api_call in zip(bad, errors, through_api, strict=True):
        with pytest.raises(zskip.ZskipError) as refused:
            api_call()
        wanted = str(refused.value).split("\n")[0]
        assert "error" in answer and wanted[:100] in answer["message"], (statement, wanted, answer)
    spark.sql(f"REFRESH TABLE {PROCEDURE_TABLE}")
    assert spark.sql(f"SELECT count(*) FROM {PROCEDURE_TABLE}.snapshots").first()[0] == snapshots
    assert spark.sql(f"SELECT count(*) FROM {NS}.nested.snapshots").first()[0] == 1


def test_a_cancelled_or_timed_out_optimize_call_leaves_the_table_as_it_was(spark: Any, connect: Connect) -> None:
    """A Connect client interrupts its CALL optimize while its Spark jobs run, then another runs one past
    the bound its session set (spark.zskip.procedures.timeout): each call ends with an error, the table
    keeps its rows, checksum and snapshots, no file either wrote is left in the table's folder, and the
    next procedure runs."""
    table = f"{NS}.cancelled"
    make_table(spark, table, rows=200_000, files=8)
    before = fingerprint(spark, table)
    snapshots = spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0]
    location = Path(
        spark.sql(f"DESCRIBE TABLE EXTENDED {table}").where("col_name = 'Location'").first()[1].removeprefix("file:")
    )
    files = {path for path in location.rglob("*") if path.is_file()}
    call = (
        f"CALL zskip.system.optimize(table => '{table}', by => array('a', 'b', 'd'), mode => 'full', "
        "target_file_size => '256KB', row_group_size => '16KB', partial_progress => false)"
    )
    ended = run_job("cancel_client_job.py", str(connect.port), str(connect.ui_port), f"zskip optimize {table}", call)
    assert ended["job seen"] and ended["interrupted"], ended  # cancelled while its jobs ran
    assert "error" in ended and "rows" not in ended, ended
    timed_out, after = connect.sql(
        ["SET spark.zskip.procedures.timeout=3s", call, "SET spark.zskip.procedures.timeout=1h"]
    )[1:]
    assert timed_out.get("error"), timed_out
    assert "ran longer than 3000 ms (spark.zskip.procedures.timeout)" in timed_out["message"], timed_out
    assert "error" not in after, after  # the bound is a session's own setting: SET takes it
    spark.sql(f"REFRESH TABLE {table}")
    assert fingerprint(spark, table) == before
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0] == snapshots
    (status,) = connect.sql([f"CALL zskip.system.status('{table}')"])  # the process lives on
    assert _named(status)[0]["files_clustered"] == 0, status
    # data and zskip files: a metadata version written meanwhile (seen in the full suite only) is not a leftover
    left = sorted(
        str(path.relative_to(location))
        for path in location.rglob("*")
        if path.is_file() and path not in files and "metadata" not in path.relative_to(location).parts
    )
    assert left == [], left  # what the two calls wrote was removed with them


def test_a_plan_overrunning_its_timeout_leaves_a_running_procedure_alone(spark: Any, connect: Connect) -> None:
    """While another session's CALL optimize runs, a query's plan overruns the planner's timeout (the
    planner stalled meanwhile): the query gets Spark's plan and Spark's rows, the procedure completes
    and commits once the planner goes on, and the planner process is the same one throughout.  (The
    procedure's UDF tasks that end while the planner is stopped once stopped every job of the server:
    PySpark's accumulator had the DAGScheduler wait for the stopped process.)"""
    table = f"{NS}.overrun"
    make_table(spark, table, rows=100_000, files=4)
    snapshots = spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0]
    call = (
        f"CALL zskip.system.optimize(table => '{table}', by => array('a', 'b'), mode => 'full', "
        "target_file_size => '256KB', row_group_size => '16KB')"
    )
    query = STAR_JOIN.replace("GROUP BY", "AND d.nation <> 'overrun' GROUP BY")  # no remembered answer
    report = run_job(
        "overrun_client_job.py", str(connect.port), str(connect.ui_port), f"zskip optimize {table}", call, query
    )
    assert report["procedure running"], report  # the plan overran while the procedure ran
    assert report["query seconds"] >= 5, report  # it waited for the planner as long as the timeout
    assert report["rows"] == report["rows zskip off"], report
    assert "procedure error" not in report and report["procedure"][0][10] >= 1, report  # commits
    assert report["pid after"] == [report["pid before"]], report  # not restarted
    spark.sql(f"REFRESH TABLE {table}")
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0] > snapshots
    overran = [line for line in connect.log.read_text().splitlines() if "so it is restarted only if" in line]
    assert len(overran) == 1, overran


def test_the_planner_killed_or_stalled_never_fails_a_query_and_comes_back(connect: Connect) -> None:
    report = run_job("connect_faults_job.py", str(connect.port), str(connect.ui_port), "5", FACT, STAR_JOIN)
    plain = report["plain"]
    for step in (
        "baseline",
        "killed between queries",
        "back after kill",
        "stalled",
        "back after stall",
        "killed during a query",
        "back after kill during",
    ):
        assert report[step]["rows"] == plain["rows"], step
    for step in ("baseline", "back after kill", "back after stall", "back after kill during"):
        assert report[step]["scanned"] < plain["scanned"], (step, report[step])
    assert report["back after kill"]["pid"] != report["baseline"]["pid"]
    assert 5 <= report["stalled"]["seconds"] < 30  # waited for the planner as long as the timeout, not more
    assert report["killed during a query"]["seconds"] < 5  # the broken call ended the wait at once
    assert report["stalled pid gone"] is True  # the stalled process was killed, not left behind
    warnings = [line for line in connect.log.read_text().splitlines() if "queries run with Spark's own plans" in line]
    assert len(warnings) == 3, warnings  # one per incident, not one per query


def _statements(queries: dict[str, Any]) -> str:
    """A SQL script: each query with zskip off, then on (a row tagged off / on), then its EXPLAIN."""
    lines = []
    for name, query in queries.items():
        for enabled in ("false", "true"):
            lines.append(f"SET spark.zskip.enabled={enabled};")
            lines.append(_tagged(name, query, enabled))
        lines.append(f"EXPLAIN {query['sql']};")
    return "\n".join(lines) + "\n"


def _tagged(name: str, query: dict[str, Any], enabled: str) -> str:
    """``query`` with its rows tagged by its name and whether zskip is enabled, in a stable order."""
    tag = name.replace(" ", "_")
    return f"SELECT '{tag}' AS query, '{enabled}' AS zskip, * FROM ({query['sql']}) ORDER BY 3, 4;"


def _one_state(queries: dict[str, Any], enabled: str) -> str:
    """A SQL script: each query (a row tagged with ``enabled``), then its EXPLAIN."""
    lines = []
    for name, query in queries.items():
        lines.append(_tagged(name, query, enabled))
        lines.append(f"EXPLAIN {query['sql']};")
    return "\n".join(lines) + "\n"


def _results(output: str) -> dict[tuple[str, str], list[str]]:
    """The tagged rows of a script's output (tab-separated), by (query, enabled)."""
    found: dict[tuple[str, str], list[str]] = {}
    for line in output.splitlines():
        cells = line.split("\t")
        if len(cells) >= 3 and cells[1] in ("false", "true"):
            found.setdefault((cells[0], cells[1]), []).append("\t".join(cells[2:]))
    return found


def _narrowed(line: str) -> bool:
    """Whether a scan's explain line says zskip read less than Iceberg planned."""
    return "ruled out by" in line or "answered from their statistics" in line


def _same_rows_and_explained(output: str, queries: dict[str, Any]) -> None:
    results = _results(output)
    for name in queries:
        tag = name.replace(" ", "_")
        assert results[(tag, "true")] == results[(tag, "false")] != [], (name, results)
    explained = [line for line in output.splitlines() if "zskip:" in line]
    assert len(explained) == len(queries), explained
    assert sum(_narrowed(line) for line in explained) == len(queries) - 1, explained


def _procedures_script(copy: str) -> str:
    """zskip's procedures as a SQL client runs them, on ``copy`` (a copy of the table made first): two
    that change nothing, optimize, create_index with positional arguments, a query the new bitmap
    prunes, and a refused optimize, which ends the script."""
    return (
        f"CALL zskip.system.list_indexes('{TABLE}');\n"
        f"CALL zskip.system.status(table => '{TABLE}');\n"
        f"DROP TABLE IF EXISTS {copy} PURGE;\n"
        f"CREATE TABLE {copy} USING iceberg AS SELECT * FROM {TABLE};\n"
        f"CALL zskip.system.optimize(table => '{copy}', by => array('a', 'b'), target_file_size => '64KB');\n"
        f"CALL zskip.system.create_index('{copy}', 's', 'bitmap');\n"
        # a value of s no row holds, inside every file's min/max of s: only the bitmap rules files out
        f"EXPLAIN SELECT count(*) FROM {copy} WHERE s = 'k5x';\n"
        f"CALL zskip.system.optimize(table => '{copy}', by => array('nosuch'));\n"
    )


def _procedures_ran(spark: Any, done: subprocess.CompletedProcess[str], copy: str) -> None:
    """``_procedures_script``'s output (rows as TSV): each procedure's figures as the table has them,
    the query pruned by the bitmap the CALL built, the refusal in the API's words."""
    with pytest.raises(zskip.UnknownColumnError) as refused:
        zskip.optimize(spark, copy, by=["nosuch"])
    # the refusal ends the script with the API's message (and only it: every statement before ran)
    assert done.returncode != 0 and str(refused.value)[:80] in done.stderr, done.stderr[-5000:]
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    (listed,) = [row for row in rows if row[:2] == ["b", "bitmap"]]
    assert int(listed[3]) == int(listed[4]) > 0, listed  # every file indexed
    (status,) = [row for row in rows if row[0] == TABLE]
    assert status[7] == "1.0" and status[10] == "true", status  # clustered share, up to date
    (optimized,) = [row for row in rows if row[0] == copy and row[1] in ("incremental", "full")]
    files_after = spark.sql(f"SELECT count(*) FROM {copy}.files").first()[0]
    assert int(optimized[3]) == files_after > 1, optimized  # files_after, as the table has them
    assert any(row[0] == copy and "s:bitmap" in row[1] for row in rows), done.stdout  # create_index's row
    plan = [line for line in done.stdout.splitlines() if "zskip:" in line and copy in line]
    assert len(plan) == 1 and "ruled out by" in plan[0], plan


@pytest.mark.smoke  # the extension without Connect (PySpark 3.5's package has no Connect server)
@SPARK_35_ONLY
def test_spark_sql_runs_a_script_pruned_by_the_extension(
    spark: Any, queries: dict[str, Any], warehouse: Path, tmp_path: Path
) -> None:
    """The queries, pruned, then zskip's procedures (Spark 3.5 parses their CALL through zskip's
    extension, Spark 4.1 itself)."""
    script = tmp_path / "queries.sql"
    copy = f"{NS}.sqlproc"
    # the script's first statement comes before the planner is up (its interpreter takes 3 s to start):
    # spark.zskip.planner.startWait (30 s by default) has it wait for the planner, and it is pruned
    first = f"EXPLAIN {queries['filter']['sql']};\n"
    script.write_text(first + _statements(queries) + _procedures_script(copy))
    slow = tmp_path / "slow-python"
    slow.write_text(f'#!/bin/sh\nsleep 3\nexec "{sys.executable}" "$@"\n')
    slow.chmod(0o755)
    conf = settings(warehouse, tmp_path, **{"spark.zskip.planner.python": str(slow)})
    done = run("spark-sql", ["--master", "local[2]", *conf_options(conf), "-f", str(script)], cwd=tmp_path)
    ours = [line for line in done.stdout.splitlines() if copy not in line]
    rows_start = next(i for i, line in enumerate(ours) if line.startswith("filter\t"))  # _statements' first row
    first_plan = [line for line in ours[:rows_start] if "zskip:" in line]
    assert len(first_plan) == 1 and "ruled out by" in first_plan[0], ours[:rows_start]
    _same_rows_and_explained("\n".join(ours[rows_start:]), queries)
    assert "zskip's planner is ready" in done.stderr
    _procedures_ran(spark, done, copy)


def test_a_wrong_planner_interpreter_leaves_sparks_plans_with_one_warning(
    queries: dict[str, Any], warehouse: Path, tmp_path: Path
) -> None:
    script = tmp_path / "queries.sql"
    script.write_text(_statements(queries))
    missing = tmp_path / "no-such-python"
    conf = settings(warehouse, tmp_path, **{"spark.zskip.planner.python": str(missing)})
    done = run("spark-sql", ["--master", "local[2]", *conf_options(conf), "-f", str(script)], cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-5000:]
    results = _results(done.stdout)
    assert all(results[(tag, "true")] == results[(tag, "false")] for tag, _ in results)
    assert [line for line in done.stdout.splitlines() if "zskip:" in line] == []  # Spark's own plans
    warnings = [line for line in done.stderr.splitlines() if "could not be started" in line]
    assert len(warnings) == 1 and str(missing) in warnings[0], done.stderr[-3000:]


def _beeline(port: int, script: Path) -> subprocess.CompletedProcess[str]:
    """``script`` through beeline, a JDBC session of its own on the Thrift server at ``port``; rows as TSV."""
    return run(
        "beeline",
        ["-u", f"jdbc:hive2://127.0.0.1:{port}/default", "-n", "zskip", "--silent=true", "--outputformat=tsv2",
         "-f", str(script)],
        cwd=script.parent,
    )  # fmt: skip


@pytest.mark.smoke  # and runs zskip's procedures (Spark 3.5: CALL parsed by zskip's extension)
@SPARK_35_ONLY
def test_the_thrift_jdbc_server_prunes_what_beeline_asks(
    spark: Any, queries: dict[str, Any], warehouse: Path, tmp_path: Path
) -> None:
    port = free_port()
    conf = settings(warehouse, tmp_path)
    hive = ("--hiveconf", f"hive.server2.thrift.port={port}", "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1")
    marker = tmp_path / IMPORTED_FROM_THE_SERVERS_DIRECTORY
    (tmp_path / "argparse.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise SystemExit(3)\n")
    secret = tmp_path / "jdbcsecret"
    with server(THRIFT_SERVER, conf, port, tmp_path / "server.log", tmp_path, hive):
        executions = Executions(int(conf["spark.ui.port"]))
        outputs, scanned = {}, {}
        # each beeline connection is a session of its own; the first client's first query is pruned
        # (the planner started with the server; spark.zskip.planner.startWait is left at its default)
        for enabled in ("true", "false"):
            script = tmp_path / f"{enabled}.sql"
            script.write_text(f"SET spark.zskip.enabled={enabled};\n" + _one_state(queries, enabled))
            executions.mark()
            done = _beeline(port, script)
            assert done.returncode == 0, done.stderr[-5000:]
            outputs[enabled] = done.stdout
            scanned[enabled] = executions.scanned(f"{NS}.")
        # zskip's procedures through JDBC, the refused one last (it ends the script)
        script = tmp_path / "procedures.sql"
        copy = f"{NS}.jdbcproc"
        script.write_text(_procedures_script(copy))
        procedures = _beeline(port, script)
        # two JDBC sessions with different current namespaces: a bare name is each one's own table
        # and the first defines a catalog of its own, which the second cannot reach through a CALL
        own = {}
        session_only = (
            "SET spark.sql.catalog.jdbcsecret=org.apache.iceberg.spark.SparkCatalog;\n"
            "SET spark.sql.catalog.jdbcsecret.type=hadoop;\n"
            f"SET spark.sql.catalog.jdbcsecret.warehouse={secret.as_uri()};\n"
            "CREATE TABLE jdbcsecret.s.t (id BIGINT) USING iceberg;\n"
            "INSERT INTO jdbcsecret.s.t SELECT id FROM range(123);\n"
            "CALL zskip.system.status(table => 'jdbcsecret.s.t');\n"
        )
        for namespace, rows in (("ns_a", 1_000), ("ns_b", 3_000)):
            make_table(spark, f"lake.{namespace}.jdbc", rows=rows, files=1)
            script = tmp_path / f"{namespace}.sql"
            script.write_text(
                f"USE lake.{namespace};\nCALL zskip.system.status(table => 'jdbc');\n"
                + (session_only if namespace == "ns_a" else "CALL zskip.system.status(table => 'jdbcsecret.s.t');\n")
            )
            done = _beeline(port, script)
            # the status rows (a summary column spans lines), by the table each names
            for prefix in ("lake.", "jdbcsecret."):
                rows = [line.split("\t") for line in done.stdout.splitlines() if line.startswith(prefix)]
                errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
                own[namespace, prefix] = rows[0][:4] if rows else " ".join(errors) or done.stderr[-3000:]
        # every socket the planner process listens on closes a connection that does not authenticate
        (pid,) = planner_pids(executions.application())
        unauthenticated = {port: _unauthenticated_call(port) for port in listening_ports(pid)}
    assert [own["ns_a", "lake."][i] for i in (0, 2, 3)] == ["lake.ns_a.jdbc", "1", "1000"], own
    assert [own["ns_b", "lake."][i] for i in (0, 2, 3)] == ["lake.ns_b.jdbc", "1", "3000"], own
    assert [own["ns_a", "jdbcsecret."][i] for i in (0, 3)] == ["jdbcsecret.s.t", "123"], own  # a's own catalog
    assert isinstance(own["ns_b", "jdbcsecret."], str) and "jdbcsecret" in own["ns_b", "jdbcsecret."], own  # not b's
    assert not marker.exists()  # the planner did not import the server's directory's argparse.py
    assert unauthenticated and set(unauthenticated.values()) == {b""}, unauthenticated
    off, on = _results(outputs["false"]), _results(outputs["true"])
    for name in queries:
        tag = name.replace(" ", "_")
        assert on[(tag, "true")] == off[(tag, "false")] != [], name
    assert 0 < scanned["true"] < scanned["false"], scanned
    explained = [line for line in outputs["true"].splitlines() if "zskip:" in line]
    assert len(explained) == len(queries) and sum(_narrowed(line) for line in explained) == len(queries) - 1
    _procedures_ran(spark, procedures, copy)
