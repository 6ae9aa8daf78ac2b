"""The types a query's Iceberg scans are described in (``zskip.iceberg.scans`` reads them from the
JVM): a table's column by field id, one scan, a table relation and state, an equi-join to a dimension."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zskip.expr import Expr
from zskip.storage import LOCAL, FileAccess

__all__ = [
    "AggregateColumn",
    "AggregateItem",
    "AggregateRequest",
    "Field",
    "IcebergScan",
    "JoinKeys",
    "TableRelation",
    "TableState",
]


@dataclass(frozen=True, slots=True)
class Field:
    """A column of the table: its name as the table spells it (dotted for a nested field), field id and Iceberg type."""

    name: str
    id: int
    type: str  # Iceberg's type text: int, long, date, timestamptz, decimal(9,2), string, ...

    @property
    def is_float(self) -> bool:
        return self.type in ("float", "double")


@dataclass(frozen=True, slots=True)
class AggregateColumn:
    """A column an aggregate groups by or reads: its field id (``None``: not a top-level column of the
    table) and its Spark type (``int``, ``bigint``, ``decimal(9,2)``, ``date``, ``string``, ...)."""

    field_id: int | None
    type: str


@dataclass(frozen=True, slots=True)
class AggregateItem:
    """One partial aggregate over the scan: ``count`` (``column`` ``None``: ``count(*)``), ``min``, ``max``
    or ``sum``, and the Spark type of its result (a sum's: ``bigint``, ``double``, ``decimal(20,2)``);
    or ``sum_product``, the sum of ``column`` times ``other`` (whole numbers), whose product is of Spark
    type ``product_type``."""

    fn: str
    column: AggregateColumn | None
    type: str = "bigint"
    other: AggregateColumn | None = None
    product_type: str | None = None


@dataclass(frozen=True, slots=True)
class AggregateRequest:
    """An aggregate over a scan that zskip's rule may answer in part (``io.zskip.aggregate.AggregateShape``):
    its grouping columns and functions, and the positions of the scan's tasks that delete files change."""

    group: tuple[AggregateColumn, ...]
    items: tuple[AggregateItem, ...]
    deleted: frozenset[int]

    @staticmethod
    def of(item: Mapping[str, Any]) -> AggregateRequest:
        def column(node: Mapping[str, Any]) -> AggregateColumn:
            field_id = node.get("field_id")
            return AggregateColumn(None if field_id is None else int(field_id), str(node["type"]))

        return AggregateRequest(
            group=tuple(column(g) for g in item["group"]),
            items=tuple(
                AggregateItem(
                    str(i["fn"]),
                    column(i["column"]) if i.get("column") is not None else None,
                    str(i.get("type", "bigint")),
                    column(i["other"]) if i.get("other") is not None else None,
                    str(i["product_type"]) if i.get("product_type") is not None else None,
                )
                for i in item["items"]
            ),
            deleted=frozenset(int(d) for d in item.get("deleted", ())),
        )


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
    aggregate: AggregateRequest | None = None  # an aggregate over the scan zskip may answer in part


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
