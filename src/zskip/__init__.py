"""zskip: space-filling-curve clustering and skipping indexes that make selective queries on
Apache Iceberg tables fast.

>>> import zskip
>>> spark = zskip.session()                  # doctest: +SKIP
"""

from __future__ import annotations

from zskip import curves
from zskip.errors import (
    JavaNotFoundError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
    WarehouseNotWritableError,
    ZskipError,
)
from zskip.iceberg.session import session

__version__ = "0.1.0"

__all__ = [
    "JavaNotFoundError",
    "UnknownColumnError",
    "UnknownTableError",
    "UnsupportedTypeError",
    "WarehouseNotWritableError",
    "ZskipError",
    "__version__",
    "curves",
    "session",
]
