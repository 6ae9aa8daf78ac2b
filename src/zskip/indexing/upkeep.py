"""``zskip.optimize``: a rewrite that leaves the table's indexes covering the files it wrote.

A rewrite replaces data files; the index manifest describes the files it was built for.  Left alone,
every query after an optimize would lose index skipping on the rewritten rows until someone ran
``refresh_indexes``.  So once the rewrite's commits are in, the new files are indexed by the same
Spark jobs and published by the same compare-and-swap as ``refresh_indexes`` (which also forgets
the replaced files' entries).  A refresh that fails leaves the rewrite committed and the old
manifest in place: the result says so, and what to run.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from typing import Concatenate, ParamSpec

from pyspark.sql import SparkSession

from zskip.iceberg.spark_errors import first_line
from zskip.indexing.api import refresh_indexes
from zskip.layout.optimize import OptimizeResult
from zskip.layout.optimize import optimize as rewrite

__all__ = ["keeping_indexes", "optimize"]

log = logging.getLogger(__name__)

P = ParamSpec("P")


def keeping_indexes(
    run: Callable[Concatenate[SparkSession, str, P], OptimizeResult],
) -> Callable[Concatenate[SparkSession, str, P], OptimizeResult]:
    """``run`` (an optimize), followed by a refresh of the table's indexes when it committed anything."""

    @functools.wraps(run)
    def optimize(spark: SparkSession, table: str, *args: P.args, **kwargs: P.kwargs) -> OptimizeResult:
        result = run(spark, table, *args, **kwargs)
        if result.noop:
            return result
        try:
            indexed = refresh_indexes(spark, table, progress=kwargs.get("progress"))  # type: ignore[arg-type]
        except Exception as exc:
            note = f"indexes not refreshed ({first_line(exc)}): run `zskip index refresh {table}`"
            log.warning("optimize %s: %s", table, note)
            return dataclasses.replace(result, index_note=note)
        if not indexed.indexes:
            return result  # the table has no indexes
        return dataclasses.replace(
            result,
            indexes=indexed.indexes,
            files_indexed=indexed.files_indexed,
            index_seconds=indexed.duration_seconds,
            index_note=f"{', '.join(indexed.indexes)} cover the {result.files_written:,} files written "
            f"({indexed.files_indexed:,} data files indexed now)",
        )

    return optimize


optimize = keeping_indexes(rewrite)
