"""zskip's SQL procedures as declared to the JVM: every verb with the API's argument names, SQL types
Spark parses, and refusals said in one line before anything runs."""

from __future__ import annotations

import inspect
import json

import pytest

import zskip
from zskip.procedures import PROCEDURES, call, specs

API = {
    "optimize": zskip.optimize,
    "create_index": zskip.create_index,
    "refresh_indexes": zskip.refresh_indexes,
    "drop_index": zskip.drop_index,
    "list_indexes": zskip.list_indexes,
    "maintain": zskip.maintain,
    "status": zskip.status,
    "vacuum": zskip.vacuum,
    "advise": zskip.advise,
}
SQL_ONLY = {"dimensions", "fpp", "max_groups", "options"}  # SQL spellings of what the API takes inside other arguments


def test_every_verb_is_a_procedure_with_the_apis_argument_names() -> None:
    assert set(PROCEDURES) == set(API)
    for name, procedure in PROCEDURES.items():
        accepted = set(inspect.signature(API[name]).parameters) - {"spark", "progress", "options"}
        declared = {p.name for p in procedure.parameters}
        assert declared - SQL_ONLY <= accepted, (name, declared - accepted)
        assert procedure.parameters[0].name == "table" and procedure.parameters[0].required


def test_the_declarations_are_json_with_the_types_the_jvm_converts() -> None:
    declared = json.loads(specs())
    for name, spec in declared.items():
        assert spec["description"] and spec["result"], name
        for item in spec["parameters"] + spec["result"]:
            assert item["type"] in {
                "string", "int", "bigint", "double", "boolean", "array<string>", "map<string,double>",
                "map<string,string>",
            }, (name, item)  # fmt: skip
    # the caller's session refreshes its copy of the table after the procedures that may change it
    assert sorted(name for name, spec in declared.items() if not spec["writes"]) == ["list_indexes", "status"]


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("rewrite", "{}", "zskip has no procedure 'rewrite'"),
        ("optimize", '{"table": "t", "order": ["a"]}', "optimize takes no argument order"),
    ],
)
def test_a_call_zskip_cannot_make_is_refused_in_one_line(name: str, arguments: str, said: str) -> None:
    answer = json.loads(call(None, name, arguments))  # type: ignore[arg-type]  # refused before Spark is needed
    assert answer["refused"] is True and answer["error"] == "InvalidOptionError", answer
    assert said in answer["message"] and "\n" not in answer["message"]
