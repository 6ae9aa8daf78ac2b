"""``zskip`` verbs; each reaches a table through ``--warehouse``/``--catalog`` or the environment."""

from __future__ import annotations

import logging
import sys

import click

from zskip.cli.context import Context
from zskip.errors import ZskipError

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--warehouse",
    envvar="ZSKIP_WAREHOUSE",
    default="./warehouse",
    show_default=True,
    help="Directory of the embedded Iceberg catalog (env ZSKIP_WAREHOUSE).",
)
@click.option(
    "--catalog",
    envvar="ZSKIP_CATALOG",
    default="lake",
    show_default=True,
    help="Name of the Iceberg catalog in Spark (env ZSKIP_CATALOG).",
)
@click.option(
    "--master",
    envvar="ZSKIP_MASTER",
    default="local[*]",
    show_default=True,
    help="Spark master (env ZSKIP_MASTER).",
)
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.version_option(package_name="zskip")
@click.pass_context
def cli(ctx: click.Context, warehouse: str, catalog: str, master: str, verbose: int) -> None:
    """zskip: cluster Iceberg tables along space-filling curves and skip what a query cannot match."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    ctx.obj = Context(warehouse=warehouse, catalog=catalog, master=master)


def _register() -> None:
    from zskip.cli import bench, demo, indexes, jars, layout, maintenance, query

    cli.add_command(demo.demo)
    cli.add_command(layout.optimize)
    cli.add_command(layout.inspect)
    cli.add_command(maintenance.advise)
    cli.add_command(maintenance.maintain)
    cli.add_command(maintenance.status)
    cli.add_command(maintenance.workload)
    cli.add_command(indexes.index)
    cli.add_command(indexes.vacuum)
    cli.add_command(query.explain)
    cli.add_command(query.query)
    cli.add_command(bench.bench)
    cli.add_command(jars.jars)


def _quiet_query_context_logs() -> None:
    """PySpark 4 logs every failed query's context as JSON on standard error; the command line says
    what went wrong in one line of its own (and with -vv the whole trace)."""
    try:
        from pyspark.logger import PySparkLogger  # PySpark 4
    except ImportError:
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def main(argv: list[str] | None = None) -> None:
    """Entry point: run a verb; bad input ends with a one-line message and exit status 2."""
    _register()
    _quiet_query_context_logs()
    try:
        cli.main(args=argv, prog_name="zskip", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        # one line, like every other bad input, instead of click's usage block
        where = exc.ctx.command_path if exc.ctx is not None else "zskip"
        click.secho(f"error: {exc.format_message()} (`{where} --help` shows the usage)", fg="red", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ZskipError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)
    except Exception as exc:
        from zskip.iceberg.spark_errors import first_line, is_spark_error

        if not is_spark_error(exc):
            raise
        # a failure inside Spark while running (not bad input): one line, the whole trace with -vv
        logging.getLogger("zskip").debug("Spark failed", exc_info=True)
        click.secho(f"error: Spark failed: {first_line(exc)} (run with -vv for the whole trace)", fg="red", err=True)
        sys.exit(1)
