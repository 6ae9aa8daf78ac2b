"""Index builds as Spark jobs: one task per data file, reading it with pyarrow on the executor.

Each task writes one Puffin file beside the table and returns one small entry per blob; the
driver only gathers entries.  Files go to Spark in batches so a progress bar can move.

A file whose reads keep failing for a while after the store's client and ``FileAccess`` tried them
again (a cut answer in the middle of a column chunk) is indexed again from the start, as the table's
retry settings allow: on one machine Spark does not run a failed task again, and on a cluster this
spares a task attempt (``spark.task.maxFailures``).  The file's Puffin file is written whole or not at
all, under a name used once, so a second try overwrites nothing anyone reads.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import SparkSession

from zskip import retries  # by module: a task's closure pickles modules by name, not their locks
from zskip.display import Progress
from zskip.fileindex.build import BuiltIndexes, build_file_indexes, copy_blobs
from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.manifest import ENTRY_SCHEMA, FOOTER_SCHEMA, entries_table, footers_table
from zskip.storage import LOCAL, FileAccess

__all__ = ["build_indexes", "merge_puffins"]


def build_indexes(
    spark: SparkSession,
    work: Mapping[str, Sequence[IndexDefinition]],
    puffin_paths: Mapping[str, str],
    *,
    snapshot_id: int,
    absent_is_null: frozenset[int] = frozenset(),
    copy_footers: frozenset[str] = frozenset(),
    access: FileAccess = LOCAL,
    progress: Progress | None = None,
) -> tuple[pa.Table, pa.Table]:
    """Build the indexes ``work`` names per data file, and copies of the footers of the data files in
    ``copy_footers``; the manifest entries (``ENTRY_SCHEMA``) of every blob, and where the footer
    copies are (``FOOTER_SCHEMA``).

    ``absent_is_null``: fields a file without them holds as NULL in every row (see ``build_file_indexes``)."""
    files = sorted(work)
    if not files:
        return ENTRY_SCHEMA.empty_table(), FOOTER_SCHEMA.empty_table()
    report = progress or (lambda stage, done, total: None)
    batch = max(64, 4 * spark.sparkContext.defaultParallelism)
    tables, footers = [], []
    retried = 0
    report("indexing files", 0, len(files))
    for start in range(0, len(files), batch):
        chunk = [
            (f, [d.to_json() for d in work[f]], puffin_paths[f], f in copy_footers)
            for f in files[start : start + batch]
        ]

        def task(part: Iterable[tuple[str, list[dict], str, bool]]) -> Iterator[BuiltIndexes]:
            for data_file, definitions, puffin_path, copy_footer in part:
                parsed = [IndexDefinition.from_json(d) for d in definitions]
                before = retries.counts.total()
                build = functools.partial(
                    build_file_indexes,
                    data_file,
                    parsed,
                    puffin_path,
                    snapshot_id=snapshot_id,
                    absent_is_null=absent_is_null,
                    copy_footer=copy_footer,
                    access=access,
                )
                built = access.whole_file(data_file, build)
                yield dataclasses.replace(built, retries=retries.counts.total() - before)

        built = spark.sparkContext.parallelize(chunk, len(chunk)).mapPartitions(task).collect()
        tables.append(entries_table(entry for one in built for entry in one.entries))
        footers.append(footers_table(one.footer for one in built if one.footer is not None))
        retried += sum(one.retries for one in built)
        report(retries.stage_retried("indexing files", retried), min(start + batch, len(files)), len(files))
    return pa.concat_tables(tables), pa.concat_tables(footers)


def merge_puffins(
    spark: SparkSession,
    entries: pa.Table,
    footers: pa.Table,
    groups: Sequence[tuple[str, Sequence[str]]],
    access: FileAccess = LOCAL,
) -> tuple[pa.Table, pa.Table]:
    """Copy the blobs and footer copies ``entries`` and ``footers`` place in each group's source Puffin
    files into one new file per group.

    ``groups`` pairs a new path with the files merged into it; returns ``entries`` and ``footers``
    pointing at the new files (footer copies and most blobs are copied as stored; a blob whose kind has
    a merged form is stored in it, and its parts copied beside other files': ``copy_blobs``).
    """
    from pyarrow import compute as pc

    sources = {source: new for new, members in groups for source in members}
    value_set = pa.array(sorted(sources), pa.string())
    by_target: dict[str, tuple[list[dict], list[dict]]] = {}
    staying = []
    for which, table in enumerate((entries, footers)):
        moves = pc.is_in(table["puffin_path"], value_set=value_set)
        staying.append(table.filter(pc.invert(moves)))
        for row in table.filter(moves).to_pylist():
            by_target.setdefault(sources[row["puffin_path"]], ([], []))[which].append(row)
    work = sorted(by_target.items())
    if not work:
        return entries, footers

    def task(part: Iterable[tuple[str, tuple[list[dict], list[dict]]]]) -> Iterator[BuiltIndexes]:
        for target, (rows, footer_rows) in part:
            copied, copied_footers = copy_blobs(target, rows, access, footers=footer_rows)
            yield BuiltIndexes(copied, None)
            for footer in copied_footers:
                yield BuiltIndexes([], footer)

    moved = spark.sparkContext.parallelize(work, len(work)).mapPartitions(task).collect()
    return (
        pa.concat_tables([staying[0], entries_table(e for one in moved for e in one.entries).cast(entries.schema)]),
        pa.concat_tables([staying[1], footers_table(one.footer for one in moved if one.footer).cast(footers.schema)]),
    )
