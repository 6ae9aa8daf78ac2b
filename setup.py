"""The package build runs Maven for zskip's jars (``jvm/build_jars.py``): a wheel carries them.

Everything else about the package is in pyproject.toml.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithJars(build_py):
    """``build_py`` that first builds zskip's jars into the package when they are missing or older
    than the Java sources (a source tree without ``jvm/``, e.g. an sdist's, uses the jars it has)."""

    def run(self) -> None:
        builder = HERE / "jvm" / "build_jars.py"
        if builder.is_file():
            spec = importlib.util.spec_from_file_location("build_jars", builder)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            jars = [module.TARGET / name for name in module.MODULES.values()]
            sources = [p for p in (HERE / "jvm").rglob("*") if p.suffix in (".java", ".xml")]
            newest = max((p.stat().st_mtime for p in sources), default=0.0)
            if not all(j.is_file() and j.stat().st_mtime >= newest for j in jars):
                module.build(tests=False)
        super().run()


setup(cmdclass={"build_py": BuildWithJars})
