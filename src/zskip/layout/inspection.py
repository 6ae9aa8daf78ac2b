"""``zskip inspect``: how well a table's files are laid out for point lookups on each column."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

from zskip.curves import order_key_u64
from zskip.expr import quoted
from zskip.iceberg.frames import collect_arrow
from zskip.iceberg.table import load_table
from zskip.tablefiles.clustering_store import SUMMARY_PROPERTY, read_store

__all__ = ["ColumnLayout", "InspectResult", "file_bounds", "inspect", "lookup_fraction"]

LOOKUP_SAMPLE = 500


@dataclass(frozen=True)
class ColumnLayout:
    name: str
    type: str
    lookup_fraction: float  # average share of files a point lookup on a value from the data reads
    files_without_bounds: int


@dataclass(frozen=True)
class InspectResult:
    table: str
    files: int
    rows: int
    bytes: int
    clustering: dict[str, object] | None
    columns: list[ColumnLayout] = field(default_factory=list)

    @property
    def average_file_bytes(self) -> float:
        return self.bytes / self.files if self.files else 0.0

    def to_json(self) -> str:
        data = dict(self.__dict__)
        data["columns"] = [c.__dict__ for c in self.columns]
        return json.dumps(data, indent=2, default=str)


def file_bounds(spark: SparkSession, table: str, columns: Sequence[str]) -> pa.Table:
    """Per live data file: path, record_count, size, and ``<col>__lower`` / ``<col>__upper`` bounds."""
    selects = ["file_path", "record_count", "file_size_in_bytes"]
    for c in columns:
        selects.append(f"readable_metrics.{quoted(c)}.lower_bound AS {quoted(c + '__lower')}")
        selects.append(f"readable_metrics.{quoted(c)}.upper_bound AS {quoted(c + '__upper')}")
    return collect_arrow(spark.sql(f"SELECT {', '.join(selects)} FROM {table}.files WHERE content = 0"))


def lookup_fraction(lower: pa.Array, upper: pa.Array, values: pa.Array) -> tuple[float, int]:
    """Average fraction of files whose ``[lower, upper]`` holds a value, over ``values``.

    Files without bounds are always read.  Returns ``(fraction, files_without_bounds)``.
    """
    files = len(lower)
    if files == 0:
        return 0.0, 0
    unknown = np.asarray(pa.compute.or_(lower.is_null(), upper.is_null()).to_numpy(zero_copy_only=False))
    present = values.drop_null()
    if len(present) == 0:
        return float(unknown.mean()), int(unknown.sum())
    lo, hi, keys = order_key_u64(lower), order_key_u64(upper), order_key_u64(present)
    hits = (keys[:, None] >= lo[None, :]) & (keys[:, None] <= hi[None, :]) | unknown[None, :]
    return float(hits.mean()), int(unknown.sum())


def inspect(spark: SparkSession, table: str, *, columns: Sequence[str] | None = None) -> InspectResult:
    """Files, rows and bytes of ``table``, its clustering, and per column the average fraction of files
    a point lookup must read (1.0: every file; ``1 / files``: ideal)."""
    iceberg = load_table(spark, table)
    table = iceberg.name  # as the session resolved it, for the statements below
    summary = iceberg.property(SUMMARY_PROPERTY)
    clustering = json.loads(summary) if summary else None
    if columns is None:
        store = read_store(iceberg)
        current = {f.id: f.name for f in iceberg.schema() if not f.nested}
        clustered = [current[i] for i in store.spec.field_ids if i in current] if store else []
        columns = clustered or [f.name for f in iceberg.spark_schema().fields][:3]
    types = iceberg.column_types(columns)
    names = list(types)
    bounds = file_bounds(spark, table, names)
    rows = int(sum(bounds["record_count"].to_pylist())) if bounds.num_rows else 0
    size = int(sum(bounds["file_size_in_bytes"].to_pylist())) if bounds.num_rows else 0
    layouts = []
    if bounds.num_rows:
        fraction = min(1.0, 2.0 * LOOKUP_SAMPLE / max(rows, 1))
        frame = spark.table(table).select(*[quoted(c) for c in names])
        sample = collect_arrow(frame.sample(fraction=fraction, seed=11).limit(LOOKUP_SAMPLE))
        for name in names:
            share, unknown = lookup_fraction(
                bounds[f"{name}__lower"].combine_chunks(),
                bounds[f"{name}__upper"].combine_chunks(),
                sample[name].combine_chunks(),
            )
            layouts.append(ColumnLayout(name, types[name].simpleString(), share, unknown))
    return InspectResult(
        table=table, files=bounds.num_rows, rows=rows, bytes=size, clustering=clustering, columns=layouts
    )


def plot_values(array: pa.Array) -> np.ndarray:
    """Numbers to draw ``array`` with: numbers as they are, dates and timestamps as days, others by key."""
    dtype = array.type
    if pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype):
        return np.asarray(array.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_date(dtype):
        return np.asarray(array.cast(pa.int32()).to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_timestamp(dtype):
        micros = array.cast(pa.timestamp("us", tz=dtype.tz)).cast(pa.int64())
        return np.asarray(micros.to_numpy(zero_copy_only=False), dtype=np.float64) / 86_400e6
    return (order_key_u64(array) >> np.uint64(11)).astype(np.float64)


def key_text(value: float) -> str:
    """The text a string's plotted key stands for: its first bytes (``plot_values`` keeps the top 53 bits)."""
    key = int(max(value, 0.0)) << 11
    raw = min(key, (1 << 64) - 1).to_bytes(8, "big").rstrip(b"\0")
    return raw[:6].decode("utf-8", "ignore")


def epoch_day(value: float) -> str:
    return (dt.date(1970, 1, 1) + dt.timedelta(days=int(value))).isoformat()
