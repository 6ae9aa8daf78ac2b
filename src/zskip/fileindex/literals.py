"""Query literals as values of a column's Arrow type, exactly or not at all.

Arrow converts ``5.7`` to an int64 ``5`` without complaint; an index that then answered
``c < 5.7`` as ``c < 5`` would skip rows holding 5.  So a literal converts only when the result
equals it, and otherwise the index does not answer (the row group is kept).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["InexactLiteral", "exact_scalar", "keys_as"]


class InexactLiteral(ValueError):
    """The literal has no exact value of the column's type."""


def exact_scalar(value: Any, kind: pa.DataType) -> pa.Scalar:
    """``value`` as a scalar of ``kind``, or ``InexactLiteral`` (one query asks once per file: cached)."""
    try:
        spelled = repr(value) if isinstance(value, float) else None
        return _exact_scalar(value, type(value).__qualname__, spelled, kind)
    except TypeError:  # an unhashable literal: converted each time
        return _convert(value, kind)


@functools.lru_cache(maxsize=1024)
def _exact_scalar(value: Any, value_type: str, spelled: str | None, kind: pa.DataType) -> pa.Scalar:
    # value_type keeps 1, 1.0 and True apart and a float's spelling 0.0 and -0.0 (each pair hashes
    # alike); exceptions are never cached
    return _convert(value, kind)


def _convert(value: Any, kind: pa.DataType) -> pa.Scalar:
    try:
        scalar = pa.scalar(value, type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        raise InexactLiteral(f"{value!r} is not a {kind}: {exc}") from None
    back = scalar.as_py()
    if isinstance(value, float) and math.isnan(value):
        if isinstance(back, float) and math.isnan(back):
            return scalar
    elif back == value:
        return scalar
    raise InexactLiteral(f"{value!r} has no exact {kind} value (it would become {back!r})")


def keys_as(keys: pa.Array, kind: pa.DataType) -> pa.Array:
    """A join's keys as values of a column's type ``kind``: whole numbers the type cannot hold are dropped
    (they equal no value of the column); other keys convert exactly or ``InexactLiteral``."""
    if keys.type == kind:
        return keys
    if pa.types.is_integer(kind) and pa.types.is_integer(keys.type):
        info = np.iinfo(kind.to_pandas_dtype())
        values = keys.to_numpy(zero_copy_only=False)
        values = values[(values >= info.min) & (values <= info.max)]
        return pa.array(values.astype(kind.to_pandas_dtype()), type=kind)
    try:
        return keys.cast(kind)  # safe: a key that would change on the way fails
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise InexactLiteral(f"join keys of type {keys.type} as {kind}: {exc}") from None
