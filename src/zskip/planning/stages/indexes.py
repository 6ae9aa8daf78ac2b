"""The index stage: files and row groups that bloom filters or bitmaps prove cannot match go (unindexed files stay)."""

from __future__ import annotations

import functools

from zskip.planning.index_reading import apply_verdicts, holds_values, predicate_verdicts, worth_reading
from zskip.planning.plan import Candidates, PlanInputs
from zskip.planning.selectivity import RANGE_ROWS_SETTING
from zskip.storage import in_background

__all__ = ["indexes", "indexes_unneeded"]


def indexes(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """Files and row groups that bloom filters or bitmaps prove cannot match go (unindexed files stay;
    so do the files of a range predicate whose row groups all look too full of matches to be ruled
    out, see ``worth_reading``)."""
    manifest = inputs.metadata.manifest()
    if manifest is None or not candidates.files:
        return candidates
    if holds_values(inputs.expr):
        # the heads of an equality's bitmaps come first, and the footers of the files they keep (and of
        # one they rule out: whether Spark's own scan would read it) after: read those footers' copies
        # while the heads are read, not one more round trip after them (decoded when asked for)
        in_background([functools.partial(inputs.metadata.read_copies_ahead, list(candidates.files))])
    return apply_verdicts(inputs, candidates, predicate_verdicts(inputs, candidates, manifest))


def indexes_unneeded(inputs: PlanInputs, candidates: Candidates) -> str | None:
    """Why the index stage reads nothing, or ``None``: a range predicate whose every candidate row group
    is expected to hold matches, or whose bitmaps cost more than they could save (``worth_reading``
    keeps no file)."""
    manifest = inputs.metadata.manifest() if candidates.files else None
    if manifest is None or worth_reading(inputs, candidates, manifest):
        return None
    return (
        f"min/max expect at least {inputs.range_rows:g} matching rows in every row group, or the bitmaps of a "
        f"range cost more to read than the row groups they could rule out ({RANGE_ROWS_SETTING}=0 reads them "
        "all the same)"
    )
