"""``zskip status``: the coverage of a table by its clustering and its indexes."""

from __future__ import annotations

import click
from rich.console import Console

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
