"""Other engines on a zskip layout: the files pyiceberg and DuckDB plan for the demo's filters.

    python bench/engines.py --scale-factor 0.1

Loads TPC-H lineitem as the demo does (rows spread at random over the files), copies it, clusters
the copy with ``zskip.optimize`` (hilbert over l_shipdate, l_partkey, l_shipmode), then asks each
engine, for each of the demo's filters, how many data files it plans on each table and which rows
it returns: Spark (Iceberg's own pruning, as ``zskip.explain`` reports it), pyiceberg
(``StaticTable.scan(row_filter=...).plan_files()``) and DuckDB's iceberg extension (``Total Files
Read`` of ``EXPLAIN ANALYZE``).  None of them runs zskip's code: they read Iceberg's per-file
statistics, which a zskip layout makes narrow.  Writes docs/engines.md.

The engines come from the dev extras: ``pyiceberg``, ``duckdb`` and the PyPI packages
``duckdb-extension-iceberg``, ``-avro`` and ``-parquet`` of the same version, loaded from their
package folders (no network).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, bench_session, machine, markdown_table, write_report

__all__ = ["EngineCount", "duckdb_connection", "duckdb_count", "metadata_location", "pyiceberg_count"]


@dataclass(frozen=True)
class EngineCount:
    files: int  # data files the engine plans for the filter
    rows: int  # rows it returns
    checksum: int  # sum of a column over those rows (0 when none)


def metadata_location(spark: Any, table: str) -> str:
    """The table's current metadata file (what other engines open)."""
    row = spark.sql(f"SELECT file FROM {table}.metadata_log_entries ORDER BY timestamp DESC LIMIT 1").first()
    return str(row[0]).removeprefix("file:")


def _pyiceberg_filter(where: str) -> str:
    """Spark SQL's typed date literals (``DATE'1995-03-01'``) as pyiceberg's parser takes them (``'1995-03-01'``)."""
    return re.sub(r"\bDATE\s*'", "'", where, flags=re.IGNORECASE)


def pyiceberg_count(metadata: str, where: str, checksum_column: str) -> EngineCount:
    from pyiceberg.table import StaticTable

    scan = StaticTable.from_metadata(metadata).scan(row_filter=_pyiceberg_filter(where))
    files = len(list(scan.plan_files()))
    rows = scan.to_arrow()
    total = rows[checksum_column].to_numpy(zero_copy_only=False).sum() if rows.num_rows else 0
    return EngineCount(files, rows.num_rows, int(total))


def duckdb_connection() -> Any:
    """A DuckDB connection with the parquet, avro and iceberg extensions loaded from their PyPI packages."""
    import duckdb
    import duckdb_extension_avro
    import duckdb_extension_iceberg
    import duckdb_extension_parquet

    connection = duckdb.connect()
    for package, name in (
        (duckdb_extension_parquet, "parquet"),
        (duckdb_extension_avro, "avro"),
        (duckdb_extension_iceberg, "iceberg"),
    ):
        found = sorted(Path(package.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension"))
        if not found:
            raise RuntimeError(f"the package {package.__name__} holds no {name}.duckdb_extension")
        connection.execute(f"LOAD '{found[-1]}'")
    return connection


def duckdb_count(connection: Any, metadata: str, where: str, checksum_column: str) -> EngineCount:
    source = f"iceberg_scan('{metadata}')"
    rows, total = connection.execute(f"SELECT count(*), sum({checksum_column}) FROM {source} WHERE {where}").fetchone()
    plan = "\n".join(
        str(cell)
        for row in connection.execute(f"EXPLAIN ANALYZE SELECT * FROM {source} WHERE {where}").fetchall()
        for cell in row
    )
    found = re.search(r"Total Files Read:\s*(\d+)", plan)
    if found is None:
        raise RuntimeError("DuckDB's plan does not say how many files it read (Total Files Read)")
    return EngineCount(int(found.group(1)), int(rows), int(total or 0))


def spark_count(spark: Any, table: str, where: str, checksum_column: str) -> EngineCount:
    import zskip
    from zskip.planning.plan import ICEBERG_STAGE

    explained = zskip.explain(spark, table, where=where)
    files = next(s.files_kept for s in explained.stages if s.name == ICEBERG_STAGE)
    rows, total = spark.table(table).where(where).selectExpr("count(*)", f"sum({checksum_column})").first()
    return EngineCount(int(files), int(rows), int(total or 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-factor", type=float, default=0.1)
    parser.add_argument("--files", type=int, default=32, help="files lineitem is loaded as")
    parser.add_argument("--warehouse", default=str(Path(tempfile.gettempdir()) / "zskip-engines-warehouse"))
    args = parser.parse_args()

    import zskip
    from zskip.datasets import LINEITEM_CLUSTER_COLUMNS, lineitem_queries, load_lineitem
    from zskip.layout.compare import copy_table

    spark = bench_session(args.warehouse)
    loaded, clustered = "lake.engines.lineitem", "lake.engines.lineitem_zskip"
    load_lineitem(
        spark,
        loaded,
        scale_factor=args.scale_factor,
        data_dir=Path(tempfile.gettempdir()) / "zskip-tpch",
        files=args.files,
    )
    copy_table(spark, loaded, clustered)
    size = spark.sql(f"SELECT sum(file_size_in_bytes) FROM {loaded}.files").first()[0]
    zskip.optimize(
        spark, clustered, by=list(LINEITEM_CLUSTER_COLUMNS), mode="full", target_file_size=size // args.files
    )
    wheres = lineitem_queries(spark, loaded)
    connection = duckdb_connection()
    counts: dict[str, dict[str, list[EngineCount]]] = {}
    for label, table in (("as loaded", loaded), ("zskip hilbert", clustered)):
        metadata = metadata_location(spark, table)
        counts[label] = {
            "Spark": [spark_count(spark, table, w, "l_orderkey") for w in wheres],
            "pyiceberg": [pyiceberg_count(metadata, w, "l_orderkey") for w in wheres],
            "DuckDB": [duckdb_count(connection, metadata, w, "l_orderkey") for w in wheres],
        }
    engines = ("Spark", "pyiceberg", "DuckDB")
    rows = []
    for i, where in enumerate(wheres):
        answers = {(c.rows, c.checksum) for per in counts.values() for c in (per[e][i] for e in engines)}
        if len(answers) != 1:
            raise SystemExit(f"the engines disagree on the rows of {where!r}: {answers}")
        rows.append(
            [
                f"Q{i + 1}",
                *[f"{counts['as loaded'][e][i].files} / {counts['zskip hilbert'][e][i].files}" for e in engines],
                f"{counts['as loaded']['Spark'][i].rows:,}",
            ]
        )
    totals = [
        f"**{sum(c.files for c in counts['as loaded'][e])} / {sum(c.files for c in counts['zskip hilbert'][e])}**"
        for e in engines
    ]
    rows.append(["all", *totals, ""])
    import duckdb
    import pyiceberg

    report = [
        "# Other engines on a zskip layout",
        "",
        f"One run of `python bench/engines.py --scale-factor {args.scale_factor:g} --files {args.files}` on "
        f"{machine()}, with pyiceberg {pyiceberg.__version__} and DuckDB {duckdb.__version__} (its iceberg "
        "extension from the PyPI package of the same version). TPC-H lineitem loaded as "
        f"{args.files} files with rows spread at random, then a copy clustered by "
        f"`zskip.optimize(by={list(LINEITEM_CLUSTER_COLUMNS)})` (hilbert, rank) into files of the same size.",
        "",
        "Data files each engine plans for the demo's filters, as loaded / on the zskip layout. None of these "
        "engines runs zskip: each reads Iceberg's per-file statistics, which the layout makes narrow. Every engine "
        "returned the same rows (count and sum of `l_orderkey`) for every filter on both tables.",
        "",
        markdown_table(["filter", *[f"{e} files" for e in engines], "matching rows"], rows),
        "",
        *[f"- Q{i + 1}: `{w}`" for i, w in enumerate(wheres)],
        "",
    ]
    write_report("engines", report, ROOT / "docs")


if __name__ == "__main__":
    main()
