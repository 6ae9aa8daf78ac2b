"""The JVM behind a SparkSession, checked once: zskip needs classic PySpark (py4j), Iceberg's runtime
and zskip's own jar.

A Spark Connect session has no JVM in this process, and a session started without Iceberg's
Spark runtime cannot load an Iceberg table; both get one clear error instead of an
``AttributeError`` on ``_jsparkSession`` or py4j's "'JavaPackage' object is not callable".  A session
started without zskip's jar (one the user built before importing zskip) is given it: the driver's
class loader takes it (Spark's own, which loaded ``spark.jars``) and the executors fetch it.
"""

from __future__ import annotations

import weakref
from typing import Any

from zskip.errors import UnsupportedSessionError

__all__ = ["java_session", "jvm_of"]

_CHECKED: weakref.WeakSet[Any] = weakref.WeakSet()


def _check(spark: Any) -> None:
    if spark in _CHECKED:
        return
    if not hasattr(spark, "_jsparkSession") or not hasattr(spark, "sparkContext"):
        kind = f"{type(spark).__module__}.{type(spark).__name__}"
        connect = "connect" in kind
        raise UnsupportedSessionError(
            f"zskip needs a classic SparkSession with a JVM in this process, got {kind}"
            + (" (Spark Connect)" if connect else "")
            + ": start Spark with zskip.session() or SparkSession.builder (without .remote(...)) "
            "and the Iceberg Spark runtime on spark.jars"
        )
    from py4j.java_gateway import JavaClass

    from zskip.iceberg.jvm_dependencies import iceberg_runtime

    runtime = spark.sparkContext._jvm.org.apache.iceberg.spark.Spark3Util
    if not isinstance(runtime, JavaClass):
        raise UnsupportedSessionError(
            "this Spark session has no Apache Iceberg runtime (org.apache.iceberg.spark.Spark3Util is not "
            "on its classpath): start it with zskip.session(), or add "
            f"{iceberg_runtime(str(spark.version))} to spark.jars.packages (`zskip jars` fetches it for "
            "spark.jars) and set spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        )
    if not isinstance(spark.sparkContext._jvm.io.zskip.bridge.Bridge, JavaClass):
        _add_zskip_jar(spark)
    _CHECKED.add(spark)


def _add_zskip_jar(spark: Any) -> None:
    """Put zskip's jar on a running session's classpath: the driver's and, through Spark, the executors'."""
    from py4j.java_gateway import JavaClass

    from zskip.iceberg.jvm_dependencies import zskip_jar

    jar = zskip_jar(str(spark.version))
    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    if loader is not None and str(loader.getClass().getName()).endswith("MutableURLClassLoader"):
        loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())
        spark.sparkContext._jsc.sc().addJar(str(jar))
    if not isinstance(jvm.io.zskip.bridge.Bridge, JavaClass):
        raise UnsupportedSessionError(
            f"this Spark session was started without zskip's jar and its class loader does not take one: start "
            f"it with zskip.session(), or add {jar} to spark.jars (`zskip jars` prints its path)"
        )


def java_session(spark: Any) -> Any:
    """The JVM ``SparkSession`` behind ``spark``, after checking zskip can use it."""
    _check(spark)
    return spark._jsparkSession


def jvm_of(spark: Any) -> Any:
    """The py4j JVM view of ``spark``, after checking zskip can use it."""
    _check(spark)
    return spark.sparkContext._jvm


# py4j answers longer than the JVM side's 8 KiB write buffer leave in two writes, and the second
# waits for a delayed TCP acknowledgement: measured here, any answer over 8,192 bytes costs a flat
# 44 ms, one under it 0.1 ms.  Long text therefore crosses in pieces that stay under the buffer
# (3,000 characters: under 8 KiB even as 3-byte UTF-8 with py4j's escapes counted).
TEXT_PIECE = 3_000


def java_text(jvm: Any, java_object: Any) -> str:
    """``String.valueOf(java_object)`` brought to Python in pieces small enough to cross py4j fast."""
    builder = jvm.java.lang.StringBuilder()
    builder.append(java_object)
    size = int(builder.length())
    if size <= TEXT_PIECE:
        return str(builder.toString())
    return "".join(str(builder.substring(start, min(start + TEXT_PIECE, size))) for start in range(0, size, TEXT_PIECE))
