"""zskip from configuration alone: ``spark.sql.extensions`` names zskip's extension, and applications that
never import zskip (a PySpark job through spark-submit, spark-sql, the Spark Connect and Thrift JDBC
servers) have their queries of zskip's tables pruned by the planner zskip's JVM half hosts, with the
rows zskip off returns.  Scans are counted by each application itself (its SQL metrics)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import zskip
from tests.integration.jobs import run_job
from tests.integration.spark_apps import (
    CONNECT_SERVER,
    conf_options,
    free_port,
    planner_pids,
    run,
    server,
    settings,
)
from tests.integration.stars import make_star
from tests.integration.tables import make_table

pytestmark = pytest.mark.integration

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
        else:
            assert 0 < on["scanned"] < off["scanned"], (name, on["scanned"], off["scanned"])
            assert "zskip: reads" in line and "ruled out by" in line, line


@pytest.mark.cluster
def test_a_pyspark_job_that_never_imports_zskip_is_pruned_on_a_cluster(
    queries: dict[str, Any], warehouse: Path, tmp_path: Path
) -> None:
    listed = tmp_path / "queries.json"
    listed.write_text(json.dumps(queries))
    conf = settings(warehouse, tmp_path)
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
    with server(CONNECT_SERVER, conf, port, log, directory):
        yield Connect(port, int(conf["spark.ui.port"]), log, directory)


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


def test_spark_connect_clients_are_pruned_and_see_zskip_in_explain(connect: Connect, queries: dict[str, Any]) -> None:
    report = connect.client(queries)
    assert report["imported zskip"] is False
    _pruned_with_sparks_rows(report, queries)


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
