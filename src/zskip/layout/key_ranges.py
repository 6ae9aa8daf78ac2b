"""Curve-key ranges of data files and of their row groups, computed on executors.

Spark tasks of a few data files each: pyarrow reads only the clustered columns of a file, and the
task returns each row group's minimum and maximum key plus the file's.  Only those small rows come
back to the driver.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from zskip import retries  # by module: a task's closure pickles modules by name, not their locks
from zskip.curves import ClusteringSpec
from zskip.fileindex.build import column_indices_of, top_level_field_ids
from zskip.storage import LOCAL, FileAccess
from zskip.tablefiles.clustering_store import RANGES_SCHEMA

__all__ = ["compute_key_ranges", "file_key_ranges"]


def file_key_ranges(
    path: str,
    spec: ClusteringSpec,
    *,
    sorted_by_key: bool = False,
    only_sorted: bool = False,
    access: FileAccess = LOCAL,
) -> list[tuple[str, int, int, int, int]]:
    """``(path, row_group, min_key, max_key, rows)`` per row group, then ``row_group = -1`` for the file.

    ``sorted_by_key``: the file's rows are in curve-key order (optimize wrote it), so each row
    group's first and last rows hold its minimum and maximum key and only they are keyed.
    ``only_sorted``: every row is keyed, and a file whose rows are not in curve-key order (not written
    clustered under ``spec``) gives no ranges.
    """
    parquet = access.open_parquet(path)
    counts = np.array([parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)], np.int64)
    kept = np.flatnonzero(counts > 0)
    if not kept.size:
        return []
    # The whole file's clustered columns in one read and one call to the curve: keying row groups
    # one at a time cost 1.5 ms of per-call overhead each (1,553 row groups: 3 s against 0.6 s).
    data = clustered_columns(parquet, spec)
    ends = np.cumsum(counts)[kept]
    starts = ends - counts[kept]
    if sorted_by_key:
        firsts_and_lasts = spec.keys(data.take(np.stack([starts, ends - 1], axis=1).ravel()))
        lows, highs = firsts_and_lasts[0::2], firsts_and_lasts[1::2]
    else:
        keys = spec.keys(data)
        if only_sorted and not bool(np.all(keys[1:] >= keys[:-1])):
            return []
        lows, highs = np.minimum.reduceat(keys, starts), np.maximum.reduceat(keys, starts)
    rows = [
        (path, int(index), int(low), int(high), int(counts[index]))
        for index, low, high in zip(kept, lows, highs, strict=True)
    ]
    rows.append((path, -1, int(lows.min()), int(highs.max()), int(counts.sum())))
    return rows


def clustered_columns(parquet: pq.ParquetFile, spec: ClusteringSpec) -> pa.Table:
    """The spec's columns of a data file, found by field id (by name for a spec without ids), named as
    the spec names them."""
    positions = top_level_field_ids(parquet.schema_arrow)
    by_name = {name: i for i, name in enumerate(parquet.schema_arrow.names)}
    wanted = []
    for column in spec.columns:
        position = positions.get(column.field_id) if column.field_id is not None else by_name.get(column.name)
        if position is None:
            raise KeyError(f"a data file lacks the clustered column {column.name!r} (field id {column.field_id})")
        wanted.append(position)
    order = sorted(set(wanted))
    table = parquet.reader.read_all(column_indices=column_indices_of(parquet, order))
    return pa.table([table.column(order.index(p)) for p in wanted], names=list(spec.column_names))


def _listed_key_ranges(
    path: str, spec: ClusteringSpec, sorted_by_key: bool, only_sorted: bool, access: FileAccess
) -> list[tuple[str, int, int, int, int]]:
    return list(file_key_ranges(path, spec, sorted_by_key=sorted_by_key, only_sorted=only_sorted, access=access))


def compute_key_ranges(
    spark: SparkSession,
    spec: ClusteringSpec,
    paths: Sequence[str],
    *,
    generation: int,
    sorted_by_key: bool = False,
    only_sorted: bool = False,
    access: FileAccess = LOCAL,
    retried: Callable[[int], None] | None = None,
) -> pa.Table:
    """Key ranges (``RANGES_SCHEMA``) of ``paths``, computed by Spark tasks of a few files each
    (``only_sorted``: of those whose rows are in curve-key order, see ``file_key_ranges``).
    ``retried``: told how many of the tasks' requests to the store were tried again (``zskip.retries``)."""
    if not paths:
        return RANGES_SCHEMA.empty_table()

    def task(part: Iterable[str]) -> Iterator[tuple[list[tuple[str, int, int, int, int]], int]]:
        for path in part:
            before = retries.counts.total()
            # whole, and again from the start when a read of the file kept failing (``FileAccess.whole_file``)
            found = access.whole_file(
                path,
                functools.partial(_listed_key_ranges, path, spec, sorted_by_key, only_sorted, access),
            )
            yield found, retries.counts.total() - before

    # a few files per task: each task starts a Python worker, which costs more than keying a file's
    # row-group ends (200 one-file tasks took 12 s of a 19 s optimize of a 1M-row table)
    slices = min(len(paths), max(1, spark.sparkContext.defaultParallelism * 2))
    rdd = spark.sparkContext.parallelize(list(paths), slices)
    by_file = rdd.mapPartitions(task).collect()  # pickled Python ints: keys above 2**63 survive
    rows = [row for found, _ in by_file for row in found]
    if retried is not None:
        retried(sum(n for _, n in by_file))
    return pa.table(
        {
            "file_path": pa.array([r[0] for r in rows], pa.string()),
            "row_group": pa.array([r[1] for r in rows], pa.int32()),
            "min_key": pa.array(np.array([int(r[2]) for r in rows], dtype=np.uint64)),
            "max_key": pa.array(np.array([int(r[3]) for r in rows], dtype=np.uint64)),
            "rows": pa.array([r[4] for r in rows], pa.int64()),
            "generation": pa.array([generation] * len(rows), pa.int32()),
        },
        schema=RANGES_SCHEMA,
    )
