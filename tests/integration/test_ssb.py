"""The Star Schema Benchmark at a tiny scale: tables derive from TPC-H, and every query gives the same
rows through zskip.sql (after zskip clustering and a bitmap index) as through plain Spark SQL."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

import zskip
from zskip.datasets import SSB_QUERIES, load_ssb

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ssb(spark, tmp_path_factory) -> str:
    namespace = "lake.ssb_smoke"
    counts = load_ssb(spark, namespace, scale_factor=0.01, data_dir=tmp_path_factory.mktemp("tpch"), files=8)
    assert counts["dates"] == 2557  # every day of 1992-1998
    assert counts["lineorder"] > 50_000 and counts["part"] == 2000 and counts["supplier"] == 100
    return namespace


def test_ssb_tables_follow_the_ssb_encodings(spark, ssb) -> None:
    part = spark.table(f"{ssb}.part").selectExpr("min(p_mfgr)", "max(p_category)", "max(length(p_brand1))").first()
    assert part[0] == "MFGR#1" and part[1] == "MFGR#55" and part[2] in (9, 10)
    city = spark.table(f"{ssb}.customer").selectExpr("max(length(c_city))").first()[0]
    assert city == 10
    assert spark.table(f"{ssb}.lineorder").selectExpr("min(lo_orderdate)").first()[0] >= 19920101


def test_every_ssb_query_gives_the_same_rows_through_zskip(spark, ssb) -> None:
    table = f"{ssb}.lineorder"
    zskip.optimize(spark, table, by=["lo_orderdate", "lo_discount", "lo_quantity"], target_file_size=200_000)
    zskip.create_index(spark, table, "lo_discount", kind="bitmap")
    matched = 0
    for name, text in SSB_QUERIES.items():
        query = text.format(ns=ssb)
        expected = Counter(map(tuple, spark.sql(query).collect()))
        got = Counter(map(tuple, zskip.sql(spark, query).collect()))
        assert got == expected, name
        matched += bool(expected)
    assert matched >= 10  # most queries find rows even at this scale


def test_the_benchmark_refuses_a_configuration_it_does_not_know(tmp_path) -> None:
    """An unknown letter would measure nothing and say nothing: refused before any Spark work."""
    sys.path.insert(0, str(ROOT))
    from bench import ssb as benchmark

    with pytest.raises(SystemExit, match=r"--layouts: unknown k, z; choose from a,b,c,d,e,f,g,h,i,j"):
        benchmark.main(["--layouts=a,k,z", f"--output={tmp_path}"])
    with pytest.raises(SystemExit, match=r"--kinds: unknown bitmaps; choose from minmax,bloom,bitmap"):
        benchmark.main(["--kinds=bitmaps", f"--output={tmp_path}"])


def test_the_benchmark_runs_end_to_end_at_a_tiny_scale(spark, tmp_path) -> None:
    """bench/ssb.py, a few queries, each kind of configuration (Iceberg's zorder, zskip's raw zorder with
    each kind of skipping, the star layout, (c) read through zskip, the native peer): same rows everywhere,
    a report and its charts. (b), (e) and (f) differ from these only by their sort (CI's time is budgeted).
    """
    sys.path.insert(0, str(ROOT))  # bench/ lives in the checkout, not in the package
    from bench import ssb as benchmark

    results = benchmark.main(
        [
            "--scale-factor=0.01",
            "--files=8",
            "--row-group-size=16KB",
            "--runs=1",
            "--queries=Q2.1,D1,D5",  # a star query and two of document 001's filters
            "--paired-runs=2",
            "--pair-seconds=0",
            "--layouts=a,c,d,g,h,i,j",
            f"--data-dir={tmp_path / 'tpch'}",
            f"--output={tmp_path}",
        ]
    )
    assert len(results) == 11 and all(set(r) == {"Q2.1", "D1", "D5"} for r in results.values())
    report = (tmp_path / "ssb.md").read_text()
    assert "Every configuration returned the same rows for every query" in report
    assert "## Head to head: (c) Iceberg zorder against" in report and "| D5 |" in report
    star, plain = results["(g) zskip star, min/max"]["Q2.1"], results["(a) as loaded"]["Q2.1"]
    assert "## (g) zskip star" in report
    assert star["matching"] <= star["row_groups"] < plain["row_groups"]  # the ideal is measured, and kept
    # plain spark.sql on (g) with zskip enabled scans what zskip.sql scans; with zskip off, more
    enabled, off = results[benchmark.STAR_ENABLED]["Q2.1"], results[benchmark.STAR_PLAIN]["Q2.1"]
    assert enabled["rows"] == star["rows"] < off["rows"]
    assert "## Plain `spark.sql` on (g), zskip off and zskip enabled" in report
    # on document 001's filters too, what holds a match is measured from the data: every such row group is read
    for label in ("(c) Iceberg zorder", "(d) zskip zorder raw, + bitmap", benchmark.SAME_TABLE):
        assert all(results[label][q]["matching"] <= results[label][q]["row_groups"] for q in ("D1", "D5")), label
    # (h): (c)'s own table through zskip never opens more of its files than Spark's scan of it does
    assert results[benchmark.SAME_TABLE]["D1"]["files"] <= results["(c) Iceberg zorder"]["D1"]["files"]
    assert f"## Head to head: (c) Iceberg zorder against {benchmark.SAME_TABLE}" in report
    # each index kind is measured alone: the blooms went before the bitmaps were built (the last kind stays)
    assert {i.kind for i in zskip.list_indexes(spark, "lake.ssb.lineorder_zorder_raw")} == {"bitmap"}
    # (j): the advisor's layout and indexes for the run's queries, applied to a copy of (a)
    advised = results[benchmark.ADVISED]
    assert advised["D1"]["row_groups"] < results["(a) as loaded"]["D1"]["row_groups"] / 3
    assert zskip.status(spark, "lake.ssb.lineorder_advised").clustering is not None
    # (i): Iceberg's zorder with its own bloom filters, read by plain Spark, against zskip.enable on (j)
    native = report.split("## Against the strongest native table: (i) Iceberg zorder + Parquet bloom filters")[1]
    assert f"zskip's side is {benchmark.ADVISED}: " in native
    assert re.search(r"\| D1 \|.*\| \d+\.\d\d-\d+\.\d\d of \d+ \|", native)  # the middle half of the paired ratios
    for chart in ("ssb-files.png", "ssb-row-groups.png", "ssb-speedup.png", "ssb-native.png"):
        assert (tmp_path / chart).stat().st_size > 10_000
    plain, clustered = results["(a) as loaded"]["D1"], results["(d) zskip zorder raw, + bitmap"]["D1"]
    assert clustered["row_groups"] < plain["row_groups"] / 3
    assert 0 < clustered["rows"] <= clustered["rows_planned"]  # Spark's scan read no row group zskip ruled out
