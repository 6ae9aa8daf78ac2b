"""Query planning: which files and row groups can match, staged reads through Spark, and explain."""

from zskip.planning.pipeline import STAGES
from zskip.planning.plan import Stage
from zskip.planning.read import Explain, explain, read
from zskip.planning.sql import explain_sql, sql
from zskip.planning.staging import release_reads

__all__ = ["STAGES", "Explain", "Stage", "explain", "explain_sql", "read", "release_reads", "sql"]
