"""``zskip.advise`` / ``zskip advise``: on synthetic workloads the known-best layout ranks first, its
forecast matches what Spark then reads, and the advisor's own planning is not recorded as workload."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import zskip
from zskip.layout import clustering_store
from zskip.planning.workload import flush_workload

from .cli_runner import run
from .tables import fingerprint

pytestmark = pytest.mark.integration

ROWS = 150_000


@pytest.fixture(scope="module")
def table(spark) -> str:
    """Columns with known best layouts: ``a`` and ``b`` spread evenly, ``c`` unique per row."""
    name = "lake.advise.t"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.advise")
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.range(ROWS).selectExpr(
        "CAST(floor(rand(1) * 1000) AS INT) AS a",
        "CAST(floor(rand(2) * 100000) AS BIGINT) AS b",
        f"id * 7 % {ROWS} AS c",
        "concat('k', CAST(floor(rand(3) * 50) AS STRING)) AS s",
    ).repartition(6).writeTo(name).tableProperty("write.parquet.row-group-size-bytes", "32768").create()
    return name


def _ranges_on_a(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [f"SELECT * FROM lake.advise.t WHERE a BETWEEN {v} AND {v + 20}" for v in rng.sample(range(970), count)]


def _boxes_on_a_and_b(count: int, seed: int = 2) -> list[str]:
    rng = random.Random(seed)
    return [
        f"SELECT count(*) FROM lake.advise.t WHERE a BETWEEN {v} AND {v + 60} AND b BETWEEN {w} AND {w + 6000}"
        for v, w in zip(rng.sample(range(930), count), rng.sample(range(93000), count), strict=True)
    ]


def _equal_c(count: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [f"SELECT * FROM lake.advise.t WHERE c = {v}" for v in rng.sample(range(ROWS), count)]


def test_filters_only_on_one_column_advise_a_plain_sort_by_it(spark, table) -> None:
    advice = zskip.advise(spark, table, queries=_ranges_on_a(10), target_file_size="512KB")
    best = advice.best
    assert (best.columns, best.curve, best.indexes) == (("a",), "linear", ()), advice
    assert best.rows * 10 < advice.rows_now  # the table as loaded reads every row
    assert advice.layouts[-1].rows >= best.rows
    assert "linear over a (rank)" in str(advice) and "why" in str(advice)


def test_filters_on_two_columns_alike_advise_a_curve_over_both(spark, table) -> None:
    advice = zskip.advise(spark, table, queries=_boxes_on_a_and_b(10), target_file_size="512KB")
    best = advice.best
    assert set(best.columns) == {"a", "b"} and best.curve in ("hilbert", "zorder"), advice
    one_column = min(lay.rows for lay in advice.layouts if len(lay.columns) == 1)
    assert best.rows < one_column


def test_equality_on_a_unique_column_not_clustered_advises_an_index_on_it(spark, table) -> None:
    advice = zskip.advise(spark, table, queries=_ranges_on_a(6) + _equal_c(6), max_columns=1, target_file_size="512KB")
    best = advice.best
    assert best.columns == ("a",) and [(i.column, i.kind) for i in best.indexes] == [("c", "bloom")], advice
    assert best.rows < best.rows_minmax / 2 and best.indexes[0].predicted_bytes > 0


def test_advice_from_the_workload_log_and_apply_then_spark_reads_what_was_forecast(spark, table, tmp_path) -> None:
    name = "lake.advise.applied"
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.table(table).writeTo(name).tableProperty("write.parquet.row-group-size-bytes", "32768").create()
    before = fingerprint(spark, name)
    for query in _boxes_on_a_and_b(8) + _equal_c(3):
        zskip.sql(spark, query.replace(table, name)).collect()
    flush_workload()
    logged = zskip.workload(spark, name).num_rows
    assert logged == 11
    drifted = zskip.status(spark, name, drift=True)
    assert drifted.drifted and drifted.advised_gain is not None and drifted.advised_gain > 10
    assert "drifted: the advisor's best is" in str(drifted) and f"zskip advise {name} --apply" in str(drifted)

    advice = zskip.advise(spark, name, target_file_size="512KB", apply=True)
    assert zskip.workload(spark, name).num_rows == logged  # the advisor's own planning is not workload
    assert advice.scans == 11 and set(advice.best.columns) == {"a", "b"}
    assert advice.applied and advice.applied[0].startswith("optimize")
    assert fingerprint(spark, name) == before
    status = zskip.status(spark, name)
    assert status.clustered_share == 1.0
    assert {(i.column, i.kind) for i in status.indexes} == {(i.column, i.kind) for i in advice.best.indexes}
    for forecast in advice.best.queries:
        measured = zskip.explain(spark, name, forecast.predicate)
        assert abs(forecast.files - measured.files_read) <= max(2, 0.25 * measured.files_read), forecast
    assert spark.sql(f"SHOW TBLPROPERTIES {name} ('write.parquet.row-group-size-bytes')").first()[1] == "32768"

    logged = zskip.workload(spark, name).num_rows  # the explains above are workload
    again = zskip.advise(spark, name, target_file_size="512KB")
    # the layout it advised is now the current one, and nothing beats it by enough to rewrite
    assert again.rows_now <= 1.5 * advice.best.rows
    settled = zskip.status(spark, name, drift=True)
    assert not settled.drifted and "no drift" in str(settled)
    assert zskip.workload(spark, name).num_rows == logged


def test_a_narrow_column_among_wide_ones_gets_a_weighted_zorder_applied_as_advised(spark) -> None:
    name = "lake.advise.weighted"
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.range(500_000).selectExpr(
        *[f"CAST(rand({seed}) * 1000000 AS BIGINT) AS {column}" for seed, column in enumerate("abcd", start=1)],
        "id",
    ).repartition(8).writeTo(name).create()
    narrow = [f"SELECT * FROM {name} WHERE a BETWEEN {v} AND {v + 300}" for v in range(10000, 900000, 100000)]
    wide = [f"SELECT * FROM {name} WHERE {c} BETWEEN {v} AND {v + 100000}" for c in "bcd" for v in (100000, 600000)]
    queries = narrow + wide
    advice = zskip.advise(spark, name, queries=queries, target_file_size="128KB", apply=True)
    best = advice.best
    assert best.curve == "zorder" and best.weights is not None, advice
    weight = dict(zip(best.columns, best.weights, strict=True))
    assert weight["a"] > max(w for column, w in weight.items() if column != "a") and "a x" in best.label
    even = [lay for lay in advice.layouts if lay.weights is None and lay.rewrites]
    assert even and all(best.rows < lay.rows for lay in even)  # the weights earn their place
    spec = clustering_store(spark, name).spec
    widths = dict(zip(spec.column_names, spec.column_widths, strict=True))
    assert spec.widths is not None and widths["a"] > max(w for column, w in widths.items() if column != "a")
    for forecast in best.queries:
        measured = zskip.explain(spark, name, forecast.predicate)
        assert abs(forecast.files - measured.files_read) <= max(2, 0.25 * measured.files_read), forecast
    for query in (narrow[0], wide[0], wide[-1]):
        assert sorted(zskip.sql(spark, query).collect()) == sorted(spark.sql(query).collect())


def test_advise_says_what_is_wrong_and_changes_nothing(spark, table, tmp_path: Path) -> None:
    snapshots = spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0]
    with pytest.raises(zskip.InvalidOptionError, match="no filtered scans in its workload log"):
        zskip.advise(spark, table)
    with pytest.raises(zskip.InvalidOptionError, match="does not exist"):
        zskip.advise(spark, table, queries=tmp_path / "missing.sql")
    with pytest.raises(zskip.InvalidOptionError, match="max_columns must be a whole number from 1 to 6"):
        zskip.advise(spark, table, queries=_ranges_on_a(1), max_columns=7)
    with pytest.raises(zskip.InvalidOptionError, match="no query of the workload filters"):
        zskip.advise(spark, table, queries=["SELECT 1"])
    with pytest.raises(zskip.UnknownTableError):
        zskip.advise(spark, "lake.advise.nosuch", queries=_ranges_on_a(1))
    assert spark.sql(f"SELECT count(*) FROM {table}.snapshots").first()[0] == snapshots


def test_cli_advise_from_a_file_of_queries(spark, table, warehouse: Path, tmp_path: Path, capsys) -> None:
    queries = tmp_path / "workload.sql"
    queries.write_text(";\n".join(_ranges_on_a(5)) + ";\n-- the end\n")
    code, out, err = run(
        capsys, "--warehouse", str(warehouse), "advise", table, "--queries", str(queries), "--top", "1", "--json"
    )
    assert code == 0, err
    advice = json.loads(out)
    assert advice["best"].startswith("linear over a") and advice["scans"] == 5 and len(advice["layouts"]) == 1
    code, _, err = run(capsys, "--warehouse", str(warehouse), "advise", table, "--queries", str(tmp_path / "none.sql"))
    assert code != 0 and "does not exist" in err
