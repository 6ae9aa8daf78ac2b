"""The hierarchy the advisor gives a dimension axis: coarsest first, each level refining the ones before."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given
from hypothesis import strategies as st

from zskip.maintenance.stars import FD_SLACK, hierarchy_order


def counted(table: pa.Table) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Exact distinct counts of each column and each pair of columns."""
    counts = {name: len(pc.unique(table[name])) for name in table.column_names}
    together = {
        (a, b): len(set(zip(table[a].to_pylist(), table[b].to_pylist(), strict=True)))
        for a, b in itertools.combinations(table.column_names, 2)
    }
    return counts, together


def ssb_dates() -> pa.Table:
    """SSB's date dimension's filtered columns over seven years."""
    import datetime

    days = [datetime.date(1992, 1, 1) + datetime.timedelta(days=n) for n in range(2557)]
    return pa.table(
        {
            "d_weeknuminyear": [int(d.strftime("%U")) + 1 for d in days],
            "d_yearmonthnum": [d.year * 100 + d.month for d in days],
            "d_year": [d.year for d in days],
            "d_yearmonth": [d.strftime("%b%Y") for d in days],
        }
    )


def test_a_month_follows_its_year_and_the_week_that_names_no_year_comes_last() -> None:
    order = hierarchy_order(*counted(ssb_dates()))
    assert order[0] == "d_year" and set(order[1:3]) == {"d_yearmonth", "d_yearmonthnum"}
    assert order[3] == "d_weeknuminyear"  # 53 values, fewer than the months', but no week names a year


def test_a_region_nation_city_hierarchy_is_kept_whatever_order_the_columns_come_in() -> None:
    cities = [f"c{i}" for i in range(250)]
    table = pa.table(
        {
            "city": cities,
            "nation": [f"n{i // 10}" for i in range(250)],
            "region": [f"r{i // 50}" for i in range(250)],
        }
    )
    assert hierarchy_order(*counted(table)) == ["region", "nation", "city"]


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), st.integers(0, 9)), min_size=1, max_size=60))
def test_every_column_is_placed_once_and_each_refining_level_determines_those_before(rows) -> None:
    table = pa.table({name: [r[i] for r in rows] for i, name in enumerate(("a", "b", "c"))})
    counts, together = counted(table)
    order = hierarchy_order(counts, together)
    assert sorted(order) == ["a", "b", "c"]
    assert counts[order[0]] == min(counts.values())  # the coarsest first

    def determines(finer: str, coarser: str) -> bool:
        return together.get((coarser, finer), together.get((finer, coarser), 0)) <= FD_SLACK * counts[finer]

    for position in range(1, len(order)):
        level, before = order[position], order[:position]
        others = [c for c in order[position:] if all(determines(c, b) for b in before)]
        if others:  # a column that refines every level before was there: the level is the coarsest of them
            assert all(determines(level, b) for b in before) and counts[level] == min(counts[c] for c in others)
