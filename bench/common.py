"""Shared pieces of the benchmarks: a session sized for the machine, timing, Markdown tables."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "benchmarks"


def bench_session(warehouse: str | Path, *, master: str = "local[*]", conf: dict[str, str] | None = None) -> Any:
    import zskip

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return zskip.session(
        warehouse=warehouse,
        master=master,
        # Spark deletes a finished query's shuffle files only after the driver's JVM collects it; with
        # a 12 GB heap that can wait past the default 30 minutes, and SF 10's joins fill the disk first
        conf={
            # every side of a benchmark is named: plain Spark is Spark alone, and the runs with zskip
            # in every query enable it themselves (zskip.enable)
            "spark.zskip.enabled": "false",
            "spark.driver.memory": "12g",
            "spark.sql.shuffle.partitions": "8",
            "spark.cleaner.periodicGC.interval": "3min",
        }
        | (conf or {}),
    )


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return time.perf_counter() - started, value


def median_seconds(action: Callable[[], Any], *, runs: int) -> float:
    return statistics.median(timed(action)[0] for _ in range(runs))


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    cpus = os.cpu_count()
    memory = ""
    try:
        with open("/proc/meminfo") as info:
            kib = int(info.readline().split()[1])
            memory = f", {kib / 2**20:.0f} GiB RAM"
    except OSError:
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    return f"{platform.machine()}, {cpus} cores{memory}, Python {platform.python_version()}, {java}"


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (benchmarks run without a display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_report(name: str, lines: Sequence[str], directory: Path = DOCS) -> Path:
    """Write ``<directory>/<name>.md`` (by default under docs/benchmarks) and echo it."""
    text = "\n".join(lines)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(text)
    print(text)
    return path
