"""The planning-fields property values zskip's rule reads (jvm: zskip.bridge.PlanningFields)."""

from zskip.tablefiles.planning_fields import fields_value


def test_the_value_names_each_id_once_in_order_then_the_file() -> None:
    assert fields_value([4, 1, 4], "s3://b/t/zskip/clustering-@1.puffin") == "1,4@s3://b/t/zskip/clustering-@1.puffin"
    assert fields_value([], "/t/m.puffin") == "@/t/m.puffin"


def test_a_column_known_only_by_name_leaves_the_decision_to_the_planner() -> None:
    assert fields_value([1, None], "/t/s.puffin") is None
