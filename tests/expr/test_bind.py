"""Binding a predicate to field ids, and the pure pieces that name columns by field id."""

from __future__ import annotations

import pyarrow as pa
import pytest

from zskip.expr import And, Between, Compare, In, IsNull, Not, Opaque, Or, StartsWith, bind, columns_of, is_bound
from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.manifest import ENTRY_SCHEMA, IndexManifest
from zskip.iceberg.table import schema_fields
from zskip.planning.curve import keys_agree
from zskip.planning.workload import predicate_for_schema


def test_bind_replaces_exact_names_with_field_ids() -> None:
    expr = And(
        (Compare("a", "=", 5), Or((IsNull("B"), Not(In("b", (1, 2))))), StartsWith("s", "x"), Between("a", 1, 2))
    )
    bound = bind(expr, {"a": 1, "b": 2, "s": 7})
    assert columns_of(bound) == {1, 2, 7}
    assert is_bound(bound) and not is_bound(expr)  # "B" is not "b": it became opaque text, never prunes
    assert isinstance(bound.children[1].children[0], Opaque)
    assert bound.children[0] == Compare(1, "=", 5)
    assert bind(bound, {}) == bound  # bound leaves stay bound


def test_keys_agree_only_where_order_keys_are_unchanged() -> None:
    assert keys_agree("int", "long") and keys_agree("float", "double") and keys_agree(None, "string")
    assert keys_agree("decimal(9,2)", "decimal(12, 2)")
    assert not keys_agree("decimal(9,2)", "decimal(20,2)")  # past 18 digits decimals are keyed as floats
    assert not keys_agree("date", "timestamp") and not keys_agree("int", "string")


def test_logged_predicates_follow_field_ids_to_todays_names() -> None:
    text = "`#3` = 'it\\'s `#3`' AND `#12` > 5"
    assert predicate_for_schema(text, {3: "x y", 12: "b`c"}) == "`x y` = 'it\\'s `#3`' AND `b``c` > 5"
    assert predicate_for_schema(text, {3: "x"}) is None  # field 12 left the table


def test_schema_fields_walks_nested_structs() -> None:
    schema = {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "a.b", "required": False, "type": "int"},
            {
                "id": 2,
                "name": "st",
                "required": False,
                "type": {"type": "struct", "fields": [{"id": 3, "name": "x", "required": False, "type": "long"}]},
            },
            {"id": 4, "name": "n", "required": False, "type": "string", "initial-default": "z"},
        ],
    }
    found = {f.name: f for f in schema_fields(schema)}
    assert (found["a.b"].id, found["a.b"].nested) == (1, False)
    assert (found["st.x"].id, found["st.x"].nested, found["st.x"].type) == (3, True, "long")
    assert found["n"].has_default and not found["a.b"].has_default


def test_a_manifest_by_names_is_tied_to_the_fields_they_meant() -> None:
    entries = ENTRY_SCHEMA.empty_table().to_pylist()
    row = {n: None for n in ENTRY_SCHEMA.names} | {"data_file": "f", "column": "a", "kind": "bitmap", "rows": 1}
    table = pa.Table.from_pylist([*entries, row, row | {"column": "gone"}], schema=ENTRY_SCHEMA)
    legacy = IndexManifest((IndexDefinition("a", "bitmap"), IndexDefinition("gone", "bitmap")), table)
    resolved = legacy.resolved({"a": 5}.get)
    assert [d.field_id for d in resolved.definitions] == [5, None]
    assert resolved.entries["field_id"].to_pylist() == [5, None]
    assert resolved.indexed_files(resolved.definitions[0]) == {"f"}
    assert resolved.indexed_files(resolved.definitions[1]) == set()
    assert resolved.only_fields({5}).definitions == (resolved.definitions[0],)
    with pytest.raises(ValueError):
        IndexManifest.from_bytes(b"not a manifest")
