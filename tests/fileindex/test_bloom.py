"""Bloom indexes never miss a present value, keep their false-positive rate, and hash by column type."""

from __future__ import annotations

import datetime
import decimal
import math

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.expr import Compare, In
from zskip.fileindex.bloom import BloomFilter, BloomIndex, optimal_bytes
from zskip.fileindex.evaluate import FileIndexes, Match, evaluate
from zskip.fileindex.hashing import plain_hashes
from zskip.fileindex.kinds.bloom import BLOOM

VALUES = {
    pa.int8(): st.integers(-128, 127),
    pa.int32(): st.integers(-(2**31), 2**31 - 1),
    pa.int64(): st.integers(-(2**63), 2**63 - 1),
    pa.float64(): st.floats(allow_nan=True),
    pa.float32(): st.floats(width=32, allow_nan=True),
    pa.string(): st.text(max_size=12),
    pa.binary(): st.binary(max_size=12),
    pa.date32(): st.dates(),
    pa.timestamp("us", tz="UTC"): st.datetimes(timezones=st.just(datetime.timezone.utc)),
    pa.decimal128(7, 2): st.decimals(min_value=-99999, max_value=99999, places=2, allow_nan=False),
    pa.decimal128(30, 3): st.decimals(min_value=-(10**20), max_value=10**20, places=3, allow_nan=False),
    pa.bool_(): st.booleans(),
}


@settings(max_examples=25, deadline=None)
@given(st.data())
@pytest.mark.parametrize("kind", list(VALUES), ids=str)
def test_a_present_value_is_always_found(kind: pa.DataType, data: st.DataObject) -> None:
    values = data.draw(st.lists(st.one_of(st.none(), VALUES[kind]), min_size=1, max_size=200))
    split = data.draw(st.integers(0, len(values)))
    groups = [pa.array(values[:split], type=kind), pa.array(values[split:], type=kind)]
    index = BloomIndex.from_bytes(BloomIndex.build(groups).to_bytes())
    for position, value in enumerate(values):
        if value is None:
            continue
        in_file, row_groups = index.might_contain(pa.array([value], type=kind))
        assert in_file and row_groups[0 if position < split else 1]


def test_negative_zero_and_every_nan_hash_like_their_equals() -> None:
    a = plain_hashes(pa.array([-0.0, math.nan, float("-nan")]))
    b = plain_hashes(pa.array([0.0, math.nan, math.nan]))
    assert a.tolist() == b.tolist()


def test_fixed_width_hashes_are_xxh64_of_the_plain_encoding() -> None:
    values = np.array([0, 1, -1, 2**62, -(2**63)], dtype=np.int64)
    assert plain_hashes(pa.array(values)).tolist() == [xxhash.xxh64_intdigest(v.tobytes()) for v in values]
    ints = values.astype(np.int32)
    assert plain_hashes(pa.array(ints)).tolist() == [xxhash.xxh64_intdigest(v.tobytes()) for v in ints]
    assert plain_hashes(pa.array(["zskip"])).tolist() == [xxhash.xxh64_intdigest(b"zskip")]
    small = pa.array([decimal.Decimal("-3.10")], pa.decimal128(5, 2))
    assert plain_hashes(small).tolist() == [xxhash.xxh64_intdigest(np.int32(-310).tobytes())]


@pytest.mark.parametrize("fpp", [0.01, 0.05])
def test_false_positive_rate_within_one_and_a_half_times_the_target(fpp: float) -> None:
    rng = np.random.default_rng(7)
    present = rng.choice(2**40, 200_000, replace=False)
    index = BloomIndex.build([pa.array(present)], fpp=fpp)
    absent = rng.integers(2**41, 2**42, 200_000)
    rate = index.file.might_contain_hashes(plain_hashes(pa.array(absent))).mean()
    assert rate <= 1.5 * fpp, rate


def test_sizes_are_powers_of_two_from_32_bytes() -> None:
    assert optimal_bytes(0, 0.01) == 32
    sizes = [optimal_bytes(n, 0.01) for n in (10, 1000, 10**6)]
    assert all(s & (s - 1) == 0 for s in sizes) and sizes == sorted(sizes)
    with pytest.raises(ValueError, match="false-positive"):
        optimal_bytes(10, 1.5)
    with pytest.raises(ValueError, match="32-byte"):
        BloomFilter.from_bytes(b"123")


def test_equality_and_in_prune_row_groups_and_other_predicates_do_not() -> None:
    groups = [pa.array([1, 2, 3], pa.int32()), pa.array([100, 200, 300], pa.int32())]
    index = BloomIndex.build(groups)
    indexes = FileIndexes.of((0, 3, 6), [("x", BLOOM, index)])
    assert evaluate(Compare("x", "=", 200), indexes).row_groups == (Match.CANNOT_MATCH, Match.MIGHT_MATCH)
    assert evaluate(In("x", (7, 8, 9)), indexes).file is Match.CANNOT_MATCH
    assert evaluate(Compare("x", "<", 0), indexes).row_groups == (Match.MIGHT_MATCH,) * 2
    assert evaluate(Compare("x", "=", 2.5), indexes).file is Match.MIGHT_MATCH  # no int equals 2.5: not answered


def test_a_filter_set_answers_as_each_of_its_filters_does() -> None:
    import numpy as np
    import pyarrow as pa

    from zskip.fileindex.bloom import BloomIndex, FilterSet
    from zskip.fileindex.hashing import plain_hashes

    rng = np.random.default_rng(3)
    indexes = [
        BloomIndex.build([pa.array(rng.integers(0, 10_000, size=int(n)), pa.int64())], fpp=0.05)
        for n in rng.integers(1, 2_000, size=40)
    ]
    joint = FilterSet.of([index.file for index in indexes])
    probes = pa.array(rng.integers(0, 10_000, size=25), pa.int64())
    which = np.arange(len(indexes))[::-1].copy()  # any order, any subset
    for value in probes.to_pylist():
        hashes = plain_hashes(pa.array([value], pa.int64()))
        expected = [indexes[i].might_contain(pa.array([value], pa.int64()))[0] for i in which]
        assert joint.might_contain_hashes(which, hashes).tolist() == expected
    everything = plain_hashes(probes)
    expected_any = [indexes[i].might_contain(probes)[0] for i in which]
    assert joint.might_contain_hashes(which, everything).tolist() == expected_any
    # a filter holding a value always says so
    for i, index in enumerate(indexes[:5]):
        assert joint.might_contain_hashes(np.array([i]), plain_hashes(pa.array([7], pa.int64()))).tolist() == [
            index.might_contain(pa.array([7], pa.int64()))[0]
        ]
