"""``zskip explain`` and ``zskip query``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table

from zskip.cli.context import Context
from zskip.units import format_bytes

if TYPE_CHECKING:
    from zskip.planning.read import Explain


@click.command()
@click.argument("table", required=False)
@click.argument("where", required=False)
@click.option("--sql", "query", default=None, help="Explain every Iceberg scan of this SELECT instead of TABLE WHERE.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option(
    "--analyze",
    is_flag=True,
    help=(
        "Also run the read (TABLE WHERE), or the query (--sql, with zskip in it as in every query: aggregates "
        "answered from statistics and cubes), and report what its scans read, measured: rows, files, bytes."
    ),
)
@click.pass_obj
def explain(
    ctx: Context, table: str | None, where: str | None, query: str | None, as_json: bool, analyze: bool
) -> None:
    """Show which files and row groups a read of TABLE filtered by WHERE reads, stage by stage.

    With --sql "SELECT ...", every Iceberg scan of the query is explained, joins included: a fact
    scan joined to a filtered dimension shows a "join keys" stage and a note per dimension.
    """
    from zskip.errors import InvalidOptionError
    from zskip.planning import explain as run
    from zskip.planning import explain_sql

    if query is not None and (table is not None or where is not None):
        raise InvalidOptionError('give either TABLE WHERE or --sql "SELECT ...", not both')
    if query is None and (table is None or where is None):
        raise InvalidOptionError('give TABLE and WHERE (zskip explain t "a > 5"), or --sql "SELECT ..."')
    if query is not None and analyze:
        _print_analyzed(ctx, query, as_json)
        return
    if query is not None:
        results = explain_sql(ctx.spark(), query)
        console = _scans_console(results, as_json)
        if console is None:
            return
        for result in results:
            _print_explain(console, f"[bold]{result.table}[/] (a scan of the query)", result)
        return
    assert table is not None and where is not None
    result = run(ctx.spark(), table, where, analyze=analyze)
    if as_json:
        click.echo(result.to_json())
        return
    _print_explain(Console(), f"[bold]{table}[/] where {where}", result)


def _scans_console(results: Sequence[Any], as_json: bool) -> Console | None:
    """Where a query's scans are printed (``None``: printed already, as a JSON list)."""
    if as_json:
        click.echo("[" + ",\n".join(r.to_json() for r in results) + "]")
        return None
    console = Console()
    if not results:
        console.print("the query reads no Iceberg table")
    return console


def _print_analyzed(ctx: Context, query: str, as_json: bool) -> None:
    """``--sql ... --analyze``: the query run with zskip on, each table's scans as zskip noted and measured."""
    from zskip.planning.analyze_sql import analyze_sql

    results = analyze_sql(ctx.spark(), query)
    console = _scans_console(results, as_json)
    if console is None:
        return
    for result in results:
        console.print(f"[bold]{result.table}[/] (the query's scans of it, run with zskip on)")
        for note in result.notes or ("zskip left its scans as Spark planned them",):
            console.print(note, highlight=False, soft_wrap=True)
        console.print(
            f"measured: its scans produced {result.rows_scanned:,} rows (numOutputRows) from "
            f"{result.files_scanned:,} files, "
            + ("" if result.row_groups_scanned is None else f"{result.row_groups_scanned:,} row groups, ")
            + f"{format_bytes(result.bytes_scanned)} in their tasks"
            + (f"; {result.requests_retried:,} of zskip's requests to the store retried" if result.requests_retried
               else ""),
            soft_wrap=True,
        )  # fmt: skip


def _print_explain(console: Console, title: str, result: Explain) -> None:
    console.print(title)
    console.print(f"predicate zskip reasons about: {result.predicate}")
    stages = Table(title="planning stages (each can only remove candidates)")
    for name in ("stage", "files kept", "row groups kept", "ms"):
        stages.add_column(name, justify="left" if name == "stage" else "right")
    stages.add_row(
        "Spark: parse, analyse, push the filter", str(result.files_total), "", f"{result.analysis_seconds * 1000:.0f}"
    )
    for stage in result.stages:
        groups = "" if stage.row_groups_kept is None else str(stage.row_groups_kept)
        name = f"{stage.name} (not run: {stage.skipped})" if stage.skipped else stage.name
        stages.add_row(name, str(stage.files_kept), groups, f"{stage.seconds * 1000:.0f}")
    console.print(stages)
    console.print(
        f"reads {result.files_read} of {result.files_total} files ({result.row_groups_read} of "
        f"{result.row_groups_total} row groups), "
        f"{result.rows_planned:,} rows, {format_bytes(result.bytes_planned)} planned; "
        f"planned in {result.planning_seconds * 1000:.0f} ms (Spark's analysis "
        f"{result.analysis_seconds * 1000:.0f} ms, zskip's stages "
        f"{(result.planning_seconds - result.analysis_seconds) * 1000:.0f} ms)"
    )
    if result.rows_scanned is not None:
        console.print(
            f"measured: the scan produced {result.rows_scanned:,} rows (numOutputRows) from "
            f"{result.files_scanned:,} files, "
            + ("" if result.row_groups_scanned is None else f"{result.row_groups_scanned:,} row groups, ")
            + f"{format_bytes(result.bytes_scanned or 0)} in its tasks"
            + (f"; {result.requests_retried:,} of zskip's requests to the store retried" if result.requests_retried
               else "")
        )  # fmt: skip
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
