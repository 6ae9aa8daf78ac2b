"""Aggregates answered from row-group statistics give exactly Spark's answer with zskip off.

Through plain ``spark.sql`` with zskip enabled: ``count(*)``, ``count(col)``, ``min``, ``max``, and
``sum`` and ``avg`` of columns with a sums index, over filtered scans, grouped or not, on tables with
NULLs, NaN and infinities, ±0.0, long strings, decimals, dates and timestamps, merge-on-read deletes
(v2 position deletes, v3 deletion vectors) and schema changes (an added column, a renamed one, an int
widened to bigint, a decimal widened).  A property test draws filters and aggregate shapes; the tests after it show the
answers are used (fewer rows read) and what is left alone.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import zskip
from tests.integration.switches import zskip_off, zskip_on
from zskip.iceberg.scan_stats import scanned_rows
from zskip.planning.enable import forget_answers, hook_counts

pytestmark = pytest.mark.integration

NS = "lake.aggregates"
V2 = f"{NS}.v2"
V3 = f"{NS}.v3"
ROWS = 24_000


def _make(spark: Any, name: str, version: int) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.sql(
        f"CREATE TABLE {name} (k INT, g STRING, v BIGINT, d DATE, ts TIMESTAMP, m DECIMAL(10,2), f DOUBLE, s STRING, "
        "r INT) "
        f"USING iceberg TBLPROPERTIES ('format-version'='{version}', 'write.delete.mode'='merge-on-read', "
        "'write.parquet.row-group-size-bytes'='8192', 'write.target-file-size-bytes'='120000')"
    )
    frame = spark.range(ROWS).selectExpr(
        "CAST(id AS INT) AS k",
        "concat('g', CAST(floor(id / 3000) AS STRING)) AS g",  # one value over runs of row groups
        "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST((id * 7919) % 1000 AS BIGINT) - 500 END AS v",
        "date_add(DATE'2020-01-01', CAST(floor(id / 40) AS INT)) AS d",
        "CASE WHEN id % 13 = 0 THEN NULL ELSE timestamp_seconds(1600000000 + id * 37) END AS ts",
        "CAST(((id * 31) % 20000) / 100.0 - 100 AS DECIMAL(10,2)) AS m",
        "CASE WHEN id % 97 = 0 THEN double('NaN') WHEN id % 89 = 0 THEN double('inf') "
        "WHEN id % 83 = 0 THEN double('-inf') WHEN id % 79 = 0 THEN -0.0D WHEN id % 7 = 0 THEN NULL "
        "ELSE (id % 400) / 4.0 - 50 END AS f",
        "CASE WHEN id % 500 = 0 THEN repeat('z', 300) ELSE concat('s', CAST(id % 50 AS STRING)) END AS s",
        "CAST(floor(id / 1500) % 5 AS INT) - 2 AS r",  # one value over runs of row groups: sum(w * r) answers
    )
    frame.repartition(4, "g").sortWithinPartitions("k").writeTo(name).append()
    zskip.create_index(spark, name, "s", kind="bloom")  # a table zskip knows
    for column in ("v", "m", "f"):
        zskip.create_index(spark, name, column, kind="sums")
    spark.sql(f"DELETE FROM {name} WHERE k % 101 = 0 AND k > 20000")  # merge-on-read: delete files
    spark.sql(f"ALTER TABLE {name} ADD COLUMN n INT")
    spark.sql(f"ALTER TABLE {name} ALTER COLUMN k TYPE BIGINT")
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN v TO w")
    spark.sql(f"ALTER TABLE {name} ALTER COLUMN m TYPE DECIMAL(12,2)")  # older files keep decimal(10,2)
    spark.sql(
        f"INSERT INTO {name} SELECT CAST(id + {ROWS} AS BIGINT), 'g9', id, DATE'2021-06-01', NULL, 1.25, "
        "1.0, 'late', IF(id < 300, 3, NULL), CAST(id % 3 AS INT) FROM range(500)"
    )


@pytest.fixture(scope="module")
def tables(spark: Any) -> list[str]:
    _make(spark, V2, 2)
    _make(spark, V3, 3)
    return [V2, V3]


class Rows(list):
    """A query's rows as compared: in the order of their values other than doubles, and equal where
    their doubles are equal up to the order they were added in (NaN equal to NaN, -0.0 to 0.0)."""

    def __init__(self, rows: list[Any]) -> None:
        super().__init__(
            sorted((tuple(r) for r in rows), key=lambda r: repr([v for v in r if not isinstance(v, float)]))
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, list) and len(self) == len(other) and all(map(_same_row, self, other))

    __hash__ = None  # type: ignore[assignment]


def _same_row(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(map(_same_value, a, b))


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def both(spark: Any, query: str) -> tuple[Rows, Rows, str]:
    """The query's rows with zskip off and on, and the optimized plan with zskip on."""
    with zskip_off(spark):
        want = Rows(spark.sql(query).collect())
    with zskip_on(spark):
        frame = spark.sql(query)
        got = Rows(frame.collect())
        plan = frame._jdf.queryExecution().optimizedPlan().toString()
    return want, got, plan


def answered(plan: str) -> bool:
    return "zskip_partial_" in plan and "LocalRelation" in plan


CONDITIONS = [
    "k >= {a}",
    "k < {b}",
    "k BETWEEN {a} AND {b}",
    "d >= date_add(DATE'2020-01-01', {a} / 40)",
    "g = 'g{i}'",
    "g IN ('g{i}', 'g{j}')",
    "w > 0",
    "w IS NULL",
    "w IS NOT NULL",
    "f > 0",
    "f < 10",
    "m >= 0",
    "ts IS NOT NULL",
    "n IS NULL",
    "n = 1",
    "s = 's7'",
    "k % 5 = 0",
]
AGGREGATES = [
    "count(*)",
    "count(1)",
    "count(w)",
    "count(f)",
    "count(n)",
    "min(k)",
    "max(k)",
    "min(w)",
    "max(w)",
    "min(d)",
    "max(d)",
    "min(ts)",
    "max(ts)",
    "min(m)",
    "max(m)",
    "min(f)",
    "max(f)",
    "max(s)",
    "min(n)",
    "count(DISTINCT g)",
    "count(*) FILTER (WHERE w > 3)",
    "sum(w)",
    "sum(m)",
    "sum(f)",
    "sum(k)",
    "sum(n)",
    "avg(w)",
    "avg(f)",
    "avg(m)",
    "sum(w * r)",
    "sum(r * w)",
    "sum(k * r)",
    "sum(w * w)",
    "sum(n * w)",
    "max(w) - min(w)",
    "sum(w) / count(*)",
]


@st.composite
def queries(draw: st.DrawFn) -> str:
    table = draw(st.sampled_from([V2, V3]))
    a = draw(st.integers(-100, ROWS + 600))
    b = draw(st.integers(-100, ROWS + 600))
    i, j = draw(st.integers(0, 9)), draw(st.integers(0, 9))
    conditions = draw(st.lists(st.sampled_from(CONDITIONS), min_size=1, max_size=3, unique=True))
    where = " AND ".join(c.format(a=a, b=b, i=i, j=j) for c in conditions)
    if draw(st.booleans()):
        where = f"({where}) OR k < {draw(st.integers(0, 3000))}"
    aggregates = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=4, unique=True))
    group = draw(st.sampled_from(["", "g", "g, n", "k"]))
    columns = ", ".join(([group] if group else []) + aggregates)
    grouped = f" GROUP BY {group}" if group else ""
    having = " HAVING count(*) > 100" if group and draw(st.booleans()) else ""
    return f"SELECT {columns} FROM {table} WHERE {where}{grouped}{having}"


@settings(
    max_examples=16,  # about 1 s each; CI's time is budgeted
    derandomize=True,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)
@given(query=queries())
def test_aggregates_answered_from_statistics_equal_spark(spark: Any, tables: list[str], query: str) -> None:
    want, got, _ = both(spark, query)
    assert got == want, query


def test_answers_are_used_and_read_fewer_rows(spark: Any, tables: list[str]) -> None:
    query = (
        f"SELECT count(*), min(k), max(d), count(w), min(m), sum(w), sum(m), avg(w), sum(f) FROM {V2} "
        "WHERE k BETWEEN 1000 AND 19000"
    )
    want, got, plan = both(spark, query)
    assert got == want
    assert answered(plan), plan
    with zskip_on(spark):
        frame = spark.sql(query)
        frame.collect()
        on = scanned_rows(frame, V2)
    with zskip_off(spark):
        frame = spark.sql(query)
        frame.collect()
        off = scanned_rows(frame, V2)
    assert on * 3 < off, (on, off)  # what is left: the row groups the range's two ends cut through, per file


def test_a_repeated_aggregate_is_answered_from_memory_until_the_table_changes(spark: Any) -> None:
    # a dashboard asks the same aggregate again and again: the rule answers it, partials and all, from
    # what it remembers of the table state, without asking the planner; a commit asks it again
    name = f"{NS}.repeated"
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.sql(
        f"CREATE TABLE {name} (k INT, w BIGINT) USING iceberg "
        "TBLPROPERTIES ('write.parquet.row-group-size-bytes'='4096', 'write.target-file-size-bytes'='60000')"
    )
    spark.range(8000).selectExpr("CAST(id AS INT) AS k", "id % 17 AS w").repartition(2).sortWithinPartitions(
        "k"
    ).writeTo(name).append()
    zskip.create_index(spark, name, "w", kind="sums")
    query = f"SELECT count(*), sum(w), max(k) FROM {name} WHERE k BETWEEN 1000 AND 7000"
    forget_answers(spark)
    want, got, plan = both(spark, query)
    assert got == want and answered(plan), plan
    with zskip_on(spark):
        before = hook_counts(spark)
        again = spark.sql(query)
        assert Rows(again.collect()) == want
        assert answered(again._jdf.queryExecution().optimizedPlan().toString())
        after = hook_counts(spark)
    assert after.planned == before.planned and after.remembered > before.remembered, (before, after)
    spark.sql(f"INSERT INTO {name} VALUES (5000, 1000000)")  # a new state: its rows must be counted
    want, got, plan = both(spark, query)
    assert got == want and want[0][1] > 1000000, want
    with zskip_on(spark):
        assert hook_counts(spark).planned > after.planned


def test_a_sum_of_a_product_with_a_factor_constant_in_row_groups(spark: Any, tables: list[str]) -> None:
    query = f"SELECT sum(w * r), sum(CAST(r AS BIGINT) * w), count(*) FROM {V2} WHERE k BETWEEN 1000 AND 19000"
    want, got, plan = both(spark, query)
    assert got == want
    assert answered(plan), plan


def test_a_product_that_overflows_in_some_row_is_left_to_spark(spark: Any, tables: list[str]) -> None:
    # the row group's sum fits a bigint (2^62 - 2^62 = 0, times 4), but two rows' products do not: Spark
    # fails the query (ANSI) or wraps them; answering would hide either
    name = f"{NS}.overflowing"
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.sql(f"CREATE TABLE {name} (k INT, w BIGINT, r INT) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1, {2**62}, 4), (2, {-(2**62)}, 4), (3, 5, 4)")
    zskip.create_index(spark, name, "w", kind="sums")
    query = f"SELECT sum(w * r) FROM {name} WHERE k >= 0"
    with zskip_off(spark):
        try:
            want: Any = spark.sql(query).collect()
        except Exception as exc:  # ANSI mode: the overflow is an error
            want = type(exc).__name__
    with zskip_on(spark):
        frame = spark.sql(query)
        try:
            got: Any = frame.collect()
        except Exception as exc:
            got = type(exc).__name__
        assert not answered(frame._jdf.queryExecution().optimizedPlan().toString())
    assert got == want


def test_grouped_by_a_column_constant_in_row_groups(spark: Any, tables: list[str]) -> None:
    query = f"SELECT g, count(*), max(k), min(ts) FROM {V3} WHERE k < 21000 AND d > DATE'2020-02-01' GROUP BY g"
    want, got, plan = both(spark, query)
    assert got == want
    assert answered(plan), plan


@pytest.mark.parametrize(
    "query",
    [
        f"SELECT count(DISTINCT k) FROM {V2} WHERE k < 9000",
        f"SELECT count(*) FILTER (WHERE w > 0) FROM {V2} WHERE k < 9000",
        f"SELECT max(f) FROM {V2} WHERE k < 9000",  # NaN is not in a double's bounds
        f"SELECT max(s) FROM {V2} WHERE k < 9000",  # a string's bounds may be cut
        f"SELECT count(*) FROM {V2} WHERE k < 9000 AND length(s) > 1",  # not a filter the scan was given
        f"SELECT sum(k) FROM {V2} WHERE k < 9000",  # no sums index on k
        f"SELECT avg(m) FROM {V2} WHERE k < 9000",  # an average of decimals
        f"SELECT sum(w * w) FROM {V2} WHERE k < 9000",  # neither factor one value in a row group
        f"SELECT sum(k * r) FROM {V2} WHERE k < 9000",  # neither factor with a sums index
    ],
)
def test_what_statistics_cannot_answer_is_read(spark: Any, tables: list[str], query: str) -> None:
    want, got, plan = both(spark, query)
    assert got == want
    assert not answered(plan), plan


def test_deleted_rows_are_not_answered_from_footers(spark: Any, tables: list[str]) -> None:
    query = f"SELECT count(*), max(k) FROM {V3} WHERE k > 20000 AND k < {ROWS}"
    want, got, _ = both(spark, query)
    assert got == want
    assert want[0][0] < ROWS - 20001  # the deletes are there to be missed


def test_off_by_setting(spark: Any, tables: list[str]) -> None:
    query = f"SELECT count(*) FROM {V2} WHERE k BETWEEN 1000 AND 19000"
    spark.conf.set("spark.zskip.planning.aggregates", "false")
    try:
        want, got, plan = both(spark, query)
    finally:
        spark.conf.unset("spark.zskip.planning.aggregates")
    assert got == want
    assert not answered(plan)


def test_a_sums_index_of_a_string_column_is_refused_in_one_line(spark: Any, tables: list[str]) -> None:
    from zskip.errors import UnsupportedTypeError

    before = spark.sql(f"SHOW TBLPROPERTIES {V2} ('zskip.index.manifest')").collect()
    with pytest.raises(UnsupportedTypeError) as refused:
        zskip.create_index(spark, V2, "s", kind="sums")
    assert str(refused.value) == f"{V2}.s: a sums index takes a number or decimal column, not string"
    assert spark.sql(f"SHOW TBLPROPERTIES {V2} ('zskip.index.manifest')").collect() == before


def test_the_table_records_which_columns_have_sums(spark: Any, tables: list[str]) -> None:
    # the rule decides alone an aggregate summing a column without a sums index (no planner call)
    properties = {row[0]: row[1] for row in spark.sql(f"SHOW TBLPROPERTIES {V2}").collect()}
    manifest = properties["zskip.index.manifest"]
    ids = {f.name: f.id for f in zskip.iceberg.table.load_table(spark, V2).schema()}
    assert properties["zskip.index.field-ids"] == f"{ids['s']}@{manifest}"  # the bloom filter
    summed = ",".join(str(i) for i in sorted((ids["w"], ids["m"], ids["f"])))
    assert properties["zskip.index.sums-field-ids"] == f"{summed}@{manifest}"
