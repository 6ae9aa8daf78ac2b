"""Query planning: which files and row groups can match, staged reads through Spark, and explain."""

from zskip.planning.read import Explain, explain, read
from zskip.planning.sql import sql
from zskip.planning.staging import release_reads

__all__ = ["Explain", "explain", "read", "release_reads", "sql"]
