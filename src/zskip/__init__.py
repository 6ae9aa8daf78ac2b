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
    UnknownIndexError,
    UnknownTableError,
    UnsupportedTypeError,
    WarehouseNotWritableError,
    ZskipError,
)
from zskip.iceberg.session import session
from zskip.indexing import (
    IndexInfo,
    IndexResult,
    VacuumResult,
    create_index,
    drop_index,
    list_indexes,
    refresh_indexes,
    vacuum,
)
from zskip.layout import OptimizeResult, optimize
from zskip.layout.inspect import InspectResult, inspect

__version__ = "0.2.0"

__all__ = [
    "ConcurrentChangeError",
    "IndexInfo",
    "IndexResult",
    "InspectResult",
    "InvalidOptionError",
    "JavaNotFoundError",
    "OptimizeResult",
    "UnknownColumnError",
    "UnknownIndexError",
    "UnknownTableError",
    "UnsupportedTypeError",
    "VacuumResult",
    "WarehouseNotWritableError",
    "ZskipError",
    "__version__",
    "create_index",
    "curves",
    "drop_index",
    "inspect",
    "list_indexes",
    "optimize",
    "refresh_indexes",
    "session",
    "vacuum",
]
