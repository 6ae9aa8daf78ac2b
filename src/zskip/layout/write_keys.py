"""How a write into a table zskip clustered comes out clustered: the curve key its store carries.

Every optimize commit writes, beside the spec and the key ranges of its clustering store, the recipe
zskip's rule in the JVM (``ClusteredWrites.java``) sorts a write's rows by: the ``CurveKeys.java``
payload of the spec (the same words optimize's Java UDF keys its rewrite with, so a written file is
in the order optimize would give it) and, per clustered column, its field id and its carrier as SQL
with ``{}`` where the column goes, and its Spark type then.  The rule finds each column by field id in
the table's current schema, so a renamed column keeps being keyed; a column whose type changed since
(a promotion: its carrier may no longer fit) leaves writes unsorted until the next optimize records the
layout again; a spec the JVM cannot key (a decimal wider than 18 digits) writes no recipe, and writes
stay as Spark makes them.

The table property ``zskip.write.order`` chooses what a write does (read by the rule at each write):

- ``range``: rows are first distributed by ranges of the curve key (and of Iceberg's order before
  it), then sorted, so one write's files partition the curve. The recipe carries up to
  ``RANGE_BOUNDS`` bounds cutting the table's keys (as the store's row groups hold them) into ranges of
  about as many rows, so where Iceberg asks no order of its own the rule cuts a write's keys there,
  without Spark's range partitioning (which runs a job over the write's input to sample them);
- ``sort``: each write task sorts its rows by the curve key, after any order Iceberg asks for
  (partition, file and position), and rows stay in the tasks Iceberg's distribution gives them;
- ``auto`` (the default): ``range`` where it needs no sampling job (an unpartitioned table, a
  copy-on-write rewrite), ``sort`` elsewhere (a partitioned table, merge-on-read deletes);
- ``none``: writes are left as Spark and Iceberg make them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import DataType

from zskip import settings
from zskip.curves import ClusteringSpec
from zskip.layout.curve_keys import carrier_sql, signed_key
from zskip.layout.cuts import FileCuts
from zskip.layout.java_keys import payload, supported
from zskip.tablefiles.clustering_store import WRITE_KEYS_BLOB

__all__ = ["RANGE_BOUNDS", "WRITE_KEYS_BLOB", "WRITE_ORDERS", "WRITE_ORDER_PROPERTY", "range_bounds", "write_keys"]

WRITE_ORDER_PROPERTY = settings.WRITE_ORDER.key
WRITE_ORDERS = ("auto", "range", "sort", "none")
# how many bounds range mode's recipe carries: finer than any write's task count, and adaptive
# execution joins neighbouring ranges back into tasks of its advisory size
RANGE_BOUNDS = 1023


def write_keys(spec: ClusteringSpec, types: Mapping[str, DataType], ranges: pa.Table | None = None) -> bytes | None:
    """The blob a clustered write keys its rows by, or ``None`` when the JVM cannot key ``spec`` (a
    column with no JVM carrier, or one known only by name); ``ranges``: the store's key ranges
    (``RANGES_SCHEMA``), which the range bounds are cut from."""
    if not supported(spec, types) or any(c.field_id is None for c in spec.columns):
        return None
    words = payload(spec, types, FileCuts(np.zeros(0, np.uint64), np.zeros(0, np.float64)), np.zeros(1, np.int64))
    recipe = {
        "payload": base64.b64encode(words).decode("ascii"),
        "columns": [
            {"field-id": c.field_id, "carrier": carrier_sql(types[c.name])[0], "type": types[c.name].simpleString()}
            for c in spec.columns
        ],
        "range-bounds": range_bounds(ranges).tolist() if ranges is not None else [],
    }
    return json.dumps(recipe).encode()


def range_bounds(ranges: pa.Table, count: int = RANGE_BOUNDS) -> np.ndarray:
    """Up to ``count`` ascending signed curve keys (as the JVM's key UDF returns them) cutting the keys
    of ``ranges``'s row groups into ranges of about as many rows: each bound is the least key of the
    row group where the running row count crosses a multiple of ``rows / (count + 1)``."""
    groups = ranges.filter(pc.greater_equal(ranges["row_group"], 0))
    if groups.num_rows < 2:
        return np.zeros(0, np.int64)
    lows = groups["min_key"].to_numpy()
    order = np.argsort(lows, kind="stable")
    lows = lows[order]
    running = np.cumsum(groups["rows"].to_numpy()[order])
    wanted = running[-1] * np.arange(1, count + 1) / (count + 1)
    picked = np.unique(np.searchsorted(running, wanted, side="right"))
    picked = picked[(picked > 0) & (picked < len(lows))]  # a bound below every key cuts nothing off
    return np.unique(signed_key(lows[picked]))
