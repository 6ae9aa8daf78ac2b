"""Curve keys inside Spark: order-preserving "carrier" columns, and a pandas UDF over them.

Optimize keys rows in the JVM (``zskip.layout.java_keys``) from the same carriers; the pandas UDF
here is the definition those keys are tested against and the path for columns the JVM does not key
(decimals wider than 18 digits).

Spark hands a pandas UDF each column as a pandas Series; dates, timestamps and decimals would
arrive as Python objects (slow) and nullable longs as float64 (lossy).  So each clustered column
is first turned, in Spark, into a carrier whose order key equals the column's own key
(``zskip.curves.order_key_u64``): days for dates, microseconds for timestamps, the unscaled long
for decimals up to precision 18, bytes for strings, and a separate null flag.  The UDF rebuilds
Arrow arrays from the carriers and computes keys with the same numpy code the planner uses.

Two alternatives were measured on a 6M-row rewrite and dropped.  Carriers that are the order keys
themselves (strings keyed by Spark's ``conv``, one long per column, no null flags) were no faster
(8.2 s against 7.5 s, medians of 4).  The whole key as Spark expressions (rank by a binary search
over an array literal, Z-order by bit spreading, Hilbert one projection per level) computed the
same keys but ran 4-7x slower: the generated method exceeds HotSpot's 8,000-byte JIT limit and is
interpreted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from zskip.curves import ClusteringSpec, order_key_u64
from zskip.expr import quoted

__all__ = [
    "Carrier",
    "CurveKeys",
    "carrier",
    "carrier_sql",
    "carrier_value",
    "column_key_frame_columns",
    "curve_key_column",
    "curve_key_inputs",
    "signed_key",
]

SIGN = np.uint64(1 << 63)


@dataclass(frozen=True, slots=True)
class Carrier:
    """How one column travels to Python: an expression, its kind, and the Arrow type to rebuild."""

    kind: str  # "long", "double", "bytes", "decimal"
    arrow_type_text: str  # pyarrow type name, e.g. "int64" or "decimal128(38, 2)"

    def arrow_type(self) -> pa.DataType:
        if self.kind == "decimal":
            precision, scale = (int(x) for x in self.arrow_type_text[len("decimal128(") : -1].split(","))
            return pa.decimal128(precision, scale)
        return {"long": pa.int64(), "double": pa.float64(), "bytes": pa.binary()}[self.kind]


def carrier(name: str, dtype: DataType) -> tuple[Column, Carrier]:
    """The carrier expression of column ``name`` (nulls replaced; the null flag travels apart)."""
    value, kind = carrier_value(name, dtype)
    default = _NULL_STAND_INS.get(kind.kind)
    return F.coalesce(value, F.lit(0).cast(dtype) if default is None else F.expr(default)), kind


# what a null carrier becomes (its flag says it was null); a wide decimal uses 0 of its own type
_NULL_STAND_INS = {"double": "0.0D", "bytes": "CAST('' AS BINARY)", "long": "0L"}


def carrier_value(name: str, dtype: DataType) -> tuple[Column, Carrier]:
    """The carrier expression of column ``name``, null where the column is null."""
    template, kind = carrier_sql(dtype)
    if template == "{}":
        return F.col(quoted(name)), kind
    return F.expr(template.replace("{}", quoted(name))), kind


def carrier_sql(dtype: DataType) -> tuple[str, Carrier]:
    """The carrier of a column of type ``dtype`` as Spark SQL with ``{}`` where the (quoted) column
    goes: what optimize keys by, and what a clustered write keys by in the JVM (``write_keys``)."""
    if isinstance(dtype, (FloatType, DoubleType)):
        return "CAST({} AS DOUBLE)", Carrier("double", "float64")
    if isinstance(dtype, (StringType, BinaryType)):
        return "CAST({} AS BINARY)", Carrier("bytes", "binary")
    if isinstance(dtype, DecimalType):
        if dtype.precision > 18:
            return "{}", Carrier("decimal", f"decimal128({dtype.precision}, {dtype.scale})")
        if dtype.scale:
            return f"CAST({{}} * 1{'0' * dtype.scale}BD AS BIGINT)", Carrier("long", "int64")
        return "CAST({} AS BIGINT)", Carrier("long", "int64")
    if isinstance(dtype, DateType):
        return "CAST(unix_date({}) AS BIGINT)", Carrier("long", "int64")
    if isinstance(dtype, TimestampType):
        return "unix_micros({})", Carrier("long", "int64")
    if isinstance(dtype, TimestampNTZType):
        return "timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {})", Carrier("long", "int64")
    return "CAST({} AS BIGINT)", Carrier("long", "int64")  # boolean, byte, short, int, long


def _keys_from_carrier(values: pd.Series, nulls: pd.Series, spec: Carrier) -> np.ndarray:
    mask = nulls.to_numpy(dtype=bool)
    if spec.kind in ("long", "double"):
        array = pa.array(values.to_numpy(), type=spec.arrow_type())
    else:
        array = pa.array(values.tolist(), type=spec.arrow_type())
    keys = order_key_u64(array)
    keys[mask] = 0
    return keys


def signed_key(keys: np.ndarray) -> np.ndarray:
    """``uint64`` keys as ``int64`` with the same order (Spark has no unsigned long)."""
    return (keys ^ SIGN).view(np.int64)


@dataclass(frozen=True)
class CurveKeys:
    """Turns the pandas Series a curve-key UDF receives (two per clustered column: carrier, null
    flag) back into ``uint64`` curve keys.  Picklable: it travels to the Python workers."""

    spec: ClusteringSpec
    kinds: tuple[Carrier, ...]

    @property
    def width(self) -> int:
        """How many of a UDF's inputs the keys take."""
        return 2 * len(self.kinds)

    def keys(self, series: Sequence[pd.Series]) -> np.ndarray:
        ranks = []
        for i, column in enumerate(self.spec.columns):
            keys = _keys_from_carrier(series[2 * i], series[2 * i + 1], self.kinds[i])
            ranks.append(column.mapping.ranks(keys))
        return self.spec.index(ranks)


def curve_key_inputs(spec: ClusteringSpec, types: Mapping[str, DataType]) -> tuple[list[Column], CurveKeys]:
    """The Spark columns a curve-key UDF takes, and how it turns them into keys."""
    arguments: list[Column] = []
    kinds = []
    for column in spec.columns:
        expr, kind = carrier(column.name, types[column.name])
        arguments += [expr, F.col(quoted(column.name)).isNull()]
        kinds.append(kind)
    return arguments, CurveKeys(spec, tuple(kinds))


def curve_key_column(spec: ClusteringSpec, types: Mapping[str, DataType]) -> Column:
    """A ``bigint`` column holding each row's curve key (signed, same order as the unsigned key)."""
    arguments, codec = curve_key_inputs(spec, types)

    @F.pandas_udf("long")  # type: ignore[call-overload]
    def curve_key(*series: pd.Series) -> pd.Series:
        return pd.Series(signed_key(codec.keys(series)))

    return curve_key(*arguments)


def column_key_frame_columns(columns: Sequence[str], types: Mapping[str, DataType]) -> list[Column]:
    """One ``bigint`` column per name holding that column's signed order key (for tests and sampling)."""
    return [_column_key(name, types[name]) for name in columns]


def _column_key(name: str, dtype: DataType) -> Column:
    expr, kind = carrier(name, dtype)

    @F.pandas_udf("long")  # type: ignore[call-overload]
    def column_key(values: pd.Series, nulls: pd.Series) -> pd.Series:
        return pd.Series(signed_key(_keys_from_carrier(values, nulls, kind)))

    return column_key(expr, F.col(quoted(name)).isNull()).alias(name)
