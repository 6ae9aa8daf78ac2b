"""``zskip demo``: the main job on a local warehouse, from nothing."""

from __future__ import annotations

from pathlib import Path

import click

from zskip.cli.context import Context


@click.command()
@click.option(
    "--scale-factor",
    default=0.1,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True, max=1000),
    help="TPC-H scale factor of lineitem (0.1 is 600,000 rows).",
)
@click.option("--out", default="demo-output", show_default=True, help="Where pictures and data go.")
@click.pass_obj
def demo(ctx: Context, scale_factor: float, out: str) -> None:
    """Build a local Iceberg table from TPC-H lineitem and show how zskip's curves order it."""
    from zskip.demo import run_demo

    run_demo(ctx.spark(), catalog=ctx.catalog, scale_factor=scale_factor, out_dir=Path(out))
