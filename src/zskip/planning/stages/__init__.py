"""The planning stages, one module each (run in the order ``zskip.planning.pipeline.STAGES`` gives)."""

from zskip.planning.stages.curve_range import curve_range, curve_unneeded
from zskip.planning.stages.iceberg_files import iceberg_files
from zskip.planning.stages.indexes import indexes, indexes_unneeded
from zskip.planning.stages.join_keys import join_keys
from zskip.planning.stages.read_ranges import read_ranges
from zskip.planning.stages.row_group_minmax import row_group_minmax

__all__ = [
    "curve_range",
    "curve_unneeded",
    "iceberg_files",
    "indexes",
    "indexes_unneeded",
    "join_keys",
    "read_ranges",
    "row_group_minmax",
]
