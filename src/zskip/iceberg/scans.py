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

import datetime
import decimal
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame

from zskip.expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Compare,
    Expr,
    In,
    IsNull,
    Not,
    Opaque,
    Or,
    StartsWith,
    bind,
    to_sql,
)
from zskip.iceberg.bridge import bridge, read_answer, read_text
from zskip.storage import LOCAL, FileAccess

__all__ = [
    "Field",
    "IcebergScan",
    "JoinKeys",
    "QueryScans",
    "TableRelation",
    "TableState",
    "arrow_type",
    "described_scans",
    "expr_from_json",
    "forget_listed_files",
    "key_array",
    "listed_scan_count",
    "planned_tasks",
    "query_scans",
    "release_staged",
]

log = logging.getLogger(__name__)

EPOCH = datetime.date(1970, 1, 1)
EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
COMPARISONS = {"lt": "<", "lt_eq": "<=", "gt": ">", "gt_eq": ">=", "eq": "=", "not_eq": "!="}


@dataclass(frozen=True, slots=True)
class Field:
    """A column of the table: its name as the table spells it (dotted for a nested field), field id and Iceberg type."""

    name: str
    id: int
    type: str  # Iceberg's type text: int, long, date, timestamptz, decimal(9,2), string, ...

    @property
    def is_float(self) -> bool:
        return self.type in ("float", "double")


@dataclass(frozen=True)
class IcebergScan:
    """One Iceberg scan of a query: its table's state, the filter pushed to it and the files of its tasks."""

    position: int  # the scan's place in the query's plan (how the JVM helper names it)
    table: str  # Iceberg's name for the table (``catalog.db.t``), usable as a Spark identifier
    location: str
    snapshot_id: int | None
    properties: Mapping[str, str]  # the table properties planning asked for
    output: frozenset[int]  # expression ids of the columns the scan produces
    expr: Expr  # the pushed conjuncts in zskip's predicate IR (AlwaysTrue when none)
    fields: Mapping[str, Field]  # the filtered columns, by their names in the table's schema
    paths: tuple[str, ...]  # the file of each of the scan's tasks, in task order
    records: tuple[int, ...]
    sizes: tuple[int, ...]
    notes: tuple[str, ...] = ()  # what a user should know about how this scan was planned
    storage: FileAccess = LOCAL  # how the table's files are reached (``zskip.storage``)
    # field ids of the table's top-level columns the scan reads (None: not known)
    read_fields: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class TableRelation:
    """An Iceberg table as the query's analysed plan reads it (before Spark split it into scans)."""

    position: int
    table: str
    output: frozenset[int]


@dataclass(frozen=True, slots=True)
class TableState:
    """An Iceberg table a query reads, as its analysed plan holds it: what planning needs to read zskip's
    files of the table before Spark has planned the scans."""

    table: str
    location: str
    snapshot_id: int | None
    properties: Mapping[str, str]  # the table properties planning asked for
    storage: FileAccess = LOCAL


@dataclass(frozen=True, slots=True)
class JoinKeys:
    """An equi-join of a scan's column to a key of a filtered Iceberg table (a dimension).

    Every row the join keeps has ``column`` among the keys the dimension side yields, so the
    scan may skip files and row groups holding none of them.  ``signature`` names what those keys
    depend on (the snapshot the dimension's side reads, its key and every condition of its side):
    equal signatures, equal keys.
    """

    position: int  # how the JVM helper names this join
    scan: int  # the position of the scan it prunes
    column: str  # the scan's join column
    field: Field  # that column in the scan's table
    dimension: str  # the dimension table's name
    snapshot_id: int | None
    key: str  # the dimension's key column
    filter: str  # the dimension side's filters, as Spark and Iceberg print them
    signature: str
    filter_columns: tuple[str, ...] = ()  # the dimension's columns those filters name
    # what names the side for good (the workload log): its key's field id, those of the columns its
    # filters name (-1: none) and its filters with each column written `#<field id>` (None: a
    # condition that did not reach the dimension's scan, or one zskip does not read)
    key_field_id: int | None = None
    filter_column_ids: tuple[int, ...] = ()
    filter_by_fields: str | None = None


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


def key_array(kind: str, data: bytes, iceberg_type: str) -> pa.Array:
    """Join keys as the JVM helper writes them, as an Arrow array: ``L`` 64-bit big-endian integers
    (whole numbers; a date's days or a timestamp's microseconds since the epoch), ``S`` text (a count,
    every length, then the UTF-8 bytes; a decimal as Spark writes it)."""
    if kind == "L":
        values = np.frombuffer(data, dtype=">i8").astype(np.int64)
        if iceberg_type == "date":
            return pa.array(values.astype(np.int32), pa.date32())
        if iceberg_type in ("timestamptz", "timestamp"):
            return pa.array(values, arrow_type(iceberg_type))
        return pa.array(values, pa.int64())
    count = int.from_bytes(data[:4], "big")
    lengths = np.frombuffer(data, dtype=">i4", count=count, offset=4).astype(np.int32)
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    text = pa.StringArray.from_buffers(count, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data[4 + 4 * count :]))
    target = arrow_type(iceberg_type)
    return text if target is None or pa.types.is_string(target) else text.cast(target)


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


class _FileLists:
    """The file lists of scans the JVM helper sent whole, by digest (it sends a list it sent before by its
    digest alone).  Holds more than the helper remembers sending; a digest not here is asked for again."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.lists: OrderedDict[str, tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]] = OrderedDict()
        self.lock = threading.Lock()

    def of(
        self, item: Mapping[str, Any], fetch: Callable[[], Mapping[str, Any]]
    ) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
        """The paths, record counts and sizes of the scan ``item`` describes (``fetch``: the helper's whole list)."""
        digest = item.get("files_digest")
        if "files" in item or digest is None:
            found = _file_list(item)
        else:
            with self.lock:
                cached = self.lists.get(digest)
                if cached is not None:
                    self.lists.move_to_end(digest)
                    return cached
            found = _file_list(fetch())
        if digest is not None:
            with self.lock:
                self.lists[digest] = found
                self.lists.move_to_end(digest)
                while len(self.lists) > self.capacity:
                    self.lists.popitem(last=False)
        return found


FILE_LISTS = _FileLists(1024)


def _file_list(item: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
    prefix = item["prefix"]
    paths = tuple(p[1:] if p.startswith("\u0000") else prefix + p for p in item["files"])
    return paths, tuple(item["records"]), tuple(item["sizes"])


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
    )


def expr_from_json(node: Mapping[str, Any], fields: Mapping[str, Field]) -> Expr:
    """One Iceberg expression (as the JVM helper writes it) in zskip's IR; anything unfamiliar is ``Opaque``.

    ``fields``: the table's field for each term the filter names (a term not there names no column of
    the table, and its condition never prunes)."""
    op = node["op"]
    if op == "and":
        return And((expr_from_json(node["left"], fields), expr_from_json(node["right"], fields)))
    if op == "or":
        return Or((expr_from_json(node["left"], fields), expr_from_json(node["right"], fields)))
    if op == "not":
        return Not(expr_from_json(node["child"], fields))
    if op == "true":
        return AlwaysTrue()
    if op == "false":
        return AlwaysFalse()
    term = node.get("term")
    found = fields.get(term) if term is not None else None
    if found is None:
        return Opaque(node.get("text") or _text(node))
    column = found.name
    try:
        if op == "is_null":
            return IsNull(column)
        if op == "not_null":
            return Not(IsNull(column))
        literals = [literal_value(kind, value, found.type) for kind, value in node.get("literals") or ()]
        if op in COMPARISONS:
            return Compare(column, COMPARISONS[op], literals[0])
        if op in ("in", "not_in"):
            return In(column, tuple(literals)) if op == "in" else Not(In(column, tuple(literals)))
        if op in ("starts_with", "not_starts_with") and found.type == "string":
            prefix = StartsWith(column, str(literals[0]))
            return prefix if op == "starts_with" else Not(prefix)
    except (TypeError, ValueError, OverflowError, IndexError, decimal.InvalidOperation) as exc:
        log.debug("not using %s: %s", node, exc)
    # IS_NAN / NOT_NAN (Spark's isnan(NULL) is false, unlike SQL's NULL) and the rest: never prune
    return Opaque(_text(node))


def _text(node: Mapping[str, Any]) -> str:
    literals = ", ".join(str(v) for _, v in node.get("literals") or ())
    return f"{node['op']}({node.get('term', '')}{', ' if literals else ''}{literals})"


class _NoValue(ValueError):
    """A literal with no exact Python value of the column's type: the condition never prunes."""


def literal_value(kind: str, value: Any, iceberg_type: str) -> Any:
    """A literal as written by the JVM helper, as a Python value of the column's type."""
    if kind == "int":
        if iceberg_type == "date":
            return EPOCH + datetime.timedelta(days=value)
        if iceberg_type == "timestamptz":
            return EPOCH_UTC + datetime.timedelta(microseconds=value)
        if iceberg_type == "timestamp":
            return EPOCH_UTC.replace(tzinfo=None) + datetime.timedelta(microseconds=value)
        if iceberg_type in ("int", "long"):
            return int(value)
        if iceberg_type in ("float", "double"):
            return float(value)
        if iceberg_type.startswith("decimal"):
            return decimal.Decimal(value)
        raise _NoValue(f"an integer literal on a {iceberg_type} column")
    if kind == "float":
        return float(value)  # "NaN", "Infinity" and Java's exponent form all parse
    if kind == "decimal":
        return decimal.Decimal(value)
    if kind == "bool":
        return bool(value)
    if kind == "string" and iceberg_type == "string":
        return str(value)
    if kind == "binary" and iceberg_type == "binary":
        return bytes.fromhex(value)
    raise _NoValue(f"a {kind} literal on a {iceberg_type} column")


def arrow_type(iceberg_type: str) -> pa.DataType | None:
    """The Arrow type Spark gives a column of this Iceberg type (``None``: one zskip does not order)."""
    simple = {
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "long": pa.int64(),
        "float": pa.float32(),
        "double": pa.float64(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us"),
        "timestamptz": pa.timestamp("us", tz="UTC"),
        "string": pa.string(),
        "binary": pa.binary(),
    }
    if iceberg_type in simple:
        return simple[iceberg_type]
    if iceberg_type.startswith("decimal(") and iceberg_type.endswith(")"):
        precision, scale = (int(p) for p in iceberg_type[len("decimal(") : -1].split(","))
        return pa.decimal128(precision, scale)
    return None


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
