"""The JVM libraries by Maven coordinates, and one Java source for both Spark lines (no Spark started)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pyspark
import pytest

from zskip.errors import UnsupportedSessionError
from zskip.iceberg import jvm_dependencies
from zskip.iceberg.janino import for_spark
from zskip.iceberg.jvm_dependencies import ICEBERG_VERSION, iceberg_runtime, local_jar, resolve, spark_line

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


def test_a_session_gets_the_runtime_unless_it_names_one(repository: Path) -> None:
    runtime = iceberg_runtime(pyspark.__version__)  # the installed Spark's
    coordinate = str(runtime)
    # the user's own runtime, by path or by coordinates, is left alone
    assert session._with_iceberg_runtime({"spark.jars": "/opt/iceberg-spark-runtime-4.1_2.13-1.11.0.jar"}) == {}
    assert session._with_iceberg_runtime({"spark.jars.packages": coordinate}) == {}
    # no jar and no mvn: Spark's own resolver gets the coordinates, after the user's packages
    assert session._with_iceberg_runtime({"spark.jars.packages": "g:a:1"}) == {
        "spark.jars.packages": f"g:a:1,{coordinate}"
    }
    # a jar in the local repository goes on spark.jars, after the user's jars
    jar = runtime.path_in(repository)
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    assert session._with_iceberg_runtime({"spark.jars": "/usr/share/java/postgresql.jar"}) == {
        "spark.jars": f"/usr/share/java/postgresql.jar,{jar}"
    }


SOURCE = """class A {
//#if spark3
  int line = 3;
//#else
  int line = 4;
//#endif
//#if spark4
  int only4 = 1;
//#endif
}
"""


def test_one_java_source_keeps_the_lines_of_the_sessions_spark() -> None:
    three, four = for_spark(SOURCE, "3.5.8"), for_spark(SOURCE, "4.1.4")
    assert "int line = 3;" in three and "int line = 4;" not in three and "only4" not in three
    assert "int line = 4;" in four and "int line = 3;" not in four and "only4" in four
    # dropped lines become blank, so the compiler's line numbers are the file's
    assert len(three.splitlines()) == len(four.splitlines()) == len(SOURCE.splitlines())
    assert three.splitlines().index("  int line = 3;") == SOURCE.splitlines().index("  int line = 3;")


@pytest.mark.parametrize(("text", "says"), [("//#if spark4\nx\n", "not closed"), ("//#elif spark4\n", "unknown")])
def test_a_malformed_directive_is_refused(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        for_spark(text, "4.1.4")


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
    assert names == ["iceberg-aws-bundle", "hadoop-aws", "s3-transfer-manager"]
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
