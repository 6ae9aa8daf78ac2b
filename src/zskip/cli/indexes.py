"""``zskip index create|refresh|list|drop`` and ``zskip vacuum``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from zskip.cli.context import Context
from zskip.cli.progress import progress_bar
from zskip.fileindex.kinds import KINDS, KindOption
from zskip.units import format_bytes

KIND_HELP = "; ".join(f"{kind.name}: {kind.summary}" for kind in KINDS.values())


def _print_result(result, verb: str, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    if as_json:
        click.echo(result.to_json())
        return
    click.echo(
        f"{verb}: indexed {result.files_indexed} of {result.files_total} data files "
        f"({result.files_already_indexed} already indexed, {result.entries_dropped} stale entries dropped, "
        f"{format_bytes(result.index_bytes_written)} written) in {result.duration_seconds:.1f}s"
    )


def kind_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """One ``--<option>`` per option any index kind takes, its help naming the kinds that take it."""
    seen: dict[str, tuple[KindOption, list[str]]] = {}
    for kind in KINDS.values():
        for option in kind.options:
            seen.setdefault(option.name, (option, []))[1].append(kind.name)
    for name, (option, kinds) in reversed(seen.items()):
        command = click.option(
            f"--{name.replace('_', '-')}",
            type=click.FloatRange(min=option.low, max=option.high, min_open=True, max_open=True),
            default=None,
            help=f"{', '.join(kinds).capitalize()} only: {option.help} (default {option.default:g}).",
        )(command)
    return command


@click.group()
def index() -> None:
    """Build, refresh, list and drop skipping indexes (of the kinds --kind lists, stored in Puffin files)."""


@index.command()
@click.argument("table")
@click.argument("column")
@click.option("--kind", type=click.Choice(list(KINDS)), default=next(iter(KINDS)), show_default=True, help=KIND_HELP)
@kind_options
@click.option(
    "--measure",
    "measures",
    multiple=True,
    metavar="COLUMN",
    help="Cube only: a number column whose counts, sums, minima and maxima the cube keeps (repeat for more).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def create(
    ctx: Context, table: str, column: str, kind: str, measures: tuple[str, ...], as_json: bool, **given: float | None
) -> None:
    """Index COLUMN of every data file of TABLE.

    A cube groups by COLUMN: `zskip index create lake.ssb.lineorder lo_shipmode --kind cube --measure
    lo_revenue --measure lo_quantity` answers `SELECT lo_shipmode, sum(lo_revenue) ... GROUP BY
    lo_shipmode` from the row groups wholly inside the query's filter without reading them.
    """
    from zskip.indexing import create_index

    options = {name: value for name, value in given.items() if value is not None}
    with progress_bar(f"index {column} ({kind})") as report:
        result = create_index(
            ctx.spark(), table, column, kind=kind, measures=list(measures) or None, progress=report, **options
        )
    _print_result(result, "create", as_json)


@index.command()
@click.argument("table")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def refresh(ctx: Context, table: str, as_json: bool) -> None:
    """Index TABLE's new data files and forget files that left it."""
    from zskip.indexing import refresh_indexes

    with progress_bar("refresh") as report:
        result = refresh_indexes(ctx.spark(), table, progress=report)
    _print_result(result, "refresh", as_json)


@index.command(name="list")
@click.argument("table")
@click.option("--json", "as_json", is_flag=True, help="Print the indexes as JSON.")
@click.pass_obj
def list_(ctx: Context, table: str, as_json: bool) -> None:
    """Show TABLE's indexes, how many data files each covers, and their size."""
    from zskip.indexing import list_indexes

    found = list_indexes(ctx.spark(), table)
    if as_json:
        click.echo(json.dumps([asdict(i) for i in found], indent=2))
        return
    if not found:
        click.echo(f"{table} has no indexes; `zskip index create {table} COLUMN --kind bitmap` builds one")
        return
    report = Table(title=f"indexes of {table}")
    for name in ("column", "field id", "kind", "options", "files indexed", "index files missing", "size"):
        report.add_column(name, justify="left" if name in ("column", "kind", "options") else "right")
    for i in found:
        report.add_row(
            i.column if i.unused is None else f"[yellow]{i.column} (unused)[/]",
            "-" if i.field_id is None else str(i.field_id),
            i.kind,
            ", ".join(
                [json.dumps(i.options)] * bool(i.options) + [f"measures: {', '.join(i.measures)}"] * bool(i.measures)
            ),
            f"{i.files_indexed} / {i.files_total}",
            f"[red]{i.files_missing}[/]" if i.files_missing else "0",
            format_bytes(i.index_bytes),
        )
    Console().print(report)
    for i in found:
        if i.unused is not None:
            click.echo(f"the {i.kind} index of {i.column}: {i.unused}")
    if any(i.files_missing for i in found):
        click.echo(f"some index files are missing; `zskip index refresh {table}` indexes those data files again")


@index.command()
@click.argument("table")
@click.argument("column")
@click.option("--kind", type=click.Choice(list(KINDS)), required=True, help=KIND_HELP)
@click.pass_obj
def drop(ctx: Context, table: str, column: str, kind: str) -> None:
    """Remove the KIND index of COLUMN (files go at the next `zskip vacuum`)."""
    from zskip.indexing import drop_index

    result = drop_index(ctx.spark(), table, column, kind)
    click.echo(f"dropped the {kind} index of {column}: {result.entries_dropped} entries")


@click.command()
@click.argument("table")
@click.option("--older-than", default="1d", show_default=True, help="Keep files younger than this (30m, 12h, 3d).")
@click.pass_obj
def vacuum(ctx: Context, table: str, older_than: str) -> None:
    """Delete TABLE's index and clustering files that nothing references any more."""
    from zskip.indexing import vacuum as run

    result = run(ctx.spark(), table, older_than=older_than)
    for warning in result.warnings:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    click.echo(f"deleted {result.files_deleted} files ({format_bytes(result.bytes_deleted)}); kept {result.files_kept}")
