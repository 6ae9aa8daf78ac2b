"""Schema evolution: what zskip stored about a column follows the column (its Iceberg field id), not its
name.  A dropped and re-added column, or a new column that took a renamed column's name, never
inherits an index or a clustering record; a renamed column keeps both.  Every read equals Spark's."""

from __future__ import annotations

import pytest

import zskip
from zskip.errors import UnknownColumnError

pytestmark = pytest.mark.integration


def evolving_table(spark, name: str, *, rows: int = 20_000, files: int = 4) -> str:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.evolve")
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    (
        spark.range(rows)
        .selectExpr(
            "id",
            "CAST(id % 97 AS INT) AS a",
            "CAST(id % 13 AS INT) AS g",
            "CAST(id % 97 % 7 AS INT) AS cat",  # a function of a: cat = 0 AND a = 5 holds for no row
            "concat('s', CAST(id % 31 AS STRING)) AS s",
        )
        .repartition(files)
        .writeTo(name)
        .using("iceberg")
        .tableProperty("format-version", "2")
        .create()
    )
    return name


def same_rows(spark, table: str, where: str) -> int:
    """Assert zskip.read, zskip.sql and explain agree with Spark on ``where``; the number of rows."""
    expected = sorted(spark.sql(f"SELECT * FROM {table} WHERE {where}").collect())
    got = sorted(zskip.read(spark, table, where=where).collect())
    assert got == expected, f"zskip.read({where!r}): {len(got)} rows, Spark {len(expected)}"
    via_sql = sorted(zskip.sql(spark, f"SELECT * FROM {table} WHERE {where}").collect())
    assert via_sql == expected, f"zskip.sql({where!r}): {len(via_sql)} rows, Spark {len(expected)}"
    plan = zskip.explain(spark, table, where)
    holding = {r[0] for r in spark.sql(f"SELECT DISTINCT _file FROM {table} WHERE {where}").collect()}
    assert holding <= set(plan.files), f"explain({where!r}) drops a file holding a match"
    return len(expected)


def test_dropped_and_re_added_column_does_not_inherit_its_index(spark) -> None:
    table = evolving_table(spark, "lake.evolve.readd")
    zskip.create_index(spark, table, "g", kind="bitmap")
    assert same_rows(spark, table, "g = 3") > 0
    spark.sql(f"ALTER TABLE {table} DROP COLUMN g")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN g INT")
    assert same_rows(spark, table, "g IS NULL") == 20_000
    (old,) = [i for i in zskip.list_indexes(spark, table) if i.kind == "bitmap"]
    assert old.column == "g" and old.unused and "left the table" in old.unused
    zskip.drop_index(spark, table, "g", "bitmap")  # by the old column's name: the new g has no index
    assert zskip.list_indexes(spark, table) == []
    zskip.create_index(spark, table, "g", kind="bitmap")  # now on the new g: all NULL
    assert same_rows(spark, table, "g IS NULL") == 20_000
    assert zskip.explain(spark, table, "g = 3").files_read == 0
    zskip.refresh_indexes(spark, table)
    assert same_rows(spark, table, "g IS NULL") == 20_000
    assert same_rows(spark, table, "g = 3") == 0
    listed = {(i.column, i.kind): i for i in zskip.list_indexes(spark, table)}
    assert listed[("g", "bitmap")].unused is None and listed[("g", "bitmap")].files_indexed == 4


def test_new_column_under_a_renamed_columns_name_does_not_inherit_its_index(spark) -> None:
    table = evolving_table(spark, "lake.evolve.rename_add")
    zskip.create_index(spark, table, "cat", kind="bitmap")
    zskip.create_index(spark, table, "a", kind="bitmap")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN cat TO cat_old")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN cat INT")
    assert same_rows(spark, table, "cat IS NULL") == 20_000
    zskip.refresh_indexes(spark, table)
    assert same_rows(spark, table, "cat IS NULL") == 20_000
    # the renamed column keeps its index, under its new name
    assert same_rows(spark, table, "cat_old = 2") > 0
    # every file holds cat_old = 0 and a = 5, never in one row: only the two bitmaps rule the files out
    assert same_rows(spark, table, "cat_old = 0 AND a = 5") == 0
    assert zskip.explain(spark, table, "cat_old = 0 AND a = 5").files_read == 0
    listed = {(i.column, i.kind): i for i in zskip.list_indexes(spark, table)}
    assert listed[("cat_old", "bitmap")].files_indexed == listed[("cat_old", "bitmap")].files_total


def test_refresh_after_renaming_an_indexed_column(spark) -> None:
    table = evolving_table(spark, "lake.evolve.refresh_rename")
    zskip.create_index(spark, table, "s", kind="bloom")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN s TO s2")
    spark.sql(f"INSERT INTO {table} SELECT id + 100000, a, g, cat, 'snew' FROM {table} LIMIT 50")
    result = zskip.refresh_indexes(spark, table)
    assert result.files_indexed == 1
    assert same_rows(spark, table, "s2 = 'snew'") == 50
    assert same_rows(spark, table, "s2 = 's4'") > 0
    plan = zskip.explain(spark, table, "s2 = 'nowhere'")
    assert plan.files_read == 0


def test_maintain_and_optimize_after_renaming_a_clustered_column(spark) -> None:
    table = evolving_table(spark, "lake.evolve.maintain_rename", rows=40_000, files=6)
    zskip.optimize(spark, table, by=["a", "cat"], curve="zorder", target_file_size="64KB", row_group_size="16KB")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN a TO a2")
    spark.sql(f"INSERT INTO {table} SELECT id + 100000, a2, g, cat, s FROM {table} LIMIT 500")
    zskip.maintain(spark, table)
    assert same_rows(spark, table, "a2 = 5 AND cat = 5") > 0
    plan = zskip.explain(spark, table, "a2 = 5 AND cat = 5")
    assert plan.files_read < plan.files_total
    status = zskip.status(spark, table)
    assert "a2" in str(status)
    # the workload log named a by field id: the advisor reads those filters as a2
    advice = zskip.advise(spark, table)
    assert "a2" in {c for layout in advice.layouts for c in layout.columns}
    # a new column named like the old one is not the clustered one
    spark.sql(f"ALTER TABLE {table} ADD COLUMN a BIGINT")
    assert same_rows(spark, table, "a IS NULL") == 40_500
    with pytest.raises(UnknownColumnError):
        zskip.optimize(spark, table, by=["nope"])


def test_a_star_layout_survives_renamed_keys_and_levels(spark) -> None:
    from .stars import make_star

    fact = make_star(spark, "lake.evolve_star")
    dim = "lake.evolve_star.dim_a"
    zskip.optimize(
        spark,
        fact,
        by=[zskip.Dimension("a_key", dim, key="a_id", by=["region", "nation"]), "v"],
        target_file_size="64KB",
        row_group_size="16KB",
    )
    query = "SELECT f.* FROM {fact} f JOIN {dim} d ON f.{fk} = d.{key} WHERE d.{level} = 'r2' AND d.nation = 'n7'"
    expected = sorted(spark.sql(query.format(fact=fact, dim=dim, fk="a_key", key="a_id", level="region")).collect())
    spark.sql(f"ALTER TABLE {fact} RENAME COLUMN a_key TO a_key2")
    spark.sql(f"ALTER TABLE {dim} RENAME COLUMN region TO region2")
    spark.sql(f"ALTER TABLE {dim} RENAME COLUMN a_id TO a_id2")
    renamed = query.format(fact=fact, dim=dim, fk="a_key2", key="a_id2", level="region2")
    assert sorted(spark.sql(renamed).collect()) == expected
    assert sorted(zskip.sql(spark, renamed).collect()) == expected
    (plan,) = [p for p in zskip.explain_sql(spark, renamed) if p.table.endswith("fact")]
    assert plan.files_read < plan.files_total  # the join keys still map through the recorded axis
    spark.sql(f"INSERT INTO {fact} SELECT a_key2, b_key, v FROM {fact} LIMIT 500")
    result = zskip.maintain(spark, fact)
    assert result.optimize is not None and result.optimize.files_rewritten < 10  # incremental: same layout
    assert sorted(zskip.sql(spark, renamed).collect()) == sorted(spark.sql(renamed).collect())
    # laid out again through the renamed levels: the dimension's snapshot, read AS OF itself, still has
    # the old names (no write since the renames), so its columns are found by field id
    again = zskip.Dimension("a_key2", dim, key="a_id2", by=["region2", "nation"])
    zskip.optimize(spark, fact, by=[again, "v"], target_file_size="64KB", row_group_size="16KB", mode="full")
    assert sorted(zskip.sql(spark, renamed).collect()) == sorted(spark.sql(renamed).collect())
    (plan,) = [p for p in zskip.explain_sql(spark, renamed) if p.table.endswith("fact")]
    assert plan.files_read < plan.files_total


def test_type_promotion_keeps_what_stays_sound(spark) -> None:
    table = evolving_table(spark, "lake.evolve.promote", rows=40_000, files=6)
    spark.sql(f"ALTER TABLE {table} ADD COLUMN m DECIMAL(9,2)")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN f FLOAT")
    spark.sql(f"UPDATE {table} SET m = CAST(id % 1000 AS DECIMAL(9,2)) / 4, f = CAST(id % 301 AS FLOAT) / 2")
    zskip.optimize(spark, table, by=["a", "m"], curve="zorder", target_file_size="96KB", row_group_size="16KB")
    zskip.create_index(spark, table, "g", kind="bitmap")
    zskip.create_index(spark, table, "f", kind="bloom")
    before = {w: zskip.explain(spark, table, w).files_read for w in ("a = 5", "m = 12.25", "f = 7.5")}
    assert before["a = 5"] < zskip.explain(spark, table, "a = 5").files_total
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN a TYPE BIGINT")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN f TYPE DOUBLE")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN m TYPE DECIMAL(12,2)")
    # int to bigint, float to double, decimal(9,2) to (12,2): the keys are the same, so is the pruning
    for where in ("a = 5", "m = 12.25", "f = 7.5"):
        assert same_rows(spark, table, where) > 0
        assert zskip.explain(spark, table, where).files_read == before[where], where
    assert same_rows(spark, table, "a = 5000000000") == 0
    assert same_rows(spark, table, "f = 7.50000001") == 0
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN m TYPE DECIMAL(20,2)")  # past 18 digits: keys change
    assert same_rows(spark, table, "m = 12.25") > 0
    assert same_rows(spark, table, "m BETWEEN 100 AND 101 AND a = 5") >= 0
    spark.sql(f"INSERT INTO {table} SELECT id + 100000, a, g, cat, s, m, f FROM {table} LIMIT 300")
    zskip.maintain(spark, table)
    zskip.refresh_indexes(spark, table)
    for where in ("a = 5", "m = 12.25", "f = 7.5", "g = 4 AND a < 10"):
        same_rows(spark, table, where)
