"""The workload log's files: one small Parquet file of scan records per flush under
``<table location>/zskip/workload/``, merged into one past ``COMPACT_AFTER`` files and kept to the
newest ``MAX_RECORDS`` records.  Records name columns by field id (``predicate_fields``); what
records them is ``zskip.planning.workload``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from zskip.storage import LOCAL, FileAccess

__all__ = [
    "COMPACT_AFTER",
    "JOIN_TYPE",
    "MAX_RECORDS",
    "WORKLOAD_SCHEMA",
    "append_records",
    "predicate_for_schema",
    "read_records",
    "workload_dir",
]

COMPACT_AFTER = 16
MAX_RECORDS = 20_000

JOIN_TYPE = pa.struct(
    [
        ("foreign_key_field", pa.int32()),
        ("dimension", pa.string()),
        ("key_field", pa.int32()),
        ("filter", pa.string()),
        ("filter_fields", pa.string()),
        ("column_fields", pa.list_(pa.int32())),
    ]
)

WORKLOAD_SCHEMA = pa.schema(
    [
        ("recorded_at", pa.timestamp("us", tz="UTC")),
        ("table", pa.string()),
        ("snapshot_id", pa.int64()),
        ("predicate", pa.string()),
        ("columns", pa.list_(pa.string())),
        # the predicate with each column written as `#<field id>` (see ``predicate_for_schema``), and
        # those field ids: what the scan filtered, whatever the columns are called later (null before 0.4)
        ("predicate_fields", pa.string()),
        ("field_ids", pa.list_(pa.int32())),
        ("files_total", pa.int64()),
        ("files_read", pa.int64()),
        ("row_groups_total", pa.int64()),
        ("row_groups_read", pa.int64()),
        ("planning_seconds", pa.float64()),
        # the filtered dimensions the scan was joined to (null in older records), by field id as above: the
        # fact table's foreign key, the dimension's key and the columns its filter names, and that
        # filter as printed and (null when zskip could not read each condition) with `#<field id>` columns
        ("joins", pa.list_(JOIN_TYPE)),
    ]
)


def workload_dir(location: str) -> str:
    """Where the workload log of the table at ``location`` lives."""
    return f"{location.rstrip('/')}/zskip/workload"


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'")  # a string literal as ``literal_sql`` writes it
_FIELD = re.compile(r"`#(\d+)`")


def predicate_for_schema(text: str, names: Mapping[int, str]) -> str | None:
    """A logged ``predicate_fields`` with each `#<field id>` replaced by the name ``names`` gives that
    field now (quoted as Spark SQL needs); ``None`` when a field it filters has left the table."""
    pieces: list[str] = []
    start = 0
    for literal in [*_QUOTED.finditer(text), None]:
        end = literal.start() if literal is not None else len(text)
        outside = text[start:end]
        for found in _FIELD.finditer(outside):
            if int(found.group(1)) not in names:
                return None
        pieces.append(_FIELD.sub(lambda m: "`" + names[int(m.group(1))].replace("`", "``") + "`", outside))
        if literal is not None:
            pieces.append(literal.group(0))
            start = literal.end()
    return "".join(pieces)


def read_records(location: str, waiting: Sequence[Mapping[str, object]] = (), access: FileAccess = LOCAL) -> pa.Table:
    """Every record of the workload log of the table at ``location`` (written and still in memory),
    oldest first."""
    filesystem, folder = access.resolve(workload_dir(location))
    parts = [pq.read_table(path, filesystem=filesystem, schema=WORKLOAD_SCHEMA) for path in _files(filesystem, folder)]
    if waiting:
        parts.append(pa.Table.from_pylist(waiting, schema=WORKLOAD_SCHEMA))
    if not parts:
        return WORKLOAD_SCHEMA.empty_table()
    table = pa.concat_tables(parts)
    return table.take(pc.sort_indices(table["recorded_at"]))


def _files(filesystem: pafs.FileSystem, folder: str) -> list[str]:
    infos = filesystem.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
    return sorted(i.path for i in infos if i.type == pafs.FileType.File and i.path.endswith(".parquet"))


def append_records(location: str, rows: list[dict[str, object]], access: FileAccess = LOCAL) -> None:
    """Write ``rows`` as a new file of the log; past ``COMPACT_AFTER`` files, merge them into one."""
    filesystem, folder = access.resolve(workload_dir(location))
    if isinstance(filesystem, pafs.LocalFileSystem):  # object stores have no folders to make
        filesystem.create_dir(folder, recursive=True)
    batch = pa.Table.from_pylist(rows, schema=WORKLOAD_SCHEMA)
    existing = _files(filesystem, folder)
    if len(existing) + 1 <= COMPACT_AFTER:
        pq.write_table(batch, f"{folder}/workload-{uuid.uuid4()}.parquet", filesystem=filesystem)
        return
    merged = pa.concat_tables(
        [*(pq.read_table(p, filesystem=filesystem, schema=WORKLOAD_SCHEMA) for p in existing), batch]
    )
    merged = merged.take(pc.sort_indices(merged["recorded_at"]))
    if merged.num_rows > MAX_RECORDS:
        merged = merged.slice(merged.num_rows - MAX_RECORDS)
    # the merged file first, then the parts it replaces: a crash in between leaves duplicates, not a gap
    pq.write_table(merged, f"{folder}/workload-{uuid.uuid4()}.parquet", filesystem=filesystem)
    for path in existing:
        filesystem.delete_file(path)
