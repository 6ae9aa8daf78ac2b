"""Plans made without something zskip could not read (a damaged index, an unreadable store or footer copy).

Such a plan is sound (what could not be read rules nothing out) but weaker than it should be, and
the next plan tries the read again.  The places that go on without a read call ``note``; whoever keeps
plans for later (zskip's optimizer rule remembers answers) compares ``count()`` before and after
planning and keeps none made meanwhile.
"""

from __future__ import annotations

__all__ = ["count", "note"]

_notes = 0


def note() -> None:
    """Say that a plan is being made without something it could not read."""
    global _notes
    _notes += 1  # two notes at once may count as one: the count still changes, which is what is asked


def count() -> int:
    """How many notes were made in this process so far (never goes down)."""
    return _notes
