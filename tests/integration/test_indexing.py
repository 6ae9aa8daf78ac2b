"""Index builds on real Iceberg tables: exact answers, incremental refresh, atomic publication, clear errors."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import zskip
from zskip.errors import ConcurrentChangeError, InvalidOptionError, UnknownColumnError, UnknownIndexError
from zskip.expr import And, Compare, Expr, In, Not, Or, bind
from zskip.fileindex.evaluate import Match
from zskip.iceberg.files import data_files
from zskip.iceberg.table import load_table
from zskip.indexing import index_verdicts
from zskip.tablefiles.build_leases import build_lease
from zskip.tablefiles.index_manifest import MANIFEST_PROPERTY, new_puffin_path, publish, read_manifest

from .tables import make_table

pytestmark = pytest.mark.integration

SMALL_ROW_GROUPS = {"write.parquet.row-group-size-bytes": "16384"}


def manifest_path(spark, table: str) -> str | None:
    return load_table(spark, table).property(MANIFEST_PROPERTY)


def files_holding(spark, table: str, where: str) -> set[str]:
    rows = spark.table(table).where(where).select("_file").distinct().collect()
    return {r[0] for r in rows}


def damage(stored: dict) -> None:
    """Flip ten bytes of the blob a manifest row (entry or footer copy) points at."""
    path = Path(stored["puffin_path"].removeprefix("file:"))
    data = bytearray(path.read_bytes())
    for i in range(stored["offset"] + 10, stored["offset"] + 20):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def verdicts(spark, table: str, expr: Expr):
    """Index verdicts of ``expr`` (by column names, bound here to the table's field ids as the planner binds them)."""
    iceberg = load_table(spark, table)
    manifest, _ = read_manifest(iceberg)
    live = data_files(spark, table)["file_path"].to_pylist()
    return live, index_verdicts(manifest, live, bind(expr, {f.name: f.id for f in iceberg.schema()}))


@pytest.fixture(scope="module")
def indexed(spark) -> str:
    table = make_table(spark, "lake.idx.base", rows=40_000, files=6, properties=SMALL_ROW_GROUPS)
    zskip.create_index(spark, table, "a", kind="bitmap")
    zskip.create_index(spark, table, "s", kind="bitmap")
    zskip.create_index(spark, table, "id", kind="bloom", fpp=0.01)
    return table


@pytest.mark.smoke
def test_bitmaps_keep_exactly_the_files_and_row_groups_that_hold_a_match(spark, indexed) -> None:
    # a and s overlap in every file's min/max, yet few files hold this exact combination
    a, s = spark.table(indexed).select("a", "s").orderBy("id").first()
    expr = And((Compare("a", "=", a), Compare("s", "=", s)))
    live, found = verdicts(spark, indexed, expr)
    assert set(found) == set(live)  # every file is indexed
    holding = files_holding(spark, indexed, f"a = {a} AND s = '{s}'")
    assert {f for f, v in found.items() if v.file is Match.MIGHT_MATCH} == holding and holding
    never = And((Compare("a", "=", a), Compare("s", "=", "nope")))
    assert all(v.file is Match.CANNOT_MATCH for v in verdicts(spark, indexed, never)[1].values())
    groups = sum(len(v.row_groups) for v in found.values())
    kept = sum(v.row_groups_kept for v in found.values())
    assert groups > 2 * len(live) and 0 < kept < groups / 4


def test_a_cold_plan_reads_the_bitmaps_of_the_files_asked_about_and_no_others(spark, indexed) -> None:
    from zskip.planning.cache import LruCache

    a, s = spark.table(indexed).select("a", "s").orderBy("id").first()
    iceberg = load_table(spark, indexed)
    manifest, path = read_manifest(iceberg)
    live = sorted(data_files(spark, indexed)["file_path"].to_pylist())
    expr = bind(And((Compare("a", "=", a), Compare("s", "=", s))), {f.name: f.id for f in iceberg.schema()})
    loaded: list[object] = []

    class Counting(LruCache):
        def get_or_load(self, key, load):  # type: ignore[no-untyped-def]
            if key not in self and key[0] == "blob":
                loaded.append(key)
            return super().get_or_load(key, load)

    asked = live[:2]
    found = index_verdicts(manifest, asked, expr, cache=Counting(1000), manifest_key=path, access=iceberg.file_access())
    assert set(found) == set(asked)
    # two columns' bitmaps of the two files (heads first, then whole where a head could not decide): a
    # bitmap has no joint probe to build from every file's index
    assert len({key[:3] for key in loaded}) == 4, loaded


def test_bloom_finds_every_present_id_and_rules_out_absent_ones(spark, indexed) -> None:
    ids = [r["id"] for r in spark.table(indexed).select("id").orderBy(F.rand(3)).limit(20).collect()]
    _, found = verdicts(spark, indexed, In("id", tuple(ids)))
    holding = files_holding(spark, indexed, f"id IN ({','.join(map(str, ids))})")
    assert holding <= {f for f, v in found.items() if v.file is Match.MIGHT_MATCH}
    _, absent = verdicts(spark, indexed, Compare("id", "=", 10**12))
    assert sum(v.file is Match.CANNOT_MATCH for v in absent.values()) >= len(absent) - 1


def test_or_and_not_across_indexed_columns(spark, indexed) -> None:
    expr = Or((And((Compare("a", "<", 3), Not(Compare("s", "=", "k1")))), Compare("s", "=", "k49")))
    _, found = verdicts(spark, indexed, expr)
    holding = files_holding(spark, indexed, "(a < 3 AND NOT s = 'k1') OR s = 'k49'")
    assert {f for f, v in found.items() if v.file is Match.MIGHT_MATCH} == holding


def test_list_shows_each_index_and_its_size(spark, indexed) -> None:
    listed = {(i.column, i.kind): i for i in zskip.list_indexes(spark, indexed)}
    assert set(listed) == {("a", "bitmap"), ("s", "bitmap"), ("id", "bloom")}
    assert all(i.files_indexed == i.files_total == 6 and i.index_bytes > 0 for i in listed.values())
    assert listed[("id", "bloom")].options == {"fpp": 0.01}


@pytest.mark.smoke
def test_refresh_after_an_append_indexes_only_the_new_files(spark) -> None:
    table = make_table(spark, "lake.idx.refresh", rows=10_000, files=4)
    zskip.create_index(spark, table, "a", kind="bitmap")
    before, _ = read_manifest(load_table(spark, table))
    old_puffins = before.puffin_paths()
    spark.table(table).limit(500).writeTo(table).append()

    result = zskip.refresh_indexes(spark, table)

    assert (result.files_indexed, result.files_already_indexed, result.files_total) == (1, 4, 5)
    after, _ = read_manifest(load_table(spark, table))
    assert old_puffins < after.puffin_paths() and len(after.puffin_paths() - old_puffins) == 1
    assert zskip.refresh_indexes(spark, table).files_indexed == 0  # nothing new: nothing done
    optimized = zskip.optimize(spark, table, by=["a"], mode="full")  # every file replaced, and indexed anew
    assert optimized.files_indexed == optimized.files_written == len(data_files(spark, table))
    rebuilt = zskip.refresh_indexes(spark, table)
    assert (rebuilt.entries_dropped, rebuilt.files_indexed) == (0, 0)
    assert rebuilt.files_already_indexed == len(data_files(spark, table))


def test_an_interrupted_build_leaves_the_previous_index_in_use(spark) -> None:
    table = make_table(spark, "lake.idx.interrupted", rows=10_000, files=3)
    zskip.create_index(spark, table, "a", kind="bitmap")
    published = manifest_path(spark, table)

    def interrupt(stage: str, done: int, total: int) -> None:
        if done == total:
            raise KeyboardInterrupt  # after every blob is written, before the manifest is published

    with pytest.raises(KeyboardInterrupt):
        zskip.create_index(spark, table, "s", kind="bitmap", progress=interrupt)
    assert manifest_path(spark, table) == published
    assert [(i.column, i.kind) for i in zskip.list_indexes(spark, table)] == [("a", "bitmap")]
    _, found = verdicts(spark, table, Compare("a", "=", 5))
    assert {f for f, v in found.items() if v.file is Match.MIGHT_MATCH} == files_holding(spark, table, "a = 5")


def test_a_damaged_blob_is_reported_and_its_file_kept(spark, caplog) -> None:
    table = make_table(spark, "lake.idx.damaged", rows=10_000, files=3)
    zskip.create_index(spark, table, "a", kind="bitmap")
    manifest, _ = read_manifest(load_table(spark, table))
    victim = manifest.entries.to_pylist()[0]
    damage(victim)

    with caplog.at_level(logging.WARNING):
        _, found = verdicts(spark, table, Compare("a", "=", -1))
    assert "damaged" in caplog.text
    assert victim["data_file"] not in found  # no verdict: the planner keeps it
    assert len(found) == 2 and all(v.file is Match.CANNOT_MATCH for v in found.values())


def test_bad_input_gets_a_clear_error_and_writes_nothing(spark) -> None:
    table = make_table(spark, "lake.idx.errors", rows=1_000, files=2)
    spark.sql(f"ALTER TABLE {table} ADD COLUMN tags array<string>")
    with pytest.raises(UnknownColumnError, match="no column 'nope'"):
        zskip.create_index(spark, table, "nope", kind="bitmap")
    with pytest.raises(zskip.UnsupportedTypeError, match="tags"):
        zskip.create_index(spark, table, "tags", kind="bloom")
    with pytest.raises(InvalidOptionError, match="kind must be one of"):
        zskip.create_index(spark, table, "a", kind="hash")
    with pytest.raises(InvalidOptionError, match="fpp"):
        zskip.create_index(spark, table, "a", kind="bloom", fpp=2)
    with pytest.raises(InvalidOptionError, match="takes no options"):
        zskip.create_index(spark, table, "a", kind="bitmap", fpp=0.1)
    with pytest.raises(UnknownIndexError, match="no bitmap index"):
        zskip.drop_index(spark, table, "a", "bitmap")
    assert manifest_path(spark, table) is None
    assert not (Path(load_table(spark, table).location().removeprefix("file:")) / "zskip").exists()


def test_concurrent_publishers_conflict_instead_of_overwriting(spark) -> None:
    table = make_table(spark, "lake.idx.concurrent", rows=1_000, files=2)
    zskip.create_index(spark, table, "a", kind="bitmap")
    iceberg = load_table(spark, table)
    manifest, seen = read_manifest(iceberg)
    first = publish(iceberg, manifest, expected=seen)  # another run publishes first
    with pytest.raises(ConcurrentChangeError, match="another run published first"):
        publish(iceberg, manifest, expected=seen)
    assert manifest_path(spark, table) == first


def test_drop_then_vacuum_deletes_only_unreferenced_files(spark) -> None:
    table = make_table(spark, "lake.idx.vacuum", rows=5_000, files=3)
    zskip.create_index(spark, table, "a", kind="bitmap")
    zskip.create_index(spark, table, "s", kind="bloom")
    zskip.drop_index(spark, table, "s", "bloom")
    manifest, current = read_manifest(load_table(spark, table))
    assert zskip.vacuum(spark, table, older_than="1h").files_deleted == 0  # too young
    result = zskip.vacuum(spark, table, older_than=0)
    # two old manifests and the three bloom puffins go; the three bitmap puffins and the manifest stay
    assert result.files_deleted == 5 and result.files_kept == 4
    again, _ = read_manifest(load_table(spark, table))
    assert again.entries.equals(manifest.entries) and current is not None
    _, found = verdicts(spark, table, Compare("a", "=", 5))
    assert len(found) == 3


def _local(path: str) -> Path:
    return Path(path.removeprefix("file:"))


def test_vacuum_grace_counts_from_when_a_file_stopped_being_referenced(spark) -> None:
    """Index files written two hours ago that left the manifest a moment ago are kept by a vacuum of
    files older than an hour (their modification time would have them go), and go with older_than 0."""
    table = make_table(spark, "lake.idx.grace", rows=2_000, files=2)
    zskip.create_index(spark, table, "s", kind="bloom")
    manifest, path = read_manifest(load_table(spark, table))
    assert path is not None
    written = [_local(p) for p in {*manifest.puffin_paths(), path}]
    long_ago = time.time() - 7_200
    for file in written:
        os.utime(file, (long_ago, long_ago))
    zskip.drop_index(spark, table, "s", "bloom")  # the bloom blobs and the manifest stop being referenced now
    after, now_current = read_manifest(load_table(spark, table))
    left = set(written) - {_local(p) for p in {*after.puffin_paths(), now_current} if p}
    assert left  # the old manifest at least (the footer copies stay referenced)
    assert zskip.vacuum(spark, table, older_than="1h").files_deleted == 0
    assert all(file.exists() for file in left)
    assert zskip.vacuum(spark, table, older_than=0).files_deleted == len(left)
    assert not any(file.exists() for file in left)


def test_vacuum_keeps_what_a_build_under_way_wrote(spark) -> None:
    """A file an unfinished build wrote (its lease held) survives vacuum with older_than 0; once the
    build ended without publishing it, it goes."""
    table = make_table(spark, "lake.idx.lease", rows=1_000, files=1)
    zskip.create_index(spark, table, "a", kind="bitmap")
    iceberg = load_table(spark, table)
    stray = new_puffin_path(iceberg)
    with build_lease(iceberg, "a test's build"):
        iceberg.file_access().write(stray, b"PFA1 written, not published yet")
        zskip.vacuum(spark, table, older_than=0)
        assert _local(stray).exists()
    assert zskip.vacuum(spark, table, older_than=0).files_deleted == 1
    assert not _local(stray).exists()
    _, found = verdicts(spark, table, Compare("a", "=", 5))  # the published index is intact
    assert found


def test_vacuum_never_deletes_a_file_another_table_at_the_same_location_wrote(spark) -> None:
    """zskip names its files for their table (its uuid): an unreferenced index file named for another
    table (one sharing the location) is kept; one named before files were named so goes, as before."""
    import uuid

    table = make_table(spark, "lake.idx.shared", rows=1_000, files=1)
    zskip.create_index(spark, table, "a", kind="bitmap")
    iceberg = load_table(spark, table)
    manifest, path = read_manifest(iceberg)
    assert path is not None and iceberg.uuid() in path  # named for its table
    folder = path.rsplit("/", 1)[0]
    others = f"{folder}/index-{uuid.uuid4()}-{uuid.uuid4()}.puffin"
    unnamed = f"{folder}/index-{uuid.uuid4()}.puffin"
    for stray in (others, unnamed):
        iceberg.file_access().write(stray, b"PFA1 not referenced")
    assert zskip.vacuum(spark, table, older_than=0).files_deleted == 1
    assert _local(others).exists() and not _local(unnamed).exists()
    assert read_manifest(load_table(spark, table))[0].entries.equals(manifest.entries)


def test_small_index_files_are_merged_when_they_pile_up(spark, monkeypatch) -> None:
    from zskip.indexing import api

    monkeypatch.setattr(api, "MERGE_AT", 3)
    table = make_table(spark, "lake.idx.merge", rows=8_000, files=4)
    first = zskip.create_index(spark, table, "a", kind="bitmap")
    assert first.index_files_merged == 4
    manifest, _ = read_manifest(load_table(spark, table))
    assert len(manifest.puffin_paths()) == 1 and manifest.entries.num_rows == 4
    # the footer copies' heads one after another (a cold plan reads them in one request), their rests apart
    copies = sorted(manifest.footers.to_pylist(), key=lambda row: row["offset"])
    assert len(copies) == 4 and all(row["head"] and row["rest_offset"] for row in copies)
    assert all(a["offset"] + a["head"] == b["offset"] for a, b in itertools.pairwise(copies))
    assert min(row["rest_offset"] for row in copies) == copies[-1]["offset"] + copies[-1]["head"]
    _, found = verdicts(spark, table, Compare("a", "=", 7))
    assert {f for f, v in found.items() if v.file is Match.MIGHT_MATCH} == files_holding(spark, table, "a = 7")
    spark.table(table).limit(100).writeTo(table).append()
    assert zskip.refresh_indexes(spark, table).index_files_merged == 0  # one merged file + one new: few


def test_merged_bitmaps_of_a_wide_column_are_asked_by_their_copied_blocks(spark, monkeypatch) -> None:
    from zskip.indexing import api
    from zskip.planning.cache import CACHE
    from zskip.storage import FileAccess

    monkeypatch.setattr(api, "MERGE_AT", 3)
    table = "lake.idx.wide"
    spark.sql("DROP TABLE IF EXISTS lake.idx.wide PURGE")
    # 30,000 values spread over 10^12 in each file: a file's sorted dictionary is tens of kilobytes
    frame = spark.range(120_000).selectExpr("CAST(floor(rand(7) * 1e12) AS BIGINT) AS w", "id").repartition(4)
    frame.writeTo(table).using("iceberg").create()
    assert zskip.create_index(spark, table, "w", kind="bitmap").index_files_merged == 4
    manifest, _ = read_manifest(load_table(spark, table))
    rows = manifest.entries.to_pylist()
    assert len(rows) == 4 and all(row["part_offsets"] for row in rows)  # in blocks, copied side by side
    copies = {(row["puffin_path"], at) for row in rows for at in row["part_offsets"]}
    present = spark.table(table).orderBy("id").first()["w"]
    read: list[tuple[str, int]] = []
    real = FileAccess.read

    def counting(self, location, *, offset=0, length=None):  # type: ignore[no-untyped-def]
        read.append((location, offset))
        return real(self, location, offset=offset, length=length)

    monkeypatch.setattr(FileAccess, "read", counting)
    for where in (
        f"w = {present}",
        f"w = {present + 1}",
        f"w IN ({present}, 5)",
        f"w > {present - 10**9} AND w < {present}",
    ):
        CACHE.clear()
        read.clear()
        assert sorted(zskip.read(spark, table, where).collect()) == sorted(spark.table(table).where(where).collect())
        if "=" in where and "IN" not in where:  # an equality reads the copies of the blocks that would hold it
            assert any(found in copies for found in read), where
    CACHE.clear()
    plan = zskip.explain(spark, table, f"w = {present + 1}")  # in no file: the heads and blocks rule all out
    assert plan.files_read == 0


def _planned_with_footer_reads(spark, table: str, where: str, monkeypatch) -> tuple[object, list[str]]:
    """``zskip.explain`` of ``where`` planned cold, and the data files whose own footers it read."""
    from zskip.planning.cache import CACHE
    from zskip.storage import FileAccess

    read: list[str] = []
    real = FileAccess.parquet_metadata

    def counting(self, location, *, size=None):  # type: ignore[no-untyped-def]
        read.append(location)
        return real(self, location, size=size)

    monkeypatch.setattr(FileAccess, "parquet_metadata", counting)
    CACHE.clear()
    return zskip.explain(spark, table, where), read


def test_planning_reads_the_footer_copies_the_index_files_hold_not_the_data_files(spark, monkeypatch) -> None:
    from zskip.planning.footers import footer_from_copy, read_footer
    from zskip.tablefiles.blob_reads import footer_copies

    table = make_table(spark, "lake.idx.footers", rows=20_000, files=4, properties=SMALL_ROW_GROUPS)
    zskip.create_index(spark, table, "a", kind="bitmap")
    iceberg = load_table(spark, table)
    manifest, current = read_manifest(iceberg)
    files = data_files(spark, table)
    sizes = dict(zip(files["file_path"].to_pylist(), files["file_size_in_bytes"].to_pylist(), strict=True))
    copies = manifest.footer_copies
    assert {path: copy.file_size for path, copy in copies.items()} == sizes
    loaded = footer_copies(list(copies.values()), iceberg.file_access())
    for path, data in zip(copies, loaded, strict=True):
        assert not isinstance(data, Exception)
        assert len(data) == copies[path].head < copies[path].length / 2  # the copy's head alone
        own, copied = read_footer(path, iceberg.file_access()), footer_from_copy(data)
        assert copied.rows == own.rows and copied.ranges == own.ranges and len(own.rows) > 2
        field_a = iceberg.resolve(["a"])[0].id
        assert copied.column(field_a) == own.column(field_a)

    where = "a BETWEEN 3 AND 5"
    plan, footers_read = _planned_with_footer_reads(spark, table, where, monkeypatch)
    assert footers_read == [] and 0 < plan.row_groups_read < plan.row_groups_total
    monkeypatch.undo()
    # the same plan from the data files' own footers: a manifest without copies
    publish(iceberg, dataclasses.replace(manifest, footers=manifest.footers.slice(0, 0)), expected=current)
    own, footers_read = _planned_with_footer_reads(spark, table, where, monkeypatch)
    assert len(footers_read) == plan.files_read > 0
    assert (own.files_read, own.row_groups_read, own.rows_planned) == (
        plan.files_read,
        plan.row_groups_read,
        plan.rows_planned,
    )


def test_footer_copies_read_ahead_are_decoded_only_when_a_stage_asks_for_them(spark, monkeypatch) -> None:
    from zskip.planning.cache import CACHE
    from zskip.planning.metadata import SnapshotMetadata
    from zskip.planning.pipeline import _table_metadata
    from zskip.storage import FileAccess

    table = make_table(spark, "lake.idx.copies_ahead", rows=12_000, files=4, properties=SMALL_ROW_GROUPS)
    zskip.create_index(spark, table, "a", kind="bitmap")
    metadata: SnapshotMetadata = _table_metadata(spark, table)
    paths = data_files(spark, table)["file_path"].to_pylist()
    CACHE.clear()
    metadata.manifest()
    reads: list[str] = []
    real = FileAccess.read

    def counting(self, location, *, offset=0, length=None):  # type: ignore[no-untyped-def]
        reads.append(location)
        return real(self, location, offset=offset, length=length)

    monkeypatch.setattr(FileAccess, "read", counting)
    metadata.read_copies_ahead(paths)
    read_ahead = len(reads)
    assert read_ahead == len(set(reads)) > 0  # each index file's copies in one request
    assert not any(("footer", p) in CACHE for p in paths)  # read, not decoded
    first = metadata.footer(paths[0])
    assert len(reads) == read_ahead and ("footer", paths[0]) in CACHE and ("footer copy", paths[0]) not in CACHE
    metadata.prefetch_footers(paths)  # the others from the bytes read ahead too
    assert len(reads) == read_ahead and not any(("footer copy", p) in CACHE for p in paths)
    monkeypatch.undo()
    CACHE.clear()
    again = metadata.footer(paths[0])  # nothing read ahead: read and decoded as before
    field_a = load_table(spark, table).resolve(["a"])[0].id
    assert again.rows == first.rows and again.column(field_a) == first.column(field_a) and len(first.rows) > 1


def test_refresh_copies_the_footers_of_files_indexed_before_copies_were_made(spark) -> None:
    table = make_table(spark, "lake.idx.old_footers", rows=8_000, files=3)
    zskip.create_index(spark, table, "a", kind="bitmap")
    iceberg = load_table(spark, table)
    manifest, path = read_manifest(iceberg)
    publish(iceberg, dataclasses.replace(manifest, footers=manifest.footers.slice(0, 0)), expected=path)
    result = zskip.refresh_indexes(spark, table)
    assert result.files_indexed == 0 and result.files_already_indexed == 3  # no index built again
    again, path = read_manifest(load_table(spark, table))
    assert again.entries.equals(manifest.entries)
    assert set(again.footer_copies) == set(data_files(spark, table)["file_path"].to_pylist())

    # copies of format 1 (read whole: no head) are made again, so planning reads only their heads
    older = again.footers.set_column(
        again.footers.schema.get_field_index("head"), "head", pa.nulls(again.footers.num_rows, pa.int64())
    )
    publish(iceberg, dataclasses.replace(again, footers=older), expected=path)
    assert zskip.refresh_indexes(spark, table).files_indexed == 0
    latest, _ = read_manifest(load_table(spark, table))
    assert latest.entries.equals(manifest.entries) and latest.footers.num_rows == 3
    assert all(row["head"] for row in latest.footers.to_pylist())
    published = manifest_path(spark, table)
    zskip.refresh_indexes(spark, table)
    assert manifest_path(spark, table) == published  # nothing more to do: nothing published


def test_a_damaged_footer_copy_is_reported_and_the_data_files_own_footer_read(spark, caplog, monkeypatch) -> None:
    table = make_table(spark, "lake.idx.bad_footer", rows=10_000, files=3, properties=SMALL_ROW_GROUPS)
    zskip.create_index(spark, table, "a", kind="bitmap")
    manifest, _ = read_manifest(load_table(spark, table))
    victim = manifest.footers.to_pylist()[0]
    damage(victim)
    where = "a >= 0"  # every file read: every footer asked for
    with caplog.at_level(logging.WARNING):
        plan, footers_read = _planned_with_footer_reads(spark, table, where, monkeypatch)
    assert "footer" in caplog.text and "damaged" in caplog.text
    assert footers_read == [victim["data_file"]]
    assert plan.rows_planned == spark.table(table).count()
    monkeypatch.undo()
    assert zskip.read(spark, table, "a = 5").count() == spark.table(table).where("a = 5").count()


def test_the_index_manifest_and_clustering_store_are_read_while_spark_plans_and_a_failed_read_is_tried_again(
    spark, monkeypatch, caplog
) -> None:
    import threading

    import zskip.iceberg.scans
    from zskip.planning.cache import CACHE
    from zskip.storage import FileAccess
    from zskip.tablefiles.clustering_store import STORE_PROPERTY

    table = make_table(spark, "lake.idx.ahead", rows=20_000, files=4, properties=SMALL_ROW_GROUPS)
    zskip.optimize(spark, table, by=["a", "b"])
    zskip.create_index(spark, table, "s", kind="bitmap")
    iceberg = load_table(spark, table)
    manifest, store = manifest_path(spark, table), iceberg.property(STORE_PROPERTY)
    assert manifest and store
    where = "a >= 0 AND s = 'nope'"  # only the bitmaps rule the files out
    CACHE.clear()
    expected = zskip.explain(spark, table, where)
    assert expected.files_read == 0

    reads: list[tuple[str, str]] = []
    real = FileAccess.read
    started = {manifest: threading.Event(), store: threading.Event()}

    def flaky(self, location, *, offset=0, length=None):  # type: ignore[no-untyped-def]
        reads.append((threading.current_thread().name, location))
        if location in started:
            started[location].set()
        if location == manifest and [loc for _, loc in reads].count(manifest) == 1:
            raise OSError("the store did not answer")  # the first read of the manifest fails
        return real(self, location, offset=offset, length=length)

    # the scans' description is read once Spark has planned them: by then both reads have started
    described = zskip.iceberg.scans.described_scans
    before_planned: list[bool] = []

    def once_planned(*args):  # type: ignore[no-untyped-def]
        before_planned.extend(event.wait(10) for event in started.values())
        return described(*args)

    monkeypatch.setattr(FileAccess, "read", flaky)
    monkeypatch.setattr(zskip.iceberg.scans, "described_scans", once_planned)
    CACHE.clear()
    with caplog.at_level(logging.WARNING):
        plan = zskip.explain(spark, table, where)
    assert before_planned == [True, True]
    assert "ignoring" not in caplog.text  # the failed read was tried again
    assert (plan.files_read, plan.row_groups_read) == (expected.files_read, expected.row_groups_read)
    assert [loc for _, loc in reads].count(manifest) == 2 and [loc for _, loc in reads].count(store) == 1
    monkeypatch.undo()
    assert zskip.sql(spark, f"SELECT id FROM {table} WHERE {where}").count() == 0


def test_optimize_leaves_every_index_covering_every_live_file(spark) -> None:
    """Index, optimize (full and incremental), and each index covers every file the rewrite wrote, in the same
    run: a query right after optimize rules out as many files by its indexes as a refresh would give."""
    table = make_table(spark, "lake.idx.upkeep", rows=12_000, files=6, properties=SMALL_ROW_GROUPS)
    zskip.create_index(spark, table, "s", kind="bitmap")
    zskip.create_index(spark, table, "b", kind="bloom", fpp=0.05)
    done = zskip.optimize(spark, table, by=["a", "d"], target_file_size=60_000, mode="full")
    assert done.files_written > 0
    assert set(done.indexes) == {"s:bitmap", "b:bloom"}, done
    assert done.files_indexed == done.files_written and "cover the" in done.index_note, done
    assert any(label == "indexes" for label, _ in done.display_rows())
    for info in zskip.list_indexes(spark, table):
        assert info.files_indexed == info.files_total > 0, info
    spark.sql(f"INSERT INTO {table} SELECT * FROM {table} WHERE a < 100")
    again = zskip.optimize(spark, table, by=["a", "d"], target_file_size=60_000)
    assert again.files_written > 0
    for info in zskip.list_indexes(spark, table):
        assert info.files_indexed == info.files_total, info
    assert zskip.refresh_indexes(spark, table).files_indexed == 0  # nothing left for a refresh to do


def test_optimize_of_a_table_without_indexes_says_nothing_of_them(spark) -> None:
    table = make_table(spark, "lake.idx.no_upkeep", rows=4_000, files=3)
    done = zskip.optimize(spark, table, by=["a"], target_file_size=60_000, mode="full")
    assert done.indexes == () and done.index_note == "" and done.files_indexed == 0
