"""A cube per row group: the partial aggregates of some columns (the measures), grouped by one column.

A grouped dashboard (``SELECT shipmode, sum(revenue), count(*) ... GROUP BY shipmode``) over the row
groups wholly inside its filter needs, per row group, each group's rows and its measures' counts,
sums, minima and maxima: what a cube blob keeps.  Its format is an Arrow IPC stream of one record
batch, one row per row group and value of the grouping column (NULL is a value: Spark groups it), in
row-group order, with the columns

    row_group  int32                 the row group
    key        the column's type     the grouping value
    rows       int64                 rows holding it
    values_N   int64                 non-NULL values of measure N (N: its place in ``zskip.measures``)
    nans_N     int64                 NaN among them (0 for non-floats)
    sum_N      decimal(38, s)/double their sum: exact for integers and decimals, as IEEE adds for floats
    min_N      the measure's type    their minimum (NULL: none, or a float's, which a NaN makes unclear)
    max_N      the measure's type    their maximum

and in the schema's metadata ``zskip.measures`` (the measures' field ids, in order),
``zskip.row-groups`` (how many the data file has) and ``zskip.uncubed`` (the row groups holding more
values than the index was allowed, ``max_groups``: they have no rows here and are always read).

>>> key = [pa.chunked_array([["AIR", "RAIL", "AIR"]]), pa.chunked_array([[None, "AIR"]])]
>>> cube = CubeIndex.from_bytes(build_cube(key, [(7, [pa.chunked_array([[1, 2, 3]]), pa.chunked_array([[4, 5]])])]))
>>> cube.groups(0)["key"].to_pylist(), cube.groups(0)["sum_0"].to_pylist()
(['AIR', 'RAIL'], [Decimal('4'), Decimal('2')])
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["MAX_GROUPS", "CubeIndex", "build_cube"]

MAX_GROUPS = 1024  # values of the grouping column per row group a cube keeps by default

_ROWS_PER_EXACT_SUM = 10**7  # an Arrow decimal sum of up to this many values of 31 digits fits 38


def build_cube(
    keys: Sequence[pa.ChunkedArray],
    measures: Sequence[tuple[int, Sequence[pa.ChunkedArray]]],
    *,
    max_groups: int = MAX_GROUPS,
) -> bytes:
    """The blob of one data file: its grouping column's values row group by row group (``keys``), and
    each measure's (its field id, its values row group by row group)."""
    key_type = next((k.type for k in keys if not pa.types.is_null(k.type)), pa.null())
    types = [_measure_type(groups) for _, groups in measures]
    pieces: list[pa.Table] = []
    uncubed: list[int] = []
    for g, key in enumerate(keys):
        if len(key) and pc.count_distinct(key, mode="all").as_py() > max_groups:
            uncubed.append(g)
            continue
        pieces.append(_groups(g, key.cast(key_type), [groups[g] for _, groups in measures], types))
    schema = _schema(key_type, types)
    table = pa.concat_tables([p.cast(schema) for p in pieces]) if pieces else schema.empty_table()
    metadata = {
        "zskip.measures": ",".join(str(field_id) for field_id, _ in measures),
        "zskip.row-groups": str(len(keys)),
        "zskip.uncubed": ",".join(map(str, uncubed)),
    }
    batch = table.combine_chunks().replace_schema_metadata(metadata)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_table(batch)
    return sink.getvalue().to_pybytes()


def _measure_type(groups: Sequence[pa.ChunkedArray]) -> pa.DataType:
    """A measure's Arrow type over the file's row groups (int64 for one the file lacks: all NULL)."""
    return next((g.type for g in groups if not pa.types.is_null(g.type)), pa.int64())


def _sum_type(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_floating(kind):
        return pa.float64()
    return pa.decimal128(38, kind.scale if pa.types.is_decimal(kind) else 0)


def _bound_type(kind: pa.DataType) -> pa.DataType:
    return pa.float64() if pa.types.is_floating(kind) else kind


def _schema(key_type: pa.DataType, types: Sequence[pa.DataType]) -> pa.Schema:
    fields = [pa.field("row_group", pa.int32()), pa.field("key", key_type), pa.field("rows", pa.int64())]
    for n, kind in enumerate(types):
        fields += [
            pa.field(f"values_{n}", pa.int64()),
            pa.field(f"nans_{n}", pa.int64()),
            pa.field(f"sum_{n}", _sum_type(kind)),
            pa.field(f"min_{n}", _bound_type(kind)),
            pa.field(f"max_{n}", _bound_type(kind)),
        ]
    return pa.schema(fields)


def _groups(
    g: int, key: pa.ChunkedArray, measures: Sequence[pa.ChunkedArray], types: Sequence[pa.DataType]
) -> pa.Table:
    """Row group ``g``'s rows per value of ``key``, with each measure's partial aggregates."""
    columns: dict[str, pa.ChunkedArray | pa.Array] = {"key": key}
    asked: list[tuple[str | list[str], str]] = [([], "count_all")]
    for n, (values, kind) in enumerate(zip(measures, types, strict=True)):
        values = values.cast(kind) if pa.types.is_null(values.type) else values
        columns[f"m{n}"] = values
        asked += [(f"m{n}", "count")]
        if pa.types.is_floating(kind):
            doubles = values.cast(pa.float64())
            columns[f"f{n}"] = doubles
            columns[f"nan{n}"] = pc.cast(pc.fill_null(pc.is_nan(doubles), False), pa.int64())
            asked += [(f"f{n}", "sum"), (f"nan{n}", "sum")]
        else:
            columns[f"d{n}"] = values.cast(_sum_type(kind)) if _exact_in_arrow(values, kind) else values
            asked += [(f"d{n}", "sum"), (f"m{n}", "min"), (f"m{n}", "max")]
    grouped = pa.table(columns).group_by("key", use_threads=False).aggregate(asked)
    rows = len(grouped)
    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "row_group": pa.array([g] * rows, pa.int32()),
        "key": grouped["key"],
        "rows": grouped["count_all"],
    }
    for n, (values, kind) in enumerate(zip(measures, types, strict=True)):
        out[f"values_{n}"] = grouped[f"m{n}_count"]
        if pa.types.is_floating(kind):
            out[f"nans_{n}"] = pc.fill_null(grouped[f"nan{n}_sum"], 0)
            out[f"sum_{n}"] = pc.fill_null(grouped[f"f{n}_sum"], 0.0)
            out[f"min_{n}"] = pa.nulls(rows, pa.float64())
            out[f"max_{n}"] = pa.nulls(rows, pa.float64())
            continue
        out[f"nans_{n}"] = pa.array([0] * rows, pa.int64())
        sums = grouped[f"d{n}_sum"]
        if not _exact_in_arrow(values, kind):  # summed in Python, exactly
            sums = _exact_sums(grouped["key"], key, values, kind)
        out[f"sum_{n}"] = pc.fill_null(sums.cast(_sum_type(kind)), pa.scalar(decimal.Decimal(0), _sum_type(kind)))
        out[f"min_{n}"] = grouped[f"m{n}_min"]
        out[f"max_{n}"] = grouped[f"m{n}_max"]
    return pa.table(out)


def _exact_in_arrow(values: pa.ChunkedArray, kind: pa.DataType) -> bool:
    """Whether Arrow's sum of ``values`` as a decimal of 38 digits cannot overflow."""
    if pa.types.is_decimal(kind):
        return kind.precision <= 31 and len(values) <= _ROWS_PER_EXACT_SUM
    return (pa.types.is_integer(kind) or pa.types.is_null(kind)) and len(values) <= _ROWS_PER_EXACT_SUM


def _exact_sums(
    grouped_keys: pa.ChunkedArray, key: pa.ChunkedArray, values: pa.ChunkedArray, kind: pa.DataType
) -> pa.Array:
    """Per grouped key (in ``grouped_keys``' order), the exact sum of ``values`` where ``key`` holds it."""
    totals: dict[object, decimal.Decimal] = {}
    for k, v in zip(key.to_pylist(), values.to_pylist(), strict=True):
        if v is not None:
            totals[k] = totals.get(k, decimal.Decimal(0)) + decimal.Decimal(v)
    return pa.array([totals.get(k, decimal.Decimal(0)) for k in grouped_keys.to_pylist()], _sum_type(kind))


@dataclass(frozen=True)
class CubeIndex:
    """One data file's cube (see the module's docstring)."""

    table: pa.Table
    measures: tuple[int, ...]  # field ids, in the order of the ``_N`` columns
    row_groups: int
    uncubed: frozenset[int]
    starts: np.ndarray  # where each row group's rows start in ``table`` (one more: its end)

    def __len__(self) -> int:
        return self.row_groups

    def cubed(self, g: int) -> bool:
        return 0 <= g < self.row_groups and g not in self.uncubed

    def groups(self, g: int) -> pa.Table:
        """Row group ``g``'s rows: one per value of the grouping column."""
        return self.table.slice(int(self.starts[g]), int(self.starts[g + 1] - self.starts[g]))

    def measure(self, field_id: int) -> int | None:
        """The place of measure ``field_id`` (its ``_N``), or ``None``: not a measure of this cube."""
        return self.measures.index(field_id) if field_id in self.measures else None

    @staticmethod
    def from_bytes(data: bytes) -> CubeIndex:
        with pa.ipc.open_stream(pa.BufferReader(data)) as reader:
            table = reader.read_all()
        metadata = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
        if table.column_names[:3] != ["row_group", "key", "rows"] or "zskip.row-groups" not in metadata:
            raise ValueError(f"not a cube blob: columns {table.column_names[:3]}")
        measures = tuple(int(i) for i in metadata["zskip.measures"].split(",") if i)
        if len(table.column_names) != 3 + 5 * len(measures):
            raise ValueError(f"a cube blob of {len(measures)} measures has columns {table.column_names}")
        row_groups = int(metadata["zskip.row-groups"])
        uncubed = frozenset(int(g) for g in metadata["zskip.uncubed"].split(",") if g)
        order = table["row_group"].to_numpy()
        if len(order) and np.any(np.diff(order) < 0):
            raise ValueError("a cube blob's rows are not in row-group order")
        starts = np.searchsorted(order, np.arange(row_groups + 1), side="left")
        return CubeIndex(table, measures, row_groups, uncubed, starts)
