"""Plans made without something zskip could not read (a damaged index, an unreadable store or footer copy).

Such a plan is sound (what could not be read rules nothing out) but weaker than it should be, and
the next plan tries the read again.  The places that go on without a read call ``note`` (``tolerate``
with the failure); whoever keeps plans for later (zskip's optimizer rule remembers answers) compares
``count()`` before and after planning and keeps none made meanwhile.

A store that kept failing after every retry is not gone on without: each further read would wait as
long before it failed too, so ``tolerate`` raises the failure, and the query runs as Spark plans it.
"""

from __future__ import annotations

from zskip.retries import kept_failing

__all__ = ["count", "note", "tolerate"]

_notes = 0


def note() -> None:
    """Say that a plan is being made without something it could not read."""
    global _notes
    _notes += 1  # two notes at once may count as one: the count still changes, which is what is asked


def count() -> int:
    """How many notes were made in this process so far (never goes down)."""
    return _notes


def tolerate(exc: BaseException) -> None:
    """Go on without what ``exc`` kept from being read (``note``), unless the store kept failing after
    every retry its settings allow: then ``exc`` is raised."""
    if kept_failing(exc):
        raise exc
    note()
