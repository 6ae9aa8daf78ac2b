"""zskip's Java sources (``java/``) compiled in the driver's JVM by Janino, once per JVM and source.

Janino is the compiler Spark ships for its code generation, so a Java runtime is enough and nothing
is built at install time.  It compiles Java without generics' inference or lambdas.

One source serves every supported Spark line: where Spark's or Iceberg's API differs between them,
the source holds both versions between ``//#if spark4`` (or ``spark3``), ``//#else`` and ``//#endif``
lines, and only the lines for the session's Spark are compiled (the others become blank lines, so
Janino's line numbers stay those of the file).
"""

from __future__ import annotations

import logging
import threading
import time
from importlib import resources
from typing import Any

from zskip.errors import UnsupportedSessionError
from zskip.iceberg.jvm import jvm_of
from zskip.iceberg.jvm_dependencies import spark_major

__all__ = ["compiled", "for_spark"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_COMPILED: list[tuple[Any, str, Any]] = []  # (JVM view, source, SimpleCompiler that cooked it)
# source -> the source whose classes it refers to (compiled first; its class loader is the parent)
USES = {"Bridge.java": "SnapshotFiles.java", "PlanHook.java": "Bridge.java"}


def compiled(spark: Any, source: str) -> Any:
    """The Janino ``SimpleCompiler`` that compiled ``source`` (a file of ``zskip/iceberg/java/``) in
    ``spark``'s JVM: its ``getClassLoader()`` loads the classes, ``getBytecodes()`` holds them.
    A source that refers to another's classes (``USES``) is compiled after it, under its class loader.
    """
    jvm = jvm_of(spark)
    uses = USES.get(source)
    parent = compiled(spark, uses).getClassLoader() if uses is not None else None
    for known, name, compiler in _COMPILED:
        if known is jvm and name == source:
            return compiler
    with _lock:
        for known, name, compiler in _COMPILED:
            if known is jvm and name == source:
                return compiler
        compiler = _compile(jvm, source, parent, str(spark.version))
        _COMPILED.append((jvm, source, compiler))
        return compiler


def for_spark(text: str, spark_version: str) -> str:
    """``text`` with only the ``//#if`` blocks that hold for ``spark_version`` (``spark3``, ``spark4``)."""
    flags = {f"spark{spark_major(spark_version)}"}
    out: list[str] = []
    keep: list[bool] = []  # one entry per open block: whether its current branch is compiled
    for number, line in enumerate(text.splitlines(), start=1):
        directive = line.strip()
        if directive.startswith("//#if "):
            keep.append(directive[len("//#if ") :].strip() in flags)
            out.append("")
        elif directive == "//#else" and keep:
            keep[-1] = not keep[-1]
            out.append("")
        elif directive == "//#endif" and keep:
            keep.pop()
            out.append("")
        elif directive.startswith("//#"):
            raise ValueError(f"line {number}: unknown directive {directive!r}")
        else:
            out.append(line if all(keep) else "")
    if keep:
        raise ValueError("an //#if block is not closed")
    return "\n".join(out) + "\n"


def _compile(jvm: Any, source: str, parent: Any, spark_version: str) -> Any:
    started = time.perf_counter()
    raw = resources.files("zskip.iceberg").joinpath(f"java/{source}").read_text(encoding="utf-8")
    text = for_spark(raw, spark_version)
    try:
        compiler = jvm.org.codehaus.janino.SimpleCompiler()
        compiler.setParentClassLoader(
            parent if parent is not None else jvm.java.lang.Thread.currentThread().getContextClassLoader()
        )
        compiler.cook(text)
    except Exception as exc:
        lines = str(exc).splitlines()
        reason = next((line for line in lines if "Exception" in line and "Line" in line), lines[0] if lines else "")
        raise UnsupportedSessionError(
            f"zskip could not compile its JVM code ({source}) with Spark's Janino compiler ({reason.strip()}): "
            "zskip needs PySpark 3.5 or 4.1 with the Iceberg runtime zskip.session() puts on spark.jars"
        ) from exc
    log.debug("compiled %s in %.0f ms", source, (time.perf_counter() - started) * 1000)
    return compiler
