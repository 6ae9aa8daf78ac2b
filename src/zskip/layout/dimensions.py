"""Clustering a fact table through its dimensions: ``zskip.Dimension`` and the recorded key order.

``zskip.optimize(spark, "lake.ssb.lineorder", by=[zskip.Dimension("lo_custkey", "lake.ssb.customer",
key="c_custkey", by=["c_region", "c_nation", "c_city"])])`` clusters lineorder's files so the facts
of one region, nation or city sit together, without copying a column into the fact table: the
foreign key's axis of the curve numbers the dimension's rows sorted by ``by`` and then by key, each
group of each level of ``by`` in an aligned block of ranks of its own (``zskip.curves.DimensionMapping``).
That order and the groups are read from the dimension once per optimize, by Spark, and recorded in
the clustering spec with the dimension's snapshot id.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ByteType, DataType, IntegerType, LongType, ShortType

from zskip.curves import DimensionMapping, order_key_u64
from zskip.errors import InvalidOptionError, UnknownColumnError
from zskip.expr import quoted
from zskip.iceberg.frames import collect_arrow, table_at
from zskip.iceberg.table import IcebergTable, load_table

__all__ = [
    "Dimension",
    "ResolvedDimension",
    "fit_dimension",
    "level_starts",
    "parse_dimension",
    "resolve_dimension",
]

INTEGRAL = (ByteType, ShortType, IntegerType, LongType)


@dataclass(frozen=True)
class Dimension:
    """A dimension reached through ``foreign_key``, ordered by columns of that dimension.

    ``table``'s column ``key`` is what ``foreign_key`` refers to; ``by`` lists the dimension's
    columns from the coarsest level of its hierarchy to the finest (``["c_region", "c_nation",
    "c_city"]``).  Use it in ``zskip.optimize(..., by=[...])`` next to plain column names.

    >>> Dimension("lo_custkey", "lake.ssb.customer", key="c_custkey", by=["c_region", "c_nation"])
    Dimension(foreign_key='lo_custkey', table='lake.ssb.customer', key='c_custkey', by=('c_region', 'c_nation'))
    """

    foreign_key: str
    table: str
    key: str
    by: tuple[str, ...]
    # field ids of ``key`` and ``by`` in the dimension table, as a recorded layout knows them (not given by users)
    key_field_id: int | None = field(default=None, repr=False, compare=False)
    by_field_ids: tuple[int, ...] | None = field(default=None, repr=False, compare=False)

    def __init__(
        self,
        foreign_key: str,
        table: str,
        *,
        key: str,
        by: Sequence[str] | str,
        key_field_id: int | None = None,
        by_field_ids: Sequence[int] | None = None,
    ) -> None:
        for name, value in (("foreign_key", foreign_key), ("table", table), ("key", key)):
            if not isinstance(value, str) or not value.strip():
                raise InvalidOptionError(f"Dimension {name} must be a name such as 'lo_custkey', not {value!r}")
        if isinstance(by, str):
            by = [c.strip() for c in by.split(",") if c.strip()]
        if not isinstance(by, Sequence) or not by or not all(isinstance(c, str) and c.strip() for c in by):
            raise InvalidOptionError(
                f"Dimension by must list the dimension's columns, such as ['c_region', 'c_nation'], not {by!r}"
            )
        lowered = [c.lower() for c in by]
        if len(set(lowered)) != len(lowered):
            raise InvalidOptionError(f"Dimension by names a column twice: {list(by)!r}")
        object.__setattr__(self, "foreign_key", foreign_key.strip())
        object.__setattr__(self, "table", table.strip())
        object.__setattr__(self, "key", key.strip())
        object.__setattr__(self, "by", tuple(c.strip() for c in by))
        object.__setattr__(self, "key_field_id", key_field_id)
        object.__setattr__(self, "by_field_ids", None if by_field_ids is None else tuple(by_field_ids))


# FK=CATALOG.DB.TABLE.KEY:COLUMN,COLUMN  (the last dotted part before ':' is the dimension's key)
_TEXT = re.compile(r"^\s*([^=\s]+)\s*=\s*([^:\s]+)\.([^.:\s]+)\s*:\s*(.+?)\s*$")


def parse_dimension(text: str) -> Dimension:
    """``"lo_custkey=lake.ssb.customer.c_custkey:c_region,c_nation"`` as a ``Dimension`` (the CLI's form)."""
    found = _TEXT.match(text)
    if not found:
        raise InvalidOptionError(
            f"cannot read the dimension {text!r}: write FOREIGN_KEY=TABLE.KEY:COLUMN,COLUMN, for example "
            "lo_custkey=lake.ssb.customer.c_custkey:c_region,c_nation,c_city"
        )
    foreign_key, table, key, by = found.groups()
    return Dimension(foreign_key, table, key=key, by=by)


def check_foreign_key(dimension: Dimension, fact_type: DataType, key_type: DataType) -> None:
    """A foreign key and the dimension key it refers to must order the same way: both whole numbers,
    or the same type."""
    if isinstance(fact_type, INTEGRAL) and isinstance(key_type, INTEGRAL):
        return
    if type(fact_type) is type(key_type):
        return
    raise InvalidOptionError(
        f"{dimension.foreign_key} ({fact_type.simpleString()}) cannot refer to {dimension.table}.{dimension.key} "
        f"({key_type.simpleString()}): a foreign key and its dimension key need the same type (or both whole numbers)"
    )


@dataclass(frozen=True)
class ResolvedDimension:
    """A ``Dimension`` checked against its table: real column names, the table, the key's type."""

    dimension: Dimension
    table: IcebergTable
    key: str
    by: tuple[str, ...]
    key_field_id: int | None = None
    by_field_ids: tuple[int, ...] | None = None


def resolve_dimension(spark: SparkSession, dimension: Dimension, fact_type: DataType) -> ResolvedDimension:
    """Check that the dimension table and its columns exist and that the foreign key can refer to its key;
    raises ``UnknownTableError``, ``UnknownColumnError`` or ``InvalidOptionError`` saying which."""
    dim: IcebergTable = load_table(spark, dimension.table)
    try:
        key_field, *by_fields = dim.resolve([dimension.key, *dimension.by])
    except UnknownColumnError as exc:
        raise UnknownColumnError(f"dimension {exc}") from None
    fields = {f.name: f for f in dim.spark_schema().fields}
    check_foreign_key(dimension, fact_type, fields[key_field.name].dataType)
    return ResolvedDimension(
        dimension=dimension,
        table=dim,
        key=key_field.name,
        by=tuple(f.name for f in by_fields),
        key_field_id=key_field.id,
        by_field_ids=tuple(f.id for f in by_fields),
    )


def fit_dimension(spark: SparkSession, resolved: ResolvedDimension, bits: int) -> DimensionMapping:
    """The dimension's keys in hierarchy order and where each level's groups start, read by Spark
    from the dimension's current snapshot (sorted and counted on the executors; the key column and
    one row per finest group reach the driver), recorded with that snapshot's id."""
    snapshot_id = resolved.table.current_snapshot_id()
    source = spark.table(resolved.table.name)
    if snapshot_id is not None:  # both reads below see the same rows, whatever commits meanwhile
        source = _columns_at(spark, resolved, snapshot_id)
    key = quoted(resolved.key)
    by = [quoted(c) for c in resolved.by]
    present = source.where(f"{key} IS NOT NULL")
    keys = collect_arrow(present.select(*by, key).orderBy(*by, key).select(key))
    values = keys.column(0) if keys.num_columns else None
    order_keys = order_key_u64(values) if values is not None and len(values) else np.zeros(0, np.uint64)
    groups = collect_arrow(present.groupBy(*by).count().orderBy(*by))
    return DimensionMapping(
        bits=bits,
        table=resolved.table.name,
        key=resolved.key,
        by=resolved.by,
        keys=order_keys,
        snapshot_id=snapshot_id,
        levels=level_starts(groups, len(resolved.by)) if groups.num_rows else (),
        key_field_id=resolved.key_field_id,
        by_field_ids=resolved.by_field_ids,
    )


def _columns_at(spark: SparkSession, resolved: ResolvedDimension, snapshot_id: int) -> DataFrame:
    """The dimension's rows at ``snapshot_id`` (its current snapshot), read AS OF that snapshot so that
    the two reads of ``fit_dimension`` see the same rows whatever commits meanwhile.

    Reading AS OF a snapshot sees the schema it was written with, and Iceberg binds the filters
    pushed to that read to the current schema: with a key or level renamed since (and no write
    after) no name works for both, so the table is then read as it is now.  Planning takes a
    mapping as recorded, whatever the dimension holds later, so a commit between the two reads
    costs clustering, never a row."""
    then = {f.id: f.name for f in resolved.table.snapshot_schema(snapshot_id) if not f.nested}
    ids = (resolved.key_field_id, *(resolved.by_field_ids or ()))
    names = (resolved.key, *resolved.by)
    if any(i is not None and then.get(i) != name for i, name in zip(ids, names, strict=False)):
        return spark.table(resolved.table.name)
    return table_at(spark, resolved.table.name, snapshot_id)


def level_starts(groups: pa.Table, depth: int) -> tuple[np.ndarray, ...]:
    """Where each level's groups start among the dimension's rows in hierarchy order.

    ``groups``: one row per finest group, in hierarchy order: its ``depth`` hierarchy values, then
    its row count.  Level ``i`` starts a group wherever one of the first ``i + 1`` values changes.

    >>> t = pa.table({"region": ["A", "A", "B"], "city": ["x", "y", "x"], "count": [2, 3, 4]})
    >>> [s.tolist() for s in level_starts(t, 2)]
    [[0, 5], [0, 2, 5]]
    """
    counts = np.asarray(groups.column(depth).to_numpy(zero_copy_only=False), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    changed = np.zeros(len(counts), dtype=bool)
    changed[0] = True
    levels = []
    for column in groups.columns[:depth]:
        before, after = column.slice(0, len(column) - 1), column.slice(1)
        same = pc.fill_null(pc.equal(before, after), False)
        both_null = pc.and_(pc.is_null(before), pc.is_null(after))
        differs = ~np.asarray(pc.or_(same, both_null).to_numpy(zero_copy_only=False), dtype=bool)
        changed[1:] |= differs
        levels.append(starts[changed])
    return tuple(levels)
