"""Layout: clustering a table's files along a space-filling curve (orchestration on Spark)."""

from __future__ import annotations

from zskip.layout.optimize import OptimizeResult, clustering_store, optimize

__all__ = ["OptimizeResult", "clustering_store", "optimize"]
