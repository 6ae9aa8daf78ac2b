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
    advice = zskip.advise(spark, table, queries=_boxes_on_a_and_b(10), target_file_size="512KB", top=50)
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
    ).repartition(8).writeTo(name).tableProperty("read.split.open-file-cost", "4096").create()
    narrow = [f"SELECT * FROM {name} WHERE a BETWEEN {v} AND {v + 300}" for v in range(10000, 900000, 100000)]
    wide = [f"SELECT * FROM {name} WHERE {c} BETWEEN {v} AND {v + 100000}" for c in "bcd" for v in (100000, 600000)]
    queries = narrow + wide
    # files of 128KB, each opened costing as little as the table says (4KB, 250 rows: Iceberg's 4MB
    # default would keep its 8 files of 1MB, each opened as dear as reading 260,000 rows)
    advice = zskip.advise(spark, name, queries=queries, target_file_size="128KB", apply=True, top=50)
    assert advice.file_rows < 300
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


def test_conditions_the_sample_seldom_matches_are_counted_in_the_table(spark, table) -> None:
    """Conditions on a sample of 2,000 of 150,000 rows: a unique value, a narrow range and a value of one
    row in 50 are counted in the table (one Spark job), each equal to Spark's own count; a range holding
    half the rows is left to the sample."""
    from zskip.iceberg.predicates import filter_of
    from zskip.maintenance.advise import _sample
    from zskip.maintenance.forecasts import WorkloadQuery
    from zskip.maintenance.simulator import LayoutSimulator
    from zskip.maintenance.stars import DimensionAxes

    wheres = ["c = 4321", "c BETWEEN 1000 AND 1299", "a < 500", "s = 'k7' AND c < 40"]
    workload = []
    for where in wheres:
        _, _, scan = filter_of(spark, table, where)
        assert scan is not None
        workload.append(WorkloadQuery(where, scan.expr, 1))
    sample, _ = _sample(spark, table, ["a", "c", "s"], ROWS, 2_000)
    types = {f.name: f.dataType for f in spark.table(table).schema.fields if f.name in ("a", "c", "s")}
    simulator = LayoutSimulator(sample, workload, 4, 1_000.0, ROWS, DimensionAxes(spark, types))
    counted = simulator.count_rare_matches(spark, table, ["a", "c", "s"])
    exact = {(column, wheres[number]): rows for (column, number), rows in simulator._exact.items()}
    truth = {
        (column, where): spark.table(table).where(part).count()
        for column, where, part in [
            ("c", "c = 4321", "c = 4321"),
            ("c", "c BETWEEN 1000 AND 1299", "c BETWEEN 1000 AND 1299"),
            ("c", "s = 'k7' AND c < 40", "c < 40"),
            # one of 50 values: some 40 rows of the sample, fewer than the 100 it takes to be left to it
            ("s", "s = 'k7' AND c < 40", "s = 'k7'"),
        ]
    }
    assert exact == truth and counted == 4, (exact, truth)  # a < 500: half the sample's rows, not counted
    assert truth[("c", "c = 4321")] == 1 and truth[("c", "c BETWEEN 1000 AND 1299")] == 300


def test_no_query_slower_than_a_table_sorted_for_one_query_keeps_that_query_as_fast(spark, table) -> None:
    """A copy sorted by ``a`` serves the workload's one query on ``a`` from a few row groups; its many
    queries on ``b`` pull the best total towards a curve that reads more on it. Asked no query slower than
    on that copy, the advisor ranks first a layout forecast to keep it; applied, the query reads as few
    rows as there (a row group's rows aside), and the workload fewer than before."""
    reference, name = "lake.advise.sorted_a", "lake.advise.bounded"
    for copy, frame in ((reference, spark.table(table).orderBy("a", "c").coalesce(2)), (name, spark.table(table))):
        spark.sql(f"DROP TABLE IF EXISTS {copy} PURGE")
        frame.writeTo(copy).tableProperty("write.parquet.row-group-size-bytes", "32768").create()
    wheres = ["a BETWEEN 500 AND 539", *(f"b BETWEEN {w} AND {w + 2000}" for w in range(0, 96000, 16000))]
    workload = [f"SELECT * FROM {name} WHERE {where}" for where in wheres]
    there = [zskip.explain(spark, reference, where).rows_planned for where in wheres]
    before = [zskip.explain(spark, name, where).rows_planned for where in wheres]

    free = zskip.advise(spark, name, queries=workload, max_columns=2, target_file_size="512KB")
    assert free.reference is None and free.best.over_reference is None
    assert free.best.queries[0].rows > there[0]  # the total's best is slower on a than the sorted copy
    advice = zskip.advise(
        spark, name, queries=workload, max_columns=2, target_file_size="512KB", no_slower_than=reference, apply=True
    )
    best = advice.best
    assert advice.reference == reference and best.over_reference == 0.0 and best.slower == (), best
    assert f"no query slower than on {reference}: #1 holds to it" in str(advice)
    assert best.rewrites and best.queries[0].rows <= there[0] + advice.table_rows / advice.simulated_row_groups
    after = [zskip.explain(spark, name, where).rows_planned for where in wheres]
    rows_per_group = advice.table_rows / zskip.explain(spark, name, "true").row_groups_total
    assert after[0] <= there[0] + rows_per_group and sum(after) < sum(before), (there, before, after, best.label)
