"""zskip.optimize on real Iceberg tables: atomic, incremental, clustered, and clear about bad input."""

from __future__ import annotations

import importlib

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import zskip
from tests.integration.tables import table_bytes
from zskip.errors import (
    ConcurrentChangeError,
    InvalidOptionError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
)
from zskip.iceberg.files import data_files
from zskip.layout import clustering_store, optimize
from zskip.layout.compare import count_files_read
from zskip.layout.inspection import inspect
from zskip.layout.key_ranges import file_key_ranges
from zskip.layout.optimize import STEPS

from .tables import fingerprint, make_table

pytestmark = pytest.mark.integration


def snapshot_id(spark, table: str) -> int:
    return int(spark.sql(f"SELECT snapshot_id FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").first()[0])


@pytest.mark.smoke
def test_optimize_keeps_every_row_and_clusters_the_files(spark) -> None:
    table = make_table(spark, "lake.opt.basic")
    before = fingerprint(spark, table)
    # 16 files: a 4 x 4 grid of the two columns, so a lookup on either reads about a quarter of the files.
    # (With 8 files the curve's last split falls along one column only and the shares swing from 0.38 to 0.53.)
    target = table_bytes(spark, table) // 16
    lookup_before = {c.name: c.lookup_fraction for c in inspect(spark, table, columns=["a", "d"]).columns}

    result = optimize(spark, table, by=["a", "d"], target_file_size=target, row_group_size=target // 4)

    assert fingerprint(spark, table) == before
    assert result.commits == 1 and result.files_rewritten == 12 and result.rows_rewritten == before.rows
    assert tuple(result.step_seconds) == STEPS  # every step timed, in order
    assert 0 < sum(result.step_seconds.values()) <= result.duration_seconds
    operation, summary = spark.sql(
        f"SELECT operation, summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1"
    ).first()
    assert operation == "replace"
    assert '"curve":"hilbert"' in summary["zskip.clustering"]
    files = data_files(spark, table)
    sizes = files["file_size_in_bytes"].to_pylist()
    assert 0.67 * target <= sum(sizes) / len(sizes) <= 1.5 * target
    assert min(sizes) >= 0.3 * target  # no trail of tiny files
    lookup_after = {c.name: c.lookup_fraction for c in inspect(spark, table, columns=["a", "d"]).columns}
    for column in ("a", "d"):
        assert lookup_before[column] > 0.95  # spread at random: every file holds every value
        assert lookup_after[column] < 0.42, lookup_after
    store = clustering_store(spark, table)
    assert store is not None and store.spec.column_names == ("a", "d")
    file_ranges = store.ranges.filter(F_eq(store.ranges, -1))
    assert set(file_ranges["file_path"].to_pylist()) == set(files["file_path"].to_pylist())
    assert sum(file_ranges["rows"].to_pylist()) == before.rows
    # ranges were read off each row group's first and last rows: they equal the keys of every row
    recorded = {(r["file_path"], r["row_group"]): (r["min_key"], r["max_key"]) for r in store.ranges.to_pylist()}
    for path in files["file_path"].to_pylist():
        for _, row_group, low, high, _ in file_key_ranges(path, store.spec):
            assert recorded[(path, row_group)] == (low, high)


def F_eq(ranges, row_group: int):
    import pyarrow.compute as pc

    return pc.equal(ranges["row_group"], row_group)


def test_incremental_optimize_is_a_noop_then_clusters_only_new_files(spark) -> None:
    table = make_table(spark, "lake.opt.incremental")
    target = table_bytes(spark, table) // 6
    optimize(spark, table, by=["b", "s"], target_file_size=target)
    clustered = set(data_files(spark, table)["file_path"].to_pylist())
    snapshot = snapshot_id(spark, table)

    again = optimize(spark, table, by=["b", "s"], target_file_size=target)
    assert again.noop and snapshot_id(spark, table) == snapshot
    assert "already clustered" in again.reason

    spark.table(table).limit(500).writeTo(table).append()
    appended = set(data_files(spark, table)["file_path"].to_pylist()) - clustered
    before = fingerprint(spark, table)
    result = optimize(spark, table, by=["b", "s"], target_file_size=target)
    assert result.files_rewritten == len(appended)
    now = set(data_files(spark, table)["file_path"].to_pylist())
    assert clustered <= now  # the earlier generation is untouched
    assert fingerprint(spark, table) == before
    store = clustering_store(spark, table)
    assert store is not None and set(store.file_generations()) == now

    full = optimize(spark, table, by=["b", "s"], mode="full", target_file_size=target)
    assert full.files_rewritten == len(now) and fingerprint(spark, table) == before


def test_a_new_spec_reclusters_everything(spark) -> None:
    table = make_table(spark, "lake.opt.respec", rows=20_000, files=4)
    optimize(spark, table, by=["a"], curve="linear")
    result = optimize(spark, table, by=["a", "x"], curve="zorder", mapping="raw")
    assert result.files_rewritten == result.files_before
    assert '"mapping":"raw"' in result.clustering


def transform_rows(monkeypatch, transform) -> None:  # type: ignore[no-untyped-def]
    """Apply ``transform`` to the rows optimize is about to write: a task failure, a concurrent writer."""
    optimize_module = importlib.import_module("zskip.layout.optimize")  # the module, not the function
    original = optimize_module.ordered_rows
    monkeypatch.setattr(optimize_module, "ordered_rows", lambda *args: transform(original(*args)))


def test_a_failure_inside_the_write_leaves_the_table_unchanged(spark, monkeypatch) -> None:
    table = make_table(spark, "lake.opt.failure", rows=20_000, files=6)
    before, snapshot = fingerprint(spark, table), snapshot_id(spark, table)
    files = set(data_files(spark, table)["file_path"].to_pylist())

    @F.udf("int")
    def explode(value: int) -> int:
        if value is not None and value > 900:
            raise RuntimeError("injected task failure")
        return value

    def fail(frame: DataFrame) -> DataFrame:
        return frame.withColumn("a", explode("a"))

    with pytest.raises(Exception, match="injected task failure"):
        transform_rows(monkeypatch, fail)
        optimize(spark, table, by=["a", "b"])
    assert snapshot_id(spark, table) == snapshot
    assert fingerprint(spark, table) == before
    assert set(data_files(spark, table)["file_path"].to_pylist()) == files
    staged = spark.sparkContext._jvm.org.apache.iceberg.spark.ScanTaskSetManager.get()
    from zskip.iceberg.table import load_table

    assert staged.fetchSetIds(load_table(spark, table).java).isEmpty()


@pytest.mark.smoke
def test_an_append_during_optimize_survives(spark, monkeypatch) -> None:
    table = make_table(spark, "lake.opt.concurrent_append", rows=20_000, files=6)
    spark.table(table).limit(100).createOrReplaceTempView("extra_rows")
    extra = spark.table("extra_rows").toPandas()

    def append_meanwhile(frame: DataFrame) -> DataFrame:
        spark.createDataFrame(extra).writeTo(table).append()
        return frame

    before = fingerprint(spark, table).rows
    transform_rows(monkeypatch, append_meanwhile)
    optimize(spark, table, by=["a"])
    assert fingerprint(spark, table).rows == before + 100


def test_a_concurrent_delete_of_the_same_files_fails_cleanly(spark, monkeypatch) -> None:
    table = make_table(spark, "lake.opt.concurrent_delete", rows=20_000, files=6)

    def delete_meanwhile(frame: DataFrame) -> DataFrame:
        spark.sql(f"DELETE FROM {table} WHERE a < 500")
        return frame

    with pytest.raises(ConcurrentChangeError, match="run optimize again"):
        transform_rows(monkeypatch, delete_meanwhile)
        optimize(spark, table, by=["a"])
    assert spark.table(table).where("a < 500").count() == 0  # the other writer's commit stands


def test_partitioned_tables_are_clustered_within_each_partition(spark) -> None:
    table = make_table(spark, "lake.opt.partitioned", rows=40_000, files=8, partitioned_by="p")
    before = fingerprint(spark, table)
    result = optimize(spark, table, by=["a", "d"], target_file_size=table_bytes(spark, table) // 8)
    assert result.groups == 4  # one group per partition
    assert fingerprint(spark, table) == before
    with pytest.raises(InvalidOptionError, match=r"partitions .* by value.* cluster by other columns"):
        optimize(spark, table, by=["p", "a"])


def test_skipping_beats_the_unclustered_table(spark) -> None:
    table = make_table(spark, "lake.opt.skip", rows=60_000, files=16)
    wheres = ["a = 17", "d = DATE'1995-05-05'", "a BETWEEN 100 AND 120 AND d < DATE'1991-01-01'"]
    before = count_files_read(spark, table, wheres)
    optimize(spark, table, by=["a", "d"], target_file_size=table_bytes(spark, table) // 16)
    after = count_files_read(spark, table, wheres)
    for b, a in zip(before, after, strict=True):
        assert a.rows_matching == b.rows_matching
        assert a.files_read <= max(a.ideal_files, 1) * 6 < b.files_read, (a, b)


def test_bad_input_gets_a_clear_error_and_changes_nothing(spark) -> None:
    table = make_table(spark, "lake.opt.errors", rows=1_000, files=2)
    snapshot = snapshot_id(spark, table)
    with pytest.raises(UnknownTableError, match=r"no Iceberg table 'lake\.opt\.nope'"):
        optimize(spark, "lake.opt.nope", by=["a"])
    with pytest.raises(UnknownColumnError, match="has no column 'zz'; its columns are: 'a', 'b', 'd'"):
        optimize(spark, table, by=["a", "zz"])
    with pytest.raises(InvalidOptionError, match="curve must be one of"):
        optimize(spark, table, by=["a"], curve="peano")
    with pytest.raises(InvalidOptionError, match="target_file_size must be"):
        optimize(spark, table, by=["a"], target_file_size="big")
    spark.sql("CREATE TABLE lake.opt.nested (id INT, tags ARRAY<STRING>) USING iceberg")
    with pytest.raises(UnsupportedTypeError, match="type array<string>"):
        optimize(spark, "lake.opt.nested", by=["tags"])
    wide = ", ".join(f"c{i} INT" for i in range(65))
    spark.sql(f"CREATE TABLE lake.opt.wide ({wide}) USING iceberg")
    with pytest.raises(InvalidOptionError, match=r"65 columns do not fit a 64-bit key: each would get 0\.98 bits"):
        optimize(spark, "lake.opt.wide", by=[f"c{i}" for i in range(65)])
    assert snapshot_id(spark, table) == snapshot


def test_an_empty_table_is_a_noop(spark) -> None:
    spark.sql("CREATE TABLE lake.opt.empty (a INT, b STRING) USING iceberg")
    result = optimize(spark, "lake.opt.empty", by=["a", "b"])
    assert result.noop and "empty" in result.reason


def test_public_api_is_exported() -> None:
    # zskip.optimize is layout's optimize followed by an index refresh (zskip.indexing.upkeep)
    assert zskip.optimize.__wrapped__ is optimize  # type: ignore[attr-defined]


@pytest.mark.parametrize(("by", "mapping"), [(["k"], "rank"), (["a", "b"], "raw")])
def test_every_requested_file_is_written_even_when_keys_repeat(spark, by: list[str], mapping: str) -> None:
    table = make_table(spark, f"lake.opt.ties_{mapping}", rows=30_000, files=6)
    spark.sql(f"ALTER TABLE {table} ADD COLUMN k INT")  # all null: one key for every row
    result = optimize(spark, table, by=by, mapping=mapping, target_file_size=table_bytes(spark, table) // 6)
    assert result.files_written == 6


def test_weights_narrow_the_files_in_the_heavier_column_and_maintain_keeps_them(spark) -> None:
    from zskip.maintenance.maintain import maintain

    plain = make_table(spark, "lake.opt.unweighted", rows=60_000, files=16, seed=5)
    weighted = make_table(spark, "lake.opt.weighted", rows=60_000, files=16, seed=5)
    size = table_bytes(spark, plain) // 16
    optimize(spark, plain, by=["a", "d", "id"], curve="zorder", target_file_size=size)
    result = optimize(spark, weighted, by=["a", "d", "id"], curve="zorder", weights={"A": 4}, target_file_size=size)
    spec = clustering_store(spark, weighted).spec
    assert spec.widths == (32, 8, 8) and spec.version == 3
    assert '"weights":[4.0,1.0,1.0]' in (result.clustering or "")
    narrow = ["a BETWEEN 100 AND 140", "a = 333", "a > 950"]
    even, heavy = count_files_read(spark, plain, narrow), count_files_read(spark, weighted, narrow)
    for e, h in zip(even, heavy, strict=True):
        assert h.rows_matching == e.rows_matching
    assert sum(h.files_read for h in heavy) < sum(e.files_read for e in even), (heavy, even)
    for where in [*narrow, "d < DATE'1991-06-01' AND a < 500"]:  # every row a plain read returns, through zskip
        assert sorted(zskip.read(spark, weighted, where=where).collect()) == sorted(
            spark.table(weighted).where(where).collect()
        )
    spark.sql(f"INSERT INTO {weighted} SELECT * FROM {weighted} WHERE id < 2000")
    cycle = maintain(spark, weighted)
    assert cycle.optimize is not None and cycle.optimize.files_rewritten > 0
    assert clustering_store(spark, weighted).spec.widths == (32, 8, 8)  # the same weighted spec, incrementally
    with pytest.raises(InvalidOptionError, match="weights need curve='zorder'"):
        optimize(spark, weighted, by=["a", "d"], weights={"a": 2})
    with pytest.raises(InvalidOptionError, match="weights names 'zz', which by does not list"):
        optimize(spark, weighted, by=["a", "d"], curve="zorder", weights={"zz": 2})
    with pytest.raises(InvalidOptionError, match="must be a positive number"):
        optimize(spark, weighted, by=["a", "d"], curve="zorder", weights={"a": 0})
