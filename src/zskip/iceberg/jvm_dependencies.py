"""The JVM libraries zskip needs, by Maven coordinates, in one place, and where to find their jars.

Spark and PySpark come from PyPI; the Iceberg Spark runtime matching the installed Spark (and, for
object storage, the AWS libraries) come from Maven.  ``zskip.session()`` puts the runtime on
``spark.jars`` from the local Maven repository, resolving it there with ``mvn`` the first time (no
repository host is named here: Maven's own settings decide where it downloads from).  Without
``mvn``, it asks Spark's own resolver for the same coordinates through ``spark.jars.packages``.

    zskip jars                  # fetch the runtime for the installed Spark, print its path
    zskip jars --coordinates    # its coordinates, for spark.jars.packages
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from zskip.errors import JavaNotFoundError, UnsupportedSessionError

__all__ = [
    "ICEBERG_VERSION",
    "SPARK_LINES",
    "Coordinate",
    "iceberg_runtime",
    "local_jar",
    "resolve",
    "spark_line",
    "spark_major",
]

log = logging.getLogger(__name__)

# Not 1.12.0: its Parquet reader loads a file of up to 1 MiB whole and fails when the file is longer
# than its data file entry claims, which is how zskip's staged scans read a byte range of row groups.
ICEBERG_VERSION = "1.11.0"

# Spark lines zskip supports -> the Scala version PySpark's own jars are built with
SPARK_LINES = {"3.5": "2.12", "4.1": "2.13"}


@dataclass(frozen=True)
class Coordinate:
    """``group:artifact:version`` of one jar in a Maven repository."""

    group: str
    artifact: str
    version: str

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    def path_in(self, repository: Path) -> Path:
        return repository.joinpath(*self.group.split("."), self.artifact, self.version, self.file_name)

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"


def spark_major(version: str) -> int:
    """The major version of a Spark version string (``4`` for ``4.1.4``)."""
    return int(version.split(".")[0])


def spark_line(version: str) -> str:
    """The supported line (``3.5``, ``4.1``) of a Spark version, or an error naming the supported ones."""
    match = re.match(r"(\d+)\.(\d+)", version)
    line = f"{match.group(1)}.{match.group(2)}" if match else version
    if line not in SPARK_LINES:
        supported = " and ".join(f"{line}.x" for line in SPARK_LINES)
        raise UnsupportedSessionError(
            f"zskip supports Spark {supported} (Iceberg {ICEBERG_VERSION} has a runtime for each), not "
            f"Spark {version}: install a supported PySpark, e.g. pip install 'pyspark>=4.1,<4.2'"
        )
    return line


def iceberg_runtime(spark_version: str) -> Coordinate:
    """The Iceberg Spark runtime built for ``spark_version``'s line and Scala version."""
    line = spark_line(spark_version)
    return Coordinate("org.apache.iceberg", f"iceberg-spark-runtime-{line}_{SPARK_LINES[line]}", ICEBERG_VERSION)


def maven_repository() -> Path:
    """The local Maven repository (``maven.repo.local`` in ``MAVEN_OPTS``, else ``~/.m2/repository``)."""
    found = re.search(r"-Dmaven\.repo\.local=(\S+)", os.environ.get("MAVEN_OPTS", ""))
    return Path(found.group(1)) if found else Path.home() / ".m2" / "repository"


def local_jar(coordinate: Coordinate) -> Path | None:
    """The jar of ``coordinate`` in the local Maven repository, if it is there."""
    path = coordinate.path_in(maven_repository())
    return path if path.is_file() else None


def resolve(coordinate: Coordinate) -> Path | None:
    """The jar of ``coordinate``, fetched into the local Maven repository with ``mvn`` if it is not there
    yet; None when there is no ``mvn`` to fetch it with."""
    found = local_jar(coordinate)
    if found is not None:
        return found
    mvn = shutil.which("mvn")
    if mvn is None:
        return None
    log.warning("fetching %s with Maven (once; it stays in %s)", coordinate, maven_repository())
    command = [mvn, "-q", "-B", "dependency:get", f"-Dartifact={coordinate}", "-Dtransitive=false"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(f"could not run Maven to fetch {coordinate}: {exc}") from exc
    found = local_jar(coordinate)
    if done.returncode != 0 or found is None:
        last = next((line for line in reversed((done.stdout + done.stderr).splitlines()) if "ERROR" in line), "")
        raise JavaNotFoundError(
            f"Maven could not fetch {coordinate} ({last.strip() or f'exit code {done.returncode}'}): check Maven's "
            f"repository settings (~/.m2/settings.xml), or put the jar on spark.jars yourself"
        )
    return found
