"""TPC-H tables generated with ``tpchgen-cli`` (a PyPI package) and loaded into Iceberg tables."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from zskip.errors import InvalidOptionError

__all__ = ["LINEITEM_CLUSTER_COLUMNS", "generate_tpch", "lineitem_queries", "load_lineitem"]

log = logging.getLogger(__name__)


def _tpchgen() -> str:
    beside_python = Path(sys.executable).with_name("tpchgen-cli")
    found = str(beside_python) if beside_python.exists() else shutil.which("tpchgen-cli")
    if not found:
        raise FileNotFoundError("tpchgen-cli is not installed: pip install tpchgen-cli")
    return found


def generate_tpch(out_dir: str | Path, *, scale_factor: float, tables: Sequence[str] = ("lineitem",)) -> Path:
    """Write TPC-H ``tables`` at ``scale_factor`` as Parquet under ``out_dir``; reuses files already there.

    Generation is deterministic: the same scale factor always gives the same rows.
    """
    if isinstance(scale_factor, bool) or not isinstance(scale_factor, (int, float)) or not 0 < scale_factor <= 1000:
        raise InvalidOptionError(f"scale_factor must be a number in (0, 1000], such as 0.1 or 1, not {scale_factor!r}")
    out = Path(out_dir) / f"sf{scale_factor:g}"
    missing = [t for t in tables if not (out / f"{t}.parquet").exists()]
    if missing:
        out.mkdir(parents=True, exist_ok=True)
        command = [_tpchgen(), "parquet", "-s", f"{scale_factor:g}", f"--tables={','.join(missing)}"]
        command += [f"--output-dir={out}", "--overwrite"]
        log.info("generating TPC-H %s at scale factor %g", ",".join(missing), scale_factor)
        subprocess.run(command, check=True, capture_output=True, text=True)
    return out


def load_lineitem(
    spark: SparkSession,
    table: str,
    *,
    scale_factor: float,
    data_dir: str | Path,
    files: int = 32,
    shuffle: bool = True,
    properties: dict[str, str] | None = None,
) -> int:
    """(Re)create Iceberg ``table`` from TPC-H lineitem, written as about ``files`` data files.

    With ``shuffle`` the rows are spread at random (a fixed seed) over the files, the way data
    arrives from many writers; otherwise they keep generation order (sorted by l_orderkey).
    Returns the row count.
    """
    from pyspark.sql import functions as F

    source = generate_tpch(data_dir, scale_factor=scale_factor) / "lineitem.parquet"
    frame = spark.read.parquet(str(source))
    frame = frame.repartition(files, F.rand(seed=42)) if shuffle else frame.coalesce(files)
    namespace = table.rsplit(".", 1)[0]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")
    writer = frame.writeTo(table).using("iceberg").tableProperty("format-version", "2")
    for key, value in (properties or {}).items():
        writer = writer.tableProperty(key, value)
    writer.create()
    return int(spark.table(table).count())


# The demo's and benchmarks' clustering of lineitem: a date, a bigint and a low-cardinality string.
LINEITEM_CLUSTER_COLUMNS = ("l_shipdate", "l_partkey", "l_shipmode")


def lineitem_queries(spark: SparkSession, table: str) -> list[str]:
    """Single- and multi-column filters on l_shipdate (date), l_partkey (bigint) and l_shipmode (string),
    with literals placed inside the data's range so each one matches rows at any scale factor."""
    bounds = spark.sql(f"SELECT min(l_partkey) AS lo, max(l_partkey) AS hi FROM {table}").first()
    assert bounds is not None
    lo, hi = int(bounds["lo"]), int(bounds["hi"])
    span = hi - lo

    def part(fraction: float) -> int:
        return lo + int(span * fraction)

    return [
        "l_shipdate BETWEEN DATE'1995-03-01' AND DATE'1995-03-31'",
        f"l_partkey BETWEEN {part(0.30)} AND {part(0.31)}",
        "l_shipmode = 'AIR'",
        f"l_shipdate BETWEEN DATE'1994-01-01' AND DATE'1994-06-30' AND l_partkey BETWEEN {part(0.5)} AND {part(0.55)}",
        f"l_partkey = {part(0.7)} AND l_shipmode = 'MAIL'",
        "l_shipdate = DATE'1996-07-04' AND l_shipmode = 'SHIP'",
        f"l_shipdate >= DATE'1997-06-01' AND l_partkey < {part(0.1)} AND l_shipmode IN ('RAIL', 'TRUCK')",
    ]
