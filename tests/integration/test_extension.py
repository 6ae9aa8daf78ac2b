"""zskip from configuration alone: ``spark.sql.extensions`` names zskip's extension, and applications that
never import zskip (a PySpark job through spark-submit, spark-sql, the Spark Connect and Thrift JDBC
servers) have their queries of zskip's tables pruned by the planner zskip's JVM half hosts, with the
rows zskip off returns.  Scans are counted by each application itself (its SQL metrics)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import zskip
from tests.integration.spark_apps import conf_options, planner_pids, run, settings
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
