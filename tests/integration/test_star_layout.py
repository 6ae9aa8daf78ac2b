"""Clustering a fact table through its dimensions (``zskip.Dimension``): real Spark, real Iceberg tables."""

from __future__ import annotations

import pytest

import zskip
from tests.integration.cli_runner import run
from tests.integration.stars import make_star
from tests.integration.tables import fingerprint
from zskip.curves import DimensionMapping
from zskip.layout import clustering_store

pytestmark = pytest.mark.integration

NS = "lake.star_layout"


@pytest.fixture()
def star(spark):  # type: ignore[no-untyped-def]
    return make_star(spark, NS)


DIM_A = zskip.Dimension("a_key", f"{NS}.dim_a", key="a_id", by=["region", "nation"])
DIM_B = zskip.Dimension("b_key", f"{NS}.dim_b", key="b_id", by=["colour"])


def files_holding(spark, fact: str, where: str) -> int:  # type: ignore[no-untyped-def]
    """Data files of ``fact`` holding a row that joins a dim_a row matching ``where`` (measured from the data)."""
    return int(
        spark.sql(
            f"SELECT count(DISTINCT f._file) FROM {fact} f JOIN {NS}.dim_a a ON f.a_key = a.a_id WHERE {where}"
        ).first()[0]
    )


def test_optimize_through_dimensions_keeps_every_row_and_groups_each_region(spark, star) -> None:
    before = fingerprint(spark, star)
    schema = spark.table(star).schema
    loaded = files_holding(spark, star, "a.region = 'r2'")
    result = zskip.optimize(spark, star, by=[DIM_A, DIM_B], target_file_size=40_000, mode="full")
    assert result.files_written >= 8
    assert fingerprint(spark, star) == before
    assert spark.table(star).schema == schema  # no copied column
    store = clustering_store(spark, star)
    assert store is not None
    mapping = store.spec.columns[0].mapping
    assert isinstance(mapping, DimensionMapping) and mapping.by == ("region", "nation")
    snapshot = spark.sql(f"SELECT snapshot_id FROM {NS}.dim_a.snapshots").first()[0]
    assert mapping.snapshot_id == snapshot and len(mapping.keys) == 2000
    assert [len(starts) for starts in mapping.levels] == [5, 25]  # where each region and nation starts
    assert '"dimensions"' in result.clustering
    clustered = files_holding(spark, star, "a.region = 'r2'")
    nation = files_holding(spark, star, "a.nation = 'n7'")
    assert loaded == 16 and clustered <= result.files_written // 2, (loaded, clustered, result.files_written)
    assert nation <= clustered
    again = zskip.optimize(spark, star, by=[DIM_A, DIM_B], target_file_size=40_000)
    assert again.noop  # the same spec: nothing new to cluster


def test_bad_dimensions_are_refused_and_change_nothing(spark, star) -> None:
    before = spark.sql(f"SELECT count(*) FROM {star}.snapshots").first()[0]
    cases = [
        (zskip.Dimension("a_key", f"{NS}.nope", key="a_id", by=["region"]), zskip.UnknownTableError, "nope"),
        (zskip.Dimension("a_key", f"{NS}.dim_a", key="zz", by=["region"]), zskip.UnknownColumnError, "'zz'"),
        (zskip.Dimension("a_key", f"{NS}.dim_a", key="a_id", by=["zz"]), zskip.UnknownColumnError, "'zz'"),
        (zskip.Dimension("v", f"{NS}.dim_a", key="a_id", by=["region"]), zskip.InvalidOptionError, "same type"),
        (zskip.Dimension("nope", f"{NS}.dim_a", key="a_id", by=["region"]), zskip.UnknownColumnError, "nope"),
    ]
    for dimension, error, text in cases:
        with pytest.raises(error, match=text):
            zskip.optimize(spark, star, by=[dimension])
    with pytest.raises(zskip.InvalidOptionError, match="twice"):
        zskip.optimize(spark, star, by=["a_key", DIM_A])
    with pytest.raises(zskip.InvalidOptionError, match="Dimension by"):
        zskip.Dimension("a_key", f"{NS}.dim_a", key="a_id", by=[])
    assert spark.sql(f"SELECT count(*) FROM {star}.snapshots").first()[0] == before


def test_the_cli_takes_dimensions(spark, star, capsys) -> None:
    code, out, err = run(
        capsys,
        "optimize",
        star,
        "--dimension",
        f"a_key={NS}.dim_a.a_id:region,nation",
        "--target-file-size",
        "40KB",
        "--json",
    )
    assert code == 0, err
    assert '"files_written"' in out and "dim_a" in out and '"rewrite":' in out  # step_seconds too
    code, out, err = run(
        capsys, "optimize", star, "--dimension", f"a_key={NS}.dim_a.a_id:region,nation", "--target-file-size", "40KB"
    )
    assert code == 0 and "time by step: resolve" in out, err  # the same spec again: nothing to do, timed
    code, _, err = run(capsys, "optimize", star, "--dimension", "a_key:region")
    assert code == 2 and "FOREIGN_KEY=TABLE.KEY:COLUMN" in err
    code, _, err = run(capsys, "optimize", star)
    assert code == 2 and "--dimension" in err


def test_maintain_after_a_small_append_never_makes_a_star_query_read_more(spark, star) -> None:
    """1% new rows, maintain: the new rows' file spans most of the curve, over the old files' narrow row
    groups; the star query must scan no more fact rows than right before maintain (measured, numOutputRows)."""
    from tests.integration.switches import zskip_off, zskip_on
    from zskip.iceberg.scan_stats import scanned_rows

    zskip.optimize(spark, star, by=[DIM_A, DIM_B], target_file_size=40_000, row_group_size=8_000, mode="full")
    query = (
        f"SELECT count(*) FROM {star} f JOIN {NS}.dim_a a ON f.a_key = a.a_id JOIN {NS}.dim_b b "
        "ON f.b_key = b.b_id WHERE a.nation = 'n3' AND b.colour = 'c1'"
    )

    def scanned() -> tuple[int, int]:
        with zskip_off(spark):
            expected = spark.sql(query).collect()
        with zskip_on(spark):
            frame = spark.sql(query)
            assert frame.collect() == expected
            return scanned_rows(frame, star), expected[0][0]

    clustered, _ = scanned()
    spark.sql(f"INSERT INTO {star} SELECT * FROM {star} TABLESAMPLE (1 PERCENT) REPEATABLE (3)")
    appended, matches = scanned()
    result = zskip.maintain(spark, star)
    assert result.optimize is not None and not result.optimize.noop, result.reason
    maintained, _ = scanned()
    assert matches > 0 and maintained <= appended, (clustered, appended, maintained)
