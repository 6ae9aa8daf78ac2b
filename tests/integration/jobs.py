"""Running a test job (a script next to the tests) in its own Python process and reading its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def run_job(script: str, *arguments: str, timeout: int = 600, env: Mapping[str, str] | None = None) -> Any:
    """Run ``script`` (in ``tests/integration``) with ``arguments``; its last line of output, as JSON.
    ``env``: the process's environment (default: this one's); Spark binds to the loopback address."""
    job = Path(__file__).with_name(script)
    done = subprocess.run(
        [sys.executable, str(job), *arguments],
        capture_output=True,
        text=True,
        env=dict(env if env is not None else os.environ) | {"SPARK_LOCAL_IP": "127.0.0.1"},
        cwd=job.parent,
        timeout=timeout,
    )
    traceback = done.stderr.rfind("Traceback")  # the job's own error, not the JVM's log after it
    assert done.returncode == 0, done.stderr[traceback : traceback + 6000] if traceback >= 0 else done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
