"""``zskip explain`` and ``zskip query``."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from zskip.cli.main import Context
from zskip.units import format_bytes


@click.command()
@click.argument("table")
@click.argument("where")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.pass_obj
def explain(ctx: Context, table: str, where: str, as_json: bool) -> None:
    """Show which files and row groups a read of TABLE filtered by WHERE reads, stage by stage."""
    from zskip.planning import explain as run

    result = run(ctx.spark(), table, where)
    if as_json:
        click.echo(result.to_json())
        return
    console = Console()
    console.print(f"[bold]{table}[/] where {where}")
    console.print(f"predicate zskip reasons about: {result.predicate}")
    stages = Table(title="planning stages (each can only remove candidates)")
    for name in ("stage", "files kept", "row groups kept", "ms"):
        stages.add_column(name, justify="left" if name == "stage" else "right")
    stages.add_row(
        "Spark: parse, analyse, push the filter", str(result.files_total), "", f"{result.analysis_seconds * 1000:.0f}"
    )
    for stage in result.stages:
        groups = "" if stage.row_groups_kept is None else str(stage.row_groups_kept)
        stages.add_row(stage.name, str(stage.files_kept), groups, f"{stage.seconds * 1000:.0f}")
    console.print(stages)
    console.print(
        f"reads {result.files_read} of {result.files_total} files ({result.row_groups_read} of "
        f"{result.row_groups_total} row groups), "
        f"{result.rows_read:,} rows, {format_bytes(result.bytes_read)}; "
        f"planned in {result.planning_seconds * 1000:.0f} ms (Spark's analysis "
        f"{result.analysis_seconds * 1000:.0f} ms, zskip's stages "
        f"{(result.planning_seconds - result.analysis_seconds) * 1000:.0f} ms)"
    )
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)
    if result.analysis_seconds > 2:
        console.print(
            "[dim]the first query of a session also starts Spark's catalog and compiles code; "
            "later ones analyse in milliseconds[/]"
        )


@click.command()
@click.argument("sql")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=0), help="Rows to print.")
@click.pass_obj
def query(ctx: Context, sql: str, limit: int) -> None:
    """Run a query (SELECT, WITH, VALUES, TABLE) with zskip planning every Iceberg scan in it; print the first rows.

    Statements that change or inspect something (DDL, DML, CALL, SET, CACHE, ...) are refused before
    Spark sees them: run those with spark-sql.
    """
    from zskip.planning import sql as run

    frame = run(ctx.spark(), sql)
    rows = frame.limit(limit).collect()
    out = Table()
    for name in frame.columns:
        out.add_column(name)
    for row in rows:
        out.add_row(*["NULL" if v is None else str(v) for v in row])
    Console().print(out)
