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
    """Yields ``callback(stage, done, total)``; each stage gets its own bar.

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
        if stage not in tasks:
            tasks[stage] = bars.add_task(f"{description}: {stage}", total=total)
        bars.update(tasks[stage], completed=done, total=total)

    try:
        yield report
    finally:
        if tasks:
            bars.stop()
