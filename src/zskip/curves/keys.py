"""Order-preserving keys: each value becomes big-endian bytes whose unsigned byte order is the value order.

Every fixed-width type becomes an 8-byte key; strings and binaries become their first
``prefix_bytes`` bytes, zero-padded.  Comparing two keys as unsigned bytes gives the same answer
as comparing the values in Spark, except that distinct values may share a key (truncated
strings, wide decimals): the order is never inverted, only coarsened.

Nulls sort first.  A null's key is all zero bytes, which no non-null value reaches for boolean,
byte, short, int, date, float, double and decimal columns; for long and timestamp columns the
smallest representable value shares it, and for strings and binaries the empty value does
(there is no spare bit in a 64-bit or fixed-prefix key to tell them apart).

Where this differs from Iceberg's ``ZOrderByteUtils`` (int, long, string and binary keys are
byte-for-byte the same):

* float/double: ``-0.0`` and ``0.0`` get one key, because Spark treats them as equal and a filter
  ``x = 0.0`` must find both; every NaN gets the single key just above ``+inf``, because Spark
  sorts NaN after all numbers and treats all NaNs as equal.  Iceberg's encoding keeps the sign of
  zero and of NaN, so equal values get different keys and a negative NaN sorts before ``-inf``.
* date: days since 1970-01-01 as a signed integer.  Iceberg's Spark z-order casts dates to long,
  which Spark 3.5 turns into null, so dates contribute nothing there.
* timestamp and timestamp_ntz: microseconds since the epoch.  Iceberg casts to long, which in
  Spark keeps whole seconds only.
* strings are cut at ``prefix_bytes`` even inside a multi-byte UTF-8 character.  Iceberg's
  encoder stops before a character that does not fit and pads with zeros, which can sort
  ``"ab€"`` before ``"abc"`` although it is larger; cutting the bytes keeps the order.
* decimals up to precision 18 are keyed by their unscaled integer (exact); wider ones by a float
  of their unscaled integer with a 56-bit mantissa, exact below 2**56 and order-preserving
  everywhere.  Iceberg's Spark z-order rejects decimals.
* booleans use the integer encoding of 0 and 1 (Iceberg writes 0x81 or 0x00 in the first byte).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from zskip.errors import UnsupportedTypeError

__all__ = [
    "SIGN_BIT",
    "UnsupportedTypeError",
    "key_width",
    "order_key_bytes",
    "order_key_u64",
    "supports",
]

SIGN_BIT = np.uint64(1 << 63)
_NAN_KEY = np.uint64(0xFFF8_0000_0000_0000)  # canonical quiet NaN, sign bit flipped: above +inf
_U64_BIG_ENDIAN = np.dtype(">u8")


def supports(dtype: pa.DataType) -> bool:
    """True when ``dtype`` has an order-preserving key."""
    return _kind(dtype) is not None


def key_width(dtype: pa.DataType, *, prefix_bytes: int = 8) -> int:
    """Number of key bytes a value of ``dtype`` contributes."""
    kind = _require_kind(dtype)
    return prefix_bytes if kind == "bytes" else 8


def order_key_u64(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Order-preserving 64-bit keys (``uint64``) of ``array``; strings use their first 8 bytes.

    >>> order_key_u64(pa.array([-1, 0, None], pa.int32())).tolist()
    [9223372036854775807, 9223372036854775808, 0]
    """
    array = _one_chunk(array)
    kind = _require_kind(array.type)
    if kind == "bytes":
        return _bytes_matrix(array, 8).view(_U64_BIG_ENDIAN).reshape(-1).astype(np.uint64)
    keys = _FIXED[kind](array)
    if array.null_count:
        keys[_nulls(array)] = 0
    return keys


def order_key_bytes(array: pa.Array | pa.ChunkedArray, *, prefix_bytes: int = 8) -> np.ndarray:
    """Order-preserving keys as a ``(len(array), width)`` matrix of ``uint8``, big-endian.

    Fixed-width types give 8 bytes; strings and binaries give ``prefix_bytes``.
    """
    if prefix_bytes < 1:
        raise ValueError(f"prefix_bytes must be at least 1, got {prefix_bytes}")
    array = _one_chunk(array)
    if _require_kind(array.type) == "bytes":
        return _bytes_matrix(array, prefix_bytes)
    keys = order_key_u64(array)
    return keys.astype(_U64_BIG_ENDIAN).view(np.uint8).reshape(len(keys), 8)


# --- per-type encoders (nulls are overwritten with key 0 by the caller) ---------------------------


def _signed(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64).view(np.uint64) ^ SIGN_BIT


def _filled(array: pa.Array, fill: object) -> pa.Array:
    """``array`` with nulls replaced by ``fill`` (their keys are overwritten); a kernel call only when needed."""
    return array.fill_null(fill) if array.null_count else array


def _integer_keys(array: pa.Array) -> np.ndarray:
    if pa.types.is_uint64(array.type):
        return np.asarray(_filled(array, 0).to_numpy(), dtype=np.uint64)
    values = _filled(array, 0).to_numpy(zero_copy_only=False)
    return _signed(values)


def _boolean_keys(array: pa.Array) -> np.ndarray:
    return _signed(np.asarray(_filled(array, False).to_numpy(zero_copy_only=False), dtype=np.int64))


def _float_keys(array: pa.Array) -> np.ndarray:
    values = np.asarray(_filled(array, 0).to_numpy(zero_copy_only=False), dtype=np.float64)
    # Adding 0.0 turns -0.0 into +0.0 (IEEE round-to-nearest), so equal values share a key.
    bits = (values + 0.0).view(np.uint64)
    negative = (bits & SIGN_BIT) != 0
    keys = np.where(negative, ~bits, bits | SIGN_BIT)
    keys[np.isnan(values)] = _NAN_KEY
    return keys


def _temporal_keys(array: pa.Array) -> np.ndarray:
    dtype = array.type
    if pa.types.is_date32(dtype):
        storage = array.cast(pa.int32())
    elif pa.types.is_date64(dtype):
        storage = array.cast(pa.int64())
    else:
        target = pa.timestamp("us", tz=dtype.tz)
        storage = pc.cast(array, target, safe=False).cast(pa.int64())
    return _integer_keys(storage)


def _decimal_keys(array: pa.Array) -> np.ndarray:
    dtype = array.type
    if not pa.types.is_decimal128(dtype):
        array = array.cast(pa.decimal128(max(dtype.precision, 1), dtype.scale))
        dtype = array.type
    words = np.frombuffer(array.buffers()[1], dtype=np.uint64)
    words = words[2 * array.offset : 2 * (array.offset + len(array))].reshape(-1, 2)
    low, high = words[:, 0].copy(), words[:, 1].copy()
    if dtype.precision <= 18:
        return low ^ SIGN_BIT  # the unscaled value fits a signed long: exact
    return _wide_decimal_keys(low, high)


def _wide_decimal_keys(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Keys of 128-bit unscaled values as a float with a 7-bit exponent and a 56-bit mantissa.

    The top 64 bits alone would give every value of a decimal(38, 2) column below 10**17 the
    same key; keeping the leading 56 significant bits gives equal resolution at every magnitude
    and is exact below 2**56.
    """
    negative = (high & SIGN_BIT) != 0
    # magnitude = -value for negatives, in 128-bit two's complement
    neg_low = ~low + np.uint64(1)
    neg_high = ~high + (neg_low == 0).astype(np.uint64)
    mag_low = np.where(negative, neg_low, low)
    mag_high = np.where(negative, neg_high, high)
    length = np.where(mag_high != 0, _bit_length(mag_high) + 64, _bit_length(mag_low)).astype(np.uint64)
    mantissa = np.empty_like(mag_low)
    short = length <= 56
    mantissa[short] = mag_low[short] << (np.uint64(56) - length[short])
    right = length[~short] - np.uint64(56)  # 1..71
    hi, lo = mag_high[~short], mag_low[~short]
    below = right < 64
    shifted = np.where(
        below,
        (lo >> np.minimum(right, np.uint64(63))) | _shift_left(hi, np.uint64(64) - right),
        hi >> np.where(below, np.uint64(0), right - np.uint64(64)),
    )
    mantissa[~short] = shifted
    magnitude_key = (length << np.uint64(56)) | mantissa
    return np.where(negative, ~magnitude_key & ~SIGN_BIT, magnitude_key | SIGN_BIT)


def _shift_left(values: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """``values << amount`` that gives 0 for shifts of 64 (numpy leaves those undefined)."""
    return np.where(amount >= 64, np.uint64(0), values << np.minimum(amount, np.uint64(63)))


def _bit_length(values: np.ndarray) -> np.ndarray:
    length = np.zeros(values.shape, dtype=np.uint64)
    rest = values.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = rest >= np.uint64(1 << step)
        length[big] += np.uint64(step)
        rest[big] >>= np.uint64(step)
    return length + (rest != 0).astype(np.uint64)


def _bytes_matrix(array: pa.Array, width: int) -> np.ndarray:
    """First ``width`` bytes of each value, zero-padded; nulls are all zeros."""
    if _is_view(array.type):
        array = array.cast(pa.binary())
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        array = array.cast(pa.large_binary() if pa.types.is_large_string(array.type) else pa.binary())
    if pa.types.is_fixed_size_binary(array.type):
        array = array.cast(pa.binary())
    n = len(array)
    out = np.zeros((n, width), dtype=np.uint8)
    if n == 0:
        return out
    offset_type = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[array.offset : array.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = np.minimum(np.diff(offsets).astype(np.int64), width)
    if array.null_count:
        lengths[_nulls(array)] = 0
    columns = np.arange(width, dtype=np.int64)
    take = columns[None, :] < lengths[:, None]
    if data.size:
        positions = np.minimum(starts[:, None] + columns[None, :], data.size - 1)
        out[take] = data[positions[take]]
    return out


_FIXED = {
    "bool": _boolean_keys,
    "int": _integer_keys,
    "float": _float_keys,
    "temporal": _temporal_keys,
    "decimal": _decimal_keys,
}


def _kind(dtype: pa.DataType) -> str | None:
    if pa.types.is_boolean(dtype):
        return "bool"
    if pa.types.is_integer(dtype):
        return "int"
    if pa.types.is_floating(dtype):
        return "float"
    if pa.types.is_date(dtype) or pa.types.is_timestamp(dtype):
        return "temporal"
    if pa.types.is_decimal(dtype) and getattr(dtype, "precision", 39) <= 38:
        return "decimal"
    if (
        pa.types.is_string(dtype)
        or pa.types.is_large_string(dtype)
        or pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_fixed_size_binary(dtype)
        or _is_view(dtype)
    ):
        return "bytes"
    return None


def _is_view(dtype: pa.DataType) -> bool:
    return dtype in (pa.string_view(), pa.binary_view())


def _require_kind(dtype: pa.DataType) -> str:
    kind = _kind(dtype)
    if kind is None:
        raise UnsupportedTypeError(
            f"no order-preserving key for type {dtype}; zskip clusters and indexes boolean, integer, "
            "float, double, decimal, date, timestamp, string and binary columns"
        )
    return kind


def _one_chunk(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array


def _nulls(array: pa.Array) -> np.ndarray:
    return np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
