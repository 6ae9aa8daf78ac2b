"""zskip on an Iceberg JDBC catalog on a real PostgreSQL server, with two writers: optimize, index
create and refresh, maintain, read, sql, explain and vacuum in one process while another appends to
the same table; no row lost or duplicated, and a stale index publication is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.jobs import run_job

pytestmark = pytest.mark.integration


def test_verbs_on_a_jdbc_catalog_while_another_process_appends(postgres, tmp_path: Path) -> None:
    found = run_job(
        "jdbc_job.py", str(tmp_path / "warehouse"), json.dumps(postgres.catalog_conf()), str(tmp_path), timeout=900
    )
    assert found["catalog_impl"] == "jdbc"
    assert found["appender_exit"] == 0, found["appender_errors"]
    assert found["batches"] >= 3 and found["appends_during_verbs"] >= 1, found
    assert found["rows_kept"] is True  # count and checksum of every row, appended ones included
    assert found["optimize_commits"] >= 1 and found["files_indexed"] >= 1
    assert found["up_to_date"] is True and found["clustered_share"] == 1.0, found["cycles"]
    assert found["read_equal"] is True and found["sql_equal"] is True
    read, total = found["explain_files"]
    assert 0 < read < total
    assert found["vacuum_deleted"] >= 1  # the files optimize replaced
    assert found["conflict"].startswith("refused"), found["conflict"]
    assert found["indexes_after_conflict"] == ["b:bitmap", "s:bloom"]
