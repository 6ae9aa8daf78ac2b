"""zskip: space-filling-curve clustering and skipping indexes that make selective queries on
Apache Iceberg tables fast.

>>> import zskip
>>> spark = zskip.session()                  # doctest: +SKIP
"""

from __future__ import annotations

from zskip import curves
from zskip.errors import (
    ConcurrentChangeError,
    InvalidOptionError,
    JavaNotFoundError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
    WarehouseNotWritableError,
    ZskipError,
)
from zskip.iceberg.session import session
from zskip.layout import OptimizeResult, optimize
from zskip.layout.inspect import InspectResult, inspect

__version__ = "0.1.0"

__all__ = [
    "ConcurrentChangeError",
    "InspectResult",
    "InvalidOptionError",
    "JavaNotFoundError",
    "OptimizeResult",
    "UnknownColumnError",
    "UnknownTableError",
    "UnsupportedTypeError",
    "WarehouseNotWritableError",
    "ZskipError",
    "__version__",
    "curves",
    "inspect",
    "optimize",
    "session",
]
