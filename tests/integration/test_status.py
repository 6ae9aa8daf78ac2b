"""``zskip.status`` / ``zskip status``: coverage measured from the table's files, before and after
the appends, optimizes and index refreshes that change it."""

from __future__ import annotations

import json
import re

import pytest

import zskip
from zskip.iceberg.files import data_files

from .cli_runner import run
from .tables import make_table

pytestmark = pytest.mark.integration


def _sizes(spark, table: str) -> dict[str, tuple[int, int]]:
    files = data_files(spark, table)
    return {
        p: (int(r), int(b))
        for p, r, b in zip(
            files["file_path"].to_pylist(),
            files["record_count"].to_pylist(),
            files["file_size_in_bytes"].to_pylist(),
            strict=True,
        )
    }


def test_status_follows_optimize_appends_and_index_refreshes(spark, capsys) -> None:
    table = make_table(spark, "lake.status.t", rows=20_000, files=6)
    before = zskip.status(spark, table)
    assert before.clustering is None and before.indexes == ()
    assert (before.files, before.rows) == (6, 20_000)
    assert before.files_clustered == 0 and before.last_optimize is None
    assert before.up_to_date  # nothing to keep: no clustering, no index

    zskip.optimize(spark, table, by=["a", "b"], target_file_size="64KB", row_group_size="16KB")
    zskip.create_index(spark, table, "s", kind="bloom")
    laid = zskip.status(spark, table)
    assert laid.clustering is not None and "a, b" in laid.clustering
    assert laid.clustered_share == 1.0 and laid.bytes_unclustered == 0
    assert laid.files_clustered == laid.files == len(_sizes(spark, table))
    assert laid.last_optimize is not None
    (bloom,) = laid.indexes
    assert (bloom.column, bloom.kind, bloom.files_indexed, bloom.bytes_unindexed) == ("s", "bloom", laid.files, 0)
    assert laid.up_to_date

    old = set(_sizes(spark, table))
    spark.sql(f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1000")
    new = {p: v for p, v in _sizes(spark, table).items() if p not in old}
    appended = zskip.status(spark, table)
    assert appended.rows == 21_000 and appended.rows_clustered == 20_000
    assert appended.bytes_unclustered == sum(b for _, b in new.values())
    assert appended.files - appended.files_clustered == len(new)
    (bloom,) = appended.indexes
    assert bloom.files_total - bloom.files_indexed == len(new)
    assert bloom.bytes_unindexed == appended.bytes_unclustered
    assert not appended.up_to_date
    assert "zskip optimize lake.status.t and zskip index refresh lake.status.t" in str(appended)

    code, out, _ = run(capsys, "status", table, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["rows_clustered"] == 20_000 and data["up_to_date"] is False
    assert data["indexes"][0]["bytes_unindexed"] == bloom.bytes_unindexed

    zskip.optimize(spark, table, by=["a", "b"], target_file_size="64KB", row_group_size="16KB")
    zskip.refresh_indexes(spark, table)
    kept = zskip.status(spark, table)
    assert kept.up_to_date and kept.clustered_share == 1.0 and kept.indexes[0].files_indexed == kept.files

    code, out, _ = run(capsys, "status", table)
    assert code == 0
    lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in out.splitlines()[1:])
    assert lines["clustered"].startswith("100.0% of rows") and lines["up to date"] == "yes"
    assert lines["clustered writes"].startswith("auto (the default)")
    html = kept._repr_html_()
    assert "<table>" in html and "index bloom on s" in html


def test_status_of_an_unknown_table_is_a_clear_error(spark, capsys) -> None:
    with pytest.raises(zskip.UnknownTableError):
        zskip.status(spark, "lake.status.nope")
    code, _, err = run(capsys, "status", "lake.status.nope")
    assert code == 2 and "lake.status.nope" in err
