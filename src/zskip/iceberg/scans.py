"""A query's Iceberg scans as Spark planned them, learnt in one call, and the same query re-pointed at staged files.

zskip does not parse SQL itself.  Spark parses and analyses the query (types, implicit casts,
case-insensitive names), its optimizer pushes what it can to each Iceberg scan, and Iceberg keeps
those conjuncts as its own expressions.  The JVM helper (``zskip.iceberg.bridge``) reads, for
every scan, the pushed filters, the table's snapshot, location and zskip's properties, the field
ids and types of the filtered columns, and the files of the scan's own tasks (which Spark's
execution reuses), all as one JSON answer.  What Spark did not push (a UDF, a comparison of two
columns) stays out of the predicate: it never prunes, and Spark applies it anyway.

``QueryScans.staged`` then swaps chosen table relations of the query's analysed plan for reads of
staged tasks, so the query is analysed once and only the chosen files and row groups are read.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from zskip.expr import (
    AlwaysTrue,
    And,
    Expr,
    Not,
    Opaque,
    Or,
    bind,
    to_sql,
)
from zskip.iceberg.arrow_types import key_array
from zskip.iceberg.bridge import bridge, read_answer, read_text
from zskip.iceberg.file_lists import FILE_LISTS
from zskip.iceberg.filter_json import expr_from_json
from zskip.iceberg.scan_types import AggregateRequest, Field, IcebergScan, JoinKeys, TableRelation, TableState
from zskip.storage import FileAccess

__all__ = [
    "QueryScans",
    "described_scans",
    "forget_listed_files",
    "listed_scan_count",
    "planned_tasks",
    "query_scans",
    "release_staged",
]

log = logging.getLogger(__name__)


@dataclass
class QueryScans:
    """The Iceberg scans and table relations of one planned query (holds the JVM's view of them)."""

    frame: DataFrame | None  # None: the scans of a plan zskip's optimizer rule is planning
    java: Any
    output: frozenset[int]  # expression ids of the query's own output columns
    scans: tuple[IcebergScan, ...]
    relations: tuple[TableRelation, ...]
    joins: tuple[JoinKeys, ...] = ()
    settings: Mapping[str, str] = field(default_factory=dict)  # the session's spark.zskip.* settings
    staged_sets: list[str] = field(default_factory=list)

    @property
    def planned(self) -> DataFrame:
        """The query these scans belong to, as planned (only for a query zskip planned as a DataFrame)."""
        assert self.frame is not None, "the scans of zskip's optimizer rule have no DataFrame"
        return self.frame

    def joins_of(self, scan: IcebergScan) -> tuple[JoinKeys, ...]:
        return tuple(j for j in self.joins if j.scan == scan.position)

    def join_keys(self, join: JoinKeys, cap: int) -> pa.Array | None:
        """The distinct non-NULL keys the dimension side of ``join`` yields, computed by a Spark job over the
        dimension: whole numbers as ``int64``, other keys as the fact column's Arrow type; ``None`` when
        there are more than ``cap``."""
        answer = str(self.java.joinKeys(join.position, cap))
        if not answer:
            return None
        kind, _, path = answer.partition(":")
        try:
            with open(path, "rb") as stream:
                data = stream.read()
        finally:
            os.unlink(path)
        return key_array(kind, data, join.field.type)

    def relation_of(self, scan: IcebergScan) -> TableRelation | None:
        """The relation ``scan`` reads: the only one of its table whose columns include the scan's."""
        found = [r for r in self.relations if r.table == scan.table and scan.output <= r.output]
        return found[0] if len(found) == 1 else None

    def staged(self, choices: Sequence[Mapping[str, Any]]) -> DataFrame | None:
        """The query with each chosen relation reading only some files and row groups, or ``None``.

        Each choice is ``{"relation": r, "scan": s, "files": [[task], [task, [start, end, ...]]]}``
        (tasks of scan ``s``, whole or cut to byte ranges), ``{"relation": r, "union": [[scan,
        task], ...]}`` (whole files, each scan filtering for itself) or ``{"relation": r, "scan": s,
        "files": []}`` (nothing can match).  One py4j call stages them all and rebuilds the plan.
        """
        import json
        import uuid

        named = [{**choice, "set_id": f"zskip-read-{uuid.uuid4()}"} for choice in choices]
        java_frame = self.java.staged(json.dumps(named), self.planned.sparkSession._jsparkSession)
        if java_frame is None:
            return None
        # a relation with files or a union of them stages its set; one reading nothing stages none
        self.staged_sets = [c["set_id"] for c in named if c.get("files") or c.get("union")]
        return DataFrame(java_frame, self.planned.sparkSession)


def query_scans(
    frame: DataFrame,
    properties: Sequence[str] = (),
    *,
    ahead: Callable[[Sequence[TableState]], object] | None = None,
) -> QueryScans:
    """Every Iceberg scan of ``frame``'s plan (planning it, as its execution will reuse) in one call.

    ``ahead``: given the tables the analysed query reads before Spark plans it, to start reading what
    planning will need of them while Spark plans (it must not wait for those reads)."""
    helper = bridge(frame.sparkSession)
    if ahead is not None:
        tables = read_answer(str(helper.tables(frame._jdf, "\u0001".join(properties))))
        ahead(
            [
                TableState(t["table"], t["location"], t["snapshot"], dict(t["properties"]), FileAccess.of(t["storage"]))
                for t in tables
            ]
        )
    java = helper.scans(frame._jdf, "\u0001".join(properties))
    # the query as planned: its relations read through the snapshots' file lists (``SnapshotFiles.java``)
    return described_scans(java, DataFrame(java.frame(), frame.sparkSession))


def described_scans(java: Any, frame: DataFrame | None) -> QueryScans:
    """The scans a Java ``Bridge.Scans`` holds, in one call (``frame``: the query they belong to, if
    zskip planned it as a DataFrame; ``None`` for the scans zskip's optimizer rule hands over)."""
    described = read_answer(str(java.describe()))
    scans = tuple(_scan(i, item, java) for i, item in enumerate(described["scans"]))
    relations = tuple(
        TableRelation(i, item["table"], frozenset(item["output"])) for i, item in enumerate(described["relations"])
    )
    joins = tuple(
        JoinKeys(
            position=int(item["position"]),
            scan=int(item["scan"]),
            column=item["column"],
            field=Field(item["column"], int(item["field_id"]), item["field_type"]),
            dimension=item["dimension"],
            snapshot_id=item["snapshot"],
            key=item["key"],
            filter=item["filter"],
            signature=item["signature"],
            filter_columns=tuple(item.get("filter_columns", ())),
            key_field_id=item.get("key_field_id"),
            filter_column_ids=tuple(int(i) for i in item.get("filter_column_ids", ())),
            filter_by_fields=_filter_by_fields(item),
        )
        for item in described.get("joins", ())
    )
    settings = dict(described.get("settings", {}))
    return QueryScans(frame, java, frozenset(described["output"]), scans, relations, joins, settings)


def _filter_by_fields(item: Mapping[str, Any]) -> str | None:
    """A join's dimension filter as SQL naming each column `#<field id>` (``predicate_for_schema`` gives
    it back in the names of the day), when every condition of the side reached its scan and each is
    one zskip reads; else ``None``."""
    pushed = item.get("pushed") or ()
    if not item.get("all_pushed") or not pushed:
        return None
    by_term = {f["term"]: Field(f["name"], int(f["id"]), f["type"]) for f in item.get("dimension_fields", ())}
    parts = [expr_from_json(node, by_term) for node in pushed]
    expr: Expr = parts[0] if len(parts) == 1 else And(tuple(parts))
    bound = bind(expr, {f.name: f.id for f in by_term.values()})
    return None if _has_opaque(bound) else to_sql(bound)


def _has_opaque(expr: Expr) -> bool:
    if isinstance(expr, (And, Or)):
        return any(_has_opaque(child) for child in expr.children)
    if isinstance(expr, Not):
        return _has_opaque(expr.child)
    return isinstance(expr, Opaque)


def _scan(position: int, item: Mapping[str, Any], java: Any = None) -> IcebergScan:
    # by the term as Spark pushed it (the table's own spelling, or another case when the session
    # ignores case): the IR names each column as the schema does
    by_term = {f.get("term", f["name"]): Field(f["name"], int(f["id"]), f["type"]) for f in item["fields"]}
    fields = {f.name: f for f in by_term.values()}
    parts = [expr_from_json(f, by_term) for f in item["filters"]]
    expr: Expr = parts[0] if len(parts) == 1 else And(tuple(parts)) if parts else AlwaysTrue()
    paths, records, sizes = FILE_LISTS.of(item, lambda: read_answer(str(java.scanFiles(position))))
    return IcebergScan(
        position=position,
        table=item["table"],
        location=item["location"],
        snapshot_id=item["snapshot"],
        properties=dict(item["properties"]),
        output=frozenset(item["output"]),
        expr=expr,
        fields=fields,
        paths=paths,
        records=records,
        sizes=sizes,
        storage=FileAccess.of(item.get("storage")),
        read_fields=tuple(item["read_fields"]) if "read_fields" in item else None,
        aggregate=AggregateRequest.of(item["aggregate"]) if item.get("aggregate") else None,
    )


def planned_tasks(frame: DataFrame) -> list[str]:
    """Every task the Iceberg scans of ``frame``'s plan will read, one ``file, start, length, residual``
    line each (tab-separated), sorted: to compare two plans of a query."""
    text = read_text(str(bridge(frame.sparkSession).plannedTasks(frame._jdf)))
    return text.split("\n") if text else []


def listed_scan_count(spark: Any) -> int:
    """How many Iceberg scans in ``spark``'s JVM took their tasks from a snapshot's file list."""
    return int(bridge(spark).listedScans())


def forget_listed_files(spark: Any) -> None:
    """Forget every snapshot's file list in ``spark``'s JVM (a cold start, for benchmarks)."""
    bridge(spark).forgetListedFiles()


def release_staged(spark: Any, set_ids: Sequence[str]) -> None:
    """Release staged task sets (one py4j call); ids zskip no longer knows are ignored."""
    bridge(spark).release("\u0001".join(set_ids))
