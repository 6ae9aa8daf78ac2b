"""The star joins of the workload log, named again in the columns of the day.

A scan zskip planned through ``zskip.sql`` or ``zskip.enable`` is logged with the filtered dimensions
it was joined to, each by field id: the fact table's foreign key, the dimension's key and the columns
its filter names, and the filter with each column written `#<field id>`
(``zskip.tablefiles.workload_log``).  The advisor reads them back here as ``StarJoin``\\s: the names
come from the tables' schemas now (a column renamed since is found, a join whose column was dropped
is left out), and the keys each filter matches from one Spark query per distinct dimension filter,
on the dimension's current snapshot, as the join-key stage would ask them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession

from zskip.errors import ZskipError
from zskip.expr.sql import quoted
from zskip.iceberg.frames import collect_arrow
from zskip.iceberg.table import IcebergTable, load_table
from zskip.maintenance.stars import StarJoin
from zskip.planning.joins import MAX_JOIN_KEYS
from zskip.tablefiles.workload_log import predicate_for_schema

__all__ = ["LoggedJoin", "LoggedJoins", "logged_joins"]

log = logging.getLogger(__name__)

# one logged join as a hashable tuple: foreign key field, dimension, key field, filter as printed,
# filter by field ids, the filtered columns' field ids
LoggedJoin = tuple[int, str, int | None, str, str | None, tuple[int, ...]]


def logged_joins(entries: Sequence[Mapping[str, Any]] | None) -> tuple[LoggedJoin, ...]:
    """A record's ``joins`` (null in older records) as hashable tuples, in a stable order."""
    out = {
        (
            int(e["foreign_key_field"]),
            str(e["dimension"]),
            None if e["key_field"] is None else int(e["key_field"]),
            str(e["filter"] or ""),
            e["filter_fields"],
            tuple(int(i) for i in e["column_fields"] or ()),
        )
        for e in entries or ()
    }
    return tuple(sorted(out, key=repr))


class LoggedJoins:
    """Resolves logged joins of one fact table into ``StarJoin``\\s (dimensions loaded and keys asked
    for once each)."""

    def __init__(self, spark: SparkSession, fact: IcebergTable) -> None:
        self.spark = spark
        self.fact_names = {f.id: f.name for f in fact.schema() if not f.nested}
        self.fact = fact.name
        self._dimensions: dict[str, dict[int, str] | None] = {}
        self._keys: dict[tuple[str, str, str], pa.Array | None] = {}

    def star_joins(self, joins: Sequence[LoggedJoin]) -> tuple[StarJoin, ...] | None:
        """The joins as the advisor keeps them; ``None`` when one can no longer be named (a column or
        table gone, a filter zskip could not read): the scan's record then no longer tells what it read."""
        out = []
        for join in joins:
            found = self._resolve(join)
            if found is None:
                return None
            out.append(found)
        return tuple(out)

    def _resolve(self, join: LoggedJoin) -> StarJoin | None:
        foreign_field, dimension, key_field, printed, by_fields, column_fields = join
        foreign_key = self.fact_names.get(foreign_field)
        names = self._names(dimension)
        key = names.get(key_field) if names is not None and key_field is not None else None
        if foreign_key is None or names is None or key is None:
            log.info("a logged join of %s to %s left out: a column it joins on has left", self.fact, dimension)
            return None
        if by_fields is None:
            log.info("logged join of %s to %s left out: zskip cannot read its filter %s", self.fact, dimension, printed)
            return None
        condition = predicate_for_schema(by_fields, names)
        if condition is None:
            log.info("a logged join of %s to %s left out: a column its filter names has left it", self.fact, dimension)
            return None
        columns = tuple(names[i] for i in column_fields if i in names)
        return StarJoin(foreign_key, dimension, key, condition, columns, self._matching_keys(dimension, key, condition))

    def _names(self, dimension: str) -> dict[int, str] | None:
        if dimension not in self._dimensions:
            try:
                table = load_table(self.spark, dimension)
                self._dimensions[dimension] = {f.id: f.name for f in table.schema() if not f.nested}
            except ZskipError as exc:
                log.warning("logged joins of %s to %s left out: %s", self.fact, dimension, exc)
                self._dimensions[dimension] = None
        return self._dimensions[dimension]

    def _matching_keys(self, dimension: str, key: str, condition: str) -> pa.Array | None:
        """The distinct keys of ``dimension`` its filter ``condition`` matches (``None``: more than the
        join-key stage prunes by); whole numbers as int64, as that stage hands them over."""
        at = (dimension, key, condition)
        if at not in self._keys:
            frame = self.spark.table(dimension).where(condition).select(quoted(key)).distinct()
            found = collect_arrow(frame.limit(MAX_JOIN_KEYS + 1)).column(0).combine_chunks()
            if len(found) > MAX_JOIN_KEYS:
                self._keys[at] = None
            else:
                found = found.drop_null()
                self._keys[at] = pc.cast(found, pa.int64()) if pa.types.is_integer(found.type) else found
        return self._keys[at]
