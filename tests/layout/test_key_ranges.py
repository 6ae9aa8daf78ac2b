"""Key ranges read off a Parquet file equal the keys of its rows, row group by row group."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from zskip.curves import ClusteringSpec, ColumnMapping, RankMapping, order_key_u64
from zskip.layout.key_ranges import file_key_ranges


def spec_for(table: pa.Table, curve: str) -> ClusteringSpec:
    columns = tuple(ColumnMapping(name, RankMapping.fit(order_key_u64(table[name]), 16)) for name in ("a", "b"))
    return ClusteringSpec(curve=curve, bits=16, columns=columns)


def expected(table: pa.Table, spec: ClusteringSpec, sizes: list[int], path: str) -> list[tuple]:
    keys = spec.keys(table)
    rows, start = [], 0
    for index, size in enumerate(sizes):
        part = keys[start : start + size]
        rows.append((path, index, int(part.min()), int(part.max()), size))
        start += size
    rows.append((path, -1, int(keys.min()), int(keys.max()), len(keys)))
    return rows


@pytest.mark.parametrize("curve", ["hilbert", "zorder"])
def test_ranges_of_every_row_group_sorted_or_not(tmp_path: Path, curve: str) -> None:
    rng = np.random.default_rng(5)
    table = pa.table({"a": rng.integers(0, 1000, 5000), "b": rng.normal(size=5000), "c": rng.random(5000)})
    spec = spec_for(table, curve)
    by_key = table.take(np.argsort(spec.keys(table), kind="stable"))
    for name, data, is_sorted in (("random", table, False), ("sorted", by_key, True)):
        path = str(tmp_path / f"{name}.parquet")
        pq.write_table(data, path, row_group_size=700)  # 7 full row groups and a short last one
        sizes = [pq.ParquetFile(path).metadata.row_group(i).num_rows for i in range(8)]
        assert sizes == [700] * 7 + [100]
        assert file_key_ranges(path, spec, sorted_by_key=is_sorted) == expected(data, spec, sizes, path)
        if is_sorted:  # reading only each row group's ends gives what keying every row gives
            assert file_key_ranges(path, spec) == file_key_ranges(path, spec, sorted_by_key=True)


def test_an_empty_file_has_no_ranges(tmp_path: Path) -> None:
    table = pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.float64())})
    path = str(tmp_path / "empty.parquet")
    pq.write_table(table, path)
    spec = spec_for(pa.table({"a": [1, 2], "b": [0.5, 1.5]}), "hilbert")
    assert file_key_ranges(path, spec) == []
