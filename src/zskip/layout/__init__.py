"""Layout: clustering a table's files along a space-filling curve (orchestration on Spark)."""

from __future__ import annotations

from zskip.layout.dimensions import Dimension
from zskip.layout.optimize import OptimizeResult, clustering_store, optimize

__all__ = ["Dimension", "OptimizeResult", "clustering_store", "optimize"]
