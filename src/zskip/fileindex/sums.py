"""Per row group sums of one column of a data file: what Parquet footers lack for ``sum`` and ``avg``.

A footer holds each row group's rows, NULLs and bounds, never a sum.  A sums blob keeps, per row
group: the non-NULL values, the NaN among them (floats), and the sum of the values: exact for
integers and decimals (as a decimal of 38 digits), a double for floats (NaN and infinities as IEEE
adds them).  Its format is an Arrow IPC stream of one record batch, one row per row group.

>>> blob = build_sums([pa.chunked_array([[1, 2, None]]), pa.chunked_array([[2**62, 2**62]])])
>>> index = SumsIndex.from_bytes(blob)
>>> index.sums, index.values.tolist()
([Decimal('3'), Decimal('9223372036854775808')], [2, 2])
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SumsIndex", "build_sums", "summable"]

_EXACT = pa.decimal128(38, 0)


def summable(kind: pa.DataType) -> bool:
    """Whether a column of Arrow type ``kind`` has sums (numbers and decimals; not booleans)."""
    t = pa.types
    return t.is_integer(kind) or t.is_floating(kind) or t.is_decimal(kind) or t.is_null(kind)


def build_sums(row_groups: Sequence[pa.ChunkedArray]) -> bytes:
    """The blob of one column's row groups (each one's values as a chunked array)."""
    kind = next((g.type for g in row_groups if not pa.types.is_null(g.type)), pa.null())
    floating = pa.types.is_floating(kind)
    if not summable(kind):  # not a number (create_index refuses one): counts only, no sum known
        return _blob(
            [len(g) - g.null_count for g in row_groups], [0] * len(row_groups), [None] * len(row_groups), _EXACT
        )
    values: list[int] = []
    nans: list[int] = []
    sums: list[Any] = []
    for group in row_groups:
        values.append(len(group) - group.null_count)
        if floating:
            doubles = group.cast(pa.float64())
            nans.append(int(pc.sum(pc.is_nan(doubles)).as_py() or 0))
            total = pc.sum(doubles, min_count=0).as_py()
            sums.append(float(total if total is not None else 0.0))
        else:
            nans.append(0)
            sums.append(_exact_sum(group, kind))
    return _blob(values, nans, sums, pa.float64() if floating else _sum_type(kind))


def _blob(values: list[int], nans: list[int], sums: list[Any], sum_type: pa.DataType) -> bytes:
    batch = pa.record_batch(
        [pa.array(values, pa.int64()), pa.array(nans, pa.int64()), pa.array(sums, sum_type)],
        names=["values", "nans", "sum"],
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _sum_type(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_decimal(kind):
        return pa.decimal128(38, kind.scale)
    return _EXACT


def _exact_sum(group: pa.ChunkedArray, kind: pa.DataType) -> decimal.Decimal:
    if pa.types.is_null(kind) or len(group) == group.null_count:
        return decimal.Decimal(0)
    if pa.types.is_decimal(kind):
        return sum((v for v in group.to_pylist() if v is not None), decimal.Decimal(0))
    # integers: Python's own, exact whatever the rows (Arrow's int64 sum wraps)
    chunks = [c.to_numpy(zero_copy_only=False) for c in group.drop_null().chunks] if group.null_count else None
    if chunks is None:
        chunks = [c.to_numpy(zero_copy_only=False) for c in group.chunks]
    total = 0
    for chunk in chunks:
        if len(chunk) and np.abs(chunk.astype(np.float64)).max() * len(chunk) < 2**62:
            total += int(chunk.astype(np.int64).sum())  # no int64 overflow possible
        else:
            total += sum(int(v) for v in chunk)
    return decimal.Decimal(total)


@dataclass(frozen=True)
class SumsIndex:
    """One column's sums over a data file's row groups (see the module's docstring)."""

    values: np.ndarray  # int64: non-NULL values per row group
    nans: np.ndarray  # int64: NaN values per row group (0 for non-floats)
    sums: list[Any]  # per row group: Decimal (exact) or float (None: not known)
    floating: bool

    def __len__(self) -> int:
        return len(self.values)

    @staticmethod
    def from_bytes(data: bytes) -> SumsIndex:
        with pa.ipc.open_stream(pa.BufferReader(data)) as reader:
            table = reader.read_all()
        if table.column_names != ["values", "nans", "sum"]:
            raise ValueError(f"not a sums blob: columns {table.column_names}")
        kind = table.schema.field("sum").type
        return SumsIndex(
            values=table.column("values").to_numpy(),
            nans=table.column("nans").to_numpy(),
            sums=table.column("sum").to_pylist(),
            floating=pa.types.is_floating(kind),
        )
