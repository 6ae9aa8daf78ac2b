"""Query planning: which files and row groups can match, staged reads through Spark, and explain."""

from zskip.planning.read import Explain, explain, read
from zskip.planning.sql import sql

__all__ = ["Explain", "explain", "read", "sql"]
