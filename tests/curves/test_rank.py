"""Rank mapping is monotone, stable across serialisation, and spreads skewed columns evenly."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zskip.curves import (
    ClusteringSpec,
    ColumnMapping,
    RankMapping,
    RawMapping,
    bits_per_column,
    mapping_from_json,
    order_key_u64,
)

u64s = st.integers(0, 2**64 - 1)


@given(
    sample=st.lists(u64s, min_size=1, max_size=300),
    probes=st.lists(u64s, min_size=2, max_size=50),
    bits=st.integers(1, 32),
)
def test_ranks_are_monotone_and_in_range(sample: list[int], probes: list[int], bits: int) -> None:
    mapping = RankMapping.fit(np.array(sample, np.uint64), bits)
    ordered = np.sort(np.array(probes, np.uint64))
    ranks = mapping.ranks(ordered)
    assert (np.diff(ranks.astype(np.int64)) >= 0).all()
    assert ranks.max() < 1 << bits
    assert mapping_from_json(mapping.to_json()) == mapping
    assert [mapping.rank(int(k)) for k in ordered] == ranks.tolist()


@given(sample=st.lists(st.integers(0, 1000), min_size=1, max_size=200))
def test_few_distinct_values_each_get_their_own_rank(sample: list[int]) -> None:
    keys = np.array(sample, np.uint64)
    mapping = RankMapping.fit(keys, 8)
    distinct = np.unique(keys)
    if len(distinct) <= 255:
        assert len(np.unique(mapping.ranks(distinct))) == len(distinct)


def test_skewed_column_is_spread_over_the_whole_rank_range() -> None:
    rng = np.random.default_rng(1)
    values = pa.array(rng.integers(0, 10_000, 100_000))  # a narrow range inside 64 bits
    keys = order_key_u64(values)
    rank = RankMapping.fit(rng.choice(keys, 5_000), 16).ranks(keys)
    raw = RawMapping(16).ranks(keys)
    assert len(np.unique(raw)) == 1  # raw keys put all of it in one top-16-bit bucket
    hist, _ = np.histogram(rank, bins=16, range=(0, 1 << 16))
    assert hist.min() > 0.8 * hist.mean()  # ranks fill every sixteenth of the range


def test_bits_per_column_and_too_many_columns() -> None:
    assert [bits_per_column(n) for n in (1, 2, 3, 4, 64)] == [32, 32, 21, 16, 1]
    with pytest.raises(ValueError, match=r"65 columns do not fit a 64-bit key: each would get 0\.98 bits"):
        bits_per_column(65)


def test_spec_round_trips_and_maps_rows_and_boxes() -> None:
    rng = np.random.default_rng(2)
    table = pa.table({"a": rng.integers(0, 100, 1000), "b": rng.normal(size=1000)})
    columns = tuple(ColumnMapping(name, RankMapping.fit(order_key_u64(table[name]), 16)) for name in ("a", "b"))
    for curve in ("hilbert", "zorder", "linear"):
        spec = ClusteringSpec(curve=curve, bits=16, columns=columns)
        assert ClusteringSpec.from_json(spec.to_json()) == spec
        keys = spec.keys(table)
        low = int(order_key_u64(pa.array([10]))[0])
        high = int(order_key_u64(pa.array([20]))[0])
        intervals = spec.key_ranges({"a": (low, high)}, max_intervals=None)
        in_box = ((keys[:, None] >= intervals[:, 0]) & (keys[:, None] <= intervals[:, 1])).any(axis=1)
        a = table["a"].to_numpy()
        assert in_box[(a >= 10) & (a <= 20)].all()
    with pytest.raises(ValueError, match="unknown curve"):
        ClusteringSpec(curve="peano", bits=2, columns=columns)
    with pytest.raises(ValueError, match="newer than this zskip"):
        ClusteringSpec.from_json('{"version": 99, "curve": "zorder", "bits": 2, "columns": []}')


@given(
    values=st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), min_size=2, max_size=50),
    bits=st.integers(1, 32),
)
def test_raw_mapping_of_ints_uses_their_32_bits_and_stays_monotone(values: list[int | None], bits: int) -> None:
    keys = order_key_u64(pa.array(values, pa.int32()))
    ranks = RawMapping(bits, 32).ranks(keys)
    order = sorted(range(len(values)), key=lambda i: (values[i] is not None, values[i] or 0))
    assert (np.diff(ranks[order].astype(np.int64)) >= 0).all()
    assert ranks.max() < 1 << bits
    if bits == 32:
        present = [v for v in values if v is not None]
        assert len(np.unique(ranks[[v is not None for v in values]])) == len(set(present))
    assert mapping_from_json(RawMapping(bits, 32).to_json()) == RawMapping(bits, 32)


@given(
    sample=st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=200),
    probes=st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=50),
    bits=st.integers(1, 32),
)
def test_a_fitted_raw_mapping_is_monotone_over_every_value_and_round_trips(
    sample: list[int | None], probes: list[int | None], bits: int
) -> None:
    array = pa.array(sample, pa.int64())
    mapping = RawMapping.fit(order_key_u64(array), array.is_valid().to_numpy(zero_copy_only=False), bits)
    values = sample + probes  # probes may lie outside the fitted range: they clamp, in order
    keys = order_key_u64(pa.array(values, pa.int64()))
    ranks = mapping.ranks(keys)
    order = sorted(range(len(values)), key=lambda i: (values[i] is not None, values[i] or 0))
    assert (np.diff(ranks[order].astype(np.float64)) >= 0).all()
    assert int(ranks.max()) < 1 << bits
    assert mapping_from_json(json.dumps(mapping.to_json())) == mapping


def test_a_fitted_raw_mapping_spreads_a_narrow_long_column_over_its_bits() -> None:
    values = pa.array(np.random.default_rng(3).integers(1_000_000, 50_000_000, 100_000))  # money in cents
    keys = order_key_u64(values)
    mapping = RawMapping.fit(keys, None, 21)
    assert mapping.span == 26
    ranks = mapping.ranks(keys)
    # 49M of the 2**26 the range spans: the top 4 of 21 bits take 12 of 16 values
    assert len(np.unique(ranks >> np.uint64(17))) == 12
    assert len(np.unique(RawMapping(21).ranks(keys))) == 1
