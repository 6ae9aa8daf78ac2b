"""An Iceberg table as zskip sees it: the Java table, its schema, partition columns and properties."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from zskip.errors import UnknownColumnError, UnknownTableError, UnsupportedTypeError
from zskip.iceberg.jvm import java_session, jvm_of
from zskip.iceberg.spark_errors import error_class, first_line, is_spark_error

__all__ = ["IcebergTable", "apply_properties", "load_table", "properties_update", "reads_other_state"]

log = logging.getLogger(__name__)

CLUSTERABLE = (
    "BooleanType",
    "ByteType",
    "ShortType",
    "IntegerType",
    "LongType",
    "FloatType",
    "DoubleType",
    "DecimalType",
    "DateType",
    "TimestampType",
    "TimestampNTZType",
    "StringType",
    "BinaryType",
)


@dataclass
class IcebergTable:
    """A loaded table. ``java`` is the ``org.apache.iceberg.Table``; refresh it before reading state."""

    spark: SparkSession
    name: str
    java: Any

    @property
    def jvm(self) -> Any:
        return self.spark.sparkContext._jvm

    def refresh(self) -> None:
        self.java.refresh()

    def current_snapshot_id(self) -> int | None:
        snapshot = self.java.currentSnapshot()
        return None if snapshot is None else int(snapshot.snapshotId())

    def property(self, key: str) -> str | None:
        """One table property, in one py4j call (copying the Java map would take one per entry)."""
        value = self.java.properties().get(key)
        return None if value is None else str(value)

    def location(self) -> str:
        return str(self.java.location())

    def full_name(self) -> str:
        """The name Iceberg gives the table (``catalog.namespace.table``), as its scans report it."""
        return str(self.java.name())

    def field_ids(self, names: Iterable[str]) -> dict[str, int]:
        """Iceberg field ids of top-level columns, by the names given (found case-insensitively)."""
        schema = self.java.schema()
        ids = {}
        for name in names:
            found = schema.caseInsensitiveFindField(name)
            if found is not None:
                ids[name] = int(found.fieldId())
        return ids

    def write_file(self, path: str, data: bytes) -> None:
        """Write a whole file through the table's FileIO (whatever storage the catalog uses)."""
        stream = self.java.io().newOutputFile(path).createOrOverwrite()
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    def read_file(self, path: str) -> bytes:
        """A whole file read through the table's FileIO, in one py4j transfer."""
        stream = self.java.io().newInputFile(path).newStream()
        try:
            data = self.jvm.org.apache.iceberg.relocated.com.google.common.io.ByteStreams.toByteArray(stream)
        finally:
            stream.close()
        return bytes(data)

    def delete_file(self, path: str) -> None:
        self.java.io().deleteFile(path)

    def spark_schema(self) -> StructType:
        """The current schema as Spark types (converted by Iceberg itself, no query analysis)."""
        converted = self.jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(self.java.schema())
        return StructType.fromJson(json.loads(converted.json()))

    def partition_source_columns(self) -> list[str]:
        """Names of the columns any partition spec of the table derives partitions from."""
        names: set[str] = set()
        schema = self.java.schema()
        for spec in self.java.specs().values():
            for field in spec.fields():
                column = schema.findColumnName(field.sourceId())
                if column is not None:
                    names.add(str(column))
        return sorted(names)

    def is_partitioned(self) -> bool:
        return not bool(self.java.spec().isUnpartitioned())

    def column_types(self, columns: Sequence[str]) -> dict[str, DataType]:
        """Spark types of ``columns`` (resolved case-insensitively), each one clusterable."""
        fields = {f.name.lower(): f for f in self.spark_schema().fields}
        resolved: dict[str, DataType] = {}
        for column in columns:
            field = fields.get(column.lower())
            if field is None:
                raise UnknownColumnError(
                    f"table {self.name} has no column {column!r}; its columns are: "
                    f"{', '.join(f.name for f in self.spark_schema().fields)}"
                )
            if isinstance(field.dataType, (StructType, ArrayType, MapType)) or (
                type(field.dataType).__name__ not in CLUSTERABLE
            ):
                raise UnsupportedTypeError(
                    f"column {field.name!r} of {self.name} has type {field.dataType.simpleString()}, which "
                    "zskip cannot cluster or index; use a boolean, number, decimal, date, timestamp, "
                    "string or binary column (or a top-level copy of a nested field)"
                )
            resolved[field.name] = field.dataType
        return resolved


# Iceberg's Spark catalog reads an older state when a name ends in one of these (``t.branch_dev``)
_SELECTOR = re.compile(r"(branch|tag)_.+|snapshot_id_\d+|at_timestamp_\d+", re.IGNORECASE)


def reads_other_state(identifier: str) -> bool:
    """True when ``identifier`` names a branch, tag, snapshot or timestamp of a table, not its current state."""
    return bool(_SELECTOR.fullmatch(identifier.rsplit(".", 1)[-1].strip("`")))


def load_table(spark: SparkSession, name: str, *, fresh: bool = True) -> IcebergTable:
    """Load Iceberg table ``name`` (``catalog.namespace.table``), or say why it cannot be loaded.

    Spark's catalog caches a table (30 s by default), so another process's commits stay unseen for a
    while; ``fresh`` (the default) refreshes it, and zskip works on the latest committed state, as
    Spark does after ``REFRESH TABLE``.  Planning a query passes ``fresh=False``: it must see the
    snapshot Spark's own scan reads."""
    if not isinstance(name, str) or not name.strip():
        raise UnknownTableError(f"a table name must be text like catalog.namespace.table, not {name!r}")
    jvm: Any = jvm_of(spark)
    try:
        java = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(java_session(spark), name)
    except Exception as exc:  # py4j wraps NoSuchTableException and parse errors alike
        if not is_spark_error(exc):
            raise
        from pyspark.errors import ParseException

        text = f"{error_class(exc)} {first_line(exc)}"
        if isinstance(exc, ParseException) or "ParseException" in text or "PARSE_" in text:
            raise UnknownTableError(
                f"{name!r} is not a table name ({first_line(exc)}): use catalog.namespace.table"
            ) from None
        if "NoSuchTable" in text or "NOT_FOUND" in text or "not found" in text.lower() or "cannot be found" in text:
            raise UnknownTableError(
                f"no Iceberg table {name!r}: check the name (catalog.namespace.table) and the catalog "
                f"settings; 'SHOW TABLES IN <catalog>.<namespace>' lists what exists"
            ) from None
        if "is not an Iceberg table" in text or "ClassCast" in text or "not a valid" in text.lower():
            raise UnknownTableError(f"{name!r} is not an Iceberg table: {first_line(exc)}") from None
        raise
    if fresh:
        java.refresh()
    return IcebergTable(spark=spark, name=name, java=java)


def apply_properties(update: Any, values: Mapping[str, str | None]) -> Any:
    """Add sets (or removals, for ``None``) to a Java ``UpdateProperties``; returns it uncommitted."""
    for key, value in values.items():
        update = update.remove(key) if value is None else update.set(key, value)
    return update


def properties_update(table: IcebergTable, values: Mapping[str, str | None]) -> None:
    """Set (or remove, for ``None``) table properties in one commit."""
    apply_properties(table.java.updateProperties(), values).commit()


def swap_property(table: IcebergTable, key: str, *, expected: str | None, value: str, attempts: int = 4) -> None:
    """Set ``key`` to ``value`` only if it still holds ``expected``, as a compare-and-swap commit.

    Iceberg's own property updates retry on conflict by re-applying the change to the newer
    metadata, which would let two publishers overwrite each other.  This commits through the
    table's operations with the metadata it checked as the base, so the catalog refuses it if
    anyone committed since; then it checks ``key`` again and retries (an unrelated commit such as
    an append is no conflict).  Raises ``ConcurrentChangeError`` when ``key`` no longer holds
    ``expected``.
    """
    from zskip.errors import ConcurrentChangeError

    jvm: Any = table.jvm
    operations = table.java.operations()
    for attempt in range(attempts):
        base = operations.refresh()
        current = base.properties().get(key)
        if current != expected:
            raise ConcurrentChangeError(
                f"{key} of {table.name} changed while zskip worked ({expected!r} -> {current!r}): "
                "another run published first; run the command again"
            )
        updates = jvm.java.util.HashMap()
        updates.put(key, value)
        updated = jvm.org.apache.iceberg.TableMetadata.buildFrom(base).setProperties(updates).build()
        try:
            operations.commit(base, updated)
        except Exception as exc:
            if "CommitFailed" not in str(exc) or attempt == attempts - 1:
                raise
            continue
        table.refresh()
        return
