"""What the stages beyond Spark ruled out, as the pipeline keeps it (``zskip.planning.ruled_out``)."""

from __future__ import annotations

from zskip.planning.plan import Candidates
from zskip.planning.ruled_out import RuledOut

COUNTS = {"f": 4, "g": 3, "h": 2}.__getitem__


def test_files_leave_whole_or_lose_row_groups() -> None:
    before = Candidates.of({"f": None, "g": None, "h": (0, 1)})
    after = Candidates.of({"g": (0, 2)})
    ruled = RuledOut().adding(before, after, COUNTS)
    assert ruled.files == {"f"}  # all its row groups were in play, and it left
    assert dict(ruled.row_groups) == {"g": {1}, "h": {0, 1}}  # h left with only some in play
    assert ruled.as_candidates() == [("f", None), ("g", (1,)), ("h", (0, 1))]


def test_a_later_stage_adds_to_what_an_earlier_one_ruled_out() -> None:
    first = RuledOut().adding(Candidates.of({"f": None}), Candidates.of({"f": (0, 1, 3)}), COUNTS)
    second = first.adding(Candidates.of({"f": (0, 1, 3)}), Candidates.of({"f": (3,)}), COUNTS)
    assert dict(second.row_groups) == {"f": {0, 1, 2}}
    assert not RuledOut().adding(Candidates.of({"f": (1,)}), Candidates.of({"f": (1,)}), COUNTS)


def test_what_is_read_after_all_is_not_ruled_out() -> None:
    ruled = RuledOut().adding(Candidates.of({"f": None, "g": None}), Candidates.of({"f": (0, 3), "g": (0,)}), COUNTS)
    read = ruled.without(Candidates.of({"f": (0, 1, 2, 3), "g": (0, 1)}), COUNTS)  # runs joined
    assert dict(read.row_groups) == {"g": {2}}
    assert not ruled.without(Candidates.of({"f": None, "g": None}), COUNTS)
