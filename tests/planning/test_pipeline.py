"""The planner's pipeline: immutable candidate sets, stages run in order and timed by the pipeline."""

from __future__ import annotations

import datetime
import decimal
import math

import pytest

from zskip.expr import AlwaysFalse, AlwaysTrue, And, Compare, In, IsNull, Not, Opaque, StartsWith
from zskip.iceberg.arrow_types import arrow_type
from zskip.iceberg.filter_json import expr_from_json, literal_value
from zskip.iceberg.scan_types import Field, IcebergScan
from zskip.planning.pipeline import run_stages
from zskip.planning.plan import Candidates, PlanInputs, Stage


def test_candidates_never_change_in_place() -> None:
    first = Candidates.of({"a": None, "b": (0, 2)})
    narrowed = first.narrowed({"a": (1,), "b": ()}, {"a": 3, "b": 3})
    assert dict(first.files) == {"a": None, "b": (0, 2)}
    assert dict(narrowed.files) == {"a": (1,)}  # b lost its last row group, so the file goes
    assert dict(first.narrowed({"a": (0, 1, 2)}, {"a": 3}).files)["a"] is None  # every row group: the file
    assert dict(first.dropped({"a"}).files) == {"b": (0, 2)}
    with pytest.raises(TypeError):
        first.files["c"] = None  # type: ignore[index]


def _scan(paths: tuple[str, ...]) -> IcebergScan:
    return IcebergScan(
        0, "lake.db.t", "/t", 1, {}, frozenset(), AlwaysTrue(), {}, paths, (1,) * len(paths), (9,) * len(paths)
    )


def test_the_pipeline_runs_stages_in_order_and_times_each() -> None:
    seen: list[str] = []

    def listing(inputs: PlanInputs, candidates: Candidates) -> Candidates:
        seen.append("listing")
        return Candidates.of(dict.fromkeys(inputs.scan.paths))

    def pruning(inputs: PlanInputs, candidates: Candidates) -> Candidates:
        seen.append("pruning")
        return candidates.dropped({"b"})

    inputs = PlanInputs(scan=_scan(("a", "b")), expr=AlwaysTrue(), metadata=None)  # type: ignore[arg-type]
    stages = (Stage("listing", listing, False, False), Stage("pruning", pruning, True, False))
    final, run = run_stages(stages, inputs)
    assert seen == ["listing", "pruning"] and dict(final.files) == {"a": None}
    assert [(r.name, r.files_kept) for r in run.results] == [
        ("listing", 2),
        ("pruning", 1),
        ("check: would Spark's own scan read more?", 1),
    ]
    assert all(r.seconds >= 0 for r in run.results) and run.beyond_spark
    _, unchanged = run_stages((stages[0], Stage("nothing", lambda i, c: c, True, False)), inputs)
    assert not unchanged.beyond_spark  # a stage beyond Spark that removed nothing: Spark's scan reads the same


def test_a_stage_the_later_ones_make_unneeded_is_not_run_and_says_why() -> None:
    ran: list[str] = []

    def listing(inputs: PlanInputs, candidates: Candidates) -> Candidates:
        return Candidates.of(dict.fromkeys(inputs.scan.paths))

    def costly(inputs: PlanInputs, candidates: Candidates) -> Candidates:
        ran.append("costly")
        return candidates.dropped({"b"})

    inputs = PlanInputs(scan=_scan(("a", "b")), expr=AlwaysTrue(), metadata=None)  # type: ignore[arg-type]
    unneeded = Stage("costly", costly, True, False, unneeded=lambda i, c: "a later stage decides every row")
    final, run = run_stages((Stage("listing", listing, False, False), unneeded), inputs)
    assert ran == [] and dict(final.files) == {"a": None, "b": None}
    assert run.results[1].name == "costly" and run.results[1].skipped == "a later stage decides every row"
    assert run.results[0].skipped is None and not run.beyond_spark
    needed = Stage("costly", costly, True, False, unneeded=lambda i, c: None)
    final, run = run_stages((Stage("listing", listing, False, False), needed), inputs)
    assert ran == ["costly"] and dict(final.files) == {"a": None} and run.results[1].skipped is None


FIELDS = {
    "d": Field("d", 1, "date"),
    "ts": Field("ts", 2, "timestamptz"),
    "tn": Field("tn", 3, "timestamp"),
    "m": Field("m", 4, "decimal(10,2)"),
    "f": Field("f", 5, "double"),
    "s": Field("s", 6, "string"),
    "b": Field("b", 7, "binary"),
    "i": Field("i", 8, "int"),
}


def test_literals_take_the_column_type() -> None:
    assert literal_value("int", -1, "date") == datetime.date(1969, 12, 31)
    assert literal_value("int", 1, "timestamptz") == datetime.datetime(
        1970, 1, 1, 0, 0, 0, 1, tzinfo=datetime.timezone.utc
    )
    assert literal_value("int", 1, "timestamp") == datetime.datetime(1970, 1, 1, 0, 0, 0, 1)
    assert literal_value("decimal", "1.25", "decimal(10,2)") == decimal.Decimal("1.25")
    assert math.isnan(literal_value("float", "NaN", "double"))
    assert literal_value("float", "1.0E10", "double") == 1e10
    assert literal_value("binary", "0102", "binary") == b"\x01\x02"
    with pytest.raises(ValueError):
        literal_value("string", "x", "uuid")  # no value zskip can order: the condition never prunes


def test_iceberg_expressions_become_the_ir() -> None:
    # a term as Spark pushed it (another case, in a case-insensitive session) names the field as the
    # table spells it; a term no field answers never prunes
    by_term = {**FIELDS, "I": FIELDS["i"]}
    eq = {"op": "eq", "term": "I", "literals": [["int", 5]]}
    assert expr_from_json(eq, by_term) == Compare("i", "=", 5)
    assert isinstance(expr_from_json(eq, FIELDS), Opaque)
    both = {"op": "and", "left": eq, "right": {"op": "not_null", "term": "s"}}
    assert expr_from_json(both, by_term) == And((Compare("i", "=", 5), Not(IsNull("s"))))
    assert expr_from_json({"op": "not_in", "term": "i", "literals": [["int", 1], ["int", 2]]}, FIELDS) == Not(
        In("i", (1, 2))
    )
    assert expr_from_json({"op": "starts_with", "term": "s", "literals": [["string", "ab"]]}, FIELDS) == StartsWith(
        "s", "ab"
    )
    assert expr_from_json({"op": "true"}, FIELDS) == AlwaysTrue()
    assert expr_from_json({"op": "false"}, FIELDS) == AlwaysFalse()
    assert isinstance(expr_from_json({"op": "is_nan", "term": "f"}, FIELDS), Opaque)
    assert isinstance(expr_from_json({"op": "eq", "term": "zz", "literals": [["int", 1]]}, FIELDS), Opaque)
    assert isinstance(
        expr_from_json({"op": "starts_with", "term": "b", "literals": [["binary", "01"]]}, FIELDS), Opaque
    )


def test_arrow_types_follow_what_spark_gives_iceberg_columns() -> None:
    import pyarrow as pa

    assert arrow_type("timestamptz") == pa.timestamp("us", tz="UTC")
    assert arrow_type("decimal(38,10)") == pa.decimal128(38, 10)
    assert arrow_type("uuid") is None
