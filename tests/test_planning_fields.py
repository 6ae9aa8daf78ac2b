"""The planning-fields property values zskip's rule reads (jvm: io.zskip.rule.PlanningFields)."""

import numpy as np

from zskip.curves.dimension import DimensionMapping
from zskip.curves.rank import RawMapping
from zskip.curves.spec import ClusteringSpec, ColumnMapping
from zskip.tablefiles.planning_fields import clustering_fields, fields_value


def test_the_value_names_each_id_once_in_order_then_the_file() -> None:
    assert fields_value([4, 1, 4], "s3://b/t/zskip/clustering-@1.puffin") == "1,4@s3://b/t/zskip/clustering-@1.puffin"
    assert fields_value([], "/t/m.puffin") == "@/t/m.puffin"


def test_a_column_known_only_by_name_leaves_the_decision_to_the_planner() -> None:
    assert fields_value([1, None], "/t/s.puffin") is None


def test_the_value_ordered_columns_leave_out_a_dimension_s_and_a_column_known_by_name() -> None:
    spec = ClusteringSpec(
        curve="zorder",
        bits=8,
        columns=(
            ColumnMapping("a", RawMapping(bits=8, width=32), field_id=1, iceberg_type="int"),
            ColumnMapping(
                "k",
                DimensionMapping(bits=8, table="db.dim", key="k", by=("g",), keys=np.arange(4, dtype=np.uint64)),
                field_id=4,
            ),
        ),
    )
    assert clustering_fields(spec, "/t/s.puffin") == {
        "zskip.clustering.field-ids": "1,4@/t/s.puffin",
        "zskip.clustering.value-ordered-field-ids": "1@/t/s.puffin",
        "zskip.clustering.curve": "zorder@/t/s.puffin",
    }
    unnamed = ClusteringSpec(curve="zorder", bits=8, columns=(ColumnMapping("a", RawMapping(bits=8)),))
    assert clustering_fields(unnamed, "/t/s.puffin") == {}
