"""Data sets for the demo, benchmarks and tests, generated locally and loaded into Iceberg."""

from __future__ import annotations

from zskip.datasets.ssb import SSB_QUERIES, load_ssb
from zskip.datasets.tpch import generate_tpch, load_lineitem

__all__ = ["SSB_QUERIES", "generate_tpch", "load_lineitem", "load_ssb"]
