"""zskip.enable: plain spark.sql, DataFrames, views and star joins are pruned as zskip.sql prunes them;
writes, failures and tables zskip never touched are left as Spark plans them."""

from __future__ import annotations

import io
import re
import threading
from collections import Counter
from contextlib import redirect_stdout
from typing import Any

import pytest

import zskip
from tests.integration.jobs import run_job
from tests.integration.stars import make_star
from tests.integration.switches import zskip_off, zskip_on
from tests.integration.tables import fingerprint, make_table
from zskip.iceberg.scan_stats import scanned_rows
from zskip.planning import enable as enable_module
from zskip.planning.enable import hook_counts

pytestmark = pytest.mark.integration

NS = "lake.enable"
TABLE = f"{NS}.t"
# a value of b only a few row groups hold, though most row groups' min/max span it: only zskip's
# bitmap on b rules the others out (the fixture checks the value is there)
B_VALUE = 61_234
SELECTIVE = f"SELECT count(*) AS n, sum(id) AS s FROM {TABLE} WHERE b = {B_VALUE} OR (a = 7 AND b < 5)"


def rows(frame: Any) -> Counter:
    return Counter(map(tuple, frame.collect()))


@pytest.fixture(scope="module")
def table(spark: Any) -> str:
    make_table(spark, TABLE, rows=40_000, files=6)
    zskip.optimize(spark, TABLE, by=["a", "b"], target_file_size=60_000, row_group_size=4_000)
    spark.sql(f"INSERT INTO {TABLE} SELECT a, {B_VALUE}, d, s, x, m, id, p FROM {TABLE} WHERE id = 17")
    zskip.create_index(spark, TABLE, "s", kind="bitmap")
    zskip.create_index(spark, TABLE, "b", kind="bitmap")
    return TABLE


def both(spark: Any, build: Any) -> tuple[Counter, Counter, Any]:
    """Rows of ``build()`` with zskip off and on, and the frame zskip planned (run)."""
    with zskip_off(spark):
        expected = rows(build())
    with zskip_on(spark):
        frame = build()
        got = rows(frame)
    return expected, got, frame


@pytest.mark.smoke
def test_plain_spark_sql_is_pruned_and_returns_sparks_rows(spark: Any, table: str) -> None:
    with zskip_off(spark):
        plain = spark.sql(SELECTIVE)
        expected = rows(plain)
        plain_scanned = scanned_rows(plain, TABLE)
    before = hook_counts(spark).planned
    with zskip_on(spark):
        frame = spark.sql(SELECTIVE)
        assert rows(frame) == expected
        scanned = scanned_rows(frame, TABLE)
        printed = io.StringIO()
        with redirect_stdout(printed):
            frame.explain()
        explained = printed.getvalue()
    assert hook_counts(spark).planned > before
    assert scanned < plain_scanned, (scanned, plain_scanned)
    assert "zskip: reads" in explained and "ruled out by" in explained, explained
    # zskip.sql reads the same row groups
    via_sql = zskip.sql(spark, SELECTIVE)
    assert rows(via_sql) == expected
    assert scanned_rows(via_sql, TABLE) == scanned


@pytest.mark.parametrize(
    "shape",
    ["dataframe", "view", "cte", "subquery", "cache", "index"],
)
def test_every_query_shape_is_pruned_and_exact(spark: Any, table: str, shape: str) -> None:
    def build() -> Any:
        if shape == "dataframe":
            return spark.table(TABLE).where("a BETWEEN 100 AND 140 AND b < 2000").groupBy("p").count()
        if shape == "view":
            spark.table(TABLE).createOrReplaceTempView("enable_view")
            return spark.sql("SELECT p, count(*) FROM enable_view WHERE a BETWEEN 100 AND 140 GROUP BY p")
        if shape == "cte":
            return spark.sql(
                f"WITH x AS (SELECT * FROM {TABLE} WHERE a < 60) SELECT count(*), max(b) FROM x WHERE b < 5000"
            )
        if shape == "subquery":
            return spark.sql(
                f"SELECT count(*) FROM {TABLE} WHERE a = (SELECT max(a) FROM {TABLE} WHERE a < 200 AND s = 'k3')"
            )
        if shape == "cache":
            frame = spark.table(TABLE).where("a BETWEEN 500 AND 530").select("id", "a")
            frame.cache()
            return frame
        return spark.sql(f"SELECT count(*), min(id) FROM {TABLE} WHERE s IN ('k1', 'k7') AND a > 900")

    expected, got, frame = both(spark, build)
    assert got == expected
    if shape == "cache":
        frame.unpersist()
        return
    with zskip_off(spark):
        plain = build()
        plain.collect()
    assert scanned_rows(frame, TABLE) <= scanned_rows(plain, TABLE)


def test_a_table_zskip_never_touched_is_not_handed_to_python(spark: Any) -> None:
    other = f"{NS}.untouched"
    make_table(spark, other, rows=2_000, files=2)
    with zskip_on(spark):
        before = hook_counts(spark).planned
        spark.sql(f"SELECT count(*) FROM {other} WHERE a < 10").collect()
        assert hook_counts(spark).planned == before


def test_a_failing_planner_leaves_sparks_plan_and_is_counted(spark: Any, table: str, monkeypatch: Any) -> None:
    with zskip_off(spark):
        expected = rows(spark.sql(SELECTIVE))

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("injected planning failure")

    monkeypatch.setattr(enable_module, "plan_scan", broken)
    enable_module.forget_answers(spark)  # a remembered answer would not ask the planner
    with zskip_on(spark):
        before = hook_counts(spark)
        assert rows(spark.sql(SELECTIVE)) == expected
        after = hook_counts(spark)
    assert after.failures == before.failures + 1
    assert "injected planning failure" in after.last_failure


WRITES = [
    "DELETE FROM {t} WHERE a BETWEEN 100 AND 140 AND b < 2000",
    "UPDATE {t} SET b = b + 1 WHERE a BETWEEN 300 AND 320",
    "MERGE INTO {t} t USING (SELECT id, a FROM {t} WHERE a BETWEEN 600 AND 610) u ON t.id = u.id "
    "WHEN MATCHED AND t.b < 3000 THEN DELETE WHEN MATCHED THEN UPDATE SET t.b = -1",
    "INSERT OVERWRITE {t} SELECT * FROM {t} WHERE a < 500",
    # the rows of the target no source row matches are the ones deleted: a scan of the target pruned by
    # the source's keys would keep them
    "MERGE INTO {t} t USING (SELECT id FROM {t} WHERE a BETWEEN 600 AND 610 AND b < 3000) u ON t.id = u.id "
    "WHEN MATCHED THEN UPDATE SET t.b = -1 WHEN NOT MATCHED BY SOURCE AND t.a < 50 THEN DELETE",
]


@pytest.fixture(scope="module")
def write_targets(spark: Any) -> dict[str, list[tuple[str, int]]]:
    """Per write mode, two identical tables clustered by zskip with a bloom filter on s (one written with
    zskip off, one with it on) and the snapshot each test starts them from: made once, rolled back to."""
    made: dict[str, list[tuple[str, int]]] = {}
    for mode in ("copy-on-write", "merge-on-read"):
        made[mode] = []
        for name in ("plain", "hooked"):
            copy = f"{NS}.w_{mode.replace('-', '_')}_{name}"
            properties = {f"write.{k}.mode": mode for k in ("delete", "update", "merge")}
            make_table(spark, copy, rows=8_000, files=4, properties=properties)
            zskip.optimize(spark, copy, by=["a", "b"], target_file_size=20_000, row_group_size=2_000)
            zskip.create_index(spark, copy, "s", kind="bloom")
            snapshot = spark.sql(f"SELECT snapshot_id FROM {copy}.snapshots ORDER BY committed_at DESC").first()[0]
            made[mode].append((copy, snapshot))
    return made


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
@pytest.mark.parametrize("statement", WRITES, ids=["delete", "update", "merge", "overwrite", "merge-by-source"])
def test_a_write_leaves_the_table_spark_alone_leaves(
    spark: Any, write_targets: dict[str, list[tuple[str, int]]], mode: str, statement: str
) -> None:
    copies = []
    for copy, snapshot in write_targets[mode]:
        spark.sql(f"CALL lake.system.rollback_to_snapshot('{copy.removeprefix('lake.')}', {snapshot})")
        copies.append(copy)
    assert fingerprint(spark, copies[0]) == fingerprint(spark, copies[1])
    with zskip_off(spark):
        spark.sql(statement.format(t=copies[0]))
    with zskip_on(spark):
        before = hook_counts(spark).planned
        spark.sql(statement.format(t=copies[1]))
        handed = hook_counts(spark).planned - before
    with zskip_off(spark):
        assert fingerprint(spark, copies[0]) == fingerprint(spark, copies[1])
    if mode == "merge-on-read" or statement.startswith("INSERT"):
        # every scan of these plans reads the table they write: none went to zskip's planner (with
        # copy-on-write, the subquery that finds the files to rewrite is a plain read, and may)
        assert handed == 0


def test_insert_select_into_another_table_reads_pruned_and_writes_the_same_rows(spark: Any, table: str) -> None:
    targets = []
    for name, switch in (("plain", zskip_off), ("hooked", zskip_on)):
        target = f"{NS}.copy_{name}"
        spark.sql(f"DROP TABLE IF EXISTS {target} PURGE")
        with switch(spark):
            spark.sql(f"CREATE TABLE {target} USING iceberg AS SELECT * FROM {TABLE} WHERE a BETWEEN 10 AND 40")
            spark.sql(f"INSERT INTO {target} SELECT * FROM {TABLE} WHERE a BETWEEN 700 AND 720 AND b < 900")
        targets.append(target)
    with zskip_off(spark):
        assert fingerprint(spark, targets[0]) == fingerprint(spark, targets[1])


def test_two_threads_each_get_their_own_plan(spark: Any, table: str) -> None:
    queries = [
        f"SELECT count(*), sum(id) FROM {TABLE} WHERE a BETWEEN {low} AND {low + 30} AND b < {b}"
        for low, b in ((50, 3000), (400, 900), (800, 60000), (5, 100))
    ]
    with zskip_off(spark):
        expected = {q: rows(spark.sql(q)) for q in queries}
    got: dict[str, list[Counter]] = {q: [] for q in queries}
    errors: list[BaseException] = []

    def run(order: list[str]) -> None:
        try:
            for q in order * 2:
                got[q].append(rows(spark.sql(q)))
        except BaseException as exc:  # reported below
            errors.append(exc)

    with zskip_on(spark):
        threads = [threading.Thread(target=run, args=(o,)) for o in (queries, queries[::-1])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    for q in queries:
        assert got[q] and all(g == expected[q] for g in got[q]), q


STAR = "lake.enable_star"


@pytest.fixture(scope="module")
def star(spark: Any) -> str:
    make_star(spark, STAR)
    by = [
        zskip.Dimension("a_key", f"{STAR}.dim_a", key="a_id", by=["region", "nation"]),
        zskip.Dimension("b_key", f"{STAR}.dim_b", key="b_id", by=["colour"]),
    ]
    zskip.optimize(spark, f"{STAR}.fact", by=by, target_file_size=40_000, row_group_size=8_000, mode="full")
    return f"{STAR}.fact"


@pytest.mark.smoke
def test_a_plain_star_join_is_pruned_through_the_dimension(spark: Any, star: str) -> None:
    query = f"SELECT count(*), sum(b_key) FROM {star} f JOIN {STAR}.dim_a a ON f.a_key = a.a_id WHERE a.region = 'r2'"
    with zskip_off(spark):
        plain = spark.sql(query)
        expected = rows(plain)
        plain_scanned = scanned_rows(plain, star)
    zskip.flush_workload()
    logged = zskip.workload(spark, star).num_rows
    with zskip_on(spark):
        frame = spark.sql(query)
        assert rows(frame) == expected
        hooked = scanned_rows(frame, star)
    via_sql = zskip.sql(spark, query)
    assert rows(via_sql) == expected
    assert hooked < plain_scanned
    assert hooked == scanned_rows(via_sql, star)
    # both paths log the fact scan with its join, the dimension's columns by field id (region is field 2)
    zskip.flush_workload()
    newest = zskip.workload(spark, star).slice(logged).to_pylist()
    assert len(newest) >= 2
    for record in newest:
        (join,) = record["joins"]
        assert join["dimension"].endswith("enable_star.dim_a") and join["key_field"] == 1, join
        assert join["filter_fields"] == "`#2` = 'r2'" and join["column_fields"] == [2], join


def test_a_stopped_and_restarted_session_is_pruned_again(tmp_path: Any) -> None:
    report = run_job("restart_job.py", str(tmp_path / "warehouse"))
    assert report["same"] is True
    assert report["planned_before_stop"] >= 1
    assert report["planned_after_restart"] > report["planned_before_stop"]
    assert report["off_after_disable"] is True


def test_a_dimension_read_at_an_older_snapshot_gives_that_snapshot_s_keys(spark: Any, star: str) -> None:
    """The fact table is current (so the rule plans it); its dimension is read AS OF an older snapshot,
    whose keys differ from today's: keys cached for one must never answer for the other."""
    from zskip.planning.cache import CACHE

    dimension = f"{STAR}.dim_a_history"
    spark.sql(f"DROP TABLE IF EXISTS {dimension} PURGE")
    spark.sql(f"CREATE TABLE {dimension} USING iceberg AS SELECT * FROM {STAR}.dim_a")
    old = spark.sql(f"SELECT snapshot_id FROM {dimension}.snapshots").first()[0]
    spark.sql(f"UPDATE {dimension} SET region = 'r9' WHERE region = 'r2'")  # today r2 has no keys
    CACHE.clear()
    join = f"SELECT count(*), sum(b_key) FROM {star} f JOIN {{d}} a ON f.a_key = a.a_id WHERE a.region = 'r2'"
    for read in (dimension, f"{dimension} VERSION AS OF {old}", dimension, f"{dimension} VERSION AS OF {old}"):
        expected, got, frame = both(spark, lambda read=read: spark.sql(join.format(d=read)))
        assert got == expected, read
        with zskip_off(spark):
            plain_frame = spark.sql(join.format(d=read))
            plain_frame.collect()
            plain = scanned_rows(plain_frame, star)
        if "VERSION" in read:  # the old keys pruned the fact table (today's keys are none: Spark reads nothing)
            assert scanned_rows(frame, star) < plain, read
    assert rows(spark.sql(join.format(d=f"{dimension} VERSION AS OF {old}")))[(0, None)] == 0


REMEMBERED = f"{NS}.remembered"


@pytest.fixture(scope="module")
def remembered_table(spark: Any) -> str:
    make_table(spark, REMEMBERED, rows=12_000, files=4, seed=5)
    zskip.optimize(spark, REMEMBERED, by=["a", "b"], target_file_size=30_000, row_group_size=3_000)
    zskip.create_index(spark, REMEMBERED, "id", kind="bitmap")  # every file spans the ids: min/max rules none out
    return REMEMBERED


PREDICATE = "id IN (777, 5001)"


def _predicates(spark: Any, table: str) -> list[str]:
    return [str(p) for p in zskip.workload(spark, table).column("predicate").to_pylist()]


def test_an_answer_is_remembered_until_the_table_changes(spark: Any, remembered_table: str) -> None:
    query = f"SELECT count(*) AS n, sum(b) AS s FROM {remembered_table} WHERE id IN (777, 5001)"
    enable_module.forget_answers(spark)
    with zskip_off(spark):
        plain = spark.sql(query)
        expected = rows(plain)
        plain_scanned = scanned_rows(plain, remembered_table)
    recorded = _predicates(spark, remembered_table).count(PREDICATE)
    with zskip_on(spark):
        first = hook_counts(spark)
        frame = spark.sql(query)
        assert rows(frame) == expected
        scanned = scanned_rows(frame, remembered_table)
        asked = hook_counts(spark)
        again = spark.sql(query)
        assert rows(again) == expected
        assert scanned_rows(again, remembered_table) == scanned < plain_scanned
        printed = io.StringIO()
        with redirect_stdout(printed):
            again.explain()
        answered = hook_counts(spark)
    assert (asked.planned, asked.remembered) == (first.planned + 1, first.remembered)
    # the second plan came from memory (its scan ran twice above: once to count, once for the rows)
    assert answered.planned == asked.planned and answered.remembered > asked.remembered
    assert "ruled out by" in printed.getvalue(), printed.getvalue()
    # every run is in the workload log, those answered from memory too
    assert _predicates(spark, remembered_table).count(PREDICATE) >= recorded + 2

    # a commit makes a new table state: the planner is asked again, and the new rows are found
    copied = f"SELECT a, b + 1, d, s, x, m, 777, p FROM {remembered_table} WHERE id < 5"
    spark.sql(f"INSERT INTO {remembered_table} {copied}")
    with zskip_off(spark):
        expected = rows(spark.sql(query))
    with zskip_on(spark):
        before = hook_counts(spark)
        assert rows(spark.sql(query)) == expected
        assert hook_counts(spark).planned == before.planned + 1


def test_a_filter_on_no_clustered_or_indexed_column_is_answered_without_the_planner(
    spark: Any, remembered_table: str
) -> None:
    # x is neither clustered nor indexed: once the rule knows which columns zskip plans by in this
    # state, any filter on x alone, whatever its literal, reads what Iceberg planned without Python
    with zskip_on(spark):
        spark.sql(f"SELECT count(*) FROM {remembered_table} WHERE x > 40").collect()
        before = hook_counts(spark)
        for bound in (41, 42.5, 43):
            query = f"SELECT count(*) AS n, sum(id) AS s FROM {remembered_table} WHERE x > {bound}"
            frame = spark.sql(query)
            got = rows(frame)
            with zskip_off(spark):
                assert got == rows(spark.sql(query))
            printed = io.StringIO()
            with redirect_stdout(printed):
                frame.explain()
            assert "nothing more to skip" in printed.getvalue(), printed.getvalue()
        after = hook_counts(spark)
        # a filter on the clustered columns still goes to the planner
        spark.sql(f"SELECT count(*) FROM {remembered_table} WHERE a = 977 AND b < 50000").collect()
        clustered = hook_counts(spark)
    assert after.planned == before.planned and after.remembered >= before.remembered + 3
    assert clustered.planned == after.planned + 1
    # each still reaches the workload log, planned for its record after the query had its plan
    assert {"x > 41.0D", "x > 42.5D", "x > 43.0D"} <= set(_predicates(spark, remembered_table))


def _properties(spark: Any, table: str) -> dict[str, str]:
    return {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def test_a_first_plan_bounding_one_clustered_column_on_one_side_is_decided_without_the_planner(
    spark: Any, remembered_table: str
) -> None:
    # min/max rule out as much as the curve for `a >= ...`, and for any slab of one column of this Hilbert
    # curve (the planner's own rule, curve_range._minmax_suffices): the commit records which clustered columns
    # are ordered by value and the curve, and the rule needs no Python for it
    properties = _properties(spark, remembered_table)
    store = properties["zskip.clustering.store"]
    assert properties["zskip.clustering.value-ordered-field-ids"] == properties["zskip.clustering.field-ids"]
    assert properties["zskip.clustering.value-ordered-field-ids"].endswith(f"@{store}")
    assert properties["zskip.clustering.curve"] == f"hilbert@{store}"
    slabs = {
        "a >= 900 AND x < 10": True,  # x is neither clustered nor indexed
        "a < 20": True,
        "a BETWEEN 100 AND 120": True,  # along the Hilbert curve, a key range across the slab meets it
        "a >= 900 AND b < 500": False,  # two clustered columns: a box the curve sees gaps in
        f"a >= 900 AND {PREDICATE}": False,  # an indexed column
    }
    for where, alone in slabs.items():
        query = f"SELECT count(*) AS n, sum(id) AS s FROM {remembered_table} WHERE {where}"
        with zskip_off(spark):
            expected = rows(spark.sql(query))
        with zskip_on(spark):
            enable_module.forget_answers(spark)
            before = hook_counts(spark)
            frame = spark.sql(query)
            assert rows(frame) == expected, where
            after = hook_counts(spark)
            printed = io.StringIO()
            with redirect_stdout(printed):
                frame.explain()
        assert (after.planned == before.planned) is alone, where
        if alone:
            assert "nothing more to skip" in printed.getvalue(), printed.getvalue()


def test_a_table_state_s_first_plan_on_other_columns_is_decided_without_the_planner(
    spark: Any, remembered_table: str
) -> None:
    # zskip's commits record the field ids it plans by beside the store and the manifest they come from
    properties = _properties(spark, remembered_table)
    store, manifest = properties["zskip.clustering.store"], properties["zskip.index.manifest"]
    assert re.fullmatch(rf"\d+,\d+@{re.escape(store)}", properties["zskip.clustering.field-ids"]), properties
    assert re.fullmatch(rf"\d+@{re.escape(manifest)}", properties["zskip.index.field-ids"]), properties
    query = f"SELECT count(*) AS n, sum(id) AS s FROM {remembered_table} WHERE x > 44"
    with zskip_off(spark):
        expected = rows(spark.sql(query))
    with zskip_on(spark):
        enable_module.forget_answers(spark)  # what a table state's first query finds: nothing remembered
        before = hook_counts(spark)
        assert rows(spark.sql(query)) == expected
        decided = hook_counts(spark)
        spark.sql(f"SELECT count(*) FROM {remembered_table} WHERE {PREDICATE}").collect()
        indexed = hook_counts(spark)
    assert decided.planned == before.planned and decided.remembered > before.remembered
    assert indexed.planned == decided.planned + 1  # a filter on the indexed column goes to the planner

    # ids recorded for another manifest than the table's (left by a zskip that did not write them) say
    # nothing: the planner is asked
    stale = properties["zskip.index.field-ids"].split("@")[0] + "@elsewhere"
    spark.sql(f"ALTER TABLE {remembered_table} SET TBLPROPERTIES ('zskip.index.field-ids' = '{stale}')")
    try:
        with zskip_on(spark):
            before = hook_counts(spark)
            assert rows(spark.sql(query)) == expected
            asked = hook_counts(spark)
        assert asked.planned == before.planned + 1
    finally:
        fields = properties["zskip.index.field-ids"]
        spark.sql(f"ALTER TABLE {remembered_table} SET TBLPROPERTIES ('zskip.index.field-ids' = '{fields}')")
