"""A Spark session with the Iceberg runtime (by Maven coordinates) and an embedded catalog: no server to start."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from zskip.errors import InvalidOptionError, JavaNotFoundError, WarehouseNotWritableError
from zskip.iceberg.jvm_dependencies import ICEBERG_VERSION, iceberg_runtime, object_storage, resolve, zskip_jar
from zskip.iceberg.spark_errors import first_line, is_spark_error

__all__ = ["has_iceberg", "session"]

log = logging.getLogger(__name__)

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
MIN_JAVA = 17  # Spark 4 needs 17


def has_iceberg(spark: SparkSession, catalog: str | None = None) -> bool:
    """True when ``spark`` already has Iceberg's extensions (and ``catalog``, when named)."""
    conf = spark.sparkContext.getConf()
    extensions = conf.get("spark.sql.extensions", "") or ""
    if ICEBERG_EXTENSIONS not in extensions:
        return False
    return catalog is None or conf.get(f"spark.sql.catalog.{catalog}") is not None


def session(
    *,
    warehouse: str | os.PathLike[str] = "./warehouse",
    catalog: str = "lake",
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    object_storage: bool | None = None,
) -> SparkSession:
    """A SparkSession with Iceberg and an embedded hadoop-type catalog named ``catalog`` in ``warehouse``.
    As ``zskip.session``, zskip is enabled in every query of it unless ``conf`` sets
    ``spark.zskip.enabled`` to false (``zskip.planning.enable``).

    ``warehouse`` is a local folder, or a URI such as ``s3a://bucket/warehouse`` whose store the
    settings in ``conf`` reach (``spark.hadoop.fs.s3a.*``).  ``object_storage`` puts the S3 libraries
    on Spark's classpath (Iceberg's AWS bundle, and Hadoop's S3A on Spark 4.1); by default they are
    added when the warehouse or ``conf`` names S3.  A catalog on an object store keeps the manifests
    it read in memory (Iceberg's ``io.manifest.cache-enabled``; ``conf`` may turn it off).

    When a session is already active and has Iceberg configured, it is returned as it is, so code
    written against ``zskip.session()`` runs unchanged on a cluster whose session was built by
    ``spark-submit`` with the user's own catalog (Hive, REST, Glue, JDBC, ...).

    >>> spark = zskip.session(warehouse="/tmp/wh")                     # doctest: +SKIP
    >>> spark.sql("CREATE TABLE lake.db.t (id BIGINT) USING iceberg")  # doctest: +SKIP
    """
    _check_master(master)
    active = SparkSession.getActiveSession()
    if active is not None and has_iceberg(active):
        log.debug("using the active Spark session, which already has Iceberg")
        return active
    _check_java()
    # Python workers must run this interpreter, which has zskip and its dependencies.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    remote = "://" in str(warehouse) and not str(warehouse).startswith("file:")
    warehouse_uri = str(warehouse) if remote else _writable_warehouse(Path(warehouse)).as_uri()
    settings: dict[str, str] = {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        f"spark.sql.catalog.{catalog}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{catalog}.type": "hadoop",
        f"spark.sql.catalog.{catalog}.warehouse": warehouse_uri,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": str(max(4, 2 * (os.cpu_count() or 2))),
        "spark.driver.memory": "4g",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
    }
    if remote:
        # on an object store every manifest Iceberg reads to plan a query is a request; manifests never
        # change, so Iceberg may keep those it read in memory, and a query planned again reads none
        settings[f"spark.sql.catalog.{catalog}.io.manifest.cache-enabled"] = "true"
    settings.update(conf or {})
    settings.update(_with_jvm_libraries(conf or {}))
    if object_storage or (object_storage is None and _names_s3(warehouse_uri, conf or {})):
        settings.update(_with_object_storage(settings))
    builder = SparkSession.builder.master(master).appName("zskip")
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        raise InvalidOptionError(
            f"Spark could not start with master {master!r}: {first_line(exc)}; use local[*], local[N], "
            "spark://HOST:PORT, yarn or k8s://https://HOST:PORT (--master / ZSKIP_MASTER)"
        ) from None
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _with_jvm_libraries(conf: Mapping[str, str], spark_version: str | None = None) -> dict[str, str]:
    """``spark.jars`` with zskip's jar for the Spark version (default: the installed one) and the Iceberg
    runtime added (the runtime through ``spark.jars.packages`` when there is no ``mvn`` to fetch it),
    unless ``conf`` names them."""
    version = spark_version or pyspark.__version__
    jars, packages = conf.get("spark.jars", ""), conf.get("spark.jars.packages", "")
    added_jars: list[str] = []
    added_packages: list[str] = []
    if "zskip-spark-" not in jars:
        added_jars.append(str(zskip_jar(version)))
    if "iceberg-spark-runtime" not in jars + packages:  # else the user's own choice of runtime
        coordinate = iceberg_runtime(version)
        jar = resolve(coordinate)
        if jar is None:
            log.warning("no mvn on PATH: Spark resolves %s itself (spark.jars.packages)", coordinate)
            added_packages.append(str(coordinate))
        else:
            added_jars.append(str(jar))
    settings: dict[str, str] = {}
    if added_jars:
        settings["spark.jars"] = ",".join(j for j in (jars, *added_jars) if j)
    if added_packages:
        settings["spark.jars.packages"] = ",".join(p for p in (packages, *added_packages) if p)
    return settings


def _names_s3(warehouse: str, conf: Mapping[str, str]) -> bool:
    """Whether the warehouse or the settings point at S3 (the S3 libraries are then needed)."""
    return (
        warehouse.startswith(("s3://", "s3a://", "s3n://"))
        or any(key.startswith("spark.hadoop.fs.s3a.") or key.endswith(".s3.endpoint") for key in conf)
        or any("S3FileIO" in str(value) or str(value).startswith(("s3://", "s3a://")) for value in conf.values())
    )


def _with_object_storage(settings: Mapping[str, str]) -> dict[str, str]:
    """``spark.jars`` (or ``spark.jars.packages``) with the S3 libraries added, unless the settings name them."""
    jars, packages = settings.get("spark.jars", ""), settings.get("spark.jars.packages", "")
    if "iceberg-aws-bundle" in jars + packages:
        return {}
    found = [(coordinate, resolve(coordinate)) for coordinate in object_storage(pyspark.__version__)]
    if any(jar is None for _, jar in found):
        wanted = ",".join(str(c) for c, _ in found)
        return {"spark.jars.packages": ",".join(p for p in (packages, wanted) if p)}
    return {"spark.jars": ",".join(j for j in (jars, *(str(jar) for _, jar in found)) if j)}


# What spark-submit accepts; anything else makes the JVM print a stack trace and exit.
_MASTER = re.compile(
    r"yarn|(spark|mesos|k8s)://\S+|local(\[\s*(\*|\d+)\s*(,\s*\d+\s*)?\]|-cluster\[\s*\d+\s*,\s*\d+\s*,\s*\d+\s*\])?"
)


def _check_master(master: str) -> None:
    if not isinstance(master, str) or not _MASTER.fullmatch(master.strip()):
        raise InvalidOptionError(
            f"{master!r} is not a Spark master: use local[*], local[N], spark://HOST:PORT, yarn or "
            "k8s://https://HOST:PORT (--master / ZSKIP_MASTER)"
        )


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise JavaNotFoundError(
            "Spark needs Java 17 or newer and none was found: install a JDK (for example "
            "'apt-get install openjdk-17-jre-headless') or set JAVA_HOME"
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(f"could not run {java} -version: {exc}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if match:
        major = int(match.group(1))
        if major == 1 and match.group(2):
            major = int(match.group(2))
        if major < MIN_JAVA:
            raise JavaNotFoundError(
                f"{java} is Java {major}; Spark with Iceberg {ICEBERG_VERSION} needs Java {MIN_JAVA} or newer: "
                "install it or point JAVA_HOME at it"
            )


def _writable_warehouse(path: Path) -> Path:
    path = path.expanduser().resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".zskip-write-check-"):
            pass
    except OSError as exc:
        raise WarehouseNotWritableError(
            f"the warehouse directory {path} is not writable ({exc.strerror or exc}); pass "
            "warehouse= (or --warehouse / ZSKIP_WAREHOUSE) pointing at a directory you can write"
        ) from exc
    return path
