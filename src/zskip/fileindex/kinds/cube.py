"""Cubes: per row group, the partial aggregates of chosen measures grouped by the indexed column; no
condition is answered, but grouped aggregates of every row group whose rows all match are
(``zskip.planning.cube_answers``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from zskip.expr import Leaf
from zskip.fileindex.answers import Answer
from zskip.fileindex.cube import MAX_GROUPS, CubeIndex, build_cube
from zskip.fileindex.kinds.base import IndexKind, KindOption

__all__ = ["CUBE", "CubeKind"]

_NUMBERS = ("tinyint", "smallint", "int", "bigint", "float", "double")
# the grouping column: one whose values compare exactly (not a float: NaN and -0.0 group as Spark
# decides), and that Spark can group by
_GROUPABLE = ("tinyint", "smallint", "int", "bigint", "boolean", "date", "timestamp", "timestamp_ntz", "string")
_BYTES_PER_GROUP = 6  # a row of key, rows and group id, compressed; measured on SSB (see the kind's docs)
_BYTES_PER_MEASURE = 10  # values, NaN, sum, min and max of one measure in one group, compressed


class CubeKind(IndexKind):
    name = "cube"
    blob_type = "zskip-cube-v1"
    exact = False
    answers_conditions = False
    takes_measures = True
    summary = (
        "per row group, counts, sums, minima and maxima of measure columns by each value of a column of few "
        "values: answers GROUP BY without reading"
    )
    options = (
        KindOption(
            "max_groups", MAX_GROUPS, 0, 1_000_001, "most values of the column a data file's cube keeps per row group"
        ),
    )
    absent_type = pa.int32()  # a column added since: NULL, one group

    def refuses(self, spark_type: str) -> str | None:
        if spark_type in _GROUPABLE or spark_type.startswith("decimal"):
            return None
        return f"a cube groups by a column of exact values (numbers but floats, strings, dates...), not {spark_type}"

    def refuses_measure(self, spark_type: str) -> str | None:
        if spark_type in _NUMBERS or spark_type.startswith("decimal"):
            return None
        return f"a cube's measures are number or decimal columns, not {spark_type}"

    def build(self, row_groups: Sequence[pa.ChunkedArray], options: Mapping[str, Any]) -> bytes:
        return self.build_with_measures(row_groups, (), options)

    def build_with_measures(
        self,
        row_groups: Sequence[pa.ChunkedArray],
        measures: Sequence[tuple[int, Sequence[pa.ChunkedArray]]],
        options: Mapping[str, Any],
    ) -> bytes:
        return build_cube(row_groups, measures, max_groups=int(self.option(options, "max_groups")))

    def load(self, data: bytes) -> CubeIndex:
        return CubeIndex.from_bytes(data)

    def answers_leaf(self, leaf: Leaf) -> bool:
        return False

    def answer(self, index: Any, leaf: Leaf, row_group_count: int) -> Answer | None:
        return None

    def forecast_bytes(self, rows: int, distinct: float, row_groups: int) -> int:
        groups = row_groups * max(1.0, min(distinct, MAX_GROUPS))
        return int(400 + groups * (_BYTES_PER_GROUP + 2 * _BYTES_PER_MEASURE))


CUBE = CubeKind()
