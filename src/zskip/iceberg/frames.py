"""Bounded DataFrames (samples, metadata tables) to Arrow on the driver, in one bulk transfer."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame

__all__ = ["collect_arrow"]


def collect_arrow(frame: DataFrame) -> pa.Table:
    """``frame`` as an Arrow table.  Only for bounded results: metadata tables, samples, aggregates.

    PySpark 3.5 has no public ``toArrow``; ``_collect_as_arrow`` is the batch transfer that
    ``toPandas`` itself uses.
    """
    batches = frame._collect_as_arrow()
    if batches:
        return pa.Table.from_batches(batches)
    schema = pa.schema([pa.field(f.name, pa.null()) for f in frame.schema.fields])
    return pa.Table.from_batches([], schema=schema) if not frame.schema.fields else _empty(frame)


def _empty(frame: DataFrame) -> pa.Table:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema).empty_table()
