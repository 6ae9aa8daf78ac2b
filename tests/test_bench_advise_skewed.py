"""bench/advise_skewed.py's hand layouts: on the real table, every curve and mapping over every set of
one to three of the filtered columns, each column order along hilbert; and how the advise reports label
a layout (no Spark)."""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ lives in the checkout

from bench import advise_skewed
from bench.advise import lay_label


def test_the_movies_are_measured_against_every_small_layout_of_their_filtered_columns() -> None:
    layouts = advise_skewed.movie_hand_layouts()
    labels = [advise_skewed.label_of(layout) for layout in layouts]
    assert len(set(labels)) == len(labels)  # each measured once, under its own name
    columns = advise_skewed.MOVIE_COLUMNS
    hilbert = {(order, mapping) for order, curve, mapping in layouts if curve == "hilbert"}
    for k in (2, 3):
        for subset in itertools.combinations(columns, k):
            for mapping in ("raw", "rank"):
                assert (subset, "zorder", mapping) in layouts
                assert all((order, mapping) in hilbert for order in itertools.permutations(subset))
    assert len(layouts) == 5 + 10 * (2 + 2 * 2) + 10 * (2 + 6 * 2)


def test_every_filter_of_a_table_names_only_its_measured_columns() -> None:
    for data in advise_skewed.DATASETS.values():
        assert len(data.filters) == 9
        for where in data.filters.values():
            names = set(re.findall(r"\b[a-z_]+\b(?= *(?:=|<|>|BETWEEN|IN))", where))
            assert names and names <= set(data.columns), (data.name, where, names)


def test_a_layout_of_the_advice_s_json_is_labelled_as_the_advice_labels_it() -> None:
    dates = {"foreign_key": "lo_orderdate", "table": "lake.ssb.dates", "key": "d_datekey", "by": ["d_year"]}
    layout = {"curve": "zorder", "columns": [dates, "lo_quantity"], "mapping": "rank", "weights": [1.25, 1.0]}
    layout["indexes"] = [{"kind": "bitmap", "column": "lo_discount"}]
    expected = "zorder over lo_orderdate through dates (d_year) x1.25, lo_quantity (rank) + bitmap on lo_discount"
    assert lay_label(layout) == expected
