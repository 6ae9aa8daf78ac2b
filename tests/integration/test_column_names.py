"""Any column name: spaces, dots, backticks, quotes and non-ASCII letters cluster, index and filter; nested
fields are refused in one line; a session that tells ``a`` from ``A`` gets Spark's answers; a failed
optimize leaves the table as it found it."""

from __future__ import annotations

import pytest

import zskip
from zskip.errors import UnknownColumnError, UnsupportedTypeError
from zskip.expr import quoted
from zskip.iceberg.table import load_table

from .test_hard_inputs import state

pytestmark = pytest.mark.integration

ODD = ["a b", "x.y", "t`ick", "it's", "größe"]


@pytest.fixture(scope="module")
def odd(spark) -> str:
    name = "lake.names.odd"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.names")
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.range(20_000).selectExpr(
        "id",
        f"CAST(id % 101 AS INT) AS {quoted('a b')}",
        f"CAST(id % 37 AS BIGINT) AS {quoted('x.y')}",
        f"concat('v', CAST(id % 29 AS STRING)) AS {quoted('t`ick')}",
        f"CAST(id % 11 AS INT) AS {quoted('it' + chr(39) + 's')}",
        f"CAST(id % 13 AS DOUBLE) AS {quoted('größe')}",
        "named_struct('a', CAST(id % 5 AS INT), 'b', 'x') AS st",
    ).repartition(4).writeTo(name).using("iceberg").create()
    return name


def agree(spark, table: str, where: str) -> zskip.Explain:
    expected = sorted(spark.sql(f"SELECT * FROM {table} WHERE {where}").collect())
    assert sorted(zskip.read(spark, table, where=where).collect()) == expected, where
    assert sorted(zskip.sql(spark, f"SELECT * FROM {table} WHERE {where}").collect()) == expected, where
    return zskip.explain(spark, table, where)


def test_odd_names_cluster_index_and_filter(spark, odd: str) -> None:
    zskip.optimize(spark, odd, by=["id"], curve="zorder", target_file_size="64KB", row_group_size="16KB")
    zskip.optimize(spark, odd, by=["a b", "t`ick"], curve="hilbert", target_file_size="64KB", row_group_size="16KB")
    for column in ODD:
        zskip.create_index(spark, odd, column, kind="bitmap")
    zskip.create_index(spark, odd, "t`ick", kind="bloom")
    zskip.create_index(spark, odd, "x.y", kind="bloom")
    for where in [
        f"{quoted('a b')} = 7",
        f"{quoted('x.y')} = 3 AND {quoted('a b')} < 20",
        f"{quoted('t`ick')} = 'v4'",
        f"{quoted(chr(105) + 't' + chr(39) + 's')} IN (1, 2)",
        f"{quoted('größe')} > 11.5",
        "st.a = 3",
    ]:
        agree(spark, odd, where)
    # a value no row holds: only the indexes can tell (every file spans the column's range)
    assert agree(spark, odd, f"{quoted('a b')} = 7 AND {quoted('x.y')} = 4").rows_planned < 20_000
    assert {i.column for i in zskip.list_indexes(spark, odd)} == set(ODD)


def test_nested_fields_are_refused_in_one_line(spark, odd: str) -> None:
    before = state(spark, odd)
    for call in (
        lambda: zskip.optimize(spark, odd, by=["st.a"]),
        lambda: zskip.create_index(spark, odd, "st.a", kind="bitmap"),
    ):
        with pytest.raises(UnsupportedTypeError, match="nested fields are not supported") as caught:
            call()
        assert "\n" not in str(caught.value)
    with pytest.raises(UnknownColumnError, match="'a b'"):
        zskip.create_index(spark, odd, "nope", kind="bitmap")
    assert state(spark, odd) == before


def test_a_failed_optimize_changes_nothing(spark, odd: str, monkeypatch) -> None:
    import importlib

    optimize_module = importlib.import_module("zskip.layout.optimize")  # the package re-exports the function

    def broken(*args, **kwargs):
        raise RuntimeError("the rewrite broke")

    before = state(spark, odd)
    monkeypatch.setattr(optimize_module, "rewrite_group", broken)
    with pytest.raises(RuntimeError, match="the rewrite broke"):
        zskip.optimize(spark, odd, by=["id", "a b"], mode="full", row_group_size="8KB")
    after = state(spark, odd)
    assert (after.properties, after.data, after.snapshots) == (before.properties, before.data, before.snapshots)
    # no data file or zskip file came or went (Iceberg's metadata log holds the property set and put back)
    kept = [f for f in after.files if "/metadata/" not in f]
    assert kept == [f for f in before.files if "/metadata/" not in f]


def test_a_case_sensitive_session_tells_a_from_capital_a(spark) -> None:
    name = "lake.names.cases"
    spark.conf.set("spark.sql.caseSensitive", "true")
    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.names")
        spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
        spark.range(12_000).selectExpr(
            "id", "CAST(id % 50 AS INT) AS a", "CAST((id * 7) % 50 AS INT) AS A"
        ).repartition(3).writeTo(name).using("iceberg").create()
        zskip.optimize(spark, name, by=["A"], curve="zorder", target_file_size="32KB", row_group_size="8KB")
        zskip.create_index(spark, name, "a", kind="bitmap")
        assert {(i.column, i.field_id) for i in zskip.list_indexes(spark, name)} == {("a", 2)}
        for where in ["a = 3", "A = 3", "a = 3 AND A = 21", "a = 3 AND A = 3", "A BETWEEN 10 AND 12"]:
            agree(spark, name, where)
        plan = zskip.explain(spark, name, "A BETWEEN 10 AND 12")
        assert plan.files_read < plan.files_total  # clustered by A, not a
        assert load_table(spark, name).resolve(["A"])[0].id == 3
    finally:
        spark.conf.set("spark.sql.caseSensitive", "false")
