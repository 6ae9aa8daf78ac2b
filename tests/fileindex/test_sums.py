"""Sums per row group: exact for integers and decimals whatever their size, IEEE for floats."""

from __future__ import annotations

import decimal
import math

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from zskip.fileindex.kinds import KINDS, kind_named
from zskip.fileindex.sums import SumsIndex, build_sums


def _groups(*groups: list, kind: pa.DataType) -> list[pa.ChunkedArray]:
    return [pa.chunked_array([pa.array(g, kind)], type=kind) for g in groups]


@given(st.lists(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=20), min_size=1, max_size=4))
def test_integer_sums_are_exact(groups: list[list[int | None]]) -> None:
    index = SumsIndex.from_bytes(build_sums(_groups(*groups, kind=pa.int64())))
    assert index.sums == [decimal.Decimal(sum(v for v in g if v is not None)) for g in groups]
    assert index.values.tolist() == [sum(v is not None for v in g) for g in groups]
    assert not index.floating


def test_decimal_sums_keep_their_scale() -> None:
    kind = pa.decimal128(10, 2)
    values = [decimal.Decimal("1.25"), None, decimal.Decimal("-3.10")]
    index = SumsIndex.from_bytes(build_sums(_groups(values, kind=kind)))
    assert index.sums == [decimal.Decimal("-1.85")]


def test_float_sums_follow_ieee() -> None:
    groups = _groups([1.5, math.nan], [math.inf, -math.inf], [math.inf, 2.0], [None, None], kind=pa.float32())
    index = SumsIndex.from_bytes(build_sums(groups))
    assert index.floating
    assert math.isnan(index.sums[0]) and math.isnan(index.sums[1])
    assert index.sums[2] == math.inf and index.sums[3] == 0.0
    assert index.nans.tolist() == [1, 0, 0, 0]
    assert index.values.tolist() == [2, 2, 2, 0]


def test_the_kind_answers_no_condition_and_refuses_what_is_not_a_number() -> None:
    sums = kind_named("sums")
    assert "sums" in KINDS and not sums.answers_conditions
    assert sums.refuses("decimal(9,2)") is None and sums.refuses("bigint") is None
    assert sums.refuses("string") == "a sums index takes a number or decimal column, not string"
