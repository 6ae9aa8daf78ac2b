"""Every order-preserving key sorts like the values it encodes, edge values included."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from decimal import Decimal, localcontext
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.curves import UnsupportedTypeError, order_key_bytes, order_key_u64

INT_RANGES = {
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
}


def spark_order(value: Any) -> tuple[Any, ...]:
    """How Spark orders a value: nulls first, NaN after every number, strings by UTF-8 bytes."""
    if value is None:
        return (0,)
    if isinstance(value, float) and math.isnan(value):
        return (2,)
    if isinstance(value, str):
        return (1, value.encode())
    return (1, value)


def assert_keys_sorted_like_values(values: list[Any], dtype: pa.DataType, *, strict: bool, **kw: Any) -> None:
    array = pa.array(values, type=dtype)
    keys = [bytes(row) for row in order_key_bytes(array, **kw)]
    ranked = sorted(range(len(values)), key=lambda i: spark_order(values[i]))
    for a, b in itertools.pairwise(ranked):
        va, vb = spark_order(values[a]), spark_order(values[b])
        if va == vb:
            assert keys[a] == keys[b], (values[a], values[b])
        else:
            assert keys[a] <= keys[b], (values[a], values[b], keys[a].hex(), keys[b].hex())
            if strict:
                assert keys[a] < keys[b], (values[a], values[b])
    # the 64-bit form is the same order as the byte form
    if array.type not in (pa.string(), pa.binary()):
        u64 = order_key_u64(array)
        assert [int(k).to_bytes(8, "big") for k in u64] == keys


def nullable(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(st.one_of(st.none(), strategy), min_size=1, max_size=60)


@pytest.mark.parametrize("dtype", list(INT_RANGES), ids=str)
@given(data=st.data())
def test_integers_keep_their_order(dtype: pa.DataType, data: st.DataObject) -> None:
    lo, hi = INT_RANGES[dtype]
    edges = st.sampled_from([lo, lo + 1, -1, 0, 1, hi - 1, hi])
    values = data.draw(nullable(st.one_of(edges, st.integers(lo, hi))))
    # null shares the key of the 64-bit minimum (documented): only strict above it
    assert_keys_sorted_like_values(values, dtype, strict=dtype != pa.int64())


def test_null_sorts_first_and_shares_only_the_long_minimum() -> None:
    keys = order_key_u64(pa.array([None, -(2**31), -(2**63)], pa.int64()))
    assert keys.tolist() == [0, 2**63 - 2**31, 0]
    assert order_key_u64(pa.array([None, -(2**31)], pa.int32())).tolist() == [0, 2**63 - 2**31]


@given(values=nullable(st.booleans()))
def test_booleans_keep_their_order(values: list[Any]) -> None:
    assert_keys_sorted_like_values(values, pa.bool_(), strict=True)


FLOAT_EDGES = [-math.inf, -1e308, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, 1e308, math.inf, math.nan, -math.nan]


@pytest.mark.parametrize("width", [32, 64])
@given(data=st.data())
def test_floats_keep_spark_order(width: int, data: st.DataObject) -> None:
    floats = st.floats(width=width, allow_nan=True, allow_infinity=True)
    values = data.draw(nullable(st.one_of(st.sampled_from(FLOAT_EDGES), floats)))
    dtype = pa.float32() if width == 32 else pa.float64()
    with np.errstate(over="ignore"):  # 1e308 becomes float32 inf, a fine edge value too
        values = [None if v is None else float(np.float32(v)) if width == 32 else v for v in values]
    assert_keys_sorted_like_values(values, dtype, strict=True)


def test_float_zeroes_share_a_key_and_every_nan_sorts_last() -> None:
    nan_negative = np.frombuffer(np.uint64(0xFFF8_0000_0000_0001).tobytes(), np.float64)[0]
    keys = order_key_u64(pa.array([-0.0, 0.0, math.inf, math.nan, nan_negative, None], pa.float64()))
    assert keys[0] == keys[1]
    assert keys[2] < keys[3] == keys[4]
    assert keys[5] == 0 < keys.min(initial=2**64 - 1, where=np.arange(6) < 5)


DECIMALS = [(1, 0), (9, 2), (18, 0), (18, 18), (19, 4), (28, 10), (38, 0), (38, 2), (38, 38)]


@pytest.mark.parametrize(("precision", "scale"), DECIMALS, ids=str)
@given(data=st.data())
def test_decimals_keep_their_order_at_every_precision(precision: int, scale: int, data: st.DataObject) -> None:
    with localcontext() as ctx:
        ctx.prec = 80
        bound = Decimal(10) ** (precision - scale) - Decimal(10) ** -scale
        quantum = Decimal(10) ** -scale
    decimals = st.decimals(min_value=-bound, max_value=bound, places=scale, allow_nan=False)
    edges = st.sampled_from([-bound, -quantum, Decimal(0), quantum, bound])
    values = data.draw(nullable(st.one_of(edges, decimals)))
    with localcontext() as ctx:
        ctx.prec = 80
        # hypothesis may round a bound in its own context; keep values inside the type
        values = [None if v is None else max(-bound, min(bound, v)).quantize(quantum) for v in values]
    assert_keys_sorted_like_values(values, pa.decimal128(precision, scale), strict=precision <= 18)


def test_wide_decimal_keys_are_exact_below_two_to_the_56() -> None:
    values = [Decimal(v) / 100 for v in (-(2**55), -3, -2, -1, 0, 1, 2, 3, 2**55)]
    keys = order_key_u64(pa.array(values, pa.decimal128(38, 2)))
    assert (np.diff(keys.astype(object)) > 0).all()


DATE_MIN, DATE_MAX = dt.date(1, 1, 1), dt.date(9999, 12, 31)


@given(values=nullable(st.one_of(st.sampled_from([DATE_MIN, dt.date(1969, 12, 31), DATE_MAX]), st.dates())))
def test_dates_keep_their_order_before_and_after_1970(values: list[Any]) -> None:
    assert_keys_sorted_like_values(values, pa.date32(), strict=True)


@pytest.mark.parametrize("tz", [None, "UTC"])
@given(data=st.data())
def test_timestamps_keep_microsecond_order(tz: str | None, data: st.DataObject) -> None:
    moments = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59, 999999))
    values = data.draw(nullable(moments))
    if tz:
        values = [None if v is None else v.replace(tzinfo=dt.timezone.utc) for v in values]
    # timestamps span the whole long range only in theory; nulls stay strictly first here
    assert_keys_sorted_like_values(values, pa.timestamp("us", tz=tz), strict=True)


@pytest.mark.parametrize("prefix", [1, 3, 8, 16])
@given(values=nullable(st.text(max_size=12)))
def test_strings_keep_utf8_byte_order_on_their_prefix(prefix: int, values: list[Any]) -> None:
    assert_keys_sorted_like_values(values, pa.string(), strict=False, prefix_bytes=prefix)
    keys = order_key_bytes(pa.array(values, pa.string()), prefix_bytes=prefix)
    for value, key in zip(values, keys, strict=True):
        encoded = b"" if value is None else value.encode()[:prefix]
        assert bytes(key) == encoded.ljust(prefix, b"\0")


@given(values=nullable(st.binary(max_size=12)))
def test_binaries_keep_their_byte_order(values: list[Any]) -> None:
    assert_keys_sorted_like_values(values, pa.binary(), strict=False, prefix_bytes=8)


def test_a_multibyte_character_cut_by_the_prefix_keeps_the_order() -> None:
    keys = order_key_bytes(pa.array(["abc", "ab€"]), prefix_bytes=4)
    assert bytes(keys[0]) < bytes(keys[1])  # "ab€" > "abc" in UTF-8 byte order


def test_sliced_and_chunked_arrays_encode_like_whole_ones() -> None:
    whole = pa.array(["x", None, "hello", "zz", ""])
    assert (order_key_bytes(whole.slice(1, 3)) == order_key_bytes(whole)[1:4]).all()
    chunked = pa.chunked_array([pa.array([3, 1]), pa.array([2])])
    assert order_key_u64(chunked).tolist() == order_key_u64(pa.array([3, 1, 2])).tolist()


@pytest.mark.parametrize("dtype", [pa.list_(pa.int32()), pa.struct([("a", pa.int32())]), pa.month_day_nano_interval()])
def test_nested_and_interval_types_are_rejected_with_the_supported_list(dtype: pa.DataType) -> None:
    with pytest.raises(UnsupportedTypeError, match="clusters and indexes boolean, integer"):
        order_key_u64(pa.nulls(2, dtype))


@settings(max_examples=20)
@given(values=nullable(st.integers(-(2**31), 2**31 - 1)))
def test_empty_and_all_null_arrays(values: list[Any]) -> None:
    assert order_key_u64(pa.array([], pa.int32())).size == 0
    assert order_key_u64(pa.nulls(3, pa.string())).tolist() == [0, 0, 0]
