"""zskip for a whole application from its configuration: the settings that turn zskip's Spark extension on.

With them in ``spark-defaults.conf`` (or as ``--conf`` of ``spark-submit``, ``spark-sql``,
``start-connect-server.sh``, ``start-thriftserver.sh``), every session of the application plans its
queries of zskip's tables through zskip, whoever runs them: Spark Connect and JDBC clients, SQL
scripts, Scala, Java and PySpark jobs that never import zskip.  The planner runs in a Python process
the application's JVM starts (``zskip.hosted``), with the interpreter ``spark.zskip.planner.python``
names, which must have zskip and the application's PySpark installed.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from zskip.iceberg.session import ICEBERG_EXTENSIONS, _with_jvm_libraries
from zskip.settings import PLANNER_PYTHON, SETTINGS

__all__ = ["EXTENSION", "PLANNER_SETTINGS", "PROCEDURE_CATALOG", "extension_settings"]

EXTENSION = "io.zskip.extensions.ZskipSparkSessionExtensions"
# zskip's SQL procedures (CALL zskip.system.optimize(...)): Spark's own CALL, Spark 4.1
PROCEDURE_CATALOG = "io.zskip.procedures.ZskipProcedureCatalog"

WORKERS_PYTHON = "the interpreter of PySpark's workers"
# the hosted planner's settings (the application's configuration only: a session's SET does not change them)
PLANNER_SETTINGS: Mapping[str, str] = {
    s.key: f"{s.description} (default: {s.default or WORKERS_PYTHON})" for s in SETTINGS if s.scope == "application"
}


def extension_settings(
    *,
    spark_version: str | None = None,
    python: str | None = None,
    catalog: str | None = None,
    warehouse: str | None = None,
) -> dict[str, str]:
    """The settings that turn zskip on for every session of an application: zskip's jar and Iceberg's
    runtime on ``spark.jars``, Iceberg's and zskip's extensions, the planner's interpreter (default:
    this one), the catalog of zskip's procedures (``zskip``: ``CALL zskip.system.optimize(...)``) and,
    with ``catalog`` and ``warehouse``, an Iceberg catalog of the hadoop kind there.  Iceberg's runtime comes as
    ``spark.jars.packages`` when there is no ``mvn`` to fetch it."""
    settings = _with_jvm_libraries({}, spark_version)
    settings["spark.sql.extensions"] = f"{ICEBERG_EXTENSIONS},{EXTENSION}"
    settings[PLANNER_PYTHON.key] = python or sys.executable
    settings["spark.sql.catalog.zskip"] = PROCEDURE_CATALOG
    if catalog and warehouse:
        settings[f"spark.sql.catalog.{catalog}"] = "org.apache.iceberg.spark.SparkCatalog"
        settings[f"spark.sql.catalog.{catalog}.type"] = "hadoop"
        settings[f"spark.sql.catalog.{catalog}.warehouse"] = warehouse
    return settings
