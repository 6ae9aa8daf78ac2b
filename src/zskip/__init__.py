"""zskip: space-filling-curve clustering and skipping indexes that make selective queries on
Apache Iceberg tables fast.

>>> import zskip
>>> spark = zskip.session()                  # doctest: +SKIP
"""

from __future__ import annotations

from zskip import curves
from zskip.errors import (
    ConcurrentChangeError,
    CorruptIndexError,
    InvalidOptionError,
    InvalidPredicateError,
    InvalidQueryError,
    JavaNotFoundError,
    StorageError,
    UnknownColumnError,
    UnknownIndexError,
    UnknownTableError,
    UnsupportedSessionError,
    UnsupportedStatementError,
    UnsupportedTypeError,
    WarehouseNotWritableError,
    ZskipError,
)
from zskip.indexing import (
    IndexInfo,
    IndexResult,
    VacuumResult,
    create_index,
    drop_index,
    list_indexes,
    optimize,
    refresh_indexes,
    vacuum,
)
from zskip.layout import Dimension, OptimizeResult
from zskip.layout.inspection import InspectResult, inspect
from zskip.maintenance import Advice, MaintainResult, TableStatus, advise, maintain, maintain_cycles, status
from zskip.planning import Explain, explain, explain_sql, read, sql
from zskip.planning.enable import disable, enable, enabled, session
from zskip.planning.workload import flush_workload, workload

__version__ = "0.3.0"

__all__ = [
    "Advice",
    "ConcurrentChangeError",
    "CorruptIndexError",
    "Dimension",
    "Explain",
    "IndexInfo",
    "IndexResult",
    "InspectResult",
    "InvalidOptionError",
    "InvalidPredicateError",
    "InvalidQueryError",
    "JavaNotFoundError",
    "MaintainResult",
    "OptimizeResult",
    "StorageError",
    "TableStatus",
    "UnknownColumnError",
    "UnknownIndexError",
    "UnknownTableError",
    "UnsupportedSessionError",
    "UnsupportedStatementError",
    "UnsupportedTypeError",
    "VacuumResult",
    "WarehouseNotWritableError",
    "ZskipError",
    "__version__",
    "advise",
    "create_index",
    "curves",
    "disable",
    "drop_index",
    "enable",
    "enabled",
    "explain",
    "explain_sql",
    "flush_workload",
    "inspect",
    "list_indexes",
    "maintain",
    "maintain_cycles",
    "optimize",
    "read",
    "refresh_indexes",
    "session",
    "sql",
    "status",
    "vacuum",
    "workload",
]
