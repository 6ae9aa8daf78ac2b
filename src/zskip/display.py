"""How zskip's results show themselves: a table in a notebook, aligned text in a terminal.

A result lists its fields as ``(label, text)`` rows (``display_rows``); ``Displayed`` turns them into
HTML for Jupyter (``_repr_html_``), text for ``print`` and IPython's terminal (``_repr_pretty_``).
The dataclass ``repr`` stays as it is, for code.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Displayed", "Progress", "html_table", "text_table"]

Rows = Sequence[tuple[str, str]]

# What long operations report to as they go: ``(stage, done, total)``, e.g. ``("indexing files", 40, 212)``
# (the command line draws it as a progress bar, ``zskip.cli.progress``).
Progress = Callable[[str, int, int], None]


def html_table(title: str, rows: Rows) -> str:
    """``rows`` as a two-column HTML table under ``title`` (every text escaped)."""
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
        f"<td style='text-align:left'>{html.escape(text)}</td></tr>"
        for label, text in rows
    )
    return f"<table><caption style='text-align:left'><b>{html.escape(title)}</b></caption>{body}</table>"


def text_table(title: str, rows: Rows) -> str:
    """``rows`` as aligned ``label  text`` lines under ``title``."""
    width = max((len(label) for label, _ in rows), default=0)
    return "\n".join([title, *(f"  {label.ljust(width)}  {text}" for label, text in rows)])


class Displayed:
    """Mixin for result dataclasses: subclasses give ``display_title`` and ``display_rows``."""

    def display_title(self) -> str:
        return type(self).__name__

    def display_rows(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return html_table(self.display_title(), self.display_rows())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))

    def __str__(self) -> str:
        return text_table(self.display_title(), self.display_rows())
