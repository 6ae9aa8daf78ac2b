"""Every scan zskip plans lands in the table's workload log; capture can be turned off, and a
failing log write never changes a query's result."""

from __future__ import annotations

import json

import pytest

import zskip
from zskip.planning import workload

from .cli_runner import run
from .tables import make_table

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def table(spark) -> str:
    name = make_table(spark, "lake.workload.t", rows=20_000, files=8)
    zskip.optimize(spark, name, by=["a", "b"], target_file_size="64KB", row_group_size="16KB")
    return name


def _log(spark, table: str):
    zskip.flush_workload()
    return zskip.workload(spark, table)


def test_read_sql_and_explain_each_record_their_scan(spark, table: str) -> None:
    before = _log(spark, table).num_rows
    explained = zskip.explain(spark, table, "a = 5 AND b < 100")
    zskip.read(spark, table, "a = 6").count()
    zskip.sql(spark, f"SELECT count(*) FROM {table} WHERE a BETWEEN 1 AND 3 AND s = 'k7'").collect()
    log = _log(spark, table)
    assert log.num_rows == before + 3
    newest = log.slice(before).to_pylist()
    assert [r["predicate"] for r in newest] == ["a = 5 AND b < 100", "a = 6", "a >= 1 AND a <= 3 AND s = 'k7'"]
    first = newest[0]
    assert first["columns"] == ["a", "b"] and first["table"] == table
    assert (first["files_total"], first["files_read"]) == (explained.files_total, explained.files_read)
    assert (first["row_groups_total"], first["row_groups_read"]) == (
        explained.row_groups_total,
        explained.row_groups_read,
    )
    assert first["snapshot_id"] == spark.sql(f"SELECT snapshot_id FROM {table}.snapshots").collect()[-1][0]


def test_capture_off_records_nothing(spark, table: str) -> None:
    before = _log(spark, table).num_rows
    spark.conf.set(workload.CAPTURE_CONF, "false")
    try:
        zskip.read(spark, table, "a = 7").count()
    finally:
        spark.conf.unset(workload.CAPTURE_CONF)
    assert _log(spark, table).num_rows == before
    zskip.read(spark, table, "a = 8").count()
    assert _log(spark, table).num_rows == before + 1


def test_a_failing_log_write_never_changes_a_result(spark, table: str, monkeypatch) -> None:
    def broken(location: str, rows: list) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(workload, "append_records", broken)
    monkeypatch.setattr(workload, "FLUSH_AFTER", 1)  # every query writes (and fails)
    errors = workload.RECORDER.errors
    where = "a BETWEEN 10 AND 20 AND b > 50"
    got = sorted(zskip.read(spark, table, where).collect())
    assert got == sorted(spark.table(table).where(where).collect())
    workload.RECORDER.wait()
    assert workload.RECORDER.errors == errors + 1


def test_a_full_batch_is_written_off_the_querying_thread_and_stays_readable(spark, table: str, monkeypatch) -> None:
    """A batch's first write lists the snapshot's files (a Spark job): the query that fills it never waits."""
    import threading

    writers: list[str] = []
    release = threading.Event()
    written = workload.append_records

    def slow(location: str, rows: list, storage) -> None:  # type: ignore[no-untyped-def]
        writers.append(threading.current_thread().name)
        release.wait(timeout=60)
        written(location, rows, storage)

    monkeypatch.setattr(workload, "append_records", slow)
    monkeypatch.setattr(workload, "FLUSH_AFTER", 1)
    before = _log(spark, table).num_rows
    zskip.read(spark, table, "a = 12").count()  # returns while its record is being written
    for _ in range(200):  # the writer thread takes the batch
        if writers:
            break
        release.wait(0.05)
    assert writers and not release.is_set()
    assert zskip.workload(spark, table).num_rows == before + 1  # being written, and still read
    release.set()
    workload.RECORDER.wait()
    assert writers and all(name.startswith("zskip-workload") for name in writers)
    assert _log(spark, table).num_rows == before + 1


def test_the_workload_verb_lists_the_newest_scans(spark, table: str, capsys) -> None:
    zskip.read(spark, table, "a = 11").count()
    zskip.read(spark, table, "b >= 90000").count()
    code, out, _ = run(capsys, "workload", table, "--limit", "2")
    assert code == 0
    assert "scans recorded; columns filtered: " in out and "a = 11" in out and "b >= 90000" in out
    code, out, _ = run(capsys, "workload", table, "--limit", "1", "--json")
    assert code == 0
    (line,) = out.strip().splitlines()
    assert json.loads(line)["predicate"] == "b >= 90000"
    code, _, err = run(capsys, "workload", "lake.workload.nope")
    assert code == 2 and "lake.workload.nope" in err


@pytest.mark.parametrize("gone", ["dropped", "deleted"])
def test_the_flush_at_exit_is_quick_and_quiet_when_the_table_is_gone(spark, capfd, caplog, gone: str) -> None:  # type: ignore[no-untyped-def]
    """Records of a table dropped before the process exits, or whose files were deleted (a script's
    temporary warehouse), are dropped with no error line, without a listing of the gone table per record
    (each used to try one: ~100 ms and an ERROR line apiece, and a failed task per manifest), nothing
    written where the table was."""
    import importlib
    import logging
    import shutil
    import time
    from pathlib import Path

    from zskip.iceberg.table import load_table

    recorder_module = importlib.import_module("zskip.planning.workload")

    table = make_table(spark, f"lake.wl.exiting_{gone}", rows=3_000, files=2)
    zskip.optimize(spark, table, by=["a", "b"], target_file_size=20_000)
    location = Path(load_table(spark, table).location().removeprefix("file:"))
    for a in range(12):  # twelve records waiting for the log (a batch is written at 64)
        zskip.read(spark, table, f"a = {a} AND b < 500").count()
    if gone == "dropped":
        spark.sql(f"DROP TABLE {table} PURGE")
    else:
        shutil.rmtree(location)  # the catalog still knows the table
    capfd.readouterr()
    started = time.monotonic()
    with caplog.at_level(logging.DEBUG, logger="zskip"):
        recorder_module._flush_at_exit()
    took = time.monotonic() - started
    printed = capfd.readouterr()
    for noise in ("TABLE_OR_VIEW_NOT_FOUND", "NotFoundException", "Exception"):
        assert noise not in printed.err + printed.out, printed.err[-3000:]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.records
    assert any("was dropped" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
    assert not location.exists() or not any(location.rglob("*workload*")), list(location.rglob("*"))
    assert took < recorder_module.EXIT_SECONDS + 2, took
