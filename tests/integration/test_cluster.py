"""optimize runs on a cluster: a local-cluster master starts executors in separate JVMs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster


def test_optimize_runs_with_executors_in_separate_jvms(tmp_path: Path) -> None:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    job = Path(__file__).with_name("cluster_job.py")
    done = subprocess.run(
        [sys.executable, str(job), str(tmp_path / "warehouse")],
        capture_output=True,
        text=True,
        env=env,
        cwd=job.parent,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["executors"] == 2
    assert report["same"] is True
    assert report["commits"] == 1 and report["files_written"] >= 2
    assert report["python_worker_pids"] >= 2
