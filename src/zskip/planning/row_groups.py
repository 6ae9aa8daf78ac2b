"""Reading only some row groups of a file: the byte ranges Iceberg's reader is pointed at.

Iceberg's staged scan splits every staged task again (a row-group split task refuses a second
split), so a row group cannot be staged as a split of its file.  But a task over a copy of the
file's metadata that declares the file to end where a run of kept row groups ends, with one split
offset where the run starts, splits into exactly that byte range; Iceberg's Parquet reader then
reads the row groups whose midpoint lies in it, and opens the file by path (its real length, so
the footer is found).  So each run of consecutive kept row groups becomes one staged task
(``zskip.iceberg.tasks.row_group_tasks``).  Were a later Iceberg to open files at their declared
length, Parquet's footer check would fail loudly (no wrong rows), and the integration tests that
compare scanned rows with planned ones would say so.
"""

from __future__ import annotations

from collections.abc import Sequence

from zskip.planning.footers import Footer

__all__ = ["byte_runs"]


def byte_runs(footer: Footer, groups: Sequence[int]) -> list[tuple[int, int]]:
    """``(first byte, end byte)`` of each run of consecutive row groups among ``groups``."""
    runs: list[list[int]] = []
    for g in sorted(set(groups)):
        if runs and runs[-1][1] == g - 1:
            runs[-1][1] = g
        else:
            runs.append([g, g])
    return [(footer.ranges[a][0], footer.ranges[b][0] + footer.ranges[b][1]) for a, b in runs]
