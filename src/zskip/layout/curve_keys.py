"""Curve keys inside Spark: a pandas UDF over order-key "carrier" columns.

Most of a key is computed by Spark itself: for integers, booleans, dates, timestamps, decimals up
to 18 digits, strings and binaries the carrier is the column's order key (``order_key_u64``) as a
signed long (``key ^ 2**63``, nulls as the smallest long: key 0), built from Spark expressions, so
one long per column crosses to Python.  Doubles and wider decimals travel as their value and a null
flag, and the UDF computes their keys with the same numpy code the planner uses.  The UDF then maps
keys to ranks and ranks to the curve.
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

__all__ = [
    "Carrier",
    "CurveKeys",
    "carrier",
    "column_key_frame_columns",
    "curve_key_column",
    "curve_key_inputs",
    "signed_key",
]

SIGN = np.uint64(1 << 63)
MIN_LONG = -(1 << 63)  # the signed form of key 0: nulls


@dataclass(frozen=True, slots=True)
class Carrier:
    """How one column travels to Python: its kind, and for values the Arrow type to rebuild them in.

    ``key``: one signed long, the order key itself; ``double`` and ``decimal``: the value (nulls
    replaced) and a null flag.
    """

    kind: str  # "key", "double", "decimal"
    arrow_type_text: str  # pyarrow type name, e.g. "int64" or "decimal128(38, 2)"

    @property
    def inputs(self) -> int:
        """How many UDF inputs the column takes."""
        return 1 if self.kind == "key" else 2

    def arrow_type(self) -> pa.DataType:
        if self.kind == "decimal":
            precision, scale = (int(x) for x in self.arrow_type_text[len("decimal128(") : -1].split(","))
            return pa.decimal128(precision, scale)
        return {"key": pa.int64(), "double": pa.float64()}[self.kind]

    def keys(self, series: Sequence[pd.Series]) -> np.ndarray:
        """The ``uint64`` order keys of the rows, from this column's ``inputs`` Series."""
        if self.kind == "key":
            return np.asarray(series[0].to_numpy(dtype=np.int64)).view(np.uint64) ^ SIGN
        values, nulls = series
        if self.kind == "double":
            array = pa.array(values.to_numpy(), type=self.arrow_type())
        else:
            array = pa.array(values.tolist(), type=self.arrow_type())
        keys = order_key_u64(array)
        keys[nulls.to_numpy(dtype=bool)] = 0
        return keys


def carrier(name: str, dtype: DataType) -> tuple[list[Column], Carrier]:
    """The Spark columns that carry column ``name`` to Python, and how to read them there."""
    column = F.col(f"`{name}`")
    quoted = f"`{name}`"
    if isinstance(dtype, (FloatType, DoubleType)):
        return [F.coalesce(column.cast("double"), F.lit(0.0)), column.isNull()], Carrier("double", "float64")
    if isinstance(dtype, DecimalType) and dtype.precision > 18:
        kind = Carrier("decimal", f"decimal128({dtype.precision}, {dtype.scale})")
        return [F.coalesce(column, F.lit(0).cast(dtype)), column.isNull()], kind
    if isinstance(dtype, (StringType, BinaryType)):
        # the first 8 bytes, zero-padded, big-endian: two 4-byte halves, each read by conv (unsigned)
        prefix = F.expr(f"rpad(CAST({quoted} AS BINARY), 8, X'00')")
        high = F.conv(F.hex(F.substring(prefix, 1, 4)), 16, 10).cast("long")
        low = F.conv(F.hex(F.substring(prefix, 5, 4)), 16, 10).cast("long")
        value = F.shiftleft(high, 32).bitwiseOR(low).bitwiseXOR(F.lit(MIN_LONG))
    elif isinstance(dtype, DecimalType):  # the unscaled value fits a long
        value = F.expr(f"CAST({quoted} * 1{'0' * dtype.scale}BD AS BIGINT)") if dtype.scale else column.cast("long")
    elif isinstance(dtype, DateType):
        value = F.expr(f"CAST(unix_date({quoted}) AS BIGINT)")
    elif isinstance(dtype, TimestampType):
        value = F.expr(f"unix_micros({quoted})")
    elif isinstance(dtype, TimestampNTZType):
        value = F.expr(f"timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {quoted})")
    else:  # boolean, byte, short, int, long: the value is the signed key
        value = column.cast("long")
    return [F.when(column.isNull(), F.lit(MIN_LONG)).otherwise(value)], Carrier("key", "int64")


def signed_key(keys: np.ndarray) -> np.ndarray:
    """``uint64`` keys as ``int64`` with the same order (Spark has no unsigned long)."""
    return (keys ^ SIGN).view(np.int64)


@dataclass(frozen=True)
class CurveKeys:
    """Turns the pandas Series a curve-key UDF receives (each column's carrier inputs, in order) back
    into ``uint64`` curve keys.  Picklable: it travels to the Python workers."""

    spec: ClusteringSpec
    kinds: tuple[Carrier, ...]

    @property
    def width(self) -> int:
        """How many of a UDF's inputs the keys take."""
        return sum(kind.inputs for kind in self.kinds)

    def keys(self, series: Sequence[pd.Series]) -> np.ndarray:
        ranks = []
        start = 0
        for column, kind in zip(self.spec.columns, self.kinds, strict=True):
            ranks.append(column.mapping.ranks(kind.keys(series[start : start + kind.inputs])))
            start += kind.inputs
        return self.spec.index(ranks)


def curve_key_inputs(spec: ClusteringSpec, types: Mapping[str, DataType]) -> tuple[list[Column], CurveKeys]:
    """The Spark columns a curve-key UDF takes, and how it turns them into keys."""
    arguments: list[Column] = []
    kinds = []
    for column in spec.columns:
        inputs, kind = carrier(column.name, types[column.name])
        arguments += inputs
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
    inputs, kind = carrier(name, dtype)

    @F.pandas_udf("long")  # type: ignore[call-overload]
    def column_key(*series: pd.Series) -> pd.Series:
        return pd.Series(signed_key(kind.keys(series)))

    return column_key(*inputs).alias(name)
