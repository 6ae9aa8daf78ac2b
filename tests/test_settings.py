"""One registry of settings per language (``zskip.settings``, ``io.zskip.settings.ZskipSettings``): every
key zskip reads is declared there and only there, the two registries agree, and the settings reference
is written from them."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pyspark
import pytest

from zskip import settings
from zskip.iceberg.jvm_dependencies import zskip_jar

ROOT = Path(__file__).resolve().parents[1]
PYTHON_REGISTRY = ROOT / "src" / "zskip" / "settings.py"
JAVA_REGISTRY = ROOT / "jvm" / "common" / "src" / "main" / "java" / "io" / "zskip" / "settings" / "ZskipSettings.java"
# a key as code would spell it: a Spark setting, a table property of zskip's, the planner's environment
KEY = re.compile(r"spark\.zskip\.[A-Za-z][\w.]*|zskip\.(?:write|clustering|index)(?:\.[a-z][\w-]*)*|ZSKIP_PLANNING_\w+")
JAVA_LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def python_keys(source: str) -> list[str]:
    """The string constants of ``source`` that are a key and nothing else (prose naming keys is not a use)."""
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEY.fullmatch(node.value)
    ]


def java_keys(source: str) -> list[str]:
    """The string literals of ``source`` that are a key, or a key's start (``"spark.zskip."``)."""
    return [m for m in JAVA_LITERAL.findall(source) if KEY.fullmatch(m) or m == settings.PREFIX]


def test_the_checks_see_a_key_spelled_out() -> None:
    assert python_keys('"""Reads spark.zskip.enabled."""\nX = "spark.zskip.planner.timeout"\n') == [
        "spark.zskip.planner.timeout"
    ]
    assert python_keys('p = "zskip.clustering.store"; m = "zskip.indexing"') == ["zskip.clustering.store"]
    assert java_keys('conf.get("spark.zskip.x", "1"); // "not code" \n s.startsWith("spark.zskip.")') == [
        "spark.zskip.x",
        "spark.zskip.",
    ]


@pytest.mark.parametrize("language", ["python", "java"])
def test_no_key_is_spelled_out_outside_its_registry(language: str) -> None:
    if language == "python":
        sources = [p for p in (ROOT / "src" / "zskip").rglob("*.py") if p != PYTHON_REGISTRY]
        found = {f"{p.relative_to(ROOT)}: {k}" for p in sources for k in python_keys(p.read_text())}
    else:
        sources = [p for p in (ROOT / "jvm").glob("*/src/main/java/**/*.java") if p != JAVA_REGISTRY]
        found = {f"{p.relative_to(ROOT)}: {k}" for p in sources for k in java_keys(p.read_text())}
    assert len(sources) > 20
    assert not found, "read these through the registry (declare them there first): " + ", ".join(sorted(found))


def test_every_registered_key_is_read_somewhere() -> None:
    """A registry entry nothing reads is a setting that does nothing."""
    code = "".join(p.read_text() for p in (ROOT / "src" / "zskip").rglob("*.py") if p != PYTHON_REGISTRY)
    code += "".join(p.read_text() for p in (ROOT / "jvm").glob("*/src/main/java/**/*.java") if p != JAVA_REGISTRY)
    names = {
        name
        for name, value in vars(settings).items()
        if isinstance(value, (settings.Setting, settings.TableProperty)) and name.isupper()
    }
    unread = sorted(name for name in names if not re.search(rf"\b{name}\b", code))
    assert not unread, f"registered but read nowhere: {unread}"


@pytest.fixture(scope="module")
def java_registry() -> dict[str, list[dict[str, str]]]:
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    answer = subprocess.run(
        [java, "-cp", str(zskip_jar(pyspark.__version__)), "io.zskip.settings.ZskipSettings"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(answer.stdout)


def test_the_two_languages_declare_the_same_settings(java_registry: dict[str, list[dict[str, str]]]) -> None:
    def spark_side(entries: tuple[settings.Setting, ...]) -> list[dict[str, str]]:
        return [{k: v for k, v in dataclasses.asdict(s).items() if k not in ("shown", "see")} for s in entries]

    assert java_registry["settings"] == spark_side(settings.SETTINGS)
    assert java_registry["environment"] == spark_side(settings.ENVIRONMENT)
    assert java_registry["properties"] == [
        {k: v for k, v in dataclasses.asdict(p).items() if k != "see"} for p in settings.PROPERTIES
    ]


def test_the_settings_reference_is_written_from_the_registry() -> None:
    page = ROOT / "docs" / "reference" / "settings.md"
    text = page.read_text()
    assert settings.with_tables(text) == text, "run: python -m zskip.settings --write docs/reference/settings.md"
    for entry in (*settings.SETTINGS, *settings.ENVIRONMENT, *settings.PROPERTIES):
        assert f"| `{entry.key}` |" in text


@pytest.mark.parametrize(
    ("text", "default", "expected"),
    [(None, True, True), ("FALSE", True, False), (" off ", True, False), ("1", False, True), ("tru", False, False)],
)
def test_a_flag_reads_as_the_jvm_reads_it(text: str | None, default: bool, expected: bool) -> None:
    # io.zskip.settings.ZskipSettingsTest checks the same table on the JVM side
    assert settings.flag(text, default=default) is expected
