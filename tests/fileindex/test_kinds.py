"""Every registered index kind keeps every row group holding a matching row, whatever it is mixed
with; an exact kind answers exactly.  A kind added to ``KINDS`` is checked here without a new test."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.fileindex.test_bitmap import COLUMNS, predicates, tables, truth

from zskip.errors import InvalidOptionError
from zskip.expr import Expr
from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.evaluate import FileIndexes, Match, evaluate, exactly_answered, matching_rows
from zskip.fileindex.kinds import KINDS, IndexKind, kind_named


def built(kind: IndexKind, values: list[Any], value_type: pa.DataType, starts: tuple[int, ...]) -> Any:
    """``kind``'s index of one column, through its stored bytes."""
    groups = [pa.chunked_array([pa.array(values[a:b], type=value_type)]) for a, b in itertools.pairwise(starts)]
    return kind.load(kind.build(groups, {}))


@settings(max_examples=300, deadline=None)
@given(tables(), predicates, st.integers(1, 4), st.data())
def test_any_mix_of_kinds_keeps_every_row_group_holding_a_match(
    data: dict[str, list[Any]], expr: Expr, row_groups: int, draw: st.DataObject
) -> None:
    rows = len(data["i"])
    starts = tuple(sorted({0, rows, *np.linspace(0, rows, row_groups + 1).astype(int).tolist()}))
    chosen = {c: draw.draw(st.lists(st.sampled_from(list(KINDS.values())), unique=True)) for c in COLUMNS}
    found = [(c, kind, built(kind, data[c], COLUMNS[c][1], starts)) for c, kinds in chosen.items() for kind in kinds]
    indexes = FileIndexes.of(starts, found)
    table = [{name: data[name][r] for name in data} for r in range(rows)]
    expected = [r for r, row in enumerate(table) if truth(expr, row) is True]
    verdict = evaluate(expr, indexes)
    for g, match in enumerate(verdict.row_groups):
        if any(starts[g] <= r < starts[g + 1] for r in expected):
            assert match is Match.MIGHT_MATCH
    exact = matching_rows(expr, indexes)
    assert exactly_answered(expr, chosen) == (exact is not None)
    if exact is not None:
        assert sorted(exact) == expected


@pytest.mark.parametrize("kind", list(KINDS.values()), ids=list(KINDS))
def test_each_kind_says_what_it_is_and_takes_only_its_options(kind: IndexKind) -> None:
    assert kind_named(kind.name) is kind and kind.summary and kind.blob_type.startswith("zskip-")
    defaults = {option.name: option.default for option in kind.options}
    assert IndexDefinition("c", kind.name, defaults).options == defaults
    with pytest.raises(InvalidOptionError, match=f"a {kind.name} index takes"):
        IndexDefinition("c", kind.name, {"no_such_option": 1})
    assert kind.forecast_bytes(rows=1_000_000, distinct=100, row_groups=10) > 0


def test_an_unknown_kind_is_refused_with_the_kinds_there_are() -> None:
    with pytest.raises(InvalidOptionError, match="one of " + ", ".join(KINDS)):
        kind_named("zonemap")
    assert len({kind.blob_type for kind in KINDS.values()}) == len(KINDS)
