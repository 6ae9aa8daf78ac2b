"""zskip's UDFs in the JVM: the curve-key classes of zskip's jar, which the executors have too.

A pandas UDF spends most of a rewrite's map stage moving Arrow batches to a Python worker and back
(measured on 6M rows: 8.1 s with the curve-key pandas UDF, 2.2 s with the same work in a Java UDF,
1.9 s with no key at all).  ``io.zskip.write.CurveKeys`` is in zskip's jar, which the session puts on
``spark.jars`` (so every executor loads it), and the UDF instances (which hold a spec's boundaries
in their fields) travel with the plan like any Java UDF.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, SparkSession
from pyspark.sql.types import DataType

from zskip.iceberg.jvm import java_session, jvm_of

__all__ = ["java_udf_column"]


def java_udf_column(
    spark: SparkSession, class_name: str, payload: bytes, arguments: list[Column], return_type: DataType
) -> Column:
    """``class_name(payload)`` (a UDF class of ``io.zskip.write``, e.g. ``"CurveKeys$Route"``) applied
    to ``arguments``: a plain Spark column, computed on the executors with no Python worker."""
    jvm = jvm_of(spark)
    gateway: Any = spark.sparkContext._gateway
    # a nested class by its binary name, from the class loader that has zskip's jar
    cls = jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(f"io.zskip.write.{class_name}")
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
