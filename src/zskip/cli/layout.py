"""``zskip optimize`` and ``zskip inspect``."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from zskip.cli.context import Context
from zskip.cli.progress import progress_bar
from zskip.units import format_bytes


def _columns(value: str | None) -> list[str] | None:
    return None if value is None else [c.strip() for c in value.split(",") if c.strip()]


def _weights(value: str | None) -> dict[str, float] | None:
    """``COL=W,...`` as a mapping; ``InvalidOptionError`` naming the part that is not ``COL=NUMBER``."""
    from zskip.errors import InvalidOptionError

    if value is None:
        return None
    weights: dict[str, float] = {}
    for part in (p.strip() for p in value.split(",") if p.strip()):
        name, equals, number = part.partition("=")
        try:
            if not equals or not name.strip():
                raise ValueError
            weights[name.strip()] = float(number)
        except ValueError:
            raise InvalidOptionError(
                f"--weights takes COLUMN=NUMBER pairs such as price=3,qty=1, not {part!r}"
            ) from None
    return weights


@click.command()
@click.argument("table")
@click.option("--by", default=None, help="Columns to cluster on, comma-separated (e.g. a,b,c).")
@click.option(
    "--dimension",
    "dimensions",
    multiple=True,
    metavar="FK=TABLE.KEY:COLS",
    help="Also cluster on a dimension reached through a foreign key, ordered by the dimension's columns "
    "(coarsest first); repeat for several.  Example: "
    "lo_custkey=lake.ssb.customer.c_custkey:c_region,c_nation,c_city.  The fact table gets no new column.",
)
@click.option("--curve", type=click.Choice(["hilbert", "zorder", "linear"]), default="hilbert", show_default=True)
@click.option("--mapping", type=click.Choice(["rank", "raw"]), default="rank", show_default=True)
@click.option("--mode", type=click.Choice(["incremental", "full"]), default="incremental", show_default=True)
@click.option("--target-file-size", default="128MB", show_default=True, help="Size of output files.")
@click.option("--row-group-size", default="16MB", show_default=True, help="Parquet row-group size of output files.")
@click.option("--where", default=None, help="Only rewrite files holding rows that match this SQL filter.")
@click.option("--max-group-size", default="100GB", show_default=True, help="Largest group of files sorted together.")
@click.option("--max-commits", default=10, show_default=True, help="Commit in at most this many batches.")
@click.option(
    "--weights",
    default=None,
    metavar="COL=W,...",
    help="With --curve zorder or linear: each column's share of the curve against the others' (1 where "
    "not named), e.g. price=3 gives price three bits of every key prefix for each bit of another column.",
)
@click.option("--no-partial-progress", is_flag=True, help="One commit for everything, or nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def optimize(
    ctx: Context,
    table: str,
    by: str | None,
    dimensions: tuple[str, ...],
    curve: str,
    mapping: str,
    mode: str,
    target_file_size: str,
    row_group_size: str,
    where: str | None,
    max_group_size: str,
    max_commits: int,
    weights: str | None,
    no_partial_progress: bool,
    as_json: bool,
) -> None:
    """Cluster TABLE's data files along a space-filling curve over --by columns and --dimension foreign keys.

    Plain columns come first on the curve, then dimensions in the order given.
    """
    from zskip.errors import InvalidOptionError
    from zskip.indexing import optimize as run
    from zskip.layout.dimensions import Dimension, parse_dimension

    clustered: list[str | Dimension] = [*(_columns(by) or []), *[parse_dimension(text) for text in dimensions]]
    if not clustered:
        raise InvalidOptionError("give the columns to cluster on: --by a,b and/or --dimension FK=TABLE.KEY:COLS")
    spark = ctx.spark()
    with progress_bar("optimize") as report:
        result = run(
            spark,
            table,
            by=clustered,
            curve=curve,
            mapping=mapping,
            mode=mode,
            target_file_size=target_file_size,
            row_group_size=row_group_size,
            where=where,
            max_group_size=max_group_size,
            max_commits=max_commits,
            partial_progress=not no_partial_progress,
            weights=_weights(weights),
            progress=report,
        )
    if as_json:
        click.echo(result.to_json())
        return
    summary = Table(title=f"optimize {table}: {result.reason}")
    summary.add_column("")
    summary.add_column("before", justify="right")
    summary.add_column("after", justify="right")
    summary.add_row("data files", str(result.files_before), str(result.files_after))
    summary.add_row("bytes", format_bytes(result.bytes_before), format_bytes(result.bytes_after))
    Console().print(summary)
    click.echo(
        f"rewrote {result.files_rewritten} files ({result.rows_rewritten:,} rows) into {result.files_written} "
        f"in {result.groups} groups and {result.commits} commits in {result.duration_seconds:.1f}s"
        + (f"; snapshot {result.snapshot_id}" if result.commits else "")
    )
    if result.step_seconds:
        click.echo("time by step: " + ", ".join(f"{name} {sec:.1f}s" for name, sec in result.step_seconds.items()))


@click.command()
@click.argument("table")
@click.option("--columns", default=None, help="Columns to report on (default: the clustered ones).")
@click.option("--plot", default=None, type=click.Path(dir_okay=False), help="Write a PNG of file boxes in two columns.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def inspect(ctx: Context, table: str, columns: str | None, plot: str | None, as_json: bool) -> None:
    """Files, rows, sizes of TABLE and how many files a point lookup on each column reads."""
    from zskip.layout.inspection import file_bounds
    from zskip.layout.inspection import inspect as run
    from zskip.viz import plot_file_boxes

    spark = ctx.spark()
    result = run(spark, table, columns=_columns(columns))
    if as_json:
        click.echo(result.to_json())
    else:
        console = Console()
        console.print(
            f"[bold]{table}[/]: {result.files} data files, {result.rows:,} rows, {format_bytes(result.bytes)} "
            f"(average file {format_bytes(result.average_file_bytes)})"
        )
        console.print(f"clustering: {json.dumps(result.clustering) if result.clustering else 'none'}")
        report = Table(title="share of files a point lookup reads (1/files is ideal)")
        for name in ("column", "type", "files read", "share", "files without bounds"):
            report.add_column(name, justify="left" if name in ("column", "type") else "right")
        for column in result.columns:
            report.add_row(
                column.name,
                column.type,
                f"{column.lookup_fraction * result.files:.1f}",
                f"{column.lookup_fraction:.1%}",
                str(column.files_without_bounds),
            )
        console.print(report)
    if plot:
        names = [c.name for c in result.columns]
        if len(names) < 2:
            raise click.UsageError("--plot needs two columns: pass --columns a,b")
        out = plot_file_boxes({table: file_bounds(spark, table, names[:2])}, x=names[0], y=names[1], path=plot)
        click.echo(f"wrote {out}")
