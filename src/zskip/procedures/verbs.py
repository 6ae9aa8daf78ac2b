"""The procedures: each verb's SQL parameters and result columns, and the call of its Python API.

Arguments keep the API's names.  A parameter without a default is required; the others default to
NULL in SQL, and a NULL argument is left out of the API call, so the API's own defaults apply (one
place says what they are).  Column lists are ``array<string>``; a dimension is the text the CLI's
``--dimension`` takes (``FK=TABLE.KEY:COL,COL``); weights are ``map(column, weight)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from zskip.errors import InvalidOptionError, ZskipError
from zskip.indexing import create_index, drop_index, list_indexes, optimize, refresh_indexes, vacuum
from zskip.layout.dimensions import Dimension, parse_dimension
from zskip.maintenance import advise, maintain, status

__all__ = ["PROCEDURES", "Parameter", "Procedure", "call", "specs"]

Row = tuple[Any, ...]


@dataclass(frozen=True)
class Parameter:
    name: str
    sql_type: str  # Spark SQL DDL: string, bigint, double, boolean, array<string>, map<string,double>
    required: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Procedure:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    result: tuple[tuple[str, str], ...]  # (column, Spark SQL DDL type), in order
    run: Callable[[SparkSession, dict[str, Any]], list[Row]]
    # whether it may change the table: the caller's session then forgets its cached copy of the table
    # (the procedure commits from the planner process's session, whose catalog is not the caller's)
    writes: bool = True

    def spec(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "parameters": [
                {"name": p.name, "type": p.sql_type, "required": p.required, "doc": p.doc} for p in self.parameters
            ],
            "result": [{"name": name, "type": sql_type} for name, sql_type in self.result],
            "writes": self.writes,
        }


TABLE = Parameter("table", "string", required=True, doc="the table, as Spark names it (catalog.db.t or db.t)")


def _optimize(spark: SparkSession, args: dict[str, Any]) -> list[Row]:
    by: list[str | Dimension] = [
        *(args.pop("by", None) or []),
        *map(parse_dimension, args.pop("dimensions", None) or []),
    ]
    if not by:
        raise InvalidOptionError(
            "give the columns to cluster on: by => array('a', 'b') and/or dimensions => array(...)"
        )
    result = optimize(spark, args.pop("table"), by=by, **args)
    return [
        (
            result.table, result.mode, result.files_before, result.files_after, result.files_rewritten,
            result.files_written, result.rows_rewritten, result.bytes_before, result.bytes_after, result.groups,
            result.commits, result.snapshot_id, result.files_indexed, result.duration_seconds, result.reason,
        )
    ]  # fmt: skip


OPTIMIZE_RESULT = (
    ("table", "string"), ("mode", "string"), ("files_before", "bigint"), ("files_after", "bigint"),
    ("files_rewritten", "bigint"), ("files_written", "bigint"), ("rows_rewritten", "bigint"),
    ("bytes_before", "bigint"), ("bytes_after", "bigint"), ("groups", "bigint"), ("commits", "bigint"),
    ("snapshot_id", "bigint"), ("files_indexed", "bigint"), ("duration_seconds", "double"), ("reason", "string"),
)  # fmt: skip

INDEX_RESULT = (
    ("table", "string"), ("indexes", "array<string>"), ("files_indexed", "bigint"),
    ("files_already_indexed", "bigint"), ("files_total", "bigint"), ("entries_dropped", "bigint"),
    ("index_bytes_written", "bigint"), ("duration_seconds", "double"),
)  # fmt: skip


def _index_row(result: Any) -> list[Row]:
    return [
        (
            result.table, list(result.indexes), result.files_indexed, result.files_already_indexed,
            result.files_total, result.entries_dropped, result.index_bytes_written, result.duration_seconds,
        )
    ]  # fmt: skip


def _create_index(spark: SparkSession, args: dict[str, Any]) -> list[Row]:
    options = dict(args.pop("options", None) or {})
    for name in ("fpp", "max_groups"):
        if name in args:
            options[name] = args.pop(name)
    return _index_row(create_index(spark, args.pop("table"), args.pop("column"), **args, **options))


def _list_indexes(spark: SparkSession, args: dict[str, Any]) -> list[Row]:
    return [
        (i.column, i.kind, i.field_id, i.files_indexed, i.files_total, i.files_missing, i.index_bytes, i.unused)
        for i in list_indexes(spark, args["table"])
    ]


def _maintain(spark: SparkSession, args: dict[str, Any]) -> list[Row]:
    done = maintain(spark, args.pop("table"), **args)
    return [
        (
            done.table, done.snapshot_before, done.snapshot_after,
            done.optimize.files_rewritten if done.optimize else 0,
            done.optimize.files_written if done.optimize else 0,
            done.indexes.files_indexed if done.indexes else 0,
            done.retries, done.duration_seconds, done.reason,
        )
    ]  # fmt: skip


def _status(spark: SparkSession, args: dict[str, Any]) -> list[Row]:
    s = status(spark, args.pop("table"), **args)
    return [
        (
            s.table, s.snapshot_id, s.files, s.rows, s.bytes, s.clustering, s.files_clustered,
            s.clustered_share, s.last_optimize, [f"{i.column}:{i.kind}" for i in s.indexes], s.up_to_date,
            s.scans_recorded, s.advised, str(s),
        )
    ]  # fmt: skip


def _vacuum(spark: SparkSession, args: dict[str, Any]) -> list[Row]:
    done = vacuum(spark, args.pop("table"), **args)
    return [(done.files_deleted, done.bytes_deleted, done.files_kept, list(done.warnings))]


def _advise(spark: SparkSession, args: dict[str, Any]) -> list[Row]:
    advice = advise(spark, args.pop("table"), **args)
    return [
        (
            rank, layout.label, layout.curve, [str(axis) for axis in layout.columns], layout.files,
            layout.row_groups, layout.rows, advice.files_now, advice.rows_now, layout.rewrites,
            rank == 1 and bool(advice.applied), "; ".join(advice.applied) if rank == 1 else None,
        )
        for rank, layout in enumerate(advice.layouts, start=1)
    ]  # fmt: skip


PROCEDURES: Mapping[str, Procedure] = {
    p.name: p
    for p in (
        Procedure(
            "optimize",
            "Cluster a table's data files along a space-filling curve (zskip.optimize)",
            (
                TABLE,
                Parameter("by", "array<string>", doc="columns to cluster on"),
                Parameter("dimensions", "array<string>", doc="dimensions, each 'FK=TABLE.KEY:COL,COL'"),
                Parameter("curve", "string", doc="hilbert (default), zorder or linear"),
                Parameter("mapping", "string", doc="rank (default) or raw"),
                Parameter("target_file_size", "string", doc="default 128MB"),
                Parameter("row_group_size", "string", doc="default 16MB"),
                Parameter("where", "string", doc="only files holding rows that match this filter"),
                Parameter("mode", "string", doc="incremental (default) or full"),
                Parameter("max_group_size", "string", doc="default 100GB"),
                Parameter("partial_progress", "boolean", doc="commit in batches (default true)"),
                Parameter("max_commits", "int", doc="default 10"),
                Parameter("weights", "map<string,double>", doc="zorder/linear: each column's share"),
            ),
            OPTIMIZE_RESULT,
            _optimize,
        ),
        Procedure(
            "create_index",
            "Index a column of every data file (zskip.create_index)",
            (
                TABLE,
                Parameter("column", "string", required=True),
                Parameter("kind", "string", doc="bloom (default), bitmap, sums or cube"),
                Parameter("fpp", "double", doc="bloom: the false-positive probability"),
                Parameter("measures", "array<string>", doc="cube: the number columns it aggregates"),
                Parameter("max_groups", "int", doc="cube: most values of the column per row group (default 1024)"),
                Parameter("options", "map<string,string>", doc="the kind's other options"),
            ),
            INDEX_RESULT,
            _create_index,
        ),
        Procedure(
            "refresh_indexes",
            "Index the files an index does not cover yet (zskip.refresh_indexes)",
            (TABLE,),
            INDEX_RESULT,
            lambda spark, args: _index_row(refresh_indexes(spark, args["table"])),
        ),
        Procedure(
            "drop_index",
            "Drop an index (zskip.drop_index)",
            (TABLE, Parameter("column", "string", required=True), Parameter("kind", "string", required=True)),
            INDEX_RESULT,
            lambda spark, args: _index_row(drop_index(spark, args["table"], args["column"], args["kind"])),
        ),
        Procedure(
            "list_indexes",
            "A table's indexes and how much of it each covers (zskip.list_indexes)",
            (TABLE,),
            (
                ("column", "string"),
                ("kind", "string"),
                ("field_id", "int"),
                ("files_indexed", "bigint"),
                ("files_total", "bigint"),
                ("files_missing", "bigint"),
                ("index_bytes", "bigint"),
                ("unused", "string"),
            ),
            _list_indexes,
            writes=False,
        ),
        Procedure(
            "maintain",
            "One round of upkeep: cluster new files under the recorded layout, refresh indexes (zskip.maintain)",
            (TABLE, Parameter("attempts", "int", doc="tries per step lost to another writer (default 3)")),
            (
                ("table", "string"),
                ("snapshot_before", "bigint"),
                ("snapshot_after", "bigint"),
                ("files_rewritten", "bigint"),
                ("files_written", "bigint"),
                ("files_indexed", "bigint"),
                ("retries", "bigint"),
                ("duration_seconds", "double"),
                ("reason", "string"),
            ),
            _maintain,
        ),
        Procedure(
            "status",
            "How much of a table is clustered and indexed (zskip.status)",
            (TABLE, Parameter("drift", "boolean", doc="also whether the workload drifted from the layout")),
            (
                ("table", "string"),
                ("snapshot_id", "bigint"),
                ("files", "bigint"),
                ("rows", "bigint"),
                ("bytes", "bigint"),
                ("clustering", "string"),
                ("files_clustered", "bigint"),
                ("clustered_share", "double"),
                ("last_optimize", "string"),
                ("indexes", "array<string>"),
                ("up_to_date", "boolean"),
                ("scans_recorded", "bigint"),
                ("advised", "string"),
                ("summary", "string"),
            ),
            _status,
            writes=False,
        ),
        Procedure(
            "vacuum",
            "Delete zskip's files nothing references any more (zskip.vacuum)",
            (TABLE, Parameter("older_than", "string", doc="only files older than this (default 1d)")),
            (
                ("files_deleted", "bigint"),
                ("bytes_deleted", "bigint"),
                ("files_kept", "bigint"),
                ("warnings", "array<string>"),
            ),
            _vacuum,
        ),
        Procedure(
            "advise",
            "Rank layouts by what the workload would read under each, simulated on a sample (zskip.advise)",
            (
                TABLE,
                Parameter("queries", "array<string>", doc="the workload as query text (default: the workload log)"),
                Parameter("max_columns", "int", doc="default 6"),
                Parameter("target_file_size", "string"),
                Parameter("sample_rows", "bigint"),
                Parameter("top", "int", doc="default 10"),
                Parameter("apply", "boolean", doc="optimize to the best layout and build its indexes"),
                Parameter(
                    "no_slower_than",
                    "string",
                    doc="'current' or a table: rank first the layouts that make no query slower than there",
                ),
            ),
            (
                ("rank", "int"),
                ("layout", "string"),
                ("curve", "string"),
                ("columns", "array<string>"),
                ("files", "double"),
                ("row_groups", "double"),
                ("rows", "double"),
                ("files_now", "double"),
                ("rows_now", "double"),
                ("rewrites", "boolean"),
                ("applied", "boolean"),
                ("applied_steps", "string"),
            ),
            _advise,
        ),
    )
}


def specs() -> str:
    """Every procedure's parameters and result columns, as JSON (what zskip's JVM catalog declares)."""
    return json.dumps({name: procedure.spec() for name, procedure in PROCEDURES.items()})


def call(spark: SparkSession, name: str, arguments: str) -> str:
    """Run procedure ``name`` with ``arguments`` (a JSON object of its parameters; null = not given):
    ``{"rows": [[...], ...]}``, or ``{"error": ..., "message": ...}`` with the API's one-line message."""
    try:
        procedure = PROCEDURES.get(name)
        if procedure is None:
            raise InvalidOptionError(f"zskip has no procedure {name!r}; it has {', '.join(sorted(PROCEDURES))}")
        given = json.loads(arguments)
        known = {p.name for p in procedure.parameters}
        unknown = sorted(set(given) - known)
        if unknown:
            raise InvalidOptionError(f"{name} takes no argument {', '.join(unknown)}; it takes {', '.join(known)}")
        args = {key: value for key, value in given.items() if value is not None}
        rows = _described(spark, f"zskip {name} {args.get('table', '')}".strip(), lambda: procedure.run(spark, args))
        return json.dumps({"rows": [list(row) for row in rows]})
    except ZskipError as exc:  # refused: what is wrong and what to do, in the API's words
        return json.dumps({"error": type(exc).__name__, "refused": True, "message": str(exc).split("\n")[0]})
    except TypeError as exc:  # an argument the API does not take in this form
        return json.dumps({"error": "InvalidOptionError", "refused": True, "message": f"{name}: {exc}"})
    except Exception as exc:  # failed on the way (a cancelled job, storage): said, and the process lives on
        first = str(exc).strip().split("\n")[0][:500]
        return json.dumps({"error": type(exc).__name__, "refused": False, "message": f"zskip {name} failed: {first}"})


def _described(spark: SparkSession, description: str, work: Callable[[], list[Row]]) -> list[Row]:
    """``work`` with its Spark jobs described as ``description`` (the Spark UI shows it)."""
    context = spark.sparkContext
    before = context.getLocalProperty("spark.job.description")
    context.setJobDescription(description)
    try:
        return work()
    finally:
        context.setJobDescription(before)  # type: ignore[arg-type]
