"""The advisor's objectives: the cost it ranks by, the bound of no query slower than a reference, and the
weight search."""

from __future__ import annotations

from zskip.maintenance.advise import REFINE_SIMULATIONS, _ordering, _refined, file_cost_rows
from zskip.maintenance.forecasts import CURRENT, LayoutForecast, QueryForecast
from zskip.maintenance.objectives import Reference, bounded

_order = _ordering(file_rows=0.0)  # rows read alone


def _layout(
    rows: list[float], curve: str = "zorder", weights: tuple[float, ...] | None = None, files: float = 1.0
) -> LayoutForecast:
    queries = tuple(QueryForecast(f"q{i}", 1, 1, 1, 1_000, files, 1.0, r) for i, r in enumerate(rows))
    columns = ("a", "b") if curve != CURRENT else ()
    return LayoutForecast(columns, curve, "rank", files, 1.0, sum(rows) / len(rows), 0.0, queries, weights=weights)


def test_a_file_opened_costs_the_rows_iceberg_s_open_cost_would_read() -> None:
    # 87 bytes a row: Iceberg's 4 MiB opening cost is 48,210 rows; a table's own setting counts
    assert round(file_cost_rows(None, 87 * 58_788, 58_788)) == 48_210
    assert file_cost_rows(str(2**20), 100 * 10_000, 10_000) == 2**20 / 100
    assert file_cost_rows("lots", 100, 1) == 4 * 2**20 / 100  # not a number: Iceberg's default, as planning reads it
    assert file_cost_rows(None, 0, 0) == 0.0


def test_on_small_files_the_layout_opening_fewer_files_ranks_first_though_it_reads_more_rows() -> None:
    # a table of small files (the 58,788 films in 24 files): a file opened costs 48,000 rows read
    finer = _layout([2_000.0, 2_200.0], files=4.0)
    fewer_files = _layout([2_400.0, 2_500.0], files=3.1)
    assert min([finer, fewer_files], key=_ordering(48_000.0)) is fewer_files
    # large files: a file's opening is small against its rows, and rows read decide
    assert min([finer, fewer_files], key=_ordering(50.0)) is finer


def test_a_simulated_layout_holds_to_the_bound_within_half_a_row_group() -> None:
    reference = Reference(CURRENT, (1_000.0, 100.0))
    # the reference's rows and half a row group of 100 rows: 1,050 and 150 allowed
    held = bounded(_layout([1_050.0, 150.0]), reference, rows_per_group=100.0)
    assert held.over_reference == 0.0 and held.slower == ()
    broken = bounded(_layout([1_060.0, 10.0]), reference, rows_per_group=100.0)
    assert broken.over_reference == 5.0 and broken.slower == ("q0",)  # 10 rows over, per one of two scans


def test_the_current_layout_is_its_own_bound_and_is_measured_against_another_table() -> None:
    now = _layout([1_000.0, 100.0], curve=CURRENT)
    assert bounded(now, Reference(CURRENT, (1_000.0, 100.0)), 100.0).slower == ()
    against = bounded(now, Reference("lake.db.other", (1_000.0, 99.0)), 100.0)  # measured: no margin needed
    assert against.slower == ("q1",) and against.over_reference == 0.5
    assert bounded(now, None, 100.0).over_reference is None


def test_layouts_holding_to_the_bound_rank_before_any_that_break_it() -> None:
    reference = Reference(CURRENT, (1_000.0, 1_000.0))
    cheap_but_slower = bounded(_layout([2_000.0, 10.0]), reference, 100.0)
    dearer_but_held = bounded(_layout([900.0, 900.0]), reference, 100.0)
    nearly = bounded(_layout([1_100.0, 10.0]), reference, 100.0)
    ranked = sorted([cheap_but_slower, nearly, dearer_but_held], key=_order)
    assert ranked == [dearer_but_held, nearly, cheap_but_slower]


def test_the_weight_search_walks_a_quarter_at_a_time_to_the_best_weights() -> None:
    simulated: list[tuple[float, ...] | None] = []

    def scored(columns, curve, mapping, weights=None):  # type: ignore[no-untyped-def]
        simulated.append(weights)
        a, b = weights or (1.0, 1.0)
        # fewest rows read at weights (1.5, 1): each quarter away costs 10%
        cost = 1.0 + 0.1 * (abs(a - 1.5) + abs(b - 1.0)) / 0.25
        return _layout([1_000.0 * cost, 1_000.0 * cost], curve, weights)

    seed = _layout([2_000.0, 2_000.0], "hilbert")
    found = _refined([seed], scored, lambda stage, done, total: None, _order)
    best = min(found, key=_order)
    assert best.weights == (1.5, 1.0) and best.curve == "zorder"
    assert len(simulated) <= REFINE_SIMULATIONS and len(set(simulated)) == len(simulated)  # none twice
