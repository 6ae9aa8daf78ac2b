"""The advisor's pure parts: predicates on Arrow rows, a layout cut from a sample, index chances."""

from __future__ import annotations

import datetime
import itertools
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from zskip.expr import AlwaysFalse, And, Between, Compare, In, IsNull, Not, Opaque, Or, StartsWith
from zskip.expr.arrow import matching_rows
from zskip.expr.rewrite import rewrite_not
from zskip.maintenance.advise import split_statements
from zskip.maintenance.simulate import cut_sample, index_conjunct, kept_by_minmax, read_chances
from zskip.maintenance.simulator import rows_per_value
from zskip.planning.minmax import might_match_pushed

TABLE = pa.table(
    {
        "a": pa.array([1, 5, None, 7], pa.int32()),
        "d": [datetime.date(2020, 1, d) for d in (1, 2, 3, 4)],
        "m": pa.array([Decimal("1.500"), Decimal("2.000"), None, Decimal("0.100")], pa.decimal128(12, 3)),
        "s": ["x", "ab", "ac", None],
        "f": [0.5, float("nan"), 2.0, None],
    }
)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (Compare("a", ">", 2), [False, True, False, True]),
        (Not(Compare("a", ">", 2)), [True, False, False, False]),  # NULL is not TRUE either way
        (Between("d", datetime.date(2020, 1, 2), datetime.date(2020, 1, 3)), [False, True, True, False]),
        (Compare("m", ">", Decimal("1.2")), [True, True, False, False]),
        (In("a", (1, 7)), [True, False, False, True]),
        (StartsWith("s", "a"), [False, True, True, False]),
        (IsNull("s"), [False, False, False, True]),
        (And((Compare("a", ">=", 1), Compare("s", "=", "x"))), [True, False, False, False]),
        (Or((Compare("a", "=", 5), IsNull("a"))), [False, True, True, False]),
        (AlwaysFalse(), [False, False, False, False]),
    ],
)
def test_predicates_on_arrow_rows_follow_sql(expr, expected) -> None:
    assert matching_rows(TABLE, expr).tolist() == expected


def test_a_part_arrow_cannot_evaluate_errs_towards_matching() -> None:
    # NOT (a > 2 OR opaque): where a > 2 it is surely FALSE; elsewhere it might be TRUE
    assert matching_rows(TABLE, Not(Or((Compare("a", ">", 2), Opaque("f(x)"))))).tolist() == [True, False, False, False]
    assert matching_rows(TABLE, And((Compare("a", ">", 2), Opaque("f(x)")))).tolist() == [False, True, False, True]
    assert matching_rows(TABLE, Compare("nosuch", "=", 1)).all()


@given(
    st.lists(st.one_of(st.none(), st.integers(-50, 50)), min_size=1, max_size=300),
    st.integers(1, 6),
    st.integers(1, 5),
    st.integers(-50, 50),
    st.integers(0, 30),
)
# a run half NULL: its real row group holds half as many values as rows, and is widened for those only
@example(values=[None, None, 0, 1, 1, 1, 1, -1], files=1, per_file=2, low=0, width=0)
def test_a_simulated_row_group_never_skips_its_own_matching_rows(values, files, per_file, low, width) -> None:
    sample = pa.table({"a": pa.array(values, pa.int64())})
    keys = np.asarray(pc.fill_null(sample["a"], 0).to_numpy(zero_copy_only=False), dtype=np.int64).view(np.uint64)
    cells = cut_sample(sample, keys, files, len(values) * 10 / (files * per_file), rows=len(values) * 10)
    assert cells.sample_rows.sum() == len(values) and cells.real_rows.sum() == pytest.approx(len(values) * 10)
    expr = Between("a", low, low + width)
    kept = kept_by_minmax(cells, expr, frozenset())
    # all row groups at once, as the planner checks real statistics: the one-by-one check's answer
    assert kept.tolist() == [might_match_pushed(rewrite_not(expr), stats, frozenset()) for stats in cells.stats]
    matching = matching_rows(sample, expr)
    assert kept[cells.group_of_row[matching]].all()  # every matching row's group is kept
    exact = cut_sample(sample, keys, files, len(values) / (files * per_file), rows=len(values))  # no widening
    for group, (stats, wider) in enumerate(zip(exact.stats, cells.stats, strict=True)):
        mine = [v for v, g in zip(values, exact.group_of_row, strict=True) if g == group and v is not None]
        assert (stats["a"].min, stats["a"].max) == ((min(mine), max(mine)) if mine else (None, None))
        if mine:  # ten times the rows reach at least as far
            assert wider["a"].min <= min(mine) and wider["a"].max >= max(mine)


def test_bounds_widen_for_a_column_the_layout_does_not_cluster() -> None:
    rng = np.random.default_rng(3)
    sample = pa.table(
        {"k": pa.array(np.arange(10_000), pa.int64()), "r": pa.array(rng.permutation(10_000), pa.int64())}
    )
    cells = cut_sample(sample, np.arange(10_000).astype(np.uint64), 10, 100_000, rows=10_000_000)
    sorted_width = np.mean([s["k"].max - s["k"].min for s in cells.stats])
    spread = [(s["r"].min, s["r"].max) for s in cells.stats]
    assert sorted_width < 110  # 100 rows of 10,000 clustered: barely wider
    assert np.mean([high - low for low, high in spread]) > 9_900  # unclustered: as wide as the column
    exact = cut_sample(sample, np.arange(10_000).astype(np.uint64), 10, 100, rows=10_000)
    assert np.mean([s["r"].max - s["r"].min for s in exact.stats]) < 9_850


def test_sorted_cells_hold_contiguous_key_ranges() -> None:
    sample = pa.table({"a": pa.array(np.arange(1000)[::-1], pa.int64()), "s": [f"k{i % 7}" for i in range(1000)]})
    cells = cut_sample(sample, np.arange(1000)[::-1].astype(np.uint64), 4, 500, rows=10_000)
    assert cells.files == 4 and cells.row_groups == 20 and cells.sample_rows.sum() == 1000
    bounds = [(s["a"].min, s["a"].max) for s in cells.stats]
    assert bounds[0][0] == 0 and bounds[-1][1] == 999
    assert all(high < low for (_, high), (low, _) in itertools.pairwise(bounds))  # one run of keys each, in order
    assert [int(b[0]) for b in bounds][5::5] == [256, 512, 768]  # files end on aligned cell boundaries
    assert all(s["s"].min == "k0" and s["s"].max == "k6" for s in cells.stats)
    assert np.array_equal(np.bincount(cells.file_of), [5, 5, 5, 5])


def test_read_chances_count_seen_matches_and_a_likely_unseen_one() -> None:
    sample = pa.table({"a": pa.array(np.arange(100), pa.int64())})
    cells = cut_sample(sample, np.arange(100).astype(np.uint64), 1, 100, rows=1_000)
    kept = np.ones(10, dtype=bool)
    matches = np.zeros(10, dtype=np.int64)
    matches[3] = 2
    chances = read_chances(cells, kept, matches)
    others = np.arange(10) != 3
    # both hits in one row group, none in nine: matches come together, each other one holds some less surely
    assert chances[3] == 1.0 and (chances[others] < 1.0).all() and (chances[others] > 0.2).all()
    kept[5:] = False
    assert (read_chances(cells, kept, matches)[5:] == 0).all()
    # more real rows per row group: an unseen match is more likely in each
    bigger = cut_sample(sample, np.arange(100).astype(np.uint64), 1, 10_000, rows=100_000)
    assert (read_chances(bigger, kept, matches)[:5] >= read_chances(cells, kept, matches)[:5]).all()
    # no sample row matched and few real rows: the query still reads one row group in all
    small = cut_sample(sample, np.arange(100).astype(np.uint64), 1, 10, rows=100)
    assert read_chances(small, kept, np.zeros(10, dtype=np.int64)).sum() == pytest.approx(1.0)


def test_an_index_checks_only_the_conditions_on_its_column() -> None:
    expr = And(
        (Not(IsNull("c")), Compare("c", "=", 5), Between("a", 1, 2), Or((Compare("c", "=", 1), Compare("a", "=", 1))))
    )
    assert index_conjunct(expr, "c") == Compare("c", "=", 5)
    assert index_conjunct(expr, "b") is None
    assert index_conjunct(Compare("a", "<", 3), "a") == Compare("a", "<", 3)


def test_statements_split_on_semicolons_outside_quotes_and_comments() -> None:
    text = "SELECT ';' AS a FROM t; -- a comment; with a semicolon\nSELECT `x;y` FROM t WHERE s = 'it''s';\n\n;"
    assert split_statements(text) == ["SELECT ';' AS a FROM t", "SELECT `x;y` FROM t WHERE s = 'it''s'"]


def test_expected_rows_cap_what_unseen_matches_can_open() -> None:
    sample = pa.table({"a": pa.array(np.arange(100), pa.int64())})
    cells = cut_sample(sample, np.arange(100).astype(np.uint64), 1, 10_000, rows=100_000)
    kept = np.ones(10, dtype=bool)
    matches = np.zeros(10, dtype=np.int64)
    matches[2] = 1
    spread = read_chances(cells, kept, matches)
    assert spread.sum() > 9  # the density alone: a match is likely in every row group of 10,000 rows
    capped = read_chances(cells, kept, matches, expected_rows=3.0)
    # three matches: the one seen and two more at most, each in one of the other row groups or not
    assert capped[2] == 1.0 and 2.5 <= capped.sum() <= 3.0


def _spread_cells(files: int, groups_per_file: int, sampled: int, real: int):
    """Row groups of ``sampled`` sample rows and ``real`` table rows each, ``groups_per_file`` to a file."""
    rows = files * groups_per_file * sampled
    sample = pa.table({"a": pa.array(np.arange(rows), pa.int64())})
    return cut_sample(sample, np.arange(rows).astype(np.uint64), files, real, rows=files * groups_per_file * real)


def test_matches_clustered_in_a_few_files_open_no_other() -> None:
    # 40 files; the condition's matches fill files 3 and 17 (a dozen sampled hits a row group there)
    cells = _spread_cells(40, 10, 20, 2_000)
    kept = np.ones(cells.row_groups, dtype=bool)
    rng = np.random.default_rng(3)
    dense = np.isin(cells.file_of, [3, 17])
    matches = np.where(dense, rng.poisson(1.0, cells.row_groups), 0)
    chances = read_chances(cells, kept, matches)
    assert 2.0 <= cells.files_read(chances) < 2.3  # the 38 others hold a match together with chance 0.17
    assert chances[dense].sum() == pytest.approx(dense.sum(), abs=0.1)
    assert chances[~dense].sum() < 0.2


def test_matches_spread_thinly_everywhere_open_most_row_groups() -> None:
    # a match in about one real row of 500 in every row group: the 20 sampled rows of most hold none
    cells = _spread_cells(40, 10, 20, 2_000)
    kept = np.ones(cells.row_groups, dtype=bool)
    matches = np.random.default_rng(5).poisson(20 / 500, cells.row_groups)
    chances = read_chances(cells, kept, matches)
    assert chances.sum() > 0.9 * cells.row_groups and cells.files_read(chances) > 39


def test_a_rare_value_counted_in_the_table_opens_as_many_row_groups_as_its_rows() -> None:
    # no sampled row matches; the table holds 12: about 12 row groups in about 12 files
    cells = _spread_cells(40, 10, 20, 2_000)
    kept = np.ones(cells.row_groups, dtype=bool)
    chances = read_chances(cells, kept, np.zeros(cells.row_groups, dtype=np.int64), expected_rows=12.0)
    assert chances.sum() == pytest.approx(12.0, rel=0.02) and cells.files_read(chances) == pytest.approx(10.5, rel=0.1)


@pytest.mark.parametrize(("per_value", "fraction"), [(1, 0.05), (4, 0.033), (20, 0.01), (300, 0.05)])
def test_rows_per_value_from_a_sample(per_value: int, fraction: float) -> None:
    rows = 600_000
    values = np.repeat(np.arange(rows // per_value), per_value)
    rng = np.random.default_rng(7)
    sample = rng.choice(values, size=int(rows * fraction), replace=False)
    estimate = rows_per_value(pa.chunked_array([sample]), rows)
    assert estimate == pytest.approx(per_value, rel=0.15)


@given(st.lists(st.integers(0, 40), min_size=1, max_size=12), st.integers(1, 6), st.data())
def test_the_curve_test_of_joins_keeps_every_group_holding_a_matching_row(fks, groups_wanted, data) -> None:
    from zskip.curves import ClusteringSpec, ColumnMapping, DimensionMapping, RankMapping, order_key_u64
    from zskip.layout.dimensions import Dimension
    from zskip.maintenance.stars import StarJoin, curve_join_kept, group_key_ranges

    rng = np.random.default_rng(len(fks))
    rows = 400
    fk = rng.integers(0, 41, rows).astype(np.int64)
    other = rng.integers(0, 1000, rows).astype(np.int64)
    dim_keys = np.array(data.draw(st.permutations(list(range(41)))), dtype=np.int64)  # the dimension's order
    mapping = DimensionMapping(bits=6, table="db.dim", key="k", by=("g",), keys=order_key_u64(pa.array(dim_keys)))
    other_mapping = RankMapping.fit(order_key_u64(pa.array(other)), 6)
    spec = ClusteringSpec(
        curve=data.draw(st.sampled_from(["hilbert", "zorder"])),
        bits=6,
        columns=(ColumnMapping("fk", mapping), ColumnMapping("o", other_mapping)),
    )
    sample = pa.table({"fk": pa.array(fk), "o": pa.array(other)})
    keys = spec.keys(sample)
    cells = cut_sample(sample, keys, groups_wanted, rows / groups_wanted / 3, rows=rows)
    ranges = group_key_ranges(keys, cells.group_of_row, cells.row_groups)
    assert ranges[0, 0] == 0 and ranges[-1, 1] == np.iinfo(np.uint64).max
    assert (ranges[1:, 0] <= ranges[:-1, 1] + np.uint64(1)).all()  # the groups cover the key space
    assert ((keys >= ranges[cells.group_of_row, 0]) & (keys <= ranges[cells.group_of_row, 1])).all()
    wanted = pa.array(sorted(set(fks)), pa.int64())
    join = StarJoin("fk", "db.dim", "k", "g = 1", ("g",), wanted)
    kept = curve_join_kept(spec, ranges, [join], {Dimension("fk", "db.dim", key="k", by=["g"]): mapping})
    holding = np.isin(fk, wanted.to_numpy())
    assert kept[cells.group_of_row[holding]].all()  # never drops a group holding a matching row
