"""The JVM libraries zskip needs, by Maven coordinates, in one place, and where to find their jars.

Spark and PySpark come from PyPI; zskip's own jar for the installed Spark line comes inside this
package (``zskip/jars/``, built from ``jvm/`` with the package); the Iceberg Spark runtime matching
the installed Spark (and, for object storage, the AWS libraries) come from Maven.
``zskip.session()`` puts both on ``spark.jars``, the runtime from the local Maven repository,
resolving it there with ``mvn`` the first time (no repository host is named here: Maven's own
settings decide where it downloads from).  Without
``mvn``, it asks Spark's own resolver for the same coordinates through ``spark.jars.packages``.

    zskip jars                          # zskip's jar, and the runtime for the installed Spark: their paths
    zskip jars --object-storage         # and the S3 libraries (S3FileIO, and S3A on Spark 4.1)
    zskip jars --coordinates            # their coordinates, for spark.jars.packages

The servers the test suite starts (an S3-compatible store, an Iceberg REST catalog) are declared
here too, and resolved with their dependencies by ``server_classpath``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from zskip.errors import JavaNotFoundError, UnsupportedSessionError

__all__ = [
    "ICEBERG_VERSION",
    "SPARK_LINES",
    "TEST_SERVERS",
    "Coordinate",
    "iceberg_runtime",
    "local_jar",
    "object_storage",
    "resolve",
    "server_classpath",
    "spark_line",
    "spark_major",
    "zskip_jar",
]

log = logging.getLogger(__name__)

# The Iceberg release whose runtime zskip.session() puts on Spark's classpath; zskip's jars are built
# against it and tested on 1.11 too (ZSKIP_ICEBERG_VERSION picks another for a session and the tests).
DEFAULT_ICEBERG_VERSION = "1.12.0"
ICEBERG_VERSION = os.environ.get("ZSKIP_ICEBERG_VERSION", DEFAULT_ICEBERG_VERSION)
# the Iceberg release the test suite's servers (its REST catalog fixture) run: a server, not the client
TEST_SERVER_ICEBERG_VERSION = "1.11.0"

# Spark lines zskip supports -> the Scala version PySpark's own jars are built with
SPARK_LINES = {"3.5": "2.12", "4.1": "2.13"}

# Hadoop's S3A connector, for the Spark lines whose Hadoop (the hadoop-client jars PySpark ships) runs
# it on the AWS SDK v2 that Iceberg's AWS bundle carries.  Spark 3.5's Hadoop 3.3.4 needs SDK v1 (a
# 280 MB bundle): on 3.5 tables on S3 go through Iceberg's S3FileIO (s3://) only.
S3A_HADOOP = {"4.1": "3.4.2"}
# the AWS SDK version inside each iceberg-aws-bundle; S3A's transfer manager, which the bundle leaves
# out, must be the same version
AWS_SDK_VERSIONS = {"1.11.0": "2.44.4", "1.12.0": "2.54.17"}
AWS_SDK_VERSION = AWS_SDK_VERSIONS.get(ICEBERG_VERSION, AWS_SDK_VERSIONS[DEFAULT_ICEBERG_VERSION])


@dataclass(frozen=True)
class Coordinate:
    """``group:artifact:version`` of one jar in a Maven repository."""

    group: str
    artifact: str
    version: str
    classifier: str = ""  # a secondary jar of the artifact (``tests``, ``test-fixtures``)

    def __str__(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}" + (f":{self.classifier}" if self.classifier else "")

    def path_in(self, repository: Path) -> Path:
        return repository.joinpath(*self.group.split("."), self.artifact, self.version, self.file_name)

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}{'-' + self.classifier if self.classifier else ''}.jar"

    def pom_dependency(self) -> str:
        classifier = f"<classifier>{self.classifier}</classifier>" if self.classifier else ""
        return (
            f"<dependency><groupId>{self.group}</groupId><artifactId>{self.artifact}</artifactId>"
            f"<version>{self.version}</version>{classifier}</dependency>"
        )


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


def zskip_jar(spark_version: str) -> Path:
    """zskip's own jar for ``spark_version``'s line, from this package (``zskip/jars/``).

    A wheel carries both lines' jars; a source checkout has them once ``make jars`` (or ``pip install .``)
    built them from ``jvm/`` with Maven."""
    line = spark_line(spark_version)
    name = f"zskip-spark-{line}_{SPARK_LINES[line]}.jar"
    path = Path(str(resources.files("zskip").joinpath("jars").joinpath(name)))
    if not path.is_file():
        raise JavaNotFoundError(
            f"zskip's jar for Spark {line} ({name}) is not in {path.parent}: this zskip was installed from a "
            "source checkout without building its JVM half; run `make jars` (Maven and a JDK 17) or install "
            "a built wheel"
        )
    return path


def object_storage(spark_version: str) -> list[Coordinate]:
    """The JVM libraries for tables on S3 and S3-compatible stores: Iceberg's AWS bundle (``S3FileIO``
    with the AWS SDK, for ``s3://``) and, where Spark's Hadoop can run it, Hadoop's S3A connector
    (``s3a://``) on the same SDK."""
    line = spark_line(spark_version)
    found = [Coordinate("org.apache.iceberg", "iceberg-aws-bundle", ICEBERG_VERSION)]
    if line in S3A_HADOOP:
        found += [
            Coordinate("org.apache.hadoop", "hadoop-aws", S3A_HADOOP[line]),
            Coordinate("software.amazon.awssdk", "s3-transfer-manager", AWS_SDK_VERSION),
        ]
        if ICEBERG_VERSION not in ("1.11.0",):
            # S3A builds its S3 client on the SDK's Apache HTTP client, which the bundle carries up to
            # Iceberg 1.11 only; the Apache HttpClient 4 it runs on is among Spark's own jars
            found.append(Coordinate("software.amazon.awssdk", "apache-client", AWS_SDK_VERSION))
    return found


@dataclass(frozen=True)
class Server:
    """A Java server the test suite starts: its main class, and what it needs by coordinates.

    ``managed`` pins versions Maven's nearest-wins choice would get wrong (a BOM to import)."""

    main: str
    dependencies: tuple[Coordinate, ...]
    managed: tuple[Coordinate, ...] = ()


TEST_SERVERS = {
    # an S3-compatible object store on a local port, its buckets in a local folder
    "s3proxy": Server(
        "org.gaul.s3proxy.Main",
        (Coordinate("org.gaul", "s3proxy", "4.1.0"),),
        # S3Proxy 4.1's Jackson 3 needs the jackson-annotations of its own BOM, not an older one
        managed=(Coordinate("tools.jackson", "jackson-bom", "3.2.2"),),
    ),
    # Iceberg's own REST catalog server (its test fixture) over a JDBC catalog in SQLite, with S3FileIO
    "rest-catalog": Server(
        "org.apache.iceberg.rest.RESTCatalogServer",
        (
            Coordinate("org.apache.iceberg", "iceberg-open-api", TEST_SERVER_ICEBERG_VERSION, "test-fixtures"),
            Coordinate("org.apache.iceberg", "iceberg-core", TEST_SERVER_ICEBERG_VERSION),
            Coordinate("org.apache.iceberg", "iceberg-core", TEST_SERVER_ICEBERG_VERSION, "tests"),  # the REST adapter
            Coordinate("org.apache.iceberg", "iceberg-aws", TEST_SERVER_ICEBERG_VERSION),
            Coordinate("org.apache.iceberg", "iceberg-aws-bundle", TEST_SERVER_ICEBERG_VERSION),
            Coordinate("org.apache.hadoop", "hadoop-client-api", S3A_HADOOP["4.1"]),
            Coordinate("org.apache.hadoop", "hadoop-client-runtime", S3A_HADOOP["4.1"]),
            Coordinate("org.eclipse.jetty", "jetty-server", "12.1.14"),
            Coordinate("org.eclipse.jetty.ee10", "jetty-ee10-servlet", "12.1.14"),
            Coordinate("org.eclipse.jetty.compression", "jetty-compression-server", "12.1.14"),
            Coordinate("org.eclipse.jetty.compression", "jetty-compression-gzip", "12.1.14"),
            Coordinate("org.xerial", "sqlite-jdbc", "3.51.1.0"),
            Coordinate("org.slf4j", "slf4j-simple", "2.0.17"),
        ),
    ),
}


def server_classpath(name: str) -> list[Path]:
    """The jars of test server ``name`` (``TEST_SERVERS``) with all they depend on, resolved by Maven
    into the local repository the first time (from a generated POM; later calls read the list back)."""
    server = TEST_SERVERS[name]
    managed = "".join(c.pom_dependency().replace("</version>", "</version><type>pom</type><scope>import</scope>", 1)
                      for c in server.managed)  # fmt: skip
    pom = (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>zskip.servers</groupId><artifactId>{name}</artifactId><version>0</version><packaging>pom</packaging>"
        f"<dependencyManagement><dependencies>{managed}</dependencies></dependencyManagement>"
        f"<dependencies>{''.join(c.pom_dependency() for c in server.dependencies)}</dependencies></project>"
    )
    folder = Path(tempfile.gettempdir()) / f"zskip-classpath-{name}-{hashlib.sha256(pom.encode()).hexdigest()[:12]}"
    listing = folder / "classpath.txt"
    if listing.is_file():
        jars = [Path(p) for p in listing.read_text().split(os.pathsep) if p]
        if jars and all(j.is_file() for j in jars):
            return jars
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JavaNotFoundError(f"the {name} test server is resolved with Maven, and there is no mvn on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pom.xml").write_text(pom)
    log.warning("resolving the %s test server's jars with Maven (once)", name)
    command = [mvn, "-q", "-B", "-f", str(folder / "pom.xml"), "dependency:build-classpath",
               f"-Dmdep.outputFile={listing}"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0 or not listing.is_file():
        last = next((line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line), "")
        raise JavaNotFoundError(f"Maven could not resolve the {name} test server: {last.strip()}")
    return [Path(p) for p in listing.read_text().split(os.pathsep) if p]


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
