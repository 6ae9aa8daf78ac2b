"""A rich progress bar that zskip's long operations report to through a ``progress`` callback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.progress import Progress as Bars

from zskip.display import Progress

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(description: str) -> Iterator[Progress]:
    """Yields ``callback(stage, done, total)``; each stage gets its own bar (what a stage adds in
    parentheses, such as ``indexing files (3 requests retried)``, changes its bar's text).

    The bars appear with the first report, so work that fails at once (bad input) prints only its error;
    they go to standard error, so standard output holds only the result (``--json`` can be piped).
    """
    bars = Bars(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
        console=Console(stderr=True),
    )
    tasks: dict[str, TaskID] = {}

    def report(stage: str, done: int, total: int) -> None:
        if not tasks:
            bars.start()
        key = stage.split(" (", 1)[0]
        if key not in tasks:
            tasks[key] = bars.add_task(f"{description}: {stage}", total=total)
        bars.update(tasks[key], completed=done, total=total, description=f"{description}: {stage}")

    try:
        yield report
    finally:
        if tasks:
            bars.stop()
