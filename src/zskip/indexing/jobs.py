"""Index builds as Spark jobs: one task per data file, reading it with pyarrow on the executor.

Each task writes one Puffin file beside the table and returns one small entry per blob; the
driver only gathers entries.  Files go to Spark in batches so a progress bar can move.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import SparkSession

from zskip.display import Progress
from zskip.fileindex.build import BlobEntry, build_file_indexes, copy_blobs
from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.manifest import ENTRY_SCHEMA, entries_table
from zskip.storage import LOCAL, FileAccess

__all__ = ["build_indexes", "merge_puffins"]


def build_indexes(
    spark: SparkSession,
    work: Mapping[str, Sequence[IndexDefinition]],
    puffin_paths: Mapping[str, str],
    *,
    snapshot_id: int,
    absent_is_null: frozenset[int] = frozenset(),
    access: FileAccess = LOCAL,
    progress: Progress | None = None,
) -> pa.Table:
    """Build the indexes ``work`` names per data file; the manifest entries (``ENTRY_SCHEMA``) of every blob.

    ``absent_is_null``: fields a file without them holds as NULL in every row (see ``build_file_indexes``)."""
    files = sorted(work)
    if not files:
        return ENTRY_SCHEMA.empty_table()
    report = progress or (lambda stage, done, total: None)
    batch = max(64, 4 * spark.sparkContext.defaultParallelism)
    tables = []
    report("indexing files", 0, len(files))
    for start in range(0, len(files), batch):
        chunk = [(f, [d.to_json() for d in work[f]], puffin_paths[f]) for f in files[start : start + batch]]

        def task(part: Iterable[tuple[str, list[dict], str]]) -> Iterator[BlobEntry]:
            for data_file, definitions, puffin_path in part:
                parsed = [IndexDefinition.from_json(d) for d in definitions]
                yield from build_file_indexes(
                    data_file,
                    parsed,
                    puffin_path,
                    snapshot_id=snapshot_id,
                    absent_is_null=absent_is_null,
                    access=access,
                )

        entries = spark.sparkContext.parallelize(chunk, len(chunk)).mapPartitions(task).collect()
        tables.append(entries_table(entries))
        report("indexing files", min(start + batch, len(files)), len(files))
    return pa.concat_tables(tables)


def merge_puffins(
    spark: SparkSession, entries: pa.Table, groups: Sequence[tuple[str, Sequence[str]]], access: FileAccess = LOCAL
) -> pa.Table:
    """Copy the blobs ``entries`` place in each group's source Puffin files into one new file per group.

    ``groups`` pairs a new path with the files merged into it; returns ``entries`` pointing at the
    new files (blobs are copied as stored: no decompression, checksums unchanged).
    """
    from pyarrow import compute as pc

    sources = {source: new for new, members in groups for source in members}
    moving = entries.filter(pc.is_in(entries["puffin_path"], value_set=pa.array(sorted(sources), pa.string())))
    staying = entries.filter(pc.invert(pc.is_in(entries["puffin_path"], value_set=pa.array(sorted(sources)))))
    by_target: dict[str, list[dict]] = {}
    for row in moving.to_pylist():
        by_target.setdefault(sources[row["puffin_path"]], []).append(row)
    work = sorted(by_target.items())
    if not work:
        return entries

    def task(part: Iterable[tuple[str, list[dict]]]) -> Iterator[BlobEntry]:
        for target, rows in part:
            yield from copy_blobs(target, rows, access)

    moved = spark.sparkContext.parallelize(work, len(work)).mapPartitions(task).collect()
    return pa.concat_tables([staying, entries_table(moved).cast(entries.schema)])
