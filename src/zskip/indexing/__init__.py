"""Building, refreshing and publishing a table's skipping indexes (Spark jobs + an atomic manifest)."""

from zskip.indexing.api import (
    IndexInfo,
    IndexResult,
    VacuumResult,
    create_index,
    drop_index,
    list_indexes,
    refresh_indexes,
    vacuum,
)
from zskip.indexing.upkeep import optimize
from zskip.tablefiles.index_blobs import index_verdicts

__all__ = [
    "IndexInfo",
    "IndexResult",
    "VacuumResult",
    "create_index",
    "drop_index",
    "index_verdicts",
    "list_indexes",
    "optimize",
    "refresh_indexes",
    "vacuum",
]
