"""Keys computed inside Spark (pandas UDF over carrier columns) equal the keys pyarrow computes."""

from __future__ import annotations

import pytest

from zskip.curves import order_key_u64
from zskip.iceberg.frames import collect_arrow
from zskip.layout.curve_keys import column_key_frame_columns, signed_key

pytestmark = pytest.mark.integration

ROWS = """
 (true, 1Y, 2S, 3, -4L, 1.5F, -0.0D, 12.34BD, CAST(123456789012345678901234.5 AS DECIMAL(38,1)),
  DATE'1960-01-01', TIMESTAMP'2020-01-01 00:00:00.123456', TIMESTAMP_NTZ'1969-12-31 23:59:59.5', 'héllo', X'00FF'),
 (null, null, null, null, null, null, null, null, null, null, null, null, null, null),
 (false, -128Y, -3S, -2147483648, 9223372036854775807L, CAST('NaN' AS FLOAT), CAST('-Infinity' AS DOUBLE), -0.01BD,
  CAST(-1 AS DECIMAL(38,1)), DATE'2030-05-05', TIMESTAMP'1900-01-01 00:00:00', TIMESTAMP_NTZ'2100-01-01 00:00:00', '',
  X'')
"""
COLUMNS = "b, y, s, i, l, f, d, dec, wide, dt, ts, ntz, str, bin"


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_every_type_keys_the_same_in_spark_and_in_pyarrow(spark, zone: str) -> None:
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        frame = spark.sql(f"SELECT * FROM VALUES {ROWS} AS t({COLUMNS})")
        types = {f.name: f.dataType for f in frame.schema.fields}
        in_spark = collect_arrow(frame.select(*column_key_frame_columns(list(types), types)))
        values = collect_arrow(frame)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    for name in types:
        expected = signed_key(order_key_u64(values[name])).tolist()
        assert in_spark[name].to_pylist() == expected, (name, zone)
