"""Spark applications the tests start as users do: ``spark-submit``, ``spark-sql``, the Spark Connect and
Thrift JDBC servers, from the scripts and jars PySpark ships, configured with zskip's extension only.

What a query scanned is read from the application itself (``ui_metrics.Executions``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pyspark

from tests.integration.jobs import job_environment
from tests.integration.planner_processes import planner_pids
from tests.integration.ui_metrics import Executions
from zskip.iceberg.extension import extension_settings

__all__ = ["Executions", "conf_options", "free_port", "planner_pids", "run", "server", "settings"]

SPARK_HOME = Path(pyspark.__file__).parent
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
THRIFT_SERVER = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"

LOG4J = """rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n
logger.zskip.name = zskip
logger.zskip.level = info
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def environment() -> dict[str, str]:
    """What Spark's launch scripts need: PySpark's Spark home, this interpreter first on PATH, loopback."""
    env = job_environment()
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYSPARK_PYTHON"] = sys.executable
    env.pop("SPARK_REMOTE", None)
    return env


def settings(warehouse: Path, directory: Path, **extra: str) -> dict[str, str]:
    """zskip's extension on a hadoop catalog ``lake`` at ``warehouse``, zskip's log at INFO, the UI on a
    free port (its REST API reports the scans), the planner as it starts by default (with the
    application; a first query waits for it)."""
    log4j = directory / "log4j2.properties"
    log4j.write_text(LOG4J)
    conf = extension_settings(python=sys.executable, catalog="lake", warehouse=warehouse.as_uri())
    conf |= {
        "spark.ui.enabled": "true",
        "spark.ui.port": str(free_port()),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile={log4j}",
    }
    return conf | extra


def conf_options(conf: Mapping[str, str]) -> list[str]:
    return [part for key, value in conf.items() for part in ("--conf", f"{key}={value}")]


def run(script: str, arguments: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """One of PySpark's launch scripts (``bin/spark-submit``, ``bin/spark-sql``, ``bin/beeline``), to the end."""
    return subprocess.run(
        [str(SPARK_HOME / "bin" / script), *arguments],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=cwd,
        timeout=timeout,
    )


@contextmanager
def server(
    main_class: str, conf: Mapping[str, str], port: int, log: Path, cwd: Path, arguments: tuple[str, ...] = ()
) -> Iterator[subprocess.Popen]:
    """A server started with ``spark-submit --class main_class`` (as Spark's start-*.sh scripts do), up
    once ``port`` takes connections; stopped (with its planner process) at the end."""
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[2]", "--class", main_class,
             *conf_options(conf), "spark-internal", *arguments],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environment(),
            cwd=cwd,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 180
            while not _listening(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"{main_class} did not start: {log.read_text()[-5000:]}")
                time.sleep(0.5)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0
