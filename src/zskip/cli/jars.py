"""``zskip jars``: the JVM libraries zskip's sessions put on Spark's classpath, by Maven coordinates."""

from __future__ import annotations

import click


@click.command()
@click.option("--spark", "spark_version", default=None, help="A Spark version (default: the installed PySpark's).")
@click.option(
    "--object-storage",
    is_flag=True,
    help="Also the S3 libraries: Iceberg's AWS bundle (S3FileIO, s3://) and, on Spark 4.1, Hadoop's S3A (s3a://).",
)
@click.option(
    "--coordinates", is_flag=True, help="Print the Maven coordinates (for spark.jars.packages) instead of fetching."
)
@click.option(
    "--extension",
    is_flag=True,
    help="Print the settings that turn zskip on for every session of an application (spark-defaults.conf lines).",
)
@click.option(
    "--submit", is_flag=True, help="With --extension: as --conf options of spark-submit and the start-*.sh scripts."
)
@click.option("--warehouse", default=None, help="With --extension: also an Iceberg catalog (hadoop) on this warehouse.")
@click.option("--catalog", default="lake", show_default=True, help="With --extension and --warehouse: its name.")
@click.option("--python", default=None, help="With --extension: the planner's interpreter (default: this one).")
def jars(
    spark_version: str | None,
    object_storage: bool,
    coordinates: bool,
    extension: bool,
    submit: bool,
    warehouse: str | None,
    catalog: str,
    python: str | None,
) -> None:
    """Print the path of zskip's jar for the installed Spark (it comes with the package), then fetch the
    Iceberg Spark runtime into the local Maven repository with mvn and print its path (zskip.session()
    does this itself).  A session configured by hand needs both on spark.jars.

    With --extension, print instead what turns zskip on for a whole application from its configuration
    (Spark Connect and Thrift servers, spark-sql, jobs that never import zskip)."""
    import pyspark

    from zskip.iceberg import jvm_dependencies

    if extension:
        _print_extension(spark_version, warehouse, catalog, python, submit)
        return

    version = spark_version or pyspark.__version__
    wanted = [jvm_dependencies.iceberg_runtime(version)]
    if object_storage:
        wanted += jvm_dependencies.object_storage(version)
    if coordinates:
        click.echo(",".join(str(c) for c in wanted))
        return
    click.echo(str(jvm_dependencies.zskip_jar(version)))
    for coordinate in wanted:
        path = jvm_dependencies.resolve(coordinate)
        if path is None:
            raise click.ClickException(
                f"no mvn on PATH: install Maven, or give Spark spark.jars.packages={coordinate} (it downloads it)"
            )
        click.echo(str(path))


def _print_extension(
    spark_version: str | None, warehouse: str | None, catalog: str, python: str | None, submit: bool
) -> None:
    from pathlib import Path

    from zskip.iceberg.extension import PLANNER_SETTINGS, extension_settings

    if warehouse is not None and "://" not in warehouse:
        warehouse = Path(warehouse).resolve().as_uri()
    settings = extension_settings(spark_version=spark_version, python=python, catalog=catalog, warehouse=warehouse)
    if submit:
        click.echo(" \\\n".join(f"  --conf {key}={value}" for key, value in settings.items()))
        return
    click.echo("# zskip for every session of the application (spark-defaults.conf); also settable there:")
    for key, meaning in PLANNER_SETTINGS.items():
        click.echo(f"#   {key}: {meaning}")
    for key, value in settings.items():
        click.echo(f"{key} {value}")
