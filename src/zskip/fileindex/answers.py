"""What an index says about one condition in one data file: exactly which rows make it TRUE and
which FALSE, or only which row groups might hold a TRUE row.

Exact answers combine exactly under AND, OR and NOT (a row in neither set is NULL, SQL's unknown);
an answer of row groups combines under AND and OR, and under NOT says nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pyroaring import BitMap

__all__ = ["Answer", "ExactRows", "MaybeRowGroups", "RestNotRead", "row_groups_of"]


class RestNotRead(Exception):
    """An index loaded from its blob's head alone was asked what only the rest of the blob answers
    (``IndexKind.head_length``): the caller reads the rest and asks again."""


@dataclass(frozen=True)
class ExactRows:
    """The rows where a condition is TRUE and where it is FALSE."""

    true: BitMap
    false: BitMap


@dataclass(frozen=True)
class MaybeRowGroups:
    """Per row group, whether it might hold a row where a condition is TRUE."""

    groups: np.ndarray  # bool, one per row group


Answer = ExactRows | MaybeRowGroups


def row_groups_of(answer: Answer, row_group_starts: tuple[int, ...]) -> np.ndarray:
    """Which row groups (starting at ``row_group_starts``, the last entry the file's rows) hold a TRUE row."""
    count = len(row_group_starts) - 1
    if isinstance(answer, MaybeRowGroups):
        return answer.groups
    if not answer.true:  # the usual answer for most files: no row
        return np.zeros(count, dtype=bool)
    if len(answer.true) > 64 * count:  # many rows: count each row group's instead
        starts = row_group_starts
        return np.array([answer.true.range_cardinality(starts[g], starts[g + 1]) > 0 for g in range(count)], dtype=bool)
    # the row groups a few TRUE rows fall in, all at once (rows are ascending)
    rows = np.frombuffer(answer.true.to_array(), dtype=np.uint32)
    holding = np.zeros(count, dtype=bool)
    found = np.searchsorted(np.asarray(row_group_starts, dtype=np.int64), rows, side="right") - 1
    holding[found[(found >= 0) & (found < count)]] = True
    return holding
