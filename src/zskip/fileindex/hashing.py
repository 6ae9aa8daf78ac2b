"""XXH64 of each value's plain encoding, as Parquet's bloom filters hash values.

Fixed-width values (4 and 8 bytes) are hashed in numpy, vectorised; strings and binaries by the
``xxhash`` library.  The encoding follows the Parquet physical type Iceberg writes: INT32 for
boolean, byte, short, int, date and decimals up to precision 9; INT64 for long, timestamps and
decimals up to 18; IEEE floats for float and double (``-0.0`` hashed as ``0.0`` and every NaN as
one NaN, since Spark finds them equal); UTF-8 bytes for strings.  Decimals above precision 18 hash
their unscaled value as 16 big-endian bytes (Iceberg stores fewer bytes; zskip's own filters only
need to agree with themselves).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash

__all__ = ["plain_hashes"]

P1 = np.uint64(0x9E3779B185EBCA87)
P2 = np.uint64(0xC2B2AE3D27D4EB4F)
P3 = np.uint64(0x165667B19E3779F9)
P4 = np.uint64(0x85EBCA77C2B2AE63)
P5 = np.uint64(0x27D4EB2F165667C5)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _avalanche(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * P2
    h = h ^ (h >> np.uint64(29))
    h = h * P3
    return h ^ (h >> np.uint64(32))


def xxh64_8(values: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of each 8-byte little-endian value."""
    lane = values.view(np.uint64)
    with np.errstate(over="ignore"):
        h = np.full(len(lane), P5 + np.uint64(8), dtype=np.uint64)
        k = _rotl(lane * P2, 31) * P1
        h = _rotl(h ^ k, 27) * P1 + P4
        return _avalanche(h)


def xxh64_4(values: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of each 4-byte little-endian value."""
    lane = values.view(np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = np.full(len(lane), P5 + np.uint64(4), dtype=np.uint64)
        h = _rotl(h ^ (lane * P1), 23) * P2 + P3
        return _avalanche(h)


def plain_hashes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``uint64`` hash of every non-null value of ``values`` (nulls are dropped)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.drop_null()
    kind = values.type
    if pa.types.is_dictionary(kind):
        return plain_hashes(values.cast(kind.value_type))
    if pa.types.is_boolean(kind) or (pa.types.is_integer(kind) and kind.bit_width <= 32):
        return xxh64_4(values.cast(pa.int32()).to_numpy(zero_copy_only=False))
    if pa.types.is_date32(kind):
        return xxh64_4(values.view(pa.int32()).to_numpy(zero_copy_only=False))
    if pa.types.is_integer(kind):
        return xxh64_8(values.cast(pa.int64()).to_numpy(zero_copy_only=False))
    if pa.types.is_timestamp(kind):
        return xxh64_8(values.cast(pa.timestamp("us", tz=kind.tz)).view(pa.int64()).to_numpy(zero_copy_only=False))
    if pa.types.is_floating(kind):
        width = np.float32 if kind.bit_width == 32 else np.float64
        floats = values.to_numpy(zero_copy_only=False).astype(width)
        floats = np.where(floats == 0, width(0), floats)
        floats = np.where(np.isnan(floats), width(np.nan), floats)
        return xxh64_4(floats) if width is np.float32 else xxh64_8(floats)
    if pa.types.is_decimal(kind):
        return _decimal_hashes(values)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        values = values.cast(pa.binary())
        kind = values.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return np.fromiter((xxhash.xxh64_intdigest(v) for v in values.to_pylist()), np.uint64, len(values))
    raise TypeError(f"zskip cannot hash values of type {kind}")


def _decimal_hashes(values: pa.Array) -> np.ndarray:
    if not pa.types.is_decimal128(values.type):
        values = values.cast(pa.decimal128(values.type.precision, values.type.scale))
    # A decimal128 is its unscaled value as a 16-byte little-endian two's complement integer.
    words = np.frombuffer(values.buffers()[1], dtype=np.int64)
    words = words[2 * values.offset : 2 * (values.offset + len(values))].reshape(-1, 2)
    if values.type.precision <= 9:
        return xxh64_4(words[:, 0].astype(np.int32))
    if values.type.precision <= 18:
        return xxh64_8(words[:, 0].copy())
    big_endian = words.view(np.uint8).reshape(-1, 16)[:, ::-1]
    return np.fromiter((xxhash.xxh64_intdigest(row.tobytes()) for row in big_endian), np.uint64, len(big_endian))
