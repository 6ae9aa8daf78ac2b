"""Sums per row group: no condition is answered, but ``sum`` and ``avg`` of every row group whose rows
all match are (``zskip.planning.aggregate_answers``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from zskip.expr import Leaf
from zskip.fileindex.answers import Answer
from zskip.fileindex.kinds.base import IndexKind
from zskip.fileindex.sums import SumsIndex, build_sums

__all__ = ["SUMS", "SumsKind"]

# measured: 11.7 bytes per row group and column, Puffin-compressed (SSB lineorder at scale factor 1,
# 2,546 row groups, four measures: 118,708 bytes); Arrow's framing is shared by a file's row groups
BYTES_PER_ROW_GROUP = 12


class SumsKind(IndexKind):
    name = "sums"
    blob_type = "zskip-sums-v1"
    exact = False
    answers_conditions = False
    summary = "sums and non-NULL counts per row group of a number column: answers sum and avg without reading"
    absent_type = pa.int64()  # a column added since: no values, sums of 0

    def refuses(self, spark_type: str) -> str | None:
        numeric = spark_type in ("tinyint", "smallint", "int", "bigint", "float", "double") or spark_type.startswith(
            "decimal"
        )
        return None if numeric else f"a sums index takes a number or decimal column, not {spark_type}"

    def build(self, row_groups: Sequence[pa.ChunkedArray], options: Mapping[str, Any]) -> bytes:
        return build_sums(row_groups)

    def load(self, data: bytes) -> SumsIndex:
        return SumsIndex.from_bytes(data)

    def answers_leaf(self, leaf: Leaf) -> bool:
        return False

    def answer(self, index: Any, leaf: Leaf, row_group_count: int) -> Answer | None:
        return None

    def forecast_bytes(self, rows: int, distinct: float, row_groups: int) -> int:
        return 400 + BYTES_PER_ROW_GROUP * row_groups


SUMS = SumsKind()
