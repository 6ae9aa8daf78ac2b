"""A table zskip 0.3 clustered and indexed (``tests/fixtures/legacy_0_3``: its clustering store, summary
and index manifest name columns, not field ids) loads, prunes and stays right through schema changes.

The fixture is the whole hadoop-catalog warehouse 0.3 wrote at ``/tmp/zskip-legacy-0.3`` (Iceberg's
metadata holds absolute paths, so it is copied back there): 3,000 rows in one file of 15 row groups,
clustered by ``a, s`` and indexed by bitmaps on ``cat`` and ``a`` and a bloom filter on ``s``
(``cat`` is ``a % 7``, so ``cat = 0 AND a = 5`` holds for no row).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import zskip
from zskip.fileindex.manifest import IndexManifest
from zskip.fileindex.puffin import read_puffin
from zskip.tablefiles.clustering_store import SPEC_BLOB

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).parent.parent / "fixtures" / "legacy_0_3" / "tables"
WAREHOUSE = Path("/tmp/zskip-legacy-0.3")
TABLE = "legacy03.legacy.t"


@pytest.fixture
def legacy(spark) -> str:
    shutil.rmtree(WAREHOUSE, ignore_errors=True)
    shutil.copytree(FIXTURE, WAREHOUSE)
    spark.conf.set("spark.sql.catalog.legacy03", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.legacy03.type", "hadoop")
    spark.conf.set("spark.sql.catalog.legacy03.warehouse", str(WAREHOUSE))
    spark.conf.set("spark.sql.catalog.legacy03.cache-enabled", "false")
    return TABLE


def agree(spark, where: str) -> zskip.Explain:
    expected = sorted(spark.sql(f"SELECT * FROM {TABLE} WHERE {where}").collect())
    assert sorted(zskip.read(spark, TABLE, where=where).collect()) == expected, where
    assert sorted(zskip.sql(spark, f"SELECT * FROM {TABLE} WHERE {where}").collect()) == expected, where
    return zskip.explain(spark, TABLE, where)


def test_the_fixture_is_what_0_3_wrote() -> None:
    manifests = sorted((FIXTURE / "legacy/t/zskip/indexes").glob("manifest-*.puffin"))
    loaded = [IndexManifest.from_bytes(p.read_bytes()) for p in manifests]
    newest = max(loaded, key=lambda m: len(m.definitions))
    assert {(d.column, d.kind) for d in newest.definitions} == {("cat", "bitmap"), ("a", "bitmap"), ("s", "bloom")}
    assert all(d.field_id is None for d in newest.definitions)
    assert newest.entries["field_id"].null_count == newest.entries.num_rows > 0
    ((store_path),) = (FIXTURE / "legacy/t/zskip").glob("clustering-*.puffin")
    reader = read_puffin(store_path.read_bytes())
    spec_blob = next(b for b in reader.blobs if b.type == SPEC_BLOB)
    spec = zskip.curves.ClusteringSpec.from_json(reader.read(spec_blob).decode())
    assert spec.version == 1 and spec.column_names == ("a", "s") and spec.field_ids == (None, None)


def test_a_0_3_table_prunes_by_the_fields_its_names_meant(spark, legacy: str) -> None:
    found = {(i.column, i.kind): i for i in zskip.list_indexes(spark, legacy)}
    assert {k: (i.field_id, i.unused) for k, i in found.items()} == {
        ("a", "bitmap"): (1, None),
        ("cat", "bitmap"): (2, None),
        ("s", "bloom"): (3, None),
    }
    plan = agree(spark, "cat = 0 AND a = 5")
    assert plan.row_groups_read == 0  # the two bitmaps, tied to fields 2 and 1
    plan = agree(spark, "a BETWEEN 10 AND 12")
    assert 0 < plan.row_groups_read < plan.row_groups_total  # the curve ranges, tied to field 1
    agree(spark, "s = 's4'")
    assert zskip.status(spark, legacy) is not None


def test_a_0_3_table_through_a_rename_and_a_new_column_under_the_old_name(spark, legacy: str) -> None:
    spark.sql(f"ALTER TABLE {legacy} RENAME COLUMN a TO a2")
    plan = agree(spark, "cat = 0 AND a2 = 5")  # 'a' meant one field in every schema: still field 1
    assert plan.row_groups_read == 0
    spark.sql(f"ALTER TABLE {legacy} ADD COLUMN a INT")
    # 'a' has now meant two fields: its index and clustering record are tied to neither
    assert agree(spark, "a IS NULL").rows_planned == 3_000
    assert agree(spark, "a2 = 5 AND a IS NULL").files_read == 1
    found = {(i.column, i.kind): i for i in zskip.list_indexes(spark, legacy)}
    assert found[("a", "bitmap")].field_id is None and found[("a", "bitmap")].unused
    zskip.refresh_indexes(spark, legacy)
    kept = {(i.column, i.kind) for i in zskip.list_indexes(spark, legacy)}
    assert kept == {("cat", "bitmap"), ("s", "bloom")}
    agree(spark, "cat = 0 AND a2 = 5")
    with pytest.raises(zskip.InvalidOptionError, match="cannot tell"):
        zskip.maintain(spark, legacy)
