"""The examples in the pure packages' docstrings run, and give what they show (``>>>`` lines)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import zskip

PURE = ("zskip.curves", "zskip.expr", "zskip.fileindex")  # every module of these packages
# pure modules elsewhere whose docstrings show examples (the others' examples need a Spark session)
PURE_MODULES = (
    "zskip.units",
    "zskip.settings",
    "zskip.planning.selectivity",
    "zskip.planning.minmax_arrays",
    "zskip.maintenance.axis_weights",
    "zskip.maintenance.simulator",
)


def _modules(package: str) -> list[str]:
    found = [package]
    module = importlib.import_module(package)
    for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
        found.append(info.name)
    return found


def _run(name: str) -> int:
    """Runs ``name``'s docstring examples; how many lines it tried."""
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see above)"
    return result.attempted


@pytest.mark.parametrize("package", PURE)
def test_the_pure_packages_docstring_examples_run(package: str) -> None:
    for name in _modules(package):
        _run(name)


@pytest.mark.parametrize("name", PURE_MODULES)
def test_pure_modules_docstring_examples_run(name: str) -> None:
    assert _run(name) > 0, f"{name} has no docstring examples left: drop it from PURE_MODULES"


def test_the_examples_are_found() -> None:
    assert sum(_run(name) for package in PURE for name in _modules(package)) >= 20
    assert all(name.startswith(f"{zskip.__name__}.") for name in (*PURE, *PURE_MODULES))
