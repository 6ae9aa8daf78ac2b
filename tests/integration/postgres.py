"""A throwaway PostgreSQL server for the JDBC catalog tests: ``initdb`` into a fresh directory,
``pg_ctl start`` on a free local port (as an unprivileged user when the tests run as root, since
PostgreSQL refuses to run as root), ``pg_ctl stop`` at the end.

Needs Debian's ``postgresql`` (``initdb``, ``pg_ctl``) and ``libpostgresql-jdbc-java`` (the driver at
``/usr/share/java/postgresql.jar``, or wherever ``ZSKIP_POSTGRES_JDBC_JAR`` points); ``.ci/run``
installs both.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

JDBC_JAR_ENV = "ZSKIP_POSTGRES_JDBC_JAR"
DEBIAN_JDBC_JAR = "/usr/share/java/postgresql.jar"
USER = "zskip"


@dataclass(frozen=True)
class Postgres:
    port: int
    jar: str

    @property
    def uri(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/postgres"

    def catalog_conf(self, catalog: str = "lake") -> dict[str, str]:
        """Spark settings of an Iceberg JDBC catalog named ``catalog`` on this server."""
        return {
            "spark.jars": self.jar,
            f"spark.sql.catalog.{catalog}.type": "jdbc",
            f"spark.sql.catalog.{catalog}.uri": self.uri,
            f"spark.sql.catalog.{catalog}.jdbc.user": USER,
            f"spark.sql.catalog.{catalog}.jdbc.password": "unused",  # trust authentication
        }


def missing() -> str | None:
    """Why a PostgreSQL server cannot be started here (None: it can)."""
    if _binary("initdb") is None or _binary("pg_ctl") is None:
        return "PostgreSQL's initdb and pg_ctl are not installed (Debian package postgresql; .ci/run installs it)"
    if _jar() is None:
        return (
            f"the PostgreSQL JDBC driver is not at {DEBIAN_JDBC_JAR} (Debian package libpostgresql-jdbc-java) "
            f"nor where {JDBC_JAR_ENV} points"
        )
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: PostgreSQL will not start as root"
    return None


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A running server with a trusted superuser ``zskip``, stopped and deleted afterwards."""
    reason = missing()
    if reason:
        raise RuntimeError(reason)
    home = Path(tempfile.mkdtemp(prefix="zskip-pg-", dir="/tmp"))
    data = home / "data"
    if os.geteuid() == 0:
        shutil.chown(home, user="nobody")
    port = _free_port()
    _run(["initdb", "-D", str(data), "-U", USER, "-A", "trust", "-E", "UTF8", "--no-instructions"])
    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
    _run(["pg_ctl", "-D", str(data), "-l", str(home / "server.log"), "-o", options, "-w", "start"])
    try:
        yield Postgres(port=port, jar=str(_jar()))
    finally:
        _run(["pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop"], check=False)
        shutil.rmtree(home, ignore_errors=True)


def _run(command: list[str], check: bool = True) -> None:
    binary = _binary(command[0])
    assert binary is not None
    argv = [binary, *command[1:]]
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "nobody", "--", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def _jar() -> str | None:
    for candidate in (os.environ.get(JDBC_JAR_ENV), DEBIAN_JDBC_JAR):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
