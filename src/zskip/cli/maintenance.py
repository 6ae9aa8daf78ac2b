"""``zskip status`` (coverage of a table by its clustering and indexes) and ``zskip workload``
(the scans zskip planned on it)."""

from __future__ import annotations

import json
from collections import Counter

import click
from rich.console import Console
from rich.table import Table

from zskip.cli.main import Context


@click.command()
@click.argument("table")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def status(ctx: Context, table: str, as_json: bool) -> None:
    """Share of TABLE's rows clustered under its current spec, each index's coverage, unclustered and
    unindexed bytes, and when the last optimize committed."""
    from zskip.maintenance import status as run

    result = run(ctx.spark(), table)
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
    the newest scans with the files and row groups they read."""
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
            str(row["predicate"]),
            f"{row['files_read']:,} of {row['files_total']:,}",
            f"{row['row_groups_read']:,} of {row['row_groups_total']:,}",
            f"{1000 * float(row['planning_seconds']):.1f}",
        )
    console.print(report)
