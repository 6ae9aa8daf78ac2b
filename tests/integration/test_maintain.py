"""``zskip.maintain`` / ``zskip maintain``: new data clustered and indexed incrementally, cycles that
converge, and no row lost or duplicated while another process appends to the same table."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import zskip
from zskip.layout.dimensions import Dimension
from zskip.maintenance.maintain import layout_from_summary

from .cli_runner import run
from .jobs import job_environment
from .tables import APPENDED_BATCH_ROWS, APPENDED_FIRST_ID, fingerprint, frame_fingerprint, generated_rows, make_table

pytestmark = pytest.mark.integration


def _laid_out(spark, name: str) -> str:
    table = make_table(spark, name, rows=20_000, files=6)
    zskip.optimize(spark, table, by=["a", "b"], curve="zorder", target_file_size="64KB", row_group_size="16KB")
    zskip.create_index(spark, table, "s", kind="bloom")
    return table


@pytest.mark.smoke
def test_maintain_clusters_and_indexes_an_append_then_converges(spark) -> None:
    table = _laid_out(spark, "lake.maintain.once")
    clustering = spark.sql(f"SHOW TBLPROPERTIES {table} ('zskip.clustering')").first()[1]
    # in arrival order (by id): the first rows of a laid-out file would be in curve order, which maintain
    # records as they are (tests/integration/test_clustered_writes.py) instead of rewriting them
    spark.sql(f"INSERT INTO {table} SELECT * FROM {table} ORDER BY id LIMIT 3000")
    before = fingerprint(spark, table)
    assert not zskip.status(spark, table).up_to_date

    first = zskip.maintain(spark, table)
    assert first.changed and first.retries == 0
    assert first.optimize is not None and first.optimize.files_rewritten >= 1 and first.optimize.commits == 1
    assert first.indexes is not None and first.indexes.files_indexed >= 1
    assert first.snapshot_after != first.snapshot_before
    assert fingerprint(spark, table) == before
    after = zskip.status(spark, table)
    assert after.up_to_date and after.clustered_share == 1.0
    # the layout kept is the one recorded: same columns, curve and mapping
    assert spark.sql(f"SHOW TBLPROPERTIES {table} ('zskip.clustering')").first()[1] == clustering

    second = zskip.maintain(spark, table)
    assert not second.changed and second.snapshot_after == second.snapshot_before
    assert "every file clustered" in second.reason and "every file indexed" in second.reason
    assert "clustered" in str(second) and '"changed": false' in second.to_json()


def test_maintain_without_layout_or_index_does_nothing_and_says_what_to_run(spark) -> None:
    table = make_table(spark, "lake.maintain.bare", rows=2_000, files=2)
    before = spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").count()
    result = zskip.maintain(spark, table)
    assert not result.changed and result.optimize is None and result.indexes is None
    assert "zskip optimize TABLE --by" in result.reason and "no indexes" in result.reason
    assert spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").count() == before


def test_cycles_skip_an_unchanged_snapshot_and_stop_when_asked(spark) -> None:
    table = _laid_out(spark, "lake.maintain.cycles")
    spark.sql(f"INSERT INTO {table} SELECT * FROM {table} LIMIT 500")
    results = list(zskip.maintain_cycles(spark, table, interval=0, cycles=3))
    assert [r.cycle for r in results] == [1, 2, 3]
    assert results[0].changed and not results[1].changed  # the second proves the first converged
    assert results[2].reason.startswith("no new snapshot") and results[2].snapshot_before == results[1].snapshot_before

    stop = threading.Event()
    seen = []
    for result in zskip.maintain_cycles(spark, table, interval="1h", stop=stop):
        seen.append(result)
        stop.set()  # the wait for the next cycle ends at once, and no cycle follows
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"interval": "soon"}, "interval must be a duration"),
        ({"interval": -5}, "interval must not be negative"),
        ({"cycles": 0}, "cycles must be a whole number"),
        ({"attempts": 0}, "attempts must be a whole number"),
    ],
)
def test_bad_cycle_options_fail_at_the_call(spark, options, message) -> None:
    with pytest.raises(zskip.InvalidOptionError, match=message):
        zskip.maintain_cycles(spark, "lake.maintain.nosuch", **options)


def test_layout_summary_gives_back_the_columns_and_dimensions_optimize_took() -> None:
    summary = (
        '{"version":1,"curve":"hilbert","mapping":"rank","columns":["lo_custkey","lo_discount"],"bits":32,'
        '"target_file_size":1048576,"dimensions":{"lo_custkey":{"table":"lake.ssb.customer","key":"c_custkey",'
        '"by":["c_region","c_nation"]}}}'
    )
    layout = layout_from_summary(summary, "lake.ssb.lineorder")
    assert layout.by == (
        Dimension("lo_custkey", "lake.ssb.customer", key="c_custkey", by=["c_region", "c_nation"]),
        "lo_discount",
    )
    assert (layout.curve, layout.mapping, layout.target_file_size) == ("hilbert", "rank", 1 << 20)
    older = layout_from_summary('{"curve":"zorder","mapping":"raw","columns":["a"]}', "t")
    assert older.target_file_size == 128 << 20
    with pytest.raises(zskip.InvalidOptionError, match="run zskip optimize t --by"):
        layout_from_summary("not json", "t")


def test_cli_maintain_checks_its_options_before_starting_spark(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "--warehouse", str(tmp_path), "maintain", "lake.db.t", "--cycles", "2")
    assert code == 2 and "--cycles needs --watch" in err
    code, _, err = run(capsys, "--warehouse", str(tmp_path), "maintain", "lake.db.t", "--watch", "--interval", "often")
    assert code != 0 and "--interval must be a duration" in err


def test_watch_keeps_every_row_while_another_process_appends(spark, warehouse: Path, tmp_path: Path, capsys) -> None:
    table = _laid_out(spark, "lake.maintain.shared")
    base = fingerprint(spark, table)
    log_path, stop_path = tmp_path / "appended.log", tmp_path / "stop"
    job = Path(__file__).with_name("appender_job.py")
    appender = subprocess.Popen(
        [sys.executable, str(job), str(warehouse), table, str(log_path), str(stop_path)],
        env=job_environment(),
        cwd=job.parent,
        stderr=subprocess.PIPE,
        text=True,
    )

    def committed() -> list[int]:
        return [int(line) for line in log_path.read_text().split()] if log_path.exists() else []

    try:
        deadline = time.monotonic() + 240
        while not committed():  # maintain while appends land, not before they start
            assert appender.poll() is None, appender.stderr.read() if appender.stderr else ""
            assert time.monotonic() < deadline, "the appender committed nothing in 240 s"
            time.sleep(1)
        code, out, err = run(
            capsys, "--warehouse", str(warehouse), "maintain", table, "--watch", "--interval", "1s", "--cycles", "6",
            "--json",
        )  # fmt: skip
        assert code == 0, err
        cycles = [json.loads(line) for line in out.strip().splitlines()]
    finally:
        stop_path.touch()
        _, errors = appender.communicate(timeout=300)
    assert appender.returncode == 0, errors[-3000:]

    assert [c["cycle"] for c in cycles] == list(range(1, 7))
    clustered = [c for c in cycles if c["optimize"] is not None and c["optimize"]["files_rewritten"]]
    assert len(clustered) >= 3, [c["reason"] for c in cycles]
    batches = committed()
    assert len(batches) >= 5 and len(set(batches)) == len(batches)
    last = zskip.maintain(spark, table)  # the appends after the last cycle
    assert zskip.status(spark, table).up_to_date, last.reason

    expected_rows = base
    for batch in batches:
        start = APPENDED_FIRST_ID + batch * APPENDED_BATCH_ROWS
        part = frame_fingerprint(generated_rows(spark, start, start + APPENDED_BATCH_ROWS))
        expected_rows = type(base)(expected_rows.rows + part.rows, expected_rows.checksum + part.checksum)
    assert fingerprint(spark, table) == expected_rows
    status = zskip.status(spark, table)
    assert status.clustered_share == 1.0
    assert all(i.files_indexed == i.files_total == status.files for i in status.indexes)


def test_cli_maintain_once_and_watching(spark, warehouse: Path, capsys) -> None:
    table = _laid_out(spark, "lake.maintain.cli")
    spark.sql(f"INSERT INTO {table} SELECT * FROM {table} LIMIT 200")
    code, out, err = run(capsys, "--warehouse", str(warehouse), "maintain", table)
    assert code == 0, err
    assert f"maintain {table}, cycle 1" in out and "clustered 1 file new since the last optimize" in out
    code, out, err = run(
        capsys,
        "--warehouse",
        str(warehouse),
        "maintain",
        table,
        "--watch",
        "--cycles",
        "2",
        "--interval",
        "0",
        "--json",
    )
    assert code == 0, err
    first, second = (json.loads(line) for line in out.strip().splitlines())
    assert (first["cycle"], first["changed"], second["cycle"]) == (1, False, 2)
    assert second["reason"].startswith("no new snapshot")


def test_maintain_keeps_the_layout_going_through_partition_evolution(spark) -> None:
    """Partition fields added, replaced and dropped on clustered columns (truncate, bucket, days, identity):
    every maintain cycle clusters the new rows, loses none, and a column partitioned by value is left out of
    the curve with one line saying so."""
    table = make_table(spark, "lake.maintain.evolving", rows=4_000, files=2)
    zskip.optimize(spark, table, by=["s", "a", "d"], target_file_size="64KB", row_group_size="16KB")
    first = APPENDED_FIRST_ID + 900_000
    steps = [
        # many values of s in each partition: s stays on the curve
        ["ADD PARTITION FIELD truncate(2, s) AS s2"],
        # replaced by a bucket of a clustered column, and a time transform of another
        ["REPLACE PARTITION FIELD s2 WITH bucket(4, a) AS ab", "ADD PARTITION FIELD years(d) AS dy"],
        # dropped, and one value of s in each partition: the curve goes on without s
        ["DROP PARTITION FIELD ab", "DROP PARTITION FIELD dy", "ADD PARTITION FIELD s"],
    ]
    for number, changes in enumerate(steps):
        for change in changes:
            spark.sql(f"ALTER TABLE {table} {change}")
        step = changes[-1]
        generated_rows(spark, first + number * 1_000, first + (number + 1) * 1_000).writeTo(table).append()
        before = fingerprint(spark, table)
        result = zskip.maintain(spark, table)
        assert fingerprint(spark, table) == before, step
        assert result.optimize is not None and not result.optimize.noop, (step, result.reason)
        assert zskip.status(spark, table).up_to_date, (step, result.reason)
        if step == "ADD PARTITION FIELD s":
            assert result.reason.startswith("clustering by a, d alone: s is an identity partition column now"), result
        else:
            assert "identity partition" not in result.reason, result
