"""Grouped aggregates answered from cubes give exactly Spark's answer with zskip off.

A cube of a column keeps per row group each of its values' rows and its measures' counts, sums,
minima and maxima.  Through plain ``spark.sql`` with zskip enabled, a ``GROUP BY`` over that column
(alone, with columns constant in row groups, or none) of the row groups wholly inside a filter is
answered from it; the row groups the filter cuts are read.  The table: v3, with deletion vectors, NULL
keys and measures, NaN, ±inf and -0.0, decimals, and schema changes (an added column, a renamed
measure, a widened one).  A property test draws filters and shapes; the tests after it
show the answers are used, and that bad input is refused in one line, changing nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import zskip
from tests.integration.switches import zskip_on
from tests.integration.test_aggregate_answers import both
from zskip.errors import InvalidOptionError, UnknownColumnError, UnsupportedTypeError
from zskip.iceberg.scan_stats import scanned_rows

pytestmark = pytest.mark.integration

NS = "lake.cubes"
V3 = f"{NS}.v3"
ROWS = 24_000
MODES = ("AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK")


def _make(spark: Any, name: str, version: int) -> None:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NS}")
    spark.sql(f"DROP TABLE IF EXISTS {name} PURGE")
    spark.sql(
        f"CREATE TABLE {name} (k INT, g STRING, mode STRING, p INT, rev BIGINT, q INT, price DECIMAL(10,2), "
        f"f DOUBLE) USING iceberg TBLPROPERTIES ('format-version'='{version}', 'write.delete.mode'='merge-on-read', "
        "'write.parquet.row-group-size-bytes'='8192', 'write.target-file-size-bytes'='120000')"
    )
    modes = ", ".join(f"'{m}'" for m in MODES)
    frame = spark.range(ROWS).selectExpr(
        "CAST(id AS INT) AS k",
        "concat('g', CAST(floor(id / 3000) AS STRING)) AS g",  # one value over runs of row groups
        f"CASE WHEN id % 53 = 0 THEN NULL ELSE element_at(array({modes}), CAST(id % 7 + 1 AS INT)) END AS mode",
        "CAST(id % 4 AS INT) AS p",
        "CASE WHEN id % 11 = 0 THEN NULL ELSE CAST((id * 7919) % 100000 AS BIGINT) * 3000000001 END AS rev",
        "CAST(id % 50 AS INT) - 10 AS q",
        "CAST(((id * 31) % 20000) / 100.0 - 100 AS DECIMAL(10,2)) AS price",
        "CASE WHEN id % 97 = 0 THEN double('NaN') WHEN id % 89 = 0 THEN double('inf') "
        "WHEN id % 83 = 0 THEN double('-inf') WHEN id % 79 = 0 THEN -0.0D WHEN id % 7 = 0 THEN NULL "
        "ELSE (id % 400) / 4.0 - 50 END AS f",
    )
    frame.repartition(4, "g").sortWithinPartitions("k").writeTo(name).append()
    zskip.create_index(spark, name, "mode", kind="cube", measures=["rev", "q", "price", "f"])
    zskip.create_index(spark, name, "p", kind="cube", measures=["rev", "q", "price", "f"], max_groups=8)
    spark.sql(f"ALTER TABLE {name} ADD COLUMN n INT")
    spark.sql(f"ALTER TABLE {name} ALTER COLUMN q TYPE BIGINT")
    spark.sql(f"ALTER TABLE {name} RENAME COLUMN rev TO revenue")
    spark.sql(f"ALTER TABLE {name} ALTER COLUMN price TYPE DECIMAL(12,2)")  # older files keep decimal(10,2)
    spark.sql(
        f"INSERT INTO {name} SELECT CAST(id + {ROWS} AS INT), 'g9', IF(id % 2 = 0, 'AIR', NULL), 1, id, id, 1.25, "
        "1.0, CAST(id % 3 AS INT) FROM range(500)"
    )
    spark.sql(f"DELETE FROM {name} WHERE k % 101 = 0 AND k > {ROWS}")  # merge-on-read: delete files
    zskip.refresh_indexes(spark, name)


@pytest.fixture(scope="module")
def tables(spark: Any) -> list[str]:
    # v3 (deletion vectors) only: a file with deletes is left out before cubes are asked, the same way for
    # v2's position deletes (tests/integration/test_aggregate_answers.py has both)
    _make(spark, V3, 3)
    return [V3]


def answered_by_cube(spark: Any, query: str) -> bool:
    with zskip_on(spark):
        text = "\n".join(row[0] for row in spark.sql(f"EXPLAIN {query}").collect())
    return "from cubes" in text


CONDITIONS = [
    "k >= {a}",
    "k < {b}",
    "k BETWEEN {a} AND {b}",
    "g = 'g{i}'",
    "g IN ('g{i}', 'g{j}')",
    "q > 0",
    "revenue IS NOT NULL",
    "mode = 'AIR'",
    "mode IS NULL",
    "n IS NULL",
    "f > 0",
]
AGGREGATES = [
    "count(*)",
    "count(mode)",
    "count(revenue)",
    "count(f)",
    "count(n)",
    "sum(revenue)",
    "sum(q)",
    "sum(price)",
    "sum(f)",
    "sum(k)",
    "avg(q)",
    "avg(f)",
    "min(q)",
    "max(q)",
    "min(price)",
    "max(price)",
    "max(p)",
    "min(k)",
    "max(f)",
]


# what both cubes hold (count(mode) only mode's, max(p) only p's)
CUBED = [a for a in AGGREGATES if a not in ("count(n)", "sum(k)", "min(k)", "max(f)", "count(mode)", "max(p)")]


@st.composite
def queries(draw: st.DrawFn) -> tuple[str, bool]:
    """A query, and whether a cube must answer some of it (a wide range of k, what the cubes hold, grouped
    by a cubed column)."""
    table = V3
    a = draw(st.integers(-100, ROWS + 600))
    b = draw(st.integers(-100, ROWS + 600))
    i, j = draw(st.integers(0, 9)), draw(st.integers(0, 9))
    if draw(st.booleans()):  # a dashboard the cubes answer in part
        low = draw(st.integers(-100, ROWS - 7000))
        where = f"k BETWEEN {low} AND {low + draw(st.integers(7000, ROWS))}"
        aggregates = draw(st.lists(st.sampled_from(CUBED), min_size=1, max_size=4, unique=True))
        group = draw(st.sampled_from(["", "mode", "p", "mode, g", "g, p"]))
        must = group != ""  # grouped by a column of many values per row group: only cubes answer
    else:
        conditions = draw(st.lists(st.sampled_from(CONDITIONS), min_size=1, max_size=3, unique=True))
        where = " AND ".join(c.format(a=a, b=b, i=i, j=j) for c in conditions)
        aggregates = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=4, unique=True))
        group = draw(st.sampled_from(["", "mode", "p", "mode, g", "g, p", "mode, p"]))
        must = False
    columns = ", ".join(([group] if group else []) + aggregates)
    grouped = f" GROUP BY {group}" if group else ""
    having = " HAVING count(*) > 50" if group and draw(st.booleans()) else ""
    return f"SELECT {columns} FROM {table} WHERE {where}{grouped}{having}", must


@settings(
    max_examples=10,  # about 1 s each; CI's time is budgeted
    derandomize=True,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)
@given(drawn=queries())
def test_aggregates_answered_from_cubes_equal_spark(spark: Any, tables: list[str], drawn: tuple[str, bool]) -> None:
    query, must = drawn
    want, got, _ = both(spark, query)
    assert got == want, query
    if must:
        assert answered_by_cube(spark, query), query


def test_a_grouped_dashboard_is_answered_from_the_cube_and_reads_fewer_rows(spark: Any, tables: list[str]) -> None:
    table = V3
    query = (
        f"SELECT mode, count(*), sum(revenue), avg(q), sum(price), max(price), sum(f), count(f) FROM {table} "
        "WHERE k BETWEEN 1000 AND 23000 GROUP BY mode"
    )
    want, got, _ = both(spark, query)
    assert got == want
    assert len(want) == len(MODES) + 1  # NULL is a group
    assert answered_by_cube(spark, query)
    with zskip_on(spark):
        frame = spark.sql(query)
        frame.collect()
        on = scanned_rows(frame, table)
    frame = spark.sql(f"SELECT * FROM {table} WHERE k BETWEEN 1000 AND 23000")
    frame.collect()
    assert on * 3 < scanned_rows(frame, table), on  # what is left: row groups the range cuts, and a deleted file's


def test_a_cube_answers_ungrouped_sums_and_a_grouping_column_constant_in_row_groups(
    spark: Any, tables: list[str]
) -> None:
    for query in (
        f"SELECT sum(revenue), count(*) FROM {V3} WHERE k < 20000",  # no sums index: the cube's groups, merged
        f"SELECT g, mode, sum(q) FROM {V3} WHERE k < 20000 GROUP BY g, mode",  # g: one value per row group
    ):
        want, got, _ = both(spark, query)
        assert got == want, query
        assert answered_by_cube(spark, query), query


@pytest.mark.parametrize(
    "query",
    [
        f"SELECT mode, sum(k) FROM {V3} WHERE k < 20000 GROUP BY mode",  # k is not a measure
        f"SELECT mode, p, count(*) FROM {V3} WHERE k < 20000 GROUP BY mode, p",  # two columns of many values
        f"SELECT mode, max(f) FROM {V3} WHERE k < 20000 GROUP BY mode",  # a float's maximum
    ],
)
def test_what_a_cube_does_not_hold_is_read(spark: Any, tables: list[str], query: str) -> None:
    want, got, _ = both(spark, query)
    assert got == want
    assert not answered_by_cube(spark, query)


@pytest.mark.parametrize(
    ("column", "measures", "options", "error", "said"),
    [
        ("mode", ["nope"], {}, UnknownColumnError, "has no column 'nope'"),
        (
            "mode",
            ["g"],
            {},
            UnsupportedTypeError,
            f"{V3}.g: a cube's measures are number or decimal columns, not string",
        ),
        ("f", ["q"], {}, UnsupportedTypeError, f"{V3}.f: a cube groups by a column of exact values"),
        ("k", ["q"], {}, InvalidOptionError, "values in one data file"),
        ("p", ["q"], {"max_groups": 2}, InvalidOptionError, "a cube keeps at most max_groups=2 per row group"),
        ("mode", ["q", "q"], {}, InvalidOptionError, "measures name a column twice"),
    ],
)
def test_bad_cubes_are_refused_in_one_line_changing_nothing(
    spark: Any, tables: list[str], column: str, measures: list[str], options: dict, error: type, said: str
) -> None:
    before = spark.sql(f"SHOW TBLPROPERTIES {V3} ('zskip.index.manifest')").collect()
    with pytest.raises(error) as refused:
        zskip.create_index(spark, V3, column, kind="cube", measures=measures, **options)
    assert said in str(refused.value) and "\n" not in str(refused.value)
    assert spark.sql(f"SHOW TBLPROPERTIES {V3} ('zskip.index.manifest')").collect() == before


def test_measures_are_recorded_by_field_id_and_listed_by_name(spark: Any, tables: list[str]) -> None:
    ids = {f.name: f.id for f in zskip.iceberg.table.load_table(spark, V3).schema()}
    properties = {row[0]: row[1] for row in spark.sql(f"SHOW TBLPROPERTIES {V3}").collect()}
    summed = ",".join(str(i) for i in sorted({ids["revenue"], ids["q"], ids["price"], ids["f"]}))
    assert properties["zskip.index.sums-field-ids"] == f"{summed}@{properties['zskip.index.manifest']}"
    (cube,) = [i for i in zskip.list_indexes(spark, V3) if i.kind == "cube" and i.column == "mode"]
    assert cube.measures == ("revenue", "q", "price", "f")  # rev renamed since
    assert cube.files_indexed == cube.files_total


def test_new_measures_rebuild_the_cube(spark: Any, tables: list[str]) -> None:
    name = f"{NS}.remeasured"
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING iceberg AS SELECT * FROM {V3} WHERE k < 3000")
    zskip.create_index(spark, name, "mode", kind="cube", measures=["q"])
    query = f"SELECT mode, sum(price) FROM {name} WHERE k < 2500 GROUP BY mode"
    assert not answered_by_cube(spark, query)
    result = zskip.create_index(spark, name, "mode", kind="cube", measures=["q", "price"])
    assert result.files_indexed == result.files_total  # every file again, none kept with old measures
    want, got, _ = both(spark, query)
    assert got == want and answered_by_cube(spark, query)
