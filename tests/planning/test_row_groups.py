"""The residual that makes Iceberg's reader skip ruled-out row groups keeps every kept one."""

from __future__ import annotations

import json

from pyspark.sql.types import DoubleType, IntegerType, StringType

from zskip.planning.footers import ColumnStats, Footer
from zskip.planning.row_groups import row_group_filter


def footer(boxes: list[tuple[int, int]]) -> Footer:
    stats = tuple({1: ColumnStats(lo, hi, True, 0, 10)} for lo, hi in boxes)
    return Footer(tuple(10 for _ in boxes), tuple((i * 100, 100) for i in range(len(boxes))), stats)


def test_disjoint_row_groups_are_read_only_when_kept() -> None:
    text, read = row_group_filter(footer([(0, 9), (10, 19), (20, 29), (30, 39)]), (1, 3), {"a": (1, IntegerType())})
    assert read == (1, 3)
    expression = json.loads(text)
    assert expression["type"] == "or" and '"term": "a"' in text and '"value": 19' in text


def test_overlapping_boxes_are_read_too() -> None:
    _, read = row_group_filter(footer([(0, 15), (10, 19), (30, 39)]), (1,), {"a": (1, IntegerType())})
    assert read == (0, 1)


def test_without_usable_statistics_the_whole_file_is_read() -> None:
    text, read = row_group_filter(footer([(0, 9), (10, 19)]), (1,), {"x": (1, DoubleType())})
    assert text is None and read == (0, 1)
    text, read = row_group_filter(footer([(0, 9), (10, 19)]), (1,), {"s": (2, StringType())})
    assert text is None and read == (0, 1)  # no statistics for field 2


def test_row_groups_the_readers_own_statistics_filter_skips_are_not_counted() -> None:
    # group 0 overlaps the kept box, but the query's own min/max test already rules it out
    _, read = row_group_filter(footer([(0, 15), (10, 19), (30, 39)]), (1,), {"a": (1, IntegerType())}, readable=(1, 2))
    assert read == (1,)


def test_no_residual_when_zskip_rules_out_only_what_the_reader_skips_anyway() -> None:
    text, read = row_group_filter(
        footer([(0, 9), (10, 19), (20, 29)]), (1, 2), {"a": (1, IntegerType())}, readable=(1, 2)
    )
    assert text is None and read == (1, 2)
