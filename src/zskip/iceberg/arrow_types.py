"""Iceberg types as the Arrow types Spark gives their columns, and join keys as the JVM helper writes them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["arrow_type", "key_array"]


def arrow_type(iceberg_type: str) -> pa.DataType | None:
    """The Arrow type Spark gives a column of this Iceberg type (``None``: one zskip does not order)."""
    simple = {
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us"),
        "timestamptz": pa.timestamp("us", tz="UTC"),
        "string": pa.string(),
        "binary": pa.binary(),
    }
    if iceberg_type in simple:
        return simple[iceberg_type]
    if iceberg_type.startswith("decimal(") and iceberg_type.endswith(")"):
        precision, scale = (int(p) for p in iceberg_type[len("decimal(") : -1].split(","))
        return pa.decimal128(precision, scale)
    return None


def key_array(kind: str, data: bytes, iceberg_type: str) -> pa.Array:
    """Join keys as the JVM helper writes them, as an Arrow array: ``L`` 64-bit big-endian integers
    (whole numbers; a date's days or a timestamp's microseconds since the epoch), ``S`` text (a count,
    every length, then the UTF-8 bytes; a decimal as Spark writes it)."""
    if kind == "L":
        values = np.frombuffer(data, dtype=">i8").astype(np.int64)
        if iceberg_type == "date":
            return pa.array(values.astype(np.int32), pa.date32())
        if iceberg_type in ("timestamptz", "timestamp"):
            return pa.array(values, arrow_type(iceberg_type))
        return pa.array(values, pa.int64())
    count = int.from_bytes(data[:4], "big")
    lengths = np.frombuffer(data, dtype=">i4", count=count, offset=4).astype(np.int32)
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    text = pa.StringArray.from_buffers(count, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data[4 + 4 * count :]))
    target = arrow_type(iceberg_type)
    return text if target is None or pa.types.is_string(target) else text.cast(target)
