"""Architecture rules checked on the source: ``zskip.iceberg`` is the only door to the JVM, and each
layer imports only from the layers above it (DESIGN.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "zskip"

# py4j handles: the JVM, a Java object behind a Python wrapper, or a loaded Iceberg table's Java side
JVM_ATTRIBUTES = frozenset({"_jvm", "_jsparkSession", "_jdf", "_jsc", "_jconf", "_gateway", "java", "jvm"})

# the layers that run zskip's verbs and everything under them
VERBS = {"curves", "expr", "fileindex", "iceberg", "tablefiles", "layout", "indexing", "planning", "maintenance"}

# layer -> layers it may import from (besides itself); errors/units/datasets are shared helpers
LAYERS: dict[str, set[str]] = {
    "curves": set(),
    "expr": set(),
    "fileindex": {"curves", "expr"},
    "iceberg": {"curves", "expr", "fileindex"},
    "tablefiles": {"curves", "expr", "fileindex", "iceberg"},
    "layout": {"curves", "expr", "fileindex", "iceberg", "tablefiles"},
    "indexing": {"curves", "expr", "fileindex", "iceberg", "tablefiles", "layout"},
    "planning": {"curves", "expr", "fileindex", "iceberg", "tablefiles"},
    "maintenance": VERBS - {"maintenance"},
    "viz": VERBS - {"maintenance"},
    "procedures": VERBS,
    "hosted": VERBS | {"procedures"},
    "cli": VERBS | {"viz", "datasets", "demo"},
}
SHARED = {"degraded", "display", "errors", "retries", "settings", "storage", "units"}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def layer_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


@pytest.mark.parametrize("path", [p for p in modules() if layer_of(p) != "iceberg"], ids=lambda p: p.name)
def test_only_zskip_iceberg_touches_the_jvm(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    touches = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in JVM_ATTRIBUTES
    ]
    assert not touches, "JVM access outside zskip.iceberg (add a function there instead): " + ", ".join(touches)


@pytest.mark.parametrize("path", [p for p in modules() if layer_of(p) in LAYERS], ids=lambda p: p.name)
def test_layers_import_only_from_above(path: Path) -> None:
    layer = layer_of(path)
    allowed = LAYERS[layer] | SHARED | {layer}
    tree = ast.parse(path.read_text(), filename=str(path))
    wrong = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "zskip" and len(parts) > 1 and parts[1] not in allowed:
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports {name}")
    assert not wrong, f"layer {layer} may import only from {sorted(allowed)}: " + ", ".join(wrong)


def test_the_jvm_check_sees_a_violation(tmp_path: Path) -> None:
    """The rule above is not vacuous: a module reaching into py4j is caught."""
    sample = "def f(spark):\n    return spark._jsparkSession.sessionState()\n"
    tree = ast.parse(sample)
    assert any(isinstance(n, ast.Attribute) and n.attr in JVM_ATTRIBUTES for n in ast.walk(tree))


STAGES = PACKAGE / "planning" / "stages"


@pytest.mark.parametrize(
    "path", sorted(p for p in STAGES.glob("*.py") if p.name != "__init__.py"), ids=lambda p: p.name
)
def test_no_stage_imports_another(path: Path) -> None:
    """What several stages share lives in planning modules that are not stages (DESIGN: stages stand alone)."""
    assert _stage_imports(path.read_text()) == []


def _stage_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("zskip.planning.stages"):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("zskip.planning.stages")]
    return found


def test_the_stage_check_sees_a_violation() -> None:
    assert _stage_imports("from zskip.planning.stages.indexes import worth_reading\n") == [
        "zskip.planning.stages.indexes"
    ]


def test_importing_zskip_imports_nothing_from_the_working_directory(tmp_path: Path) -> None:
    """PySpark's workers import zskip in the JVM's working directory, which Python puts first on
    ``sys.path``: importing zskip uses no module such a directory could shadow (``argparse`` is
    imported only by the command lines that need it)."""
    import subprocess
    import sys

    (tmp_path / "argparse.py").write_text("raise SystemExit('the working directory was imported from')\n")
    done = subprocess.run(
        [sys.executable, "-c", "import zskip, zskip.settings, zskip.procedures"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(PACKAGE.parent)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
