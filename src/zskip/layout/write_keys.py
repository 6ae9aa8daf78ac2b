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

- ``sort`` (the default): each write task sorts its rows by the curve key, after any order
  Iceberg asks for (partition, file and position);
- ``range``: rows are first distributed by ranges of the curve key (and of Iceberg's order before
  it), then sorted, so one write's files partition the curve;
- ``none``: writes are left as Spark and Iceberg make them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

import numpy as np
from pyspark.sql.types import DataType

from zskip.curves import ClusteringSpec
from zskip.layout.curve_keys import carrier_sql
from zskip.layout.cuts import FileCuts
from zskip.layout.java_keys import payload, supported
from zskip.tablefiles.clustering_store import WRITE_KEYS_BLOB

__all__ = ["WRITE_KEYS_BLOB", "WRITE_ORDERS", "WRITE_ORDER_PROPERTY", "write_keys"]

WRITE_ORDER_PROPERTY = "zskip.write.order"
WRITE_ORDERS = ("sort", "range", "none")


def write_keys(spec: ClusteringSpec, types: Mapping[str, DataType]) -> bytes | None:
    """The blob a clustered write keys its rows by, or ``None`` when the JVM cannot key ``spec`` (a
    column with no JVM carrier, or one known only by name)."""
    if not supported(spec, types) or any(c.field_id is None for c in spec.columns):
        return None
    words = payload(spec, types, FileCuts(np.zeros(0, np.uint64), np.zeros(0, np.float64)), np.zeros(1, np.int64))
    recipe = {
        "payload": base64.b64encode(words).decode("ascii"),
        "columns": [
            {"field-id": c.field_id, "carrier": carrier_sql(types[c.name])[0], "type": types[c.name].simpleString()}
            for c in spec.columns
        ],
    }
    return json.dumps(recipe).encode()
