"""Query planning: which files and row groups can match, staged reads through Spark, and explain."""

from zskip.planning.read import Explain, explain, read

__all__ = ["Explain", "explain", "read"]
