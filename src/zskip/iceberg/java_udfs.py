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
import zipfile
from typing import Any

from pyspark.sql import Column, SparkSession
from pyspark.sql.types import DataType

from zskip.iceberg.janino import compiled
from zskip.iceberg.jvm import java_session, jvm_of

__all__ = ["java_udf_column"]

log = logging.getLogger(__name__)

_SOURCE = "CurveKeys.java"
_lock = threading.Lock()
_SHIPPED: list[Any] = []  # JVM views whose executors were given the classes


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
    """The loader of ``CurveKeys.java``'s classes in the driver, after the executors were given them."""
    compiler = compiled(spark, _SOURCE)
    with _lock:
        if not any(known is jvm for known in _SHIPPED):
            _ship(spark, compiler)
            _SHIPPED.append(jvm)
    return compiler.getClassLoader()


def _ship(spark: SparkSession, compiler: Any) -> None:
    """Put the compiled classes in a jar that ``SparkContext.addJar`` serves to every executor (the jar
    is named by its content, so another session on this machine reuses the one already there)."""
    bytecodes = compiler.getBytecodes()
    classes = {str(name): bytes(bytecodes.get(name)) for name in bytecodes.keySet()}
    digest = hashlib.sha256(b"".join(name.encode() + code for name, code in sorted(classes.items()))).hexdigest()
    jar = os.path.join(tempfile.gettempdir(), f"zskip-jvm-{digest[:16]}.jar")
    if not os.path.exists(jar):
        partial = f"{jar}.{os.getpid()}.{threading.get_ident()}"
        with zipfile.ZipFile(partial, "w") as archive:
            for name, code in sorted(classes.items()):
                archive.writestr(name.replace(".", "/") + ".class", code)
        os.replace(partial, jar)
    java_session(spark).sparkContext().addJar(jar)
    log.debug("shipped zskip's JVM curve-key functions to the executors in %s", jar)
