"""An Iceberg table as zskip sees it: the Java table, its schema, partition columns and properties."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from zskip.errors import UnknownColumnError, UnknownTableError, UnsupportedTypeError
from zskip.iceberg.jvm import java_session, jvm_of
from zskip.iceberg.spark_errors import error_class, first_line, is_spark_error
from zskip.storage import FileAccess

__all__ = [
    "IcebergTable",
    "SchemaField",
    "apply_properties",
    "load_table",
    "properties_update",
    "reads_other_state",
    "schema_fields",
]

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


@dataclass(frozen=True, slots=True)
class SchemaField:
    """A column of an Iceberg schema: its name (dotted path for a nested field), field id and type."""

    name: str
    id: int
    type: str  # Iceberg's type text: int, long, decimal(9, 2), string, struct<...>, ...
    nested: bool  # inside a struct (or a list or map)
    has_default: bool = False  # an initial default: what files written before the field existed hold


def schema_fields(schema_json: str | Mapping[str, Any]) -> list[SchemaField]:
    """Every field of an Iceberg schema (as ``SchemaParser.toJson`` writes it), top-level ones first in
    schema order, then nested ones by their dotted paths."""
    data = json.loads(schema_json) if isinstance(schema_json, str) else schema_json
    top: list[SchemaField] = []
    nested: list[SchemaField] = []

    def walk(fields: list[Mapping[str, Any]], prefix: str) -> None:
        for item in fields:
            kind = item["type"]
            name = prefix + str(item["name"])
            text = kind if isinstance(kind, str) else str(kind.get("type"))
            default = item.get("initial-default") is not None
            (nested if prefix else top).append(SchemaField(name, int(item["id"]), text, bool(prefix), default))
            if isinstance(kind, Mapping) and kind.get("type") == "struct":
                walk(kind["fields"], name + ".")

    walk(data["fields"], "")
    return top + nested


@dataclass
class IcebergTable:
    """A loaded table. ``java`` is the ``org.apache.iceberg.Table``; refresh it before reading state."""

    spark: SparkSession
    name: str
    java: Any
    _access: FileAccess | None = dataclasses.field(default=None, repr=False, compare=False)
    _uuid: str | None = dataclasses.field(default=None, repr=False, compare=False)

    def uuid(self) -> str:
        """The table's uuid (Iceberg's, for good: another table at the same location has another one)."""
        if self._uuid is None:
            self._uuid = str(self.java.operations().current().uuid())
        return self._uuid

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

    def metadata_file(self) -> str | None:
        """The table's current metadata file (``None``: its catalog does not say)."""
        try:
            return str(self.java.operations().current().metadataFileLocation())
        except Exception:  # a table without operations (not a catalog table)
            return None

    def properties_since(self, keys: Sequence[str], cutoff_ms: int) -> tuple[list[dict[str, str]], bool]:
        """The values of ``keys`` in every state of the table's metadata that was current at some time
        since ``cutoff_ms`` (milliseconds since the epoch): the current state, each logged state made
        since, and the one current at the cutoff.  And whether the metadata log reaches back that far
        (else states before its oldest entry are unknown).  Old metadata files are read in the JVM."""
        ops = self.java.operations()
        current = ops.current()
        states = [current]
        # (when, file) of each logged state, oldest first: two py4j calls an entry, once
        logged = [(int(e.timestampMillis()), e.file()) for e in current.previousFiles()]
        # Iceberg keeps the last write.metadata.previous-versions-max states (100 by default): a shorter
        # log is the whole history; a full one may have lost what was current at the cutoff
        kept = int(str(current.properties().getOrDefault("write.metadata.previous-versions-max", "100")))
        reaches_back = len(logged) < kept or logged[0][0] <= cutoff_ms
        parser = self.jvm.org.apache.iceberg.TableMetadataParser
        # a logged state was current until the next one was written: the last one written at or before
        # the cutoff was still current at it (unless its successor, the next logged state or the
        # current one, was itself made by then); every later one since
        after = [file for stamp, file in logged if stamp > cutoff_ms]
        before = [file for stamp, file in logged if stamp <= cutoff_ms]
        successor = next((stamp for stamp, _ in logged if stamp > cutoff_ms), int(current.lastUpdatedMillis()))
        at_cutoff = [before[-1]] if before and successor > cutoff_ms else []
        for file in at_cutoff + after:
            try:
                states.append(parser.read(ops.io(), file))
            except Exception:  # a logged file gone (expired, cleaned): what it referenced is unknown
                reaches_back = False
        found = []
        for state in states:
            values = state.properties()
            found.append({key: str(values.get(key)) for key in keys if values.get(key) is not None})
        return found, reaches_back

    def full_name(self) -> str:
        """The name Iceberg gives the table (``catalog.namespace.table``), as its scans report it."""
        return str(self.java.name())

    def schema(self) -> list[SchemaField]:
        """Every field of the current schema (one py4j call)."""
        parser = self.jvm.org.apache.iceberg.SchemaParser
        return schema_fields(str(parser.toJson(self.java.schema())))

    def snapshot_schema(self, snapshot_id: int) -> list[SchemaField]:
        """The schema snapshot ``snapshot_id`` was written with, the one reading it AS OF that snapshot
        sees (the current schema when the metadata no longer says)."""
        snapshot = self.java.snapshot(int(snapshot_id))
        schema_id = snapshot.schemaId() if snapshot is not None else None
        schema = self.java.schemas().get(schema_id) if schema_id is not None else None
        if schema is None:
            return self.schema()
        return schema_fields(str(self.jvm.org.apache.iceberg.SchemaParser.toJson(schema)))

    def schema_history(self) -> list[list[SchemaField]]:
        """Every schema the table's metadata still holds, oldest first (the current one among them)."""
        parser = self.jvm.org.apache.iceberg.SchemaParser
        found = [json.loads(str(parser.toJson(s))) for s in self.java.schemas().values()]
        found.sort(key=lambda data: int(data.get("schema-id", 0)))
        return [schema_fields(data) for data in found]

    def old_names(self) -> Callable[[str], SchemaField | None]:
        """How a name written by zskip before 0.4 (which stored names, not field ids) is tied to a field.

        That zskip matched names ignoring case, against whatever schema was current then.  A name that
        meant one field in every schema the table's metadata holds meant that field when it was
        written; a name that meant two fields (a column dropped or renamed and another added under
        its name) could have meant either, and is tied to none.  The field as the oldest schema
        holding it saw it is returned: its type then, before any promotion.
        """
        meant: dict[str, dict[int, SchemaField]] = {}
        for schema in self.schema_history():
            for field in schema:
                if not field.nested:
                    meant.setdefault(field.name.lower(), {}).setdefault(field.id, field)

        def find(name: str) -> SchemaField | None:
            found = meant.get(name.lower(), {})
            return next(iter(found.values())) if len(found) == 1 else None

        return find

    def case_sensitive(self) -> bool:
        """Whether the session resolves column names case-sensitively (``spark.sql.caseSensitive``)."""
        return str(self.spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true"

    def resolve(self, names: Sequence[str]) -> list[SchemaField]:
        """The top-level columns ``names`` name, found as Spark finds them in this session: the exact
        name first; otherwise, unless the session is case-sensitive, the one column equal to it
        ignoring case.  Raises ``UnknownColumnError`` or, for a nested field, ``UnsupportedTypeError``."""
        fields = self.schema()
        top = {f.name: f for f in fields if not f.nested}
        nested = {f.name: f for f in fields if f.nested}
        sensitive = self.case_sensitive()
        out = []
        for name in names:
            found = top.get(name)
            if found is None and not sensitive:
                alike = [f for f in top.values() if f.name.lower() == name.lower()]
                if len(alike) > 1:
                    raise UnknownColumnError(
                        f"{name!r} names {len(alike)} columns of {self.name} that differ only in case "
                        f"({', '.join(repr(f.name) for f in alike)}); spell it exactly, with "
                        "spark.sql.caseSensitive=true"
                    )
                found = alike[0] if alike else None
            if found is None:
                path = nested.get(name) or next(
                    (f for f in nested.values() if not sensitive and f.name.lower() == name.lower()), None
                )
                if path is not None:
                    raise UnsupportedTypeError(
                        f"{name!r} is a nested field of {self.name}; zskip clusters and indexes top-level "
                        "columns only (nested fields are not supported): use a top-level copy of it"
                    )
                raise UnknownColumnError(
                    f"table {self.name} has no column {name!r}; its columns are: "
                    f"{', '.join(repr(f.name) for f in top.values())}"
                )
            out.append(found)
        return out

    def file_access(self) -> FileAccess:
        """How zskip reaches this table's files: as its FileIO and its Hadoop settings do (``zskip.storage``);
        asked of the JVM once per loaded table."""
        if self._access is None:
            from zskip.iceberg.bridge import bridge

            self._access = FileAccess.of(json.loads(str(bridge(self.spark).storage(self.java))))
        return self._access

    def spark_schema(self) -> StructType:
        """The current schema as Spark types (converted by Iceberg itself, no query analysis)."""
        converted = self.jvm.org.apache.iceberg.spark.SparkSchemaUtil.convert(self.java.schema())
        return StructType.fromJson(json.loads(converted.json()))

    def identity_partition_columns(self) -> list[str]:
        """Names of the columns the current partition spec partitions by value (``identity``): a file
        written now holds one value of each.  Other transforms (bucket, truncate, years to hours) leave
        many values of their column in a partition."""
        schema = self.java.schema()
        names = {
            str(column)
            for field in self.java.spec().fields()
            if field.transform().isIdentity() and (column := schema.findColumnName(field.sourceId())) is not None
        }
        return sorted(names)

    def is_partitioned(self) -> bool:
        return not bool(self.java.spec().isUnpartitioned())

    def column_types(self, columns: Sequence[str] | Sequence[SchemaField]) -> dict[str, DataType]:
        """Spark types of ``columns`` by the names the table spells them (names resolved as ``resolve``
        does; fields ``resolve`` returned are taken as they are), each one clusterable."""
        spark_fields = {f.name: f for f in self.spark_schema().fields}
        resolved: dict[str, DataType] = {}
        given = list(columns)
        fields = [c for c in given if isinstance(c, SchemaField)]
        for found in fields if len(fields) == len(given) else self.resolve([str(c) for c in given]):
            field = spark_fields[found.name]
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
        # the name as the session resolved it (its current catalog and namespace): the metadata tables
        # and every other statement zskip runs for this table then name the same table, in any session
        name = _qualified(jvm, java_session(spark), name)
    return IcebergTable(spark=spark, name=name, java=java)


_BARE = re.compile(r"[A-Za-z0-9_]+")


def _qualified(jvm: Any, session: Any, name: str) -> str:
    """``catalog.namespace.table`` for ``name`` as ``session`` resolves it, each part quoted if need be."""
    found = jvm.org.apache.iceberg.spark.Spark3Util.catalogAndIdentifier(session, name)
    identifier = found.identifier()
    parts = [str(found.catalog().name()), *(str(p) for p in identifier.namespace()), str(identifier.name())]
    return ".".join(part if _BARE.fullmatch(part) else "`" + part.replace("`", "``") + "`" for part in parts)


def apply_properties(update: Any, values: Mapping[str, str | None]) -> Any:
    """Add sets (or removals, for ``None``) to a Java ``UpdateProperties``; returns it uncommitted."""
    for key, value in values.items():
        update = update.remove(key) if value is None else update.set(key, value)
    return update


def properties_update(table: IcebergTable, values: Mapping[str, str | None]) -> None:
    """Set (or remove, for ``None``) table properties in one commit."""
    apply_properties(table.java.updateProperties(), values).commit()


def _guard_prefix(key: str) -> str:
    return "zskip-swap-" + hashlib.sha256(key.encode()).hexdigest()[:8] + "-"


def _guard_tag(key: str, expected: str | None) -> str:
    """The tag a swap of ``key`` from ``expected`` creates on a REST catalog (see ``swap_property``)."""
    return _guard_prefix(key) + hashlib.sha256(("\u0000" if expected is None else expected).encode()).hexdigest()[:16]


def swap_property(
    table: IcebergTable,
    key: str,
    *,
    expected: str | None,
    value: str,
    also: Mapping[str, str] | None = None,
    attempts: int = 4,
) -> None:
    """Set ``key`` to ``value`` only if it still holds ``expected``, as a compare-and-swap commit (with
    the properties ``also``, in the same commit).

    Iceberg's own property updates retry on conflict by re-applying the change to the newer
    metadata, which would let two publishers overwrite each other.  This commits through the
    table's operations with the metadata it checked as the base, so the catalog refuses it if
    anyone committed since; then it checks ``key`` again and retries (an unrelated commit such as
    an append is no conflict).  Raises ``ConcurrentChangeError`` when ``key`` no longer holds
    ``expected``.

    A REST catalog does not compare the base: its commit sends the changes with requirements derived
    from them, and a property change requires nothing, so two publishers would both succeed.  There
    the same commit also creates a tag named after the swap (``_guard_tag``: ``key`` and
    ``expected``) and removes the key's previous one: creating a ref requires that it does not
    exist, a requirement the REST protocol checks on the server, so of two publishers swapping the
    same ``expected`` the second is refused.  The tag points at the current snapshot and ages out at
    the next snapshot expiry (``max-ref-age-ms`` 1), pinning no data.
    """
    from zskip.errors import ConcurrentChangeError

    jvm: Any = table.jvm
    operations = table.java.operations()
    guarded = str(operations.getClass().getSimpleName()) == "RESTTableOperations"
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
        for other, text in (also or {}).items():
            updates.put(other, text)
        builder = jvm.org.apache.iceberg.TableMetadata.buildFrom(base).setProperties(updates)
        snapshot = base.currentSnapshot()
        if guarded and snapshot is not None:
            prefix = _guard_prefix(key)
            for ref in list(base.refs().keySet()):
                if str(ref).startswith(prefix):
                    builder = builder.removeRef(ref)
            tag = jvm.org.apache.iceberg.SnapshotRef.tagBuilder(snapshot.snapshotId()).maxRefAgeMs(1).build()
            builder = builder.setRef(_guard_tag(key, expected), tag)
        updated = builder.build()
        try:
            operations.commit(base, updated)
        except Exception as exc:
            if "CommitFailed" not in str(exc) or attempt == attempts - 1:
                raise
            continue
        table.refresh()
        return
