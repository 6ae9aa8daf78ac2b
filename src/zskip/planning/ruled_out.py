"""What the stages beyond Spark (join keys, curve, indexes) ruled out of a plan: whole files, and row
groups of the files they kept or narrowed.  The pipeline asks it one question at the end: would Spark's
own scan have read any of it (``zskip.planning.pipeline``)?"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from zskip.planning.plan import Candidates

__all__ = ["RuledOut"]


@dataclass(frozen=True)
class RuledOut:
    """Files ruled out whole, and per other file the row groups ruled out (never empty)."""

    files: frozenset[str] = frozenset()
    row_groups: Mapping[str, frozenset[int]] = field(default_factory=lambda: MappingProxyType({}))

    def __bool__(self) -> bool:
        return bool(self.files or self.row_groups)

    def adding(self, before: Candidates, after: Candidates, row_groups_of: Callable[[str], int]) -> RuledOut:
        """This and what ``after`` lost against ``before`` (``row_groups_of``: a file's row-group count).

        A file that leaves while all its row groups were in play is ruled out whole; one that leaves
        while only some were, or stays with fewer, loses those row groups."""
        files = set(self.files)
        groups = dict(self.row_groups)
        for path, had in before.files.items():
            kept = after.files.get(path, ())
            if path in files or kept == had:
                continue
            if path not in after.files and had is None:
                files.add(path)
                groups.pop(path, None)
                continue
            in_play = set(had) if had is not None else set(range(row_groups_of(path)))
            lost = in_play - (set(kept) if kept is not None else in_play)
            if lost:
                groups[path] = groups.get(path, frozenset()) | lost
        return RuledOut(frozenset(files), MappingProxyType(groups))

    def without(self, read: Candidates, row_groups_of: Callable[[str], int]) -> RuledOut:
        """This without what ``read`` reads after all (the read-ranges stage adds back row groups that
        join two runs of a kept file)."""
        groups = dict(self.row_groups)
        for path, kept in read.files.items():
            if path in groups:
                left = groups[path] - set(range(row_groups_of(path)) if kept is None else kept)
                if left:
                    groups[path] = frozenset(left)
                else:
                    del groups[path]
        return RuledOut(self.files, MappingProxyType(groups))

    def as_candidates(self) -> list[tuple[str, tuple[int, ...] | None]]:
        """Each file and what of it was ruled out (``None``: all of it), as candidates to ask about."""
        return [(path, None) for path in sorted(self.files)] + [
            (path, tuple(sorted(groups))) for path, groups in self.row_groups.items()
        ]
