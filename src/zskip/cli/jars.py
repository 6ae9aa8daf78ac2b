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
def jars(spark_version: str | None, object_storage: bool, coordinates: bool) -> None:
    """Print the path of zskip's jar for the installed Spark (it comes with the package), then fetch the
    Iceberg Spark runtime into the local Maven repository with mvn and print its path (zskip.session()
    does this itself).  A session configured by hand needs both on spark.jars."""
    import pyspark

    from zskip.iceberg import jvm_dependencies

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
