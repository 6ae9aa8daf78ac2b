"""Data sets for the demo, benchmarks and tests, generated locally and loaded into Iceberg."""

from __future__ import annotations

from zskip.datasets.ssb import SSB_QUERIES, load_ssb
from zskip.datasets.tpch import LINEITEM_CLUSTER_COLUMNS, generate_tpch, lineitem_queries, load_lineitem

__all__ = [
    "LINEITEM_CLUSTER_COLUMNS",
    "SSB_QUERIES",
    "generate_tpch",
    "lineitem_queries",
    "load_lineitem",
    "load_ssb",
]
