"""Bounded DataFrames (samples, metadata tables) to Arrow on the driver, in one bulk transfer."""

from __future__ import annotations

import base64
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

__all__ = ["collect_arrow", "table_at"]


def collect_arrow(frame: DataFrame) -> pa.Table:
    """``frame`` as an Arrow table.  Only for bounded results: metadata tables, samples, aggregates.

    Collected in the JVM first, then handed over as one Arrow stream (``io.zskip.bridge.ArrowCollect``):
    PySpark's own Arrow collect writes each task's batches to this process from the scheduler's thread,
    so a hosted planner that stalls in the middle of one would stop every job on the server.  A Spark
    Connect DataFrame (no JVM here) is collected by its client.
    """
    from pyspark.sql.pandas.types import to_arrow_schema

    from zskip.iceberg.bridge import bridge

    java = getattr(frame, "_jdf", None)
    if java is not None:
        # Base64 text: Py4J decodes a byte array one byte at a time in Python, a string in bulk
        return pa.ipc.open_stream(base64.b64decode(bridge(frame.sparkSession).arrowStreamBase64(java))).read_all()
    to_arrow: Any = getattr(frame, "toArrow", None)
    if to_arrow is not None:
        return to_arrow()
    collect: Any = frame._collect_as_arrow
    batches = collect()
    if batches:
        return pa.Table.from_batches(batches)
    return to_arrow_schema(frame.schema).empty_table()


def table_at(spark: SparkSession, table: str, snapshot_id: int) -> DataFrame:
    """``table``'s rows at snapshot ``snapshot_id`` (SQL time travel: Iceberg's Spark 4 runtime no
    longer takes a ``snapshot-id`` read option)."""
    return spark.sql(f"SELECT * FROM {table} VERSION AS OF {int(snapshot_id)}")
