"""optimize runs on a cluster: a local-cluster master starts executors in separate JVMs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.jobs import run_job

pytestmark = pytest.mark.cluster


def test_optimize_runs_with_executors_in_separate_jvms(tmp_path: Path) -> None:
    report = run_job("cluster_job.py", str(tmp_path / "warehouse"))
    assert report["executors"] == 2
    assert report["same"] is True
    assert report["commits"] == 1 and report["files_written"] >= 2
    assert report["python_worker_pids"] >= 2
