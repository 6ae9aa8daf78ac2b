import json

import numpy as np
import pyarrow as pa
import pytest

from zskip.layout.curve_keys import SIGN
from zskip.layout.write_keys import range_bounds
from zskip.tablefiles.clustering_store import RANGES_SCHEMA


def _ranges(lows: list[int], rows: list[int]) -> pa.Table:
    groups = len(lows)
    return pa.table(
        {
            "file_path": [f"f{i // 2}" for i in range(groups)] + ["f0"],
            "row_group": [*range(groups), -1],  # and a file's own range, which does not count
            "min_key": pa.array([*lows, 0], pa.uint64()),
            "max_key": pa.array([*lows, 2**64 - 1], pa.uint64()),
            "rows": [*rows, sum(rows)],
            "generation": [1] * (groups + 1),
        },
        schema=RANGES_SCHEMA,
    )


def test_bounds_cut_the_row_groups_into_ranges_of_as_many_rows_as_signed_keys() -> None:
    lows = [900, 100, 2**63 + 5, 300, 2**64 - 10, 500]  # unsorted; two above the signed zero
    bounds = range_bounds(_ranges(lows, [10] * 6), count=2)
    # 60 rows: cut at 20 and 40 rows, the starts of the third and fifth row groups in key order
    assert bounds.dtype == np.int64
    assert bounds.tolist() == [int(np.uint64(500) ^ SIGN) - 2**64, int(np.uint64(2**63 + 5) ^ SIGN)]
    assert bounds.tolist() == sorted(bounds.tolist())
    json.dumps(bounds.tolist())  # what the recipe carries


@pytest.mark.parametrize("count", [1, 5, 1023])
def test_bounds_are_ascending_distinct_and_never_below_every_key(count: int) -> None:
    rng = np.random.default_rng(count)
    lows = rng.integers(0, 2**63, 40, dtype=np.uint64).tolist()
    bounds = range_bounds(_ranges(lows, rng.integers(1, 100, 40).tolist()), count=count)
    assert 1 <= len(bounds) <= min(count, 39)
    assert np.all(np.diff(bounds) > 0)
    assert bounds[0] > (np.uint64(min(lows)) ^ SIGN).view(np.int64)


def test_a_single_row_group_gives_no_bounds() -> None:
    assert len(range_bounds(_ranges([7], [100]))) == 0
