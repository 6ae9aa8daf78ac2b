"""``zskip advise`` (choose a layout and indexes from the workload), ``zskip maintain`` (cluster and
index new data, once or every interval), ``zskip status``
(coverage of a table by its clustering and indexes) and ``zskip workload`` (the scans zskip planned on it)."""

from __future__ import annotations

import json
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from zskip.cli.context import Context
from zskip.cli.progress import progress_bar


@click.command()
@click.argument("table")
@click.option(
    "--queries",
    type=click.Path(dir_okay=False),
    help="A file of SQL queries (separated by ;) to advise on instead of TABLE's workload log.",
)
@click.option(
    "--max-columns",
    default=6,
    show_default=True,
    type=click.IntRange(1, 6),
    help="Axes per layout (columns and dimensions), at most 6; each more multiplies the layouts to simulate.",
)
@click.option("--target-file-size", help="File size optimize would write (default: the recorded layout's, else 128MB).")
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1), help="Candidates to list.")
@click.option("--apply", is_flag=True, help="Optimize to the best candidate and build its indexes.")
@click.option(
    "--no-slower-than",
    metavar="current|TABLE",
    help="Rank first the layouts forecast to make no query slower than on TABLE (or on TABLE as it is now: "
    "current), the cheapest reads among them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the advice as JSON.")
@click.pass_obj
def advise(
    ctx: Context,
    table: str,
    queries: str | None,
    max_columns: int,
    target_file_size: str | None,
    top: int,
    apply: bool,
    no_slower_than: str | None,
    as_json: bool,
) -> None:
    """Rank layouts of TABLE (columns, curve, mapping) and indexes by what its workload would read,
    simulated on a sample without rewriting anything; the current layout is a candidate too.

    The workload is every scan zskip planned on TABLE (see zskip workload), or --queries FILE.
    """
    from zskip.maintenance import advise as run
    from zskip.maintenance.advise import read_queries

    if queries is not None:
        read_queries(queries)  # a missing or empty file fails before Spark starts
    with progress_bar("advise") as report:
        result = run(
            ctx.spark(),
            table,
            queries=queries,
            max_columns=max_columns,
            target_file_size=target_file_size,
            top=top,
            apply=apply,
            no_slower_than=no_slower_than,
            progress=report,
        )
    if as_json:
        click.echo(result.to_json())
        return
    Console(width=max(Console().width, 140)).print(str(result), highlight=False, markup=False)


@click.command()
@click.argument("table")
@click.option("--watch", is_flag=True, help="Keep running, one cycle per interval, until Ctrl-C or SIGTERM.")
@click.option("--interval", default="5m", show_default=True, help="Time between the starts of cycles (30s, 5m, 1h).")
@click.option("--cycles", type=click.IntRange(min=1), help="With --watch: stop after this many cycles.")
@click.option("--json", "as_json", is_flag=True, help="Print each cycle as one line of JSON.")
@click.pass_obj
def maintain(ctx: Context, table: str, watch: bool, interval: str, cycles: int | None, as_json: bool) -> None:
    """Cluster TABLE's new files under its recorded layout and refresh its indexes, incrementally.

    With --watch, one cycle per interval until stopped: the first Ctrl-C (or SIGTERM) lets the cycle
    under way finish and then stops; a second Ctrl-C abandons it, and the table stays as it was.
    Commit races with other writers are retried; each cycle is logged.
    """
    from zskip.maintenance import maintain as run_once
    from zskip.maintenance import maintain_cycles

    def show(result: Any) -> None:
        click.echo(result.to_json() if as_json else str(result))

    from zskip.units import parse_duration

    if cycles is not None and not watch:
        raise click.UsageError("--cycles needs --watch")
    parse_duration(interval, name="--interval")  # a bad interval fails before Spark starts
    spark = ctx.spark()
    if not watch:
        with progress_bar("maintain") as report:
            show(run_once(spark, table, progress=report))
        return
    stop = threading.Event()
    with _stop_on_signals(stop):
        for result in maintain_cycles(spark, table, interval=interval, cycles=cycles, stop=stop):
            show(result)


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """The first SIGINT or SIGTERM sets ``stop`` (the cycle under way finishes); a second SIGINT goes
    to the handler before (PySpark's cancels the running jobs and raises KeyboardInterrupt)."""
    previous: dict[int, Any] = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}

    def handle(number: int, frame: Any) -> None:
        if stop.is_set():
            before = previous[number]
            if callable(before):
                before(number, frame)
            raise KeyboardInterrupt
        stop.set()
        click.echo("stopping after the cycle under way (Ctrl-C again to abandon it)", err=True)

    for number in previous:
        signal.signal(number, handle)
    try:
        yield
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


@click.command()
@click.argument("table")
@click.option("--drift", is_flag=True, help="Also ask the advisor whether the recorded workload drifted (seconds).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def status(ctx: Context, table: str, drift: bool, as_json: bool) -> None:
    """Share of TABLE's rows clustered under its current spec, each index's coverage, unclustered and
    unindexed bytes, and when the last optimize committed; with --drift, whether another layout would
    serve the recorded workload better (zskip advise)."""
    from zskip.maintenance import status as run

    result = run(ctx.spark(), table, drift=drift)
    if as_json:
        click.echo(result.to_json())
        return
    Console().print(str(result), highlight=False, markup=False)


@click.command()
@click.argument("table")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=0), help="Newest scans to list.")
@click.option("--json", "as_json", is_flag=True, help="Print the listed scans as JSON lines.")
@click.pass_obj
def workload(ctx: Context, table: str, limit: int, as_json: bool) -> None:
    """The scans zskip planned on TABLE (its workload log): how often each column is filtered, and
    the newest scans with the files and row groups they read (a star query's scan with the filtered
    dimensions it was joined to)."""
    from zskip.planning.workload import flush_workload
    from zskip.planning.workload import workload as read

    flush_workload()
    log = read(ctx.spark(), table)
    newest = log.slice(max(0, log.num_rows - limit)).to_pylist() if limit else []
    if as_json:
        for row in newest:
            click.echo(json.dumps(row, default=str))
        return
    console = Console(width=max(Console().width, 140))
    counts = Counter(column for columns in log.column("columns").to_pylist() for column in columns)
    filtered = ", ".join(f"{name} {count:,}" for name, count in counts.most_common())
    console.print(f"[bold]{table}[/]: {log.num_rows:,} scans recorded; columns filtered: {filtered or 'none'}")
    report = Table(title=f"newest {len(newest)} scans")
    for name in ("recorded at (UTC)", "predicate", "files read", "row groups read", "planning ms"):
        report.add_column(name, justify="left" if name in ("recorded at (UTC)", "predicate") else "right")
    for row in newest:
        report.add_row(
            str(row["recorded_at"])[:19],
            _scan_filter(row),
            f"{row['files_read']:,} of {_count(row['files_total'])}",
            f"{row['row_groups_read']:,} of {_count(row['row_groups_total'])}",
            f"{1000 * float(row['planning_seconds']):.1f}",
        )
    console.print(report)


def _scan_filter(row: dict[str, Any]) -> str:
    """A logged scan's own filter, then each filtered dimension it was joined to and that filter."""
    joins = [f"{j['dimension'].rsplit('.', 1)[-1]}: {j['filter']}" for j in row.get("joins") or ()]
    return "; ".join([str(row["predicate"]), *joins])


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"  # a record written without its snapshot's totals
