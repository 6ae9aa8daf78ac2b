"""The workload log's files on disk: batches appended, compacted past a count, bounded in records."""

from __future__ import annotations

from pathlib import Path

from zskip.expr import And, Compare, IsNull, Not
from zskip.expr.rewrite import without_implied_not_null
from zskip.planning import workload
from zskip.planning.workload import WORKLOAD_SCHEMA, read_workload, workload_dir
from zskip.storage import LOCAL
from zskip.tablefiles import workload_log


def _row(n: int) -> dict[str, object]:
    return {
        "recorded_at": 1_700_000_000_000_000 + n,
        "table": "lake.db.t",
        "snapshot_id": 7,
        "predicate": f"a = {n}",
        "columns": ["a"],
        "files_total": 10,
        "files_read": 1,
        "row_groups_total": 40,
        "row_groups_read": 2,
        "planning_seconds": 0.01,
    }


def test_batches_are_appended_then_compacted_to_the_newest_records(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(workload_log, "COMPACT_AFTER", 3)
    monkeypatch.setattr(workload_log, "MAX_RECORDS", 5)
    location = str(tmp_path / "t")
    most_files = most_rows = 0
    for batch in range(12):
        workload_log.append_records(location, [_row(2 * batch), _row(2 * batch + 1)])
        files = list(Path(workload_dir(location)).glob("*.parquet"))
        log = read_workload(location)
        most_files, most_rows = max(most_files, len(files)), max(most_rows, log.num_rows)
        assert log.schema == WORKLOAD_SCHEMA
    assert most_files == 3  # never more than COMPACT_AFTER files
    assert most_rows <= 5 + 2 * 2  # the compacted newest 5, plus two batches since
    predicates = read_workload(location)["predicate"].to_pylist()
    assert predicates == sorted(predicates, key=lambda p: int(p.split()[-1]))  # oldest first
    assert predicates[-1] == "a = 23"  # the newest kept


def test_an_empty_log_reads_as_no_records(tmp_path: Path) -> None:
    assert read_workload(str(tmp_path / "nothing")).num_rows == 0


def test_a_failing_write_is_counted_and_warned_never_raised(tmp_path: Path, monkeypatch, caplog) -> None:
    recorder = workload.WorkloadRecorder()

    def broken(location: str, rows: list, access: object) -> None:
        raise OSError("disk full")

    class Gone:  # the session ended before the totals were asked for: the record keeps the rest
        def totals(self) -> tuple[int, int]:
            raise RuntimeError("no Spark session")

    monkeypatch.setattr(workload, "append_records", broken)
    recorder._pending[str(tmp_path)] = workload._Pending("lake.db.t", [(_row(1), Gone())], LOCAL)  # type: ignore[list-item]
    with caplog.at_level("WARNING", logger="zskip.planning.workload"):
        assert recorder.flush() == 0
    assert recorder.errors == 1
    assert "disk full" in caplog.text and "queries are not affected" in caplog.text


def test_the_log_drops_only_the_null_checks_spark_adds_for_compared_columns() -> None:
    a5 = Compare("a", "=", 5)
    pushed = And((Not(IsNull("a")), Not(IsNull("b")), a5))
    assert without_implied_not_null(pushed) == And((Not(IsNull("b")), a5))  # b is not compared: kept
    assert without_implied_not_null(And((Not(IsNull("a")), a5))) == a5
    assert without_implied_not_null(Not(IsNull("a"))) == Not(IsNull("a"))  # alone it is the filter


def test_a_joins_dimension_filter_is_kept_by_field_id_only_when_every_condition_is_read() -> None:
    from zskip.iceberg.scans import _filter_by_fields
    from zskip.maintenance.logged_joins import logged_joins

    region = {"term": "region", "name": "region", "id": 2, "type": "string"}
    year = {"term": "d_year", "name": "d_year", "id": 5, "type": "int"}
    pushed = [
        {"op": "eq", "term": "region", "literals": [["string", "it's"]]},
        {"op": "gt_eq", "term": "d_year", "literals": [["int", 1993]]},
    ]
    item = {"all_pushed": True, "pushed": pushed, "dimension_fields": [region, year]}
    text = _filter_by_fields(item)
    assert text == "`#2` = 'it\\'s' AND `#5` >= 1993"
    # given back in the names of the day: field 2 renamed, a quote inside a literal left alone
    renamed = workload_log.predicate_for_schema(str(text), {2: "zone", 5: "year"})
    assert renamed == "`zone` = 'it\\'s' AND `year` >= 1993"
    assert _filter_by_fields(item | {"all_pushed": False}) is None  # a condition Spark kept to itself
    assert _filter_by_fields(item | {"dimension_fields": [region]}) is None  # a term of no known column
    assert _filter_by_fields(item | {"pushed": [{"op": "is_nan", "term": "region"}]}) is None

    entry = {
        "foreign_key_field": 3,
        "dimension": "lake.db.dim",
        "key_field": 1,
        "filter": "(region = 'x')",
        "filter_fields": "`#2` = 'x'",
        "column_fields": [2],
    }
    assert logged_joins(None) == ()
    assert logged_joins([entry, entry]) == ((3, "lake.db.dim", 1, "(region = 'x')", "`#2` = 'x'", (2,)),)
