"""File cuts: near equal sizes, on coarse curve-cell boundaries, and heavy keys split by hash."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zskip.layout.cuts import FileCuts


def file_sizes(cuts: FileCuts, keys: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.bincount(cuts.route(keys, u), minlength=cuts.files)


def test_uniform_keys_cut_into_near_equal_files_on_aligned_boundaries() -> None:
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 1 << 63, 200_000, dtype=np.uint64)
    cuts = FileCuts.choose(keys[:20_000], 40, tolerance=0.3)
    sizes = file_sizes(cuts, keys, rng.random(len(keys)))
    share = sizes / (len(keys) / 40)
    assert cuts.files == 40 and share.min() > 0.35 and share.max() < 1.65
    # The coarsest boundary in each window: every cut ends in many zero bits (equal cuts would not).
    trailing = [int(k) & -int(k) for k in cuts.keys]
    assert min(t.bit_length() for t in trailing) > 45
    equal = np.sort(keys[:20_000])[[round(i * 20_000 / 40) for i in range(1, 40)]]
    assert np.median([(int(k) & -int(k)).bit_length() for k in equal]) < 10


def test_zero_tolerance_cuts_at_equal_quantiles() -> None:
    keys = np.arange(1000, dtype=np.uint64) * np.uint64(7)
    cuts = FileCuts.choose(keys, 10, tolerance=0.0)
    assert file_sizes(cuts, keys, np.zeros(1000)).tolist() == [100] * 10


def test_a_heavy_key_is_split_by_hash_in_proportion() -> None:
    rng = np.random.default_rng(5)
    keys = np.concatenate([np.full(8000, 5, np.uint64), np.arange(10, 2010, dtype=np.uint64)])
    u = rng.random(len(keys))
    cuts = FileCuts.choose(keys, 10)
    sizes = file_sizes(cuts, keys, u)
    assert sizes.min() > 700 and sizes.max() < 1300, sizes
    routes = cuts.route(keys, u)
    assert len(set(routes[keys == 5])) == 8  # the heavy key spans eight files


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=300),
    st.integers(1, 20),
    st.floats(0, 0.5),
)
def test_routes_are_monotonic_in_key_and_within_range(values: list[int], files: int, tolerance: float) -> None:
    keys = np.asarray(values, dtype=np.uint64)
    cuts = FileCuts.choose(keys, files, tolerance=tolerance)
    ordered = np.sort(keys)
    u = np.linspace(0, 0.999, len(ordered))
    routes = cuts.route(ordered, np.zeros(len(ordered)))
    assert routes.min() >= 0 and routes.max() < cuts.files
    assert np.all(np.diff(routes) >= 0)  # sorted keys never go to an earlier file
    assert np.all(cuts.route(ordered, u) >= routes)


def test_bad_file_count() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        FileCuts.choose(np.zeros(3, np.uint64), 0)
