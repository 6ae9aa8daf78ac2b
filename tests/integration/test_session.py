"""zskip.session(): Iceberg with an embedded catalog, reuse of a configured session, clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import zskip
from zskip.iceberg import has_iceberg
from zskip.iceberg.jvm_dependencies import ICEBERG_VERSION

pytestmark = pytest.mark.integration


@pytest.mark.smoke
@pytest.mark.iceberg_versions
def test_session_has_iceberg_and_a_working_catalog(spark, warehouse: Path) -> None:
    assert has_iceberg(spark, "lake")
    spark.sql("CREATE TABLE lake.session_t.roundtrip (id BIGINT, name STRING) USING iceberg")
    spark.sql("INSERT INTO lake.session_t.roundtrip VALUES (1, 'a'), (2, 'b')")
    assert spark.table("lake.session_t.roundtrip").count() == 2
    assert (warehouse / "session_t" / "roundtrip" / "metadata").is_dir()
    snapshots = spark.sql("SELECT operation FROM lake.session_t.roundtrip.snapshots").collect()
    assert [r.operation for r in snapshots] == ["append"]
    # the Iceberg runtime asked for (1.12 unless ZSKIP_ICEBERG_VERSION says otherwise), beside zskip's own jar
    jvm = spark.sparkContext._jvm
    version = str(jvm.org.apache.iceberg.IcebergBuild.version())
    assert version == ICEBERG_VERSION, version
    jar = str(jvm.io.zskip.bridge.Bridge().getClass().getProtectionDomain().getCodeSource().getLocation())
    assert jar.endswith(
        f"zskip-spark-{'.'.join(spark.version.split('.')[:2])}_2.1{3 if spark.version >= '4' else 2}.jar"
    )


def test_an_active_iceberg_session_is_reused(spark) -> None:
    assert zskip.session(warehouse="/nonexistent/elsewhere") is spark


def run_outside(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_unwritable_warehouse_is_reported_before_spark_starts(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = run_outside(f"import zskip; zskip.session(warehouse={str(blocker / 'wh')!r})", dict(os.environ))
    assert result.returncode != 0
    assert "WarehouseNotWritableError" in result.stderr
    assert "is not writable" in result.stderr and "--warehouse" in result.stderr


def test_missing_java_is_reported_with_what_to_install(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java on it
    result = run_outside(f"import zskip; zskip.session(warehouse={str(tmp_path / 'wh')!r})", env)
    assert result.returncode != 0
    assert "JavaNotFoundError" in result.stderr and "install a JDK" in result.stderr


def test_a_session_started_without_zskips_jar_is_given_it(tmp_path: Path) -> None:
    # a session the user built with Iceberg's runtime only, before zskip was imported: zskip adds its jar
    # to the driver's class loader and ships it to the executors (optimize's key UDF runs there)
    from zskip.iceberg.jvm_dependencies import iceberg_runtime, resolve

    runtime = resolve(iceberg_runtime(spark_version()))
    code = f"""
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    .config("spark.jars", {str(runtime)!r})
    .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    .config("spark.sql.catalog.own", "org.apache.iceberg.spark.SparkCatalog")
    .config("spark.sql.catalog.own.type", "hadoop")
    .config("spark.sql.catalog.own.warehouse", {(tmp_path / "wh").as_uri()!r}).getOrCreate())
assert "zskip" not in spark.conf.get("spark.jars")
import zskip
spark.range(20_000).selectExpr("id", "id % 97 AS a").writeTo("own.db.t").using("iceberg").create()
zskip.optimize(spark, "own.db.t", by=["a", "id"], target_file_size="64KB")
read = zskip.read(spark, "own.db.t", "a = 5").count()
assert read == spark.table("own.db.t").where("a = 5").count() == 207, read
print("files read", zskip.explain(spark, "own.db.t", "a = 5").files_read)
"""
    result = run_outside(code, dict(os.environ) | {"PYSPARK_PYTHON": sys.executable})  # workers with zskip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "files read" in result.stdout


def spark_version() -> str:
    import pyspark

    return pyspark.__version__
