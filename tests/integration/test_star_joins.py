"""Join-key pruning in zskip.sql: a filtered dimension rules out fact files, and results never change."""

from __future__ import annotations

from collections import Counter

import pytest

import zskip
from tests.integration.stars import make_star
from zskip.planning.plan import JOIN_STAGE

pytestmark = pytest.mark.integration

NS = "lake.star_joins"
FACT = f"{NS}.fact"
DIM_A = zskip.Dimension("a_key", f"{NS}.dim_a", key="a_id", by=["region", "nation"])
DIM_B = zskip.Dimension("b_key", f"{NS}.dim_b", key="b_id", by=["colour"])


@pytest.fixture(scope="module")
def star(spark):  # type: ignore[no-untyped-def]
    make_star(spark, NS)
    zskip.optimize(spark, FACT, by=[DIM_A, DIM_B], target_file_size=40_000, row_group_size=8_000, mode="full")
    return FACT


def same_rows(spark, query: str) -> Counter:  # type: ignore[no-untyped-def]
    expected = Counter(map(tuple, spark.sql(query).collect()))
    got = Counter(map(tuple, zskip.sql(spark, query).collect()))
    assert got == expected, query
    return got


def fact_plan(spark, query: str):  # type: ignore[no-untyped-def]
    plans = [e for e in zskip.explain_sql(spark, query) if e.table.endswith("star_joins.fact")]
    assert len(plans) == 1
    return plans[0]


def join_stage(plan):  # type: ignore[no-untyped-def]
    return next((s for s in plan.stages if s.name == JOIN_STAGE), None)


REGION = f"SELECT count(*), sum(b_key) FROM {FACT} f JOIN {NS}.dim_a a ON f.a_key = a.a_id WHERE a.region = 'r2'"


@pytest.mark.smoke
def test_a_dimension_filter_prunes_fact_files_through_the_recorded_coordinates(spark, star) -> None:
    same_rows(spark, REGION)
    plan = fact_plan(spark, REGION)
    stage = join_stage(plan)
    assert stage is not None and stage.files_kept <= plan.files_total // 2, plan.stages
    assert any("join keys: a_key = " in n and "dim_a.a_id" in n and "400 keys" in n for n in plan.notes), plan.notes
    # measured from the data: every file holding a matching fact row is still read
    holding = {
        r[0]
        for r in spark.sql(
            f"SELECT DISTINCT f._file FROM {FACT} f JOIN {NS}.dim_a a ON f.a_key = a.a_id WHERE a.region = 'r2'"
        ).collect()
    }
    assert holding <= set(plan.files), holding - set(plan.files)


@pytest.mark.parametrize(
    "query",
    [
        # WHERE-style join, two dimensions, any order
        f"SELECT count(*) FROM {NS}.dim_b b, {FACT} f, {NS}.dim_a a "
        "WHERE f.a_key = a.a_id AND f.b_key = b.b_id AND a.nation = 'n7' AND b.colour = 'c3'",
        # semi join
        f"SELECT count(*) FROM {FACT} WHERE a_key IN (SELECT a_id FROM {NS}.dim_a WHERE region = 'r1')",
        # the same dimension twice under two aliases
        f"SELECT count(*) FROM {FACT} f JOIN {NS}.dim_a x ON f.a_key = x.a_id JOIN {NS}.dim_a y "
        "ON f.a_key = y.a_id WHERE x.region = 'r1' AND y.nation = 'n6'",
        # a filter matching no dimension row
        f"SELECT count(*) FROM {FACT} f JOIN {NS}.dim_a a ON f.a_key = a.a_id WHERE a.region = 'zz'",
    ],
)
@pytest.mark.smoke
def test_inner_and_semi_joins_prune_and_return_the_same_rows(spark, star, query: str) -> None:
    same_rows(spark, query)
    plan = fact_plan(spark, query)
    stage = join_stage(plan)
    assert stage is not None and stage.files_kept < plan.files_total, plan.stages


@pytest.mark.parametrize(
    "query",
    [
        # outer join keeping the fact side: every fact row stays
        f"SELECT count(*), count(a.a_id) FROM {FACT} f LEFT JOIN {NS}.dim_a a ON f.a_key = a.a_id AND a.region = 'r2'",
        # anti join
        f"SELECT count(*) FROM {FACT} WHERE a_key NOT IN (SELECT a_id FROM {NS}.dim_a WHERE region = 'r1')",
        # an unfiltered dimension: every key
        f"SELECT count(*) FROM {FACT} f JOIN {NS}.dim_a a ON f.a_key = a.a_id",
        # a fact aggregated before the join: its rows are not what the join sees
        f"SELECT count(*) FROM (SELECT a_key, count(*) AS n FROM {FACT} GROUP BY a_key LIMIT 100) f "
        f"JOIN {NS}.dim_a a ON f.a_key = a.a_id WHERE a.region = 'r2'",
    ],
)
def test_joins_that_cannot_prune_leave_the_fact_scan_alone(spark, star, query: str) -> None:
    same_rows(spark, query)
    assert join_stage(fact_plan(spark, query)) is None


def test_a_python_udf_filter_on_the_dimension_is_not_used_and_rows_are_the_same(spark, star) -> None:
    spark.udf.register("is_r2", lambda region: region == "r2", "boolean")
    query = f"SELECT count(*) FROM {FACT} f JOIN {NS}.dim_a a ON f.a_key = a.a_id WHERE is_r2(a.region)"
    same_rows(spark, query)


def test_dimension_changes_and_appends_after_optimize_never_lose_a_row(spark, star) -> None:
    # attributes changed: keys recorded under r0 now answer to r2
    spark.sql(f"UPDATE {NS}.dim_a SET region = 'r2' WHERE nation = 'n5'")
    # a key added to the dimension, and facts appended that use it (and orphans, and NULLs)
    spark.sql(f"INSERT INTO {NS}.dim_a VALUES (99999, 'r2', 'n99')")
    spark.sql(f"INSERT INTO {FACT} VALUES (99999, 1, 0.5), (99999, 2, 0.25), (NULL, 3, 1.0), (-7, 4, 2.0)")
    got = same_rows(spark, REGION)
    assert sum(n for (n, _), _ in got.items()) > 0
    same_rows(spark, f"SELECT count(*) FROM {FACT} f JOIN {NS}.dim_a a ON f.a_key = a.a_id WHERE a.nation = 'n99'")


def test_the_cli_explains_every_scan_of_a_query(spark, star, capsys) -> None:
    from tests.integration.cli_runner import run

    code, out, err = run(capsys, "explain", "--sql", REGION)
    assert code == 0, err
    assert "join keys" in out and "note: join keys: a_key = " in out and "dim_a" in out
    code, out, _ = run(capsys, "explain", "--sql", REGION, "--json")
    assert code == 0 and out.lstrip().startswith("[") and '"files"' in out
    code, _, err = run(capsys, "explain", FACT, "v > 0", "--sql", REGION)
    assert code == 2 and "not both" in err
    code, _, err = run(capsys, "explain", FACT)
    assert code == 2 and "--sql" in err


def test_join_keys_can_be_turned_off(spark, star) -> None:
    plans = [e for e in zskip.explain_sql(spark, REGION, join_keys=False) if e.table.endswith("star_joins.fact")]
    assert plans and join_stage(plans[0]) is None and plans[0].files_read == plans[0].files_total
    assert Counter(map(tuple, zskip.sql(spark, REGION, join_keys=False).collect())) == Counter(
        map(tuple, spark.sql(REGION).collect())
    )


def test_a_one_row_group_side_runs_no_key_job_over_the_other_side(spark, star) -> None:
    # an inner join offers both ways round: the fact table's filter could prune the small table's scan
    # too, but that table is one row group, so a job over the fact table would buy nothing
    small = f"{NS}.one_group"
    spark.sql(f"DROP TABLE IF EXISTS {small}")
    spark.range(50).selectExpr("CAST(id AS INT) AS a_id", "CAST(id % 5 AS INT) AS g").coalesce(1).writeTo(small).using(
        "iceberg"
    ).create()
    both = f"SELECT count(*) FROM {FACT} f JOIN {small} s ON f.a_key = s.a_id WHERE s.g = 2 AND f.b_key < 30"
    plans = {e.table.rsplit(".", 1)[1]: e for e in zskip.explain_sql(spark, both)}
    assert plans["one_group"].row_groups_total == 1
    notes = [n for n in plans["one_group"].notes if n.startswith("join keys:")]
    assert notes and all("not fetched" in n for n in notes), plans["one_group"].notes
    assert any(" keys" in n and "not fetched" not in n for n in plans["fact"].notes), plans["fact"].notes
    same_rows(spark, both)


def test_a_large_dimension_side_sends_its_keys_through_a_distinct_with_the_same_result(spark, star) -> None:
    from zskip.planning.cache import CACHE

    query = REGION + " AND a.nation IN ('n2', 'n7')"
    small = fact_plan(spark, query)
    CACHE.clear()  # the keys again, the other way
    spark.conf.set("spark.zskip.planning.smallJoinSideBytes", "0")  # every side counts as large
    try:
        large = fact_plan(spark, query)
        same_rows(spark, query)
    finally:
        spark.conf.unset("spark.zskip.planning.smallJoinSideBytes")
    assert large.files == small.files and large.notes == small.notes
    assert any(" keys" in n and "not fetched" not in n for n in large.notes), large.notes


def test_indexes_on_the_foreign_key_are_probed_with_the_key_set(spark) -> None:
    """A table clustered on something else: only a bitmap on the foreign key can rule row groups out."""
    table = f"{NS}.fact_indexed"
    make_star(spark, NS)
    spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
    spark.sql(
        f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('write.parquet.row-group-size-bytes'='8000') "
        # rows of a key together, keys scattered: each row group spans most key values but holds few
        f"AS SELECT * FROM {FACT} ORDER BY pmod(coalesce(a_key, 0) * 7919, 2003)"
    )
    query = REGION.replace(f"{FACT} f", f"{table} f").replace("a.region = 'r2'", "a.nation = 'n3'")
    before = next(e for e in zskip.explain_sql(spark, query) if e.table.endswith("fact_indexed"))
    zskip.create_index(spark, table, "a_key", kind="bitmap")
    after = next(e for e in zskip.explain_sql(spark, query) if e.table.endswith("fact_indexed"))
    # what the ruling-out stages keep (the read-ranges stage then joins these 8 KB row groups back
    # across small gaps: reading them costs less than opening the file again)
    assert _selected(after) < _selected(before), (before.stages, after.stages)
    same_rows(spark, query)


def _selected(plan: zskip.Explain) -> int:
    kept = next(s.row_groups_kept for s in plan.stages if s.name == "row-group min/max")
    assert kept is not None
    return kept


@pytest.mark.parametrize(
    "dimension",
    [
        "view",  # a temporary view over the dimension
        "cte",  # WITH d AS (SELECT ...)
        "subquery",  # JOIN (SELECT ... WHERE ...) d
        "parquet",  # a dimension that is not an Iceberg table
    ],
)
def test_a_dimension_that_is_a_view_cte_subquery_or_other_table_gives_the_same_rows(
    spark, star, tmp_path, dimension: str
) -> None:
    if dimension == "view":
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW star_dim_view AS SELECT * FROM {NS}.dim_a WHERE a_id > 100")
        query = f"SELECT count(*) FROM {FACT} f JOIN star_dim_view d ON f.a_key = d.a_id WHERE d.region = 'r3'"
    elif dimension == "cte":
        query = (
            f"WITH d AS (SELECT a_id, region FROM {NS}.dim_a WHERE nation = 'n8') "
            f"SELECT count(*) FROM {FACT} f JOIN d ON f.a_key = d.a_id"
        )
    elif dimension == "subquery":
        query = (
            f"SELECT count(*) FROM {FACT} f JOIN (SELECT a_id FROM {NS}.dim_a WHERE region = 'r4' LIMIT 50) d "
            "ON f.a_key = d.a_id"
        )
    else:
        path = str(tmp_path / "dim")
        spark.table(f"{NS}.dim_a").write.parquet(path)
        spark.read.parquet(path).createOrReplaceTempView("star_dim_parquet")
        query = f"SELECT count(*) FROM {FACT} f JOIN star_dim_parquet d ON f.a_key = d.a_id WHERE d.region = 'r1'"
    same_rows(spark, query)
    stage = join_stage(fact_plan(spark, query))
    if dimension in ("subquery", "parquet"):  # a LIMIT is not ours to repeat; a Parquet table has no snapshot
        assert stage is None
    else:  # a view and a CTE are the Iceberg table under filters once Spark has optimized the plan
        assert stage is not None


def _jobs(spark) -> int:  # type: ignore[no-untyped-def]
    """The newest Spark job's id: ids only grow, while the tracker forgets old jobs past
    spark.ui.retainedJobs, so a count of the jobs it holds can fall in a long session."""
    tracker = spark.sparkContext.statusTracker()
    return max([-1, *tracker.getJobIdsForGroup(None), *tracker.getJobIdsForGroup("zskip")])


def test_a_small_dimension_whose_filters_reach_iceberg_gives_its_keys_without_a_spark_job(spark, star) -> None:
    from zskip.planning.cache import CACHE

    query = REGION + " AND a.nation IN ('n2', 'n7', 'n12')"
    CACHE.clear()
    before = _jobs(spark)
    zskip.sql(spark, query)  # plans, runs nothing
    assert _jobs(spark) == before, "the small side's keys came from a Spark job"
    driver = fact_plan(spark, query)
    CACHE.clear()
    spark.conf.set("spark.zskip.planning.smallJoinSideBytes", "0")  # the same keys, through Spark's job
    try:
        before = _jobs(spark)
        zskip.sql(spark, query)
        assert _jobs(spark) > before
        through_spark = fact_plan(spark, query)
    finally:
        spark.conf.unset("spark.zskip.planning.smallJoinSideBytes")
    assert driver.files == through_spark.files and driver.notes == through_spark.notes
    assert any("keys" in n and "not fetched" not in n for n in driver.notes), driver.notes
    same_rows(spark, query)


def test_a_dimension_condition_iceberg_cannot_take_runs_spark_s_job_and_keeps_its_precision(spark, star) -> None:
    from zskip.planning.cache import CACHE

    # Iceberg takes the region filter but not the one on upper(nation): reading with the region filter
    # alone would yield five times the keys
    query = REGION + " AND upper(a.nation) = 'N7'"
    CACHE.clear()
    before = _jobs(spark)
    zskip.sql(spark, query)
    assert _jobs(spark) > before
    plan = fact_plan(spark, query)
    assert any(" 80 keys" in n for n in plan.notes), plan.notes
    same_rows(spark, query)


def test_a_dimension_with_delete_files_gives_the_keys_of_its_rows_today(spark, star) -> None:
    from zskip.planning.cache import CACHE

    table = f"{NS}.dim_a_updated"
    spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
    spark.sql(
        f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('format-version'='2', 'write.update.mode'='merge-on-read', "
        f"'write.delete.mode'='merge-on-read') AS SELECT * FROM {NS}.dim_a"
    )
    # region r2 moves to r9 in delete files and new rows; the old rows still sit in the first data file
    spark.sql(f"UPDATE {table} SET region = 'r9' WHERE region = 'r2'")
    spark.sql(f"DELETE FROM {table} WHERE region = 'r9' AND nation = 'n2'")
    assert spark.sql(f"SELECT count(*) FROM {table}.delete_files").first()[0] > 0
    CACHE.clear()
    for region, keys in (("r2", " 0 keys"), ("r9", " 320 keys")):
        query = (
            f"SELECT count(*), sum(b_key) FROM {FACT} f JOIN {table} a ON f.a_key = a.a_id WHERE a.region = '{region}'"
        )
        before = _jobs(spark)
        zskip.sql(spark, query)
        assert _jobs(spark) == before
        notes = " ".join(fact_plan(spark, query).notes)
        assert keys in notes, notes
        same_rows(spark, query)


def test_the_fact_scans_index_blobs_are_read_beside_the_keys_only_where_the_keys_spread_wide(
    spark, star, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Keys that fall inside nearly every row group's bounds rule little out: the index blobs the index
    stage will read are read while the dimension's keys are; on a table clustered by the key they are not."""
    make_star(spark, NS)  # another test may have changed the fact table
    spread, clustered = f"{NS}.fact_spread", f"{NS}.fact_clustered"
    for table in (spread, clustered):
        spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
        spark.sql(
            f"CREATE TABLE {table} USING iceberg TBLPROPERTIES ('write.parquet.row-group-size-bytes'='8000') "
            f"AS SELECT * FROM {FACT}"
        )
    zskip.optimize(spark, clustered, by=[DIM_A, DIM_B], target_file_size=40_000, row_group_size=8_000, mode="full")
    seen = {table: _blob_read_before_keys(spark, table, monkeypatch) for table in (spread, clustered)}
    assert seen == {spread: True, clustered: False}


def _blob_read_before_keys(spark, table: str, monkeypatch) -> bool:  # type: ignore[no-untyped-def]
    """Whether a cold plan of a star query on ``table`` reads one of its b_key bitmaps before the
    dimension's keys come back (they are held back until one is, for at most 5 s)."""
    import threading

    import zskip.planning.joins as joins
    from zskip.iceberg.table import load_table
    from zskip.planning.cache import CACHE
    from zskip.storage import FileAccess
    from zskip.tablefiles.index_manifest import read_manifest

    zskip.create_index(spark, table, "b_key", kind="bitmap")
    blobs = [
        (r["puffin_path"], r["offset"], r["offset"] + r["length"])
        for r in read_manifest(load_table(spark, table))[0].entries.to_pylist()
        if r["column"] == "b_key"
    ]
    blob_read = threading.Event()
    before: list[bool] = []
    real_read, real_all = FileAccess.read, joins.JoinKeysLoader.all

    def reading(self, location, *, offset=0, length=None):  # type: ignore[no-untyped-def]
        data = real_read(self, location, offset=offset, length=length)
        if any(p == location and offset < end and start < offset + len(data) for p, start, end in blobs):
            blob_read.set()
        return data

    def keys(self, wanted):  # type: ignore[no-untyped-def]
        before.append(blob_read.wait(5))
        return real_all(self, wanted)

    query = REGION.replace(f"{FACT} f", f"{table} f") + " AND f.b_key = 11"
    monkeypatch.setattr(FileAccess, "read", reading)
    monkeypatch.setattr(joins.JoinKeysLoader, "all", keys)
    CACHE.clear()
    (plan,) = [e for e in zskip.explain_sql(spark, query) if e.table == table]
    monkeypatch.undo()
    assert join_stage(plan) is not None and len(before) == 1
    same_rows(spark, query)
    return before[0]
