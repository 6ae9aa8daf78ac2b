"""Running a test job (a script next to the tests) in its own Python process and reading its report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# The JVM options of the Spark processes the tests start beside their own session: the client compiler
# only. Those JVMs live seconds to a minute and run each query once or twice, so the optimising
# compiler's work is never paid back (measured on 2 cores: test_object_storage 240 s -> 183 s). The
# tests' own session keeps the default: its JVM runs the whole suite, and its property tests lose
# time without the optimising compiler (test_star_correctness 44 s -> 73 s). Every test JVM collects with
# the serial collector (``GC_OPTIONS``): G1's concurrent threads compete with the tests for two cores
# (test_query_shapes, test_hard_inputs and test_planning together: 192 and 194 s -> 181 and 186 s).
GC_OPTIONS = "-XX:+UseSerialGC"
JIT_OPTIONS = f"-XX:TieredStopAtLevel=1 {GC_OPTIONS}"


def job_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a Spark process a test starts: ``env`` (default: this one's), Spark bound to
    the loopback address, its driver JVM started with ``JIT_OPTIONS`` unless ``SPARK_SUBMIT_OPTS`` says
    otherwise (Spark's launch scripts pass it to the driver's JVM)."""
    given = dict(env if env is not None else os.environ)
    return {"SPARK_SUBMIT_OPTS": JIT_OPTIONS} | given | {"SPARK_LOCAL_IP": "127.0.0.1"}


def run_job(script: str, *arguments: str, timeout: int = 600, env: Mapping[str, str] | None = None) -> Any:
    """Run ``script`` (in ``tests/integration``) with ``arguments``; its last line of output, as JSON.
    ``env``: the process's environment (default: this one's); Spark binds to the loopback address."""
    job = Path(__file__).with_name(script)
    done = subprocess.run(
        [sys.executable, str(job), *arguments],
        capture_output=True,
        text=True,
        env=job_environment(env),
        cwd=job.parent,
        timeout=timeout,
    )
    traceback = done.stderr.rfind("Traceback")  # the job's own error, not the JVM's log after it
    assert done.returncode == 0, done.stderr[traceback : traceback + 6000] if traceback >= 0 else done.stderr[-5000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
