"""zskip's UDFs in the JVM: classes from ``java/`` compiled once per JVM and shipped to the executors.

A pandas UDF spends most of a rewrite's map stage moving Arrow batches to a Python worker and back
(measured on 6M rows: 8.1 s with the curve-key pandas UDF, 2.2 s with the same work in a Java UDF,
1.9 s with no key at all).  ``CurveKeys.java`` is compiled by Janino, the compiler Spark ships, so a
Java runtime is enough; its bytecode goes into a jar that ``SparkContext.addJar`` serves to every
executor, and the UDF instances (which hold a spec's boundaries in their fields) travel with the
plan like any Java UDF.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import time
import zipfile
from importlib import resources
from typing import Any

from pyspark.sql import Column, SparkSession
from pyspark.sql.types import DataType

from zskip.errors import UnsupportedSessionError
from zskip.iceberg.jvm import java_session, jvm_of

__all__ = ["java_udf_column"]

log = logging.getLogger(__name__)

_SOURCE = "java/CurveKeys.java"
_lock = threading.Lock()
_LOADERS: list[tuple[Any, Any]] = []  # (JVM view, class loader of the compiled classes)


def java_udf_column(
    spark: SparkSession, class_name: str, payload: bytes, arguments: list[Column], return_type: DataType
) -> Column:
    """``class_name(payload)`` (a UDF class of ``CurveKeys.java``, e.g. ``"CurveKeys$Route"``) applied
    to ``arguments``: a plain Spark column, computed on the executors with no Python worker."""
    jvm = jvm_of(spark)
    gateway: Any = spark.sparkContext._gateway
    cls = _class_loader(spark, jvm).loadClass(f"zskip.keys.{class_name}")
    instance = cls.getConstructor(_classes(jvm, gateway, "[B")).newInstance(_objects(jvm, gateway, bytearray(payload)))
    java_type = java_session(spark).parseDataType(return_type.json())
    # functions.udf(UDFn, DataType) by reflection: py4j may otherwise pick the untyped Scala
    # overload udf(Object, DataType), which Spark refuses
    udf = jvm.java.lang.Class.forName("org.apache.spark.sql.functions").getMethod(
        "udf",
        _classes(
            jvm, gateway, f"org.apache.spark.sql.api.java.UDF{len(arguments)}", "org.apache.spark.sql.types.DataType"
        ),
    )
    function = udf.invoke(None, _objects(jvm, gateway, instance, java_type))
    columns = jvm.PythonUtils.toSeq([column._jc for column in arguments])
    return Column(function.apply(columns))


def _classes(jvm: Any, gateway: Any, *names: str) -> Any:
    array = gateway.new_array(jvm.java.lang.Class, len(names))
    for i, name in enumerate(names):
        array[i] = jvm.java.lang.Class.forName(name)
    return array


def _objects(jvm: Any, gateway: Any, *values: Any) -> Any:
    array = gateway.new_array(jvm.java.lang.Object, len(values))
    for i, value in enumerate(values):
        array[i] = value
    return array


def _class_loader(spark: SparkSession, jvm: Any) -> Any:
    for known, loader in _LOADERS:
        if known is jvm:
            return loader
    with _lock:
        for known, loader in _LOADERS:
            if known is jvm:
                return loader
        loader = _compile(spark, jvm)
        _LOADERS.append((jvm, loader))
        return loader


def _compile(spark: SparkSession, jvm: Any) -> Any:
    started = time.perf_counter()
    source = resources.files("zskip.iceberg").joinpath(_SOURCE).read_text(encoding="utf-8")
    try:
        compiler = jvm.org.codehaus.janino.SimpleCompiler()
        compiler.setParentClassLoader(jvm.java.lang.Thread.currentThread().getContextClassLoader())
        compiler.cook(source)
        bytecodes = compiler.getBytecodes()
        classes = {str(name): bytes(bytecodes.get(name)) for name in bytecodes.keySet()}
    except Exception as exc:
        lines = str(exc).splitlines()
        reason = next((line for line in lines if "Exception" in line and "Line" in line), lines[0] if lines else "")
        raise UnsupportedSessionError(
            f"zskip could not compile its JVM curve-key functions with Spark's Janino compiler "
            f"({reason.strip()}): zskip needs PySpark 3.5"
        ) from exc
    # Executors load the classes from a jar the driver serves; the driver uses the compiler's own
    # loader.  The jar is named by its content, so another session reuses the one already there.
    digest = hashlib.sha256(b"".join(name.encode() + code for name, code in sorted(classes.items()))).hexdigest()
    jar = os.path.join(tempfile.gettempdir(), f"zskip-jvm-{digest[:16]}.jar")
    if not os.path.exists(jar):
        partial = f"{jar}.{os.getpid()}.{threading.get_ident()}"
        with zipfile.ZipFile(partial, "w") as archive:
            for name, code in sorted(classes.items()):
                archive.writestr(name.replace(".", "/") + ".class", code)
        os.replace(partial, jar)
    java_session(spark).sparkContext().addJar(jar)
    log.debug("compiled zskip's JVM curve-key functions in %.0f ms", (time.perf_counter() - started) * 1000)
    return compiler.getClassLoader()
