"""The JVM libraries: zskip's jar per Spark line from the package, Iceberg's by Maven coordinates (no Spark started)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pyspark
import pytest

from zskip.errors import JavaNotFoundError, UnsupportedSessionError
from zskip.iceberg import jvm_dependencies
from zskip.iceberg.jvm_dependencies import ICEBERG_VERSION, iceberg_runtime, local_jar, resolve, spark_line, zskip_jar

session = importlib.import_module("zskip.iceberg.session")  # the module (the package exports its function)


def test_each_supported_spark_line_gets_the_runtime_built_for_it() -> None:
    assert spark_line("4.1.4") == "4.1" and spark_line("3.5.8") == "3.5"
    assert str(iceberg_runtime("4.1.4")) == f"org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:{ICEBERG_VERSION}"
    assert str(iceberg_runtime("3.5.2")) == f"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:{ICEBERG_VERSION}"
    for unsupported in ("4.0.1", "4.2.0", "3.4.4", "banana"):
        with pytest.raises(UnsupportedSessionError, match=r"3\.5\.x and 4\.1\.x"):
            spark_line(unsupported)


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty local Maven repository, and no mvn on PATH."""
    monkeypatch.setenv("MAVEN_OPTS", f"-Xmx1g -Dmaven.repo.local={tmp_path}")
    monkeypatch.setattr(jvm_dependencies.shutil, "which", lambda name: None)
    return tmp_path


def test_the_jar_is_found_in_the_local_repository_or_left_to_spark(repository: Path) -> None:
    coordinate = iceberg_runtime("4.1.4")
    assert local_jar(coordinate) is None and resolve(coordinate) is None  # nothing there, no mvn to fetch it
    jar = repository / "org/apache/iceberg" / coordinate.artifact / coordinate.version / coordinate.file_name
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    assert local_jar(coordinate) == jar == resolve(coordinate)


def test_a_session_gets_zskips_jar_and_the_runtime_unless_it_names_them(repository: Path) -> None:
    runtime = iceberg_runtime(pyspark.__version__)  # the installed Spark's
    coordinate = str(runtime)
    ours = str(zskip_jar(pyspark.__version__))
    # the user's own runtime, by path or by coordinates, is left alone; zskip's jar is added
    assert session._with_jvm_libraries({"spark.jars": "/opt/iceberg-spark-runtime-4.1_2.13-1.11.0.jar"}) == {
        "spark.jars": f"/opt/iceberg-spark-runtime-4.1_2.13-1.11.0.jar,{ours}"
    }
    assert session._with_jvm_libraries({"spark.jars.packages": coordinate}) == {"spark.jars": ours}
    assert session._with_jvm_libraries({"spark.jars": f"{ours},/opt/iceberg-spark-runtime.jar"}) == {}
    # no jar and no mvn: Spark's own resolver gets the coordinates, after the user's packages
    assert session._with_jvm_libraries({"spark.jars.packages": "g:a:1"}) == {
        "spark.jars": ours,
        "spark.jars.packages": f"g:a:1,{coordinate}",
    }
    # a jar in the local repository goes on spark.jars, after the user's jars
    jar = runtime.path_in(repository)
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    assert session._with_jvm_libraries({"spark.jars": "/usr/share/java/postgresql.jar"}) == {
        "spark.jars": f"/usr/share/java/postgresql.jar,{ours},{jar}"
    }


def test_zskips_jar_for_each_spark_line_comes_with_the_package() -> None:
    import zipfile

    for version, name in (("3.5.8", "zskip-spark-3.5_2.12.jar"), ("4.1.4", "zskip-spark-4.1_2.13.jar")):
        jar = zskip_jar(version)
        assert jar.name == name and jar.parent.name == "jars"
        with zipfile.ZipFile(jar) as archive:
            classes = set(archive.namelist())
        # the line's own classes and the shared ones, compiled (no Java source is shipped or compiled at run time)
        expected = {
            "io/zskip/bridge/Bridge.class",
            "io/zskip/spark/SparkLine.class",
            "io/zskip/write/CurveKeys$Route.class",
        }
        assert expected <= classes
        assert ("io/zskip/spark/ListedTable.class" in classes) == version.startswith("3.5")
        assert not any(n.endswith(".java") for n in classes)
    with pytest.raises(UnsupportedSessionError, match=r"3\.5\.x and 4\.1\.x"):
        zskip_jar("4.2.0")


def test_a_missing_jar_says_how_to_build_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(jvm_dependencies.resources, "files", lambda package: tmp_path)
    with pytest.raises(JavaNotFoundError, match="make jars"):
        zskip_jar("4.1.4")


def test_the_jars_verb_prints_coordinates_and_refuses_an_unsupported_spark(capsys: pytest.CaptureFixture[str]) -> None:
    from zskip.cli.main import main

    main(["jars", "--coordinates", "--spark", "3.5.8"])
    assert capsys.readouterr().out.strip() == str(iceberg_runtime("3.5.8"))
    with pytest.raises(SystemExit) as exited:
        main(["jars", "--spark", "4.2.0"])
    assert exited.value.code == 2 and "3.5.x and 4.1.x" in capsys.readouterr().err


def test_the_s3_libraries_come_by_coordinates_for_each_spark_line(capsys: pytest.CaptureFixture[str]) -> None:
    from zskip.cli.main import main
    from zskip.iceberg.jvm_dependencies import object_storage

    names = [c.artifact for c in object_storage("4.1.4")]
    assert names[:3] == ["iceberg-aws-bundle", "hadoop-aws", "s3-transfer-manager"]
    assert names[3:] == ([] if ICEBERG_VERSION == "1.11.0" else ["apache-client"])
    assert [c.artifact for c in object_storage("3.5.8")] == ["iceberg-aws-bundle"]  # S3A there needs SDK v1
    main(["jars", "--coordinates", "--object-storage", "--spark", "4.1.4"])
    printed = capsys.readouterr().out.strip().split(",")
    assert printed[0].startswith("org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:")
    assert "org.apache.hadoop:hadoop-aws:3.4.2" in printed


def test_a_session_adds_the_s3_libraries_when_its_warehouse_or_settings_name_s3() -> None:
    assert session._names_s3("s3a://lake/wh", {})
    assert session._names_s3("file:/tmp/wh", {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"})
    assert session._names_s3("file:/tmp/wh", {"spark.sql.catalog.r.io-impl": "org.apache.iceberg.aws.s3.S3FileIO"})
    assert not session._names_s3("file:/tmp/wh", {"spark.sql.catalog.lake.type": "hadoop"})
    # the user's own AWS bundle is left alone
    assert session._with_object_storage({"spark.jars.packages": "org.apache.iceberg:iceberg-aws-bundle:1.11.0"}) == {}


def test_the_extension_settings_name_the_jars_of_the_spark_line_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    from zskip.cli.main import main

    main(["jars", "--extension", "--submit", "--spark", "3.5.8", "--warehouse", "/tmp/lake", "--python", "/opt/py"])
    out = capsys.readouterr().out
    assert str(zskip_jar("3.5.8")) in out and "zskip-spark-4.1" not in out
    assert "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions," in out
    assert "io.zskip.extensions.ZskipSparkSessionExtensions" in out
    assert "--conf spark.zskip.planner.python=/opt/py" in out
    assert "spark.sql.catalog.lake.warehouse=file:///tmp/lake" in out
    assert "--conf spark.sql.catalog.zskip=io.zskip.procedures.ZskipProcedureCatalog" in out  # CALL on 3.5 too
