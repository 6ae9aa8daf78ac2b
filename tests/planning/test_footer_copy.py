"""A footer copy gives planning exactly what the data file's own footer gives: rows, byte ranges and
every column's statistics, by field id."""

from __future__ import annotations

import datetime
import decimal
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.fileindex.footer_copy import decode, decode_head, decode_rest, encode, head_length
from zskip.planning.footers import Footer, footer_from_copy, read_footer
from zskip.planning.minmax_arrays import StatsColumn
from zskip.storage import LOCAL


def field(name: str, kind: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, kind, metadata={b"PARQUET:field_id": str(field_id).encode()})


def written(path: Path, columns: dict[pa.Field, list[Any]], row_group_size: int) -> tuple[Footer, Footer]:
    """The footer of a Parquet file of ``columns``, read from the file and from its copy."""
    table = pa.table([pa.array(values, f.type) for f, values in columns.items()], schema=pa.schema(list(columns)))
    pq.write_table(table, path, row_group_size=row_group_size)
    tail, size = LOCAL.parquet_footer(str(path))
    assert size == path.stat().st_size
    return read_footer(str(path)), footer_from_copy(encode(tail))


def same_stats(one: Any, other: Any) -> bool:
    if one is None or other is None:
        return one is other
    fields = ("min", "max", "has_min_max", "null_count", "values")
    return all(_same(getattr(one, f), getattr(other, f)) for f in fields)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b) and type(a) is type(b)


def assert_same_footer(own: Footer, copied: Footer, field_ids: list[int]) -> None:
    assert copied.rows == own.rows and copied.ranges == own.ranges
    for field_id in field_ids:
        mine, theirs = own.column(field_id), copied.column(field_id)
        assert len(mine) == len(theirs) and all(same_stats(a, b) for a, b in zip(mine, theirs, strict=True)), field_id
        expected = StatsColumn.of(list(mine))
        arrays = copied.arrays(field_id)
        got = StatsColumn.of_arrays(theirs, *arrays) if arrays is not None else StatsColumn.of(list(theirs))
        for part in ("known", "has_min_max"):
            assert np.array_equal(getattr(got, part), getattr(expected, part)), (field_id, part)
        for part in ("null_count", "values"):
            assert np.array_equal(getattr(got, part), getattr(expected, part), equal_nan=True), (field_id, part)
        for part in ("low", "high"):
            want, have = getattr(expected, part), getattr(got, part)
            assert (want is None and have is None) or (want is not None and have is not None and want.equals(have))


def test_every_type_comes_back_as_the_footer_gives_it(tmp_path: Path) -> None:
    n = 300
    columns = {
        field("i", pa.int64(), 1): [i * 7 % 101 for i in range(n)],
        field("f", pa.float64(), 2): [math.nan if i % 50 == 0 else i / 3 for i in range(n)],
        field("s", pa.string(), 3): [None if i % 7 == 0 else f"k{i % 13}" for i in range(n)],
        field("d", pa.date32(), 4): [datetime.date(2020, 1, 1) + datetime.timedelta(days=i) for i in range(n)],
        field("t", pa.timestamp("us", tz="UTC"), 5): [
            datetime.datetime(2021, 3, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=i * 999)
            for i in range(n)
        ],
        field("m", pa.decimal128(9, 2), 6): [decimal.Decimal(i) / 4 for i in range(n)],
        field("b", pa.bool_(), 7): [i % 3 == 0 for i in range(n)],
        field("y", pa.binary(), 8): [bytes([i % 256, 7]) for i in range(n)],
        field("nothing", pa.int32(), 9): [None] * n,
        field("nested", pa.struct([field("x", pa.int32(), 11)]), 10): [{"x": i} for i in range(n)],
        field("ns", pa.timestamp("ns"), 12): [np.datetime64(1_600_000_000_000_000_000 + i * 7, "ns") for i in range(n)],
    }
    own, copied = written(tmp_path / "types.parquet", columns, 64)
    assert own.row_groups == 5
    assert all(copied.arrays(f) is not None for f in (1, 3, 4, 6))  # the copy's arrays, not its footer, answer
    assert_same_footer(own, copied, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 99])

    # read from its head alone, the copy reads its rest (the footer) once, and only for a column
    # whose bounds its arrays lack (nanosecond timestamps)
    copy = encode(LOCAL.parquet_footer(str(tmp_path / "types.parquet"))[0])
    head = head_length(copy)
    assert head is not None and head < len(copy) / 2
    rests: list[int] = []

    def rest(layout: Any) -> bytes:
        rests.append(1)
        return decode_rest(layout, copy[head:])

    from_head = footer_from_copy(copy[:head], rest)
    assert from_head.rows == own.rows and from_head.ranges == own.ranges
    for field_id in (1, 2, 3, 4, 6, 9, 10, 99):  # arrays, a nested field, an absent one: no footer needed
        assert all(same_stats(a, b) for a, b in zip(own.column(field_id), from_head.column(field_id), strict=True))
    assert rests == []
    assert_same_footer(own, from_head, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 99])
    assert rests == [1]
    # without a way to read the rest, such a column has no statistics: nothing is ruled out by them
    assert copied.arrays(12) is None and any(stats is not None for stats in own.column(12))
    assert all(stats is None for stats in footer_from_copy(copy[:head]).column(12))


def test_a_damaged_copy_is_refused_head_or_rest(tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": list(range(100))}), tmp_path / "f.parquet", row_group_size=10)
    copy = encode(LOCAL.parquet_footer(str(tmp_path / "f.parquet"))[0])
    head = head_length(copy)
    assert head is not None
    bad_head = copy[: head - 3] + bytes([copy[head - 3] ^ 1]) + copy[head - 2 :]
    with pytest.raises(ValueError, match="checksum"):
        footer_from_copy(bad_head[:head])
    facts, tail, layout = decode_head(copy[:head])
    assert tail is None and layout is not None and facts.num_rows == 10
    bad_rest = copy[head:-5] + bytes([copy[-5] ^ 1]) + copy[-4:]
    with pytest.raises(ValueError, match="checksum"):
        decode_rest(layout, bad_rest)
    assert decode_rest(layout, copy[head:]) == LOCAL.parquet_footer(str(tmp_path / "f.parquet"))[0]


def test_a_copy_of_the_first_format_loads_whole(tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": list(range(100))}), tmp_path / "f.parquet", row_group_size=10)
    tail = LOCAL.parquet_footer(str(tmp_path / "f.parquet"))[0]
    facts, _ = decode(encode(tail))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, facts.schema) as stream:
        stream.write(facts)
    older = len(sink.getvalue().to_pybytes()).to_bytes(4, "little") + sink.getvalue().to_pybytes() + tail
    assert head_length(older) is None
    loaded = footer_from_copy(older)
    assert loaded.rows == (10,) * 10 and decode(older)[1] == tail


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=60),
    st.lists(st.one_of(st.none(), st.floats(allow_nan=True, width=32)), min_size=1, max_size=60),
    st.lists(st.one_of(st.none(), st.text(max_size=5)), min_size=1, max_size=60),
    st.integers(1, 20),
)
def test_random_columns_come_back_as_the_footer_gives_them(
    tmp_path_factory: pytest.TempPathFactory, ints: list, floats: list, texts: list, group: int
) -> None:
    n = min(len(ints), len(floats), len(texts))
    columns = {
        field("i", pa.int64(), 1): ints[:n],
        field("f", pa.float32(), 2): floats[:n],
        field("s", pa.string(), 3): texts[:n],
    }
    own, copied = written(tmp_path_factory.mktemp("random") / "t.parquet", columns, group)
    assert_same_footer(own, copied, [1, 2, 3])


def test_what_is_not_a_footer_copy_is_refused() -> None:
    with pytest.raises(ValueError, match="not a footer copy"):
        decode(b"\x05\x00\x00\x00hello")
    with pytest.raises(ValueError, match="not a footer copy"):
        footer_from_copy(b"")


def test_a_copy_records_what_each_top_level_column_costs_to_read_in_each_row_group(tmp_path: Path) -> None:
    point = pa.struct([pa.field("x", pa.int64()), pa.field("y", pa.string())])
    columns = {
        field("a", pa.int64(), 1): list(range(300)),
        field("p", point, 2): [{"x": i, "y": "v" * (i % 40)} for i in range(300)],
        field("s", pa.string(), 3): [f"text {i}" * (i % 7) for i in range(300)],
    }
    own, copied = written(tmp_path / "f.parquet", columns, row_group_size=100)
    every = own.bytes_of([1, 2, 3])
    assert every is not None
    # the columns together are the row groups whole (a nested column counts all its leaves)
    assert every.tolist() == [length for _, length in own.ranges]
    for ids in ([1], [2], [3], [1, 3], [], [99]):  # a field the file lacks costs nothing
        mine, theirs = own.bytes_of(ids), copied.bytes_of(ids)
        assert mine is not None and theirs is not None and mine.tolist() == theirs.tolist(), ids
    assert copied.bytes_of([99]).tolist() == [0.0, 0.0, 0.0]  # type: ignore[union-attr]
    # a copy written before copies recorded bytes does not say (its footer is not parsed for it)
    facts, tail = decode(encode(LOCAL.parquet_footer(str(tmp_path / "f.parquet"))[0]))
    older = facts.select([name for name in facts.column_names if not name.endswith(".bytes")])
    assert Footer(own.rows, facts=older, tail=tail).bytes_of([1]) is None
