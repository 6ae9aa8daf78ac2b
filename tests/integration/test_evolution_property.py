"""Property: through any sequence of schema changes and zskip operations, zskip answers as Spark does.

Each example builds a small table and runs a random sequence of steps: optimize (random columns, curve
and mapping), create an index, refresh indexes, maintain, append rows, and schema changes (rename,
drop, add, re-add under an old name, promote int to bigint, float to double, widen a decimal, add a
partition field).  After every step, random filters are read through ``zskip.read`` and ``zskip.sql``
and compared with Spark row for row, and ``explain`` must keep every file holding a matching row.

CI runs a few examples (``ZSKIP_EVOLUTION_EXAMPLES``, default 3, the same ones every run); a long run
sets it higher with ``ZSKIP_EVOLUTION_RANDOM=1`` (new examples each run) and maybe
``ZSKIP_EVOLUTION_STEPS``.  The number of comparisons made is printed (``-s`` shows it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import zskip
from zskip.expr import quoted
from zskip.iceberg.table import load_table

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("ZSKIP_EVOLUTION_EXAMPLES", "3"))
STEPS = int(os.environ.get("ZSKIP_EVOLUTION_STEPS", "7"))
TABLE = "lake.evolution.t"
NAMES = ["a", "b", "c", "d", "e", "a2", "b c"]  # a small pool: re-adding under an old name is likely
PROMOTIONS = {"int": "BIGINT", "float": "DOUBLE", "decimal(9,2)": "DECIMAL(12,2)"}
TYPES = ["INT", "STRING", "FLOAT", "DECIMAL(9,2)", "DATE"]


@dataclass
class Run:
    comparisons: int = 0
    steps: list[str] = field(default_factory=list)


RUN = Run()


def columns(spark) -> dict[str, str]:
    """Current columns (but ``id``) and their Spark type names."""
    return {f.name: f.dataType.simpleString() for f in spark.table(TABLE).schema.fields if f.name != "id"}


def value_sql(kind: str, seed: str) -> str:
    """A small-domain value of ``kind`` computed from the SQL integer expression ``seed`` (NULL now and then)."""
    base = {
        "int": f"CAST({seed} % 17 AS INT)",
        "bigint": f"CAST({seed} % 17 AS BIGINT)",
        "string": f"concat('v', CAST({seed} % 9 AS STRING))",
        "float": f"CAST({seed} % 13 AS FLOAT) / 2",
        "double": f"CAST({seed} % 13 AS DOUBLE) / 2",
        "date": f"date_add(DATE'2020-01-01', CAST({seed} % 23 AS INT))",
    }
    if kind.startswith("decimal"):
        expr = f"CAST({seed} % 19 AS {kind.upper()}) / 4"
        expr = f"CAST({expr} AS {kind.upper()})"
    else:
        expr = base[kind]
    return f"CASE WHEN {seed} % 11 = 0 THEN NULL ELSE {expr} END"


def append(spark, rows: int, salt: int) -> None:
    current = [f for f in spark.table(TABLE).schema.fields]
    exprs = []
    for i, f in enumerate(current):
        if f.name == "id":
            exprs.append(f"id + {salt * 1_000_000} AS id")
        else:
            exprs.append(f"{value_sql(f.dataType.simpleString(), f'(id * {7 + 3 * i} + {salt})')} AS {quoted(f.name)}")
    spark.range(rows).selectExpr(*exprs).repartition(2).writeTo(TABLE).append()


def literal(kind: str, n: int) -> str:
    if kind in ("int", "bigint"):
        return str(n % 17)
    if kind == "string":
        return f"'v{n % 9}'"
    if kind in ("float", "double"):
        return f"{(n % 13) / 2}"
    if kind.startswith("decimal"):
        return f"{(n % 19) / 4}BD"
    return f"DATE'2020-01-{1 + n % 23:02d}'"


@st.composite
def filters(draw, schema: dict[str, str]) -> str:
    def leaf() -> str:
        name = draw(st.sampled_from(sorted(schema)))
        column, kind = quoted(name), schema[name]
        n = draw(st.integers(0, 40))
        op = draw(st.sampled_from(["=", "<", ">=", "!=", "in", "null", "not null", "between"]))
        if op == "null":
            return f"{column} IS NULL"
        if op == "not null":
            return f"{column} IS NOT NULL"
        if op == "in":
            return f"{column} IN ({literal(kind, n)}, {literal(kind, n + 3)})"
        if op == "between":
            return f"{column} BETWEEN {literal(kind, n)} AND {literal(kind, n + 2)}"
        return f"{column} {op} {literal(kind, n)}"

    parts = [leaf() for _ in range(draw(st.integers(1, 2)))]
    joiner = draw(st.sampled_from([" AND ", " OR "]))
    return joiner.join(f"({p})" for p in parts)


def check(spark, data, steps: list[str]) -> None:
    schema = columns(spark)
    if not schema:
        return
    for _ in range(2):
        where = data.draw(filters(schema))
        context = f"after {' -> '.join(steps)}: WHERE {where}"
        expected = sorted(spark.sql(f"SELECT * FROM {TABLE} WHERE {where}").collect())
        got = sorted(zskip.read(spark, TABLE, where=where).collect())
        assert got == expected, f"zskip.read: {len(got)} rows, Spark {len(expected)}, {context}"
        via_sql = sorted(zskip.sql(spark, f"SELECT * FROM {TABLE} WHERE {where}").collect())
        assert via_sql == expected, f"zskip.sql: {len(via_sql)} rows, Spark {len(expected)}, {context}"
        holding = {r[0] for r in spark.sql(f"SELECT DISTINCT _file FROM {TABLE} WHERE {where}").collect()}
        kept = set(zskip.explain(spark, TABLE, where).files)
        assert holding <= kept, f"explain drops {len(holding - kept)} files holding a match, {context}"
        RUN.comparisons += 1


def step(spark, data, steps: list[str], salt: int) -> None:
    schema = columns(spark)
    plain = [n for n, k in schema.items()]
    choice = data.draw(
        st.sampled_from(
            ["optimize", "index", "refresh", "maintain", "append", "rename", "drop", "add", "promote", "partition"]
        )
    )
    if choice == "optimize" and plain:
        by = data.draw(st.lists(st.sampled_from(plain), min_size=1, max_size=2, unique=True))
        curve = data.draw(st.sampled_from(["zorder", "hilbert", "linear"]))
        mapping = data.draw(st.sampled_from(["rank", "raw"]))
        try:
            zskip.optimize(
                spark, TABLE, by=by, curve=curve, mapping=mapping, target_file_size="24KB", row_group_size="4KB"
            )
        except zskip.InvalidOptionError as exc:  # a partition column, say: refused before anything changes
            steps.append(f"optimize refused ({exc})")
            return
        steps.append(f"optimize {by} {curve} {mapping}")
    elif choice == "index" and plain:
        column = data.draw(st.sampled_from(plain))
        kind = data.draw(st.sampled_from(["bitmap", "bloom"]))
        zskip.create_index(spark, TABLE, column, kind=kind)
        steps.append(f"index {column}:{kind}")
    elif choice == "refresh":
        zskip.refresh_indexes(spark, TABLE)
        steps.append("refresh")
    elif choice == "maintain":
        try:
            zskip.maintain(spark, TABLE)
            steps.append("maintain")
        except zskip.InvalidOptionError as exc:  # a clustered column left the table
            steps.append(f"maintain refused ({str(exc)[:40]})")
    elif choice == "append":
        append(spark, 300, salt)
        steps.append("append")
    elif choice == "rename" and plain:
        old = data.draw(st.sampled_from(plain))
        new = data.draw(st.sampled_from([n for n in NAMES if n not in schema]))
        spark.sql(f"ALTER TABLE {TABLE} RENAME COLUMN {quoted(old)} TO {quoted(new)}")
        steps.append(f"rename {old} -> {new}")
    elif choice == "drop" and len(plain) > 1:
        old = data.draw(st.sampled_from(plain))
        try:
            spark.sql(f"ALTER TABLE {TABLE} DROP COLUMN {quoted(old)}")
        except Exception:  # a partition source column cannot be dropped
            steps.append(f"drop {old} refused")
            return
        steps.append(f"drop {old}")
    elif choice == "add":
        new = data.draw(st.sampled_from([n for n in NAMES if n not in schema]))
        kind = data.draw(st.sampled_from(TYPES))
        spark.sql(f"ALTER TABLE {TABLE} ADD COLUMN {quoted(new)} {kind}")
        steps.append(f"add {new} {kind}")
        append(spark, 200, salt)
    elif choice == "promote":
        promotable = [n for n, k in schema.items() if k.replace(" ", "") in PROMOTIONS]
        if promotable:
            name = data.draw(st.sampled_from(promotable))
            wider = PROMOTIONS[schema[name].replace(" ", "")]
            spark.sql(f"ALTER TABLE {TABLE} ALTER COLUMN {quoted(name)} TYPE {wider}")
            steps.append(f"promote {name} to {wider}")
            append(spark, 200, salt)
    elif choice == "partition" and not load_table(spark, TABLE).is_partitioned():
        spark.sql(f"ALTER TABLE {TABLE} ADD PARTITION FIELD bucket(3, id)")
        steps.append("partition by bucket(3, id)")
        append(spark, 200, salt)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("ZSKIP_EVOLUTION_RANDOM") is None,
    # shrinking a failure re-runs whole Spark sequences: only where asked (the failing steps are printed anyway)
    phases=[Phase.explicit, Phase.reuse, Phase.generate]
    + ([Phase.shrink] if os.environ.get("ZSKIP_EVOLUTION_SHRINK") else []),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_zskip_answers_as_spark_through_schema_changes(spark, data) -> None:
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.evolution")
    spark.sql(f"DROP TABLE IF EXISTS {TABLE} PURGE")
    spark.sql(f"CREATE TABLE {TABLE} (id BIGINT, a INT, b STRING, c FLOAT, d DECIMAL(9,2)) USING iceberg")
    append(spark, 1_200, 0)
    steps: list[str] = []
    check(spark, data, steps)
    for salt in range(1, STEPS + 1):
        step(spark, data, steps, salt)
        check(spark, data, steps)
    RUN.steps.append(" -> ".join(steps))
    print(f"schema evolution property: {RUN.comparisons} comparisons so far, last run: {steps}")
