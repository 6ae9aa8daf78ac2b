"""``zskip jars``: the JVM libraries zskip's sessions put on Spark's classpath, by Maven coordinates."""

from __future__ import annotations

import click


@click.command()
@click.option("--spark", "spark_version", default=None, help="A Spark version (default: the installed PySpark's).")
@click.option(
    "--coordinates", is_flag=True, help="Print the Maven coordinates (for spark.jars.packages) instead of fetching."
)
def jars(spark_version: str | None, coordinates: bool) -> None:
    """Fetch the Iceberg Spark runtime for the installed Spark into the local Maven repository with mvn,
    and print its path (zskip.session() does this itself the first time)."""
    import pyspark

    from zskip.iceberg.jvm_dependencies import iceberg_runtime, resolve

    coordinate = iceberg_runtime(spark_version or pyspark.__version__)
    if coordinates:
        click.echo(str(coordinate))
        return
    path = resolve(coordinate)
    if path is None:
        raise click.ClickException(
            f"no mvn on PATH: install Maven, or give Spark spark.jars.packages={coordinate} (it downloads it)"
        )
    click.echo(str(path))
