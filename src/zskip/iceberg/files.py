"""Data-file metadata of a table, in bulk: one Spark query over ``<table>.files``, read as Arrow."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession

from zskip.iceberg.frames import collect_arrow

__all__ = ["data_files"]


def data_files(spark: SparkSession, table: str, *, snapshot_id: int | None = None) -> pa.Table:
    """One row per live data file: ``file_path``, ``partition_key`` (JSON text, "" when unpartitioned),
    ``spec_id``, ``record_count``, ``file_size_in_bytes``, ``split_offsets`` (row-group starts, or null).
    """
    files = f"{table}.files"
    if snapshot_id is not None:
        files += f" VERSION AS OF {int(snapshot_id)}"
    columns = {f.name for f in spark.sql(f"SELECT * FROM {table}.files LIMIT 0").schema.fields}
    partition = "to_json(partition)" if "partition" in columns else "''"
    frame = spark.sql(
        f"SELECT file_path, {partition} AS partition_key, spec_id, record_count, file_size_in_bytes, split_offsets "
        f"FROM {files} WHERE content = 0"
    )
    return collect_arrow(frame)
