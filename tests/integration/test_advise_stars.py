"""``zskip.advise`` on a star schema: a workload of star joins is advised clustering through the
dimensions it filters, the forecast holds on the table it then lays out, and results never change."""

from __future__ import annotations

from collections import Counter

import pytest

import zskip
from tests.integration.cli_runner import run
from tests.integration.stars import make_star
from zskip.layout.dimensions import Dimension

pytestmark = pytest.mark.integration

NS = "lake.advise_star"
FACT = f"{NS}.fact"


def _star_queries() -> list[str]:
    regions = [
        f"SELECT count(*), sum(b_key) FROM {FACT} f JOIN {NS}.dim_a a ON f.a_key = a.a_id WHERE a.region = 'r{r}'"
        for r in range(5)
    ]
    nations = [
        f"SELECT a.nation, count(*) FROM {FACT} f JOIN {NS}.dim_a a ON f.a_key = a.a_id "
        f"WHERE a.nation IN ('n{n}', 'n{n + 5}') GROUP BY a.nation"
        for n in range(3)
    ]
    both = [
        f"SELECT count(*) FROM {FACT} f, {NS}.dim_a a, {NS}.dim_b b WHERE f.a_key = a.a_id AND f.b_key = b.b_id "
        f"AND a.region = 'r{r}' AND b.colour = 'c{c}'"
        for r, c in ((1, 2), (3, 4))
    ]
    return regions + nations + both


@pytest.fixture(scope="module")
def star(spark) -> str:  # type: ignore[no-untyped-def]
    make_star(spark, NS)
    spark.sql(f"ALTER TABLE {FACT} SET TBLPROPERTIES ('write.parquet.row-group-size-bytes'='16384')")
    return FACT


def _rows_read(spark, query: str) -> int:  # type: ignore[no-untyped-def]
    """Rows in the fact table's row groups the query's scan reads (row groups of any size compare)."""
    plans = [e for e in zskip.explain_sql(spark, query) if e.table.endswith("advise_star.fact")]
    return sum(p.rows_planned for p in plans)


def test_star_joins_are_advised_clustering_through_the_dimension_they_filter(spark, star) -> None:
    queries = _star_queries()
    advice = zskip.advise(spark, star, queries=queries, target_file_size="64KB", max_columns=2)
    best = advice.best
    through = [axis for axis in best.columns if isinstance(axis, Dimension)]
    assert through and through[0].table == f"{NS}.dim_a" and through[0].foreign_key == "a_key", advice
    assert through[0].by == ("region", "nation")  # the columns the filters name, coarsest first
    assert "a_key through dim_a (region, nation)" in best.label
    assert best.rows * 3 < advice.rows_now, advice  # facts in random order: every star query reads most rows
    # a candidate of the fact table's own columns cannot do that: the filters are on the dimensions
    plain = [lay for lay in advice.layouts if lay.rewrites and not any(isinstance(a, Dimension) for a in lay.columns)]
    assert all(lay.rows > 2 * best.rows for lay in plain)

    expected = {q: Counter(map(tuple, spark.sql(q).collect())) for q in queries}
    before = {q: _rows_read(spark, q) for q in queries}
    applied = zskip.advise(spark, star, queries=queries, target_file_size="64KB", max_columns=2, apply=True)
    assert applied.applied and applied.best.label == best.label
    after = {q: _rows_read(spark, q) for q in queries}
    assert all("dim_a: " in f.predicate or "dim_b: " in f.predicate for f in applied.best.queries)
    # the forecast of rows read per scan holds on the table laid out (within a third)
    read = sum(after.values()) / len(queries)
    assert abs(applied.best.rows - read) <= read / 3, (applied.best.rows, read)
    assert sum(after.values()) * 2 < sum(before.values()), (before, after)
    for query in queries:
        assert Counter(map(tuple, zskip.sql(spark, query).collect())) == expected[query], query
        assert Counter(map(tuple, spark.sql(query).collect())) == expected[query], query


def test_star_joins_run_through_zskip_sql_are_advised_from_the_workload_log_by_field_id(spark, capsys) -> None:
    """Star queries run with ``zskip.sql`` leave their joins in the fact table's workload log; advice from
    the log alone finds the dimension axis the queries given as text find, even after the dimension's
    filtered column was renamed (the log names it by field id), and on text and date keys."""
    ns = "lake.advise_star_log"
    fact = make_star(spark, ns, keys="text")
    spark.sql(f"ALTER TABLE {fact} SET TBLPROPERTIES ('write.parquet.row-group-size-bytes'='16384')")
    queries = [q.replace(NS, ns).replace("sum(b_key)", "max(b_key)") for q in _star_queries()]
    for query in queries:
        zskip.sql(spark, query).collect()
    zskip.flush_workload()
    records = zskip.workload(spark, fact)
    logged = [j for joins in records.column("joins").to_pylist() for j in joins or ()]
    assert {j["dimension"].rsplit(".", 1)[-1] for j in logged} == {"dim_a", "dim_b"}, records
    assert all(j["filter_fields"] and j["key_field"] is not None for j in logged), logged
    code, out, _ = run(capsys, "workload", fact, "--limit", "1")
    assert code == 0 and "dim_a:" in out and "dim_b:" in out, out  # the newest: the query through both

    spark.sql(f"ALTER TABLE {ns}.dim_a RENAME COLUMN region TO zone")
    from_log = zskip.advise(spark, fact, target_file_size="64KB", max_columns=2)
    through = [axis for axis in from_log.best.columns if isinstance(axis, Dimension)]
    assert through and through[0].table.endswith("advise_star_log.dim_a"), from_log
    assert through[0].foreign_key == "a_key" and through[0].by == ("zone", "nation"), from_log
    assert from_log.distinct_queries == len(queries)

    renamed = [q.replace("a.region", "a.zone") for q in queries]
    from_text = zskip.advise(spark, fact, queries=renamed, target_file_size="64KB", max_columns=2)
    assert from_log.best.label == from_text.best.label
    # the same workload, the same keys: the same forecast
    assert from_log.best.rows == pytest.approx(from_text.best.rows, rel=0.02), (from_log, from_text)
