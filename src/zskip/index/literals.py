"""Query literals as values of a column's Arrow type, exactly or not at all.

Arrow converts ``5.7`` to an int64 ``5`` without complaint; an index that then answered
``c < 5.7`` as ``c < 5`` would skip rows holding 5.  So a literal converts only when the result
equals it, and otherwise the index does not answer (the row group is kept).
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

__all__ = ["InexactLiteral", "exact_scalar"]


class InexactLiteral(ValueError):
    """The literal has no exact value of the column's type."""


def exact_scalar(value: Any, kind: pa.DataType) -> pa.Scalar:
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
