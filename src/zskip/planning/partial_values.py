"""Partial aggregates as values: a bound, a sum or a grouping value in the form zskip's rule reads
(``io.zskip.aggregate.PartialRows``: dates as days, timestamps as microseconds since the epoch,
decimals as text), and two partials merged as Spark's final aggregation would."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import pyarrow as pa

from zskip.iceberg.scan_types import AggregateColumn

__all__ = ["INTEGRAL", "as_json", "exact_type", "exact_value", "merge", "python_values", "sum_as"]

# Spark types whose row-group bounds Parquet holds exactly, by the Arrow types a footer gives them in
INTEGRAL = ("tinyint", "smallint", "int", "bigint")
_EPOCH_DAY = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


_LONG = 2**63


def sum_as(value: Any, result: str) -> Any:
    """A row group's sum as a partial of Spark type ``result``, or ``None`` where it does not fit."""
    if result == "double":
        return float(value)
    if isinstance(value, float):
        return None  # a double's sum as anything else: not asked by Spark
    if result == "bigint":
        whole = int(value)
        return whole if -_LONG <= whole < _LONG and whole == value else None
    if result.startswith("decimal("):
        precision, scale = (int(x) for x in result[len("decimal(") : -1].split(","))
        exact = value.quantize(decimal.Decimal(1).scaleb(-scale))
        if exact != value or len(exact.as_tuple().digits) > precision:
            return None
        return exact
    return None


def exact_value(value: Any, spark_type: str, *, grouping: bool) -> Any:
    """``value`` (a bound as pyarrow gives it) in the JVM's form for ``spark_type``, or ``None``."""
    if value is None:
        return None
    if spark_type in INTEGRAL:
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if spark_type.startswith("decimal"):
        return value if isinstance(value, decimal.Decimal) and value.is_finite() else None
    if spark_type == "date":
        return (value - _EPOCH_DAY).days if type(value) is datetime.date else None
    if spark_type in ("timestamp", "timestamp_ntz") and isinstance(value, datetime.datetime):
        if (value.tzinfo is not None) != (spark_type == "timestamp"):
            return None
        epoch = _EPOCH_UTC if value.tzinfo is not None else _EPOCH
        return (value - epoch) // datetime.timedelta(microseconds=1)
    if spark_type == "boolean":
        return value if isinstance(value, bool) else None
    if spark_type == "string" and grouping:
        return value if isinstance(value, str) else None
    return None


def exact_type(kind: pa.DataType, spark_type: str, *, grouping: bool = False) -> bool:
    """Whether bounds of Arrow type ``kind`` are exact values of the Spark type asked."""
    t = pa.types
    if spark_type in INTEGRAL:
        return t.is_integer(kind)
    if spark_type.startswith("decimal"):
        return t.is_decimal(kind)
    if spark_type == "date":
        return t.is_date32(kind)
    if spark_type in ("timestamp", "timestamp_ntz"):
        # microseconds, as Iceberg writes them (and Spark reads them)
        return t.is_timestamp(kind) and kind.unit == "us" and (kind.tz is not None) == (spark_type == "timestamp")
    if spark_type == "boolean":
        return t.is_boolean(kind)
    if spark_type == "string":
        # bounds may be cut; only equal bounds (every value the same) say a value exactly
        return grouping and (t.is_string(kind) or t.is_large_string(kind))
    return False


def python_values(bounds: pa.Array) -> list[Any]:
    """The bounds as the values Python merges: timestamps as microseconds, dates as days, the rest as
    Arrow gives them."""
    kind = bounds.type
    if pa.types.is_timestamp(kind):  # microseconds (``_exact_type``)
        return bounds.cast(pa.int64()).to_pylist()
    if pa.types.is_date32(kind):
        return bounds.cast(pa.int32()).to_pylist()
    return bounds.to_pylist()


def merge(fn: str, a: Any, b: Any) -> Any:
    """Two partials of ``fn`` as one (``None``: no value, as a sum or minimum of no rows)."""
    if fn == "count":
        return a + b
    if a is None:
        return b
    if b is None:
        return a
    if fn in ("sum", "sum_product"):
        return a + b
    if fn in ("min", "max"):
        return min(a, b) if fn == "min" else max(a, b)
    raise ValueError(f"no merge of {fn} partials")


def as_json(value: Any, column: AggregateColumn | None) -> Any:
    if value is None:
        return None
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, (datetime.date, datetime.datetime)):
        raise TypeError(f"an unconverted {type(value).__name__} for {column}")
    return value
