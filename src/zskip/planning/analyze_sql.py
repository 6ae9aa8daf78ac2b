"""``zskip explain --sql ... --analyze``: a query run once with zskip in it as in every query (its rule,
which also answers aggregates from statistics and cubes), and what each Iceberg table's scans read,
measured from the run, beside what zskip's rule said of each scan."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from pyspark.sql import SparkSession

from zskip.iceberg.scan_stats import measure_read, scan_notes
from zskip.iceberg.spark_errors import reaching_storage
from zskip.planning.enable import disable, enable, enabled
from zskip.planning.sql import analyse_query
from zskip.retries import counts as retry_counts

__all__ = ["AnalyzedScans", "analyze_sql"]

_NOTE = "zskip: "


@dataclass(frozen=True)
class AnalyzedScans:
    """One table's scans in a run of a query: zskip's note of each (what it read and what it answered
    from statistics and cubes, by kind), and what they read, measured (rows as Spark's
    ``numOutputRows``, files and bytes of their tasks, row groups counted from the files)."""

    table: str
    notes: tuple[str, ...]
    rows_scanned: int
    files_scanned: int
    bytes_scanned: int
    row_groups_scanned: int | None
    # zskip's requests to object stores tried again while the query was planned and run (``zskip.retries``;
    # one figure for the whole query, repeated for each table)
    requests_retried: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


@reaching_storage
def analyze_sql(spark: SparkSession, query: str) -> list[AnalyzedScans]:
    """Run ``query`` (queries only, checked before Spark runs anything) with zskip on for this session,
    once per table it scans, and measure what each table's scans read; the session's setting is as it
    was afterwards."""

    analyse_query(spark, query)  # a single query, or a one-line refusal
    was = enabled(spark)
    enable(spark)
    retried = retry_counts.total()
    try:
        frame = spark.sql(query)
        notes = scan_notes(frame, _NOTE)
        measured = [(table, found, measure_read(frame, table)) for table, found in notes.items()]
        retries = retry_counts.total() - retried
        return [
            AnalyzedScans(table, tuple(found), read.rows, read.files, read.bytes, read.row_groups, retries)
            for table, found, read in measured
        ]
    finally:
        if not was:
            disable(spark)
