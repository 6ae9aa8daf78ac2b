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

__all__ = ["EXTENSION", "PLANNER_SETTINGS", "PROCEDURE_CATALOG", "extension_settings"]

EXTENSION = "io.zskip.extensions.ZskipSparkSessionExtensions"
# zskip's SQL procedures (CALL zskip.system.optimize(...)): Spark's own CALL, Spark 4.1
PROCEDURE_CATALOG = "io.zskip.procedures.ZskipProcedureCatalog"

# the hosted planner's settings (the application's configuration only: a session's SET does not change them)
PLANNER_SETTINGS: Mapping[str, str] = {
    "spark.zskip.planner.python": "the Python interpreter with zskip and PySpark (default: PySpark's workers')",
    "spark.zskip.planner.timeout": "how long a query waits for zskip's plan before keeping Spark's (default 30s)",
    "spark.zskip.planner.startWait": "how long queries wait for the planner's first start (default 30s)",
    "spark.zskip.planner.startTimeout": "how long the planner may take to start before it is restarted (default 120s)",
    "spark.zskip.procedures.maxConcurrent": "how many procedures may run at once; one more is refused (default 8)",
    "spark.zskip.procedures.timeout": "how long a procedure may run before its jobs are cancelled and the CALL fails "
    "(default 24h; a session may set a shorter bound)",
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
    settings["spark.zskip.planner.python"] = python or sys.executable
    settings["spark.sql.catalog.zskip"] = PROCEDURE_CATALOG
    if catalog and warehouse:
        settings[f"spark.sql.catalog.{catalog}"] = "org.apache.iceberg.spark.SparkCatalog"
        settings[f"spark.sql.catalog.{catalog}.type"] = "hadoop"
        settings[f"spark.sql.catalog.{catalog}.warehouse"] = warehouse
    return settings
