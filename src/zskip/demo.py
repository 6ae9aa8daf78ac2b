"""The demo: TPC-H lineitem in a local Iceberg table, clustered four ways, files read per query."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession
from rich.console import Console
from rich.table import Table

from zskip.datasets import LINEITEM_CLUSTER_COLUMNS, lineitem_queries, load_lineitem
from zskip.iceberg.files import data_files
from zskip.layout.compare import copy_and_lay_out, count_files_read, iceberg_layout, zskip_layout
from zskip.layout.inspection import file_bounds
from zskip.viz import plot_curves, plot_file_boxes

__all__ = ["run_demo"]


@contextmanager
def _step(console: Console, text: str) -> Iterator[None]:
    """A spinner in a terminal; otherwise (a log file, CI) a line when the step starts. Both end with the time."""
    started = time.monotonic()
    if console.is_terminal:
        with console.status(text):
            yield
    else:
        console.print(f"{text} ...", highlight=False)
        yield
    console.print(f"  {text}: done in {time.monotonic() - started:.1f} s", highlight=False)


def run_demo(spark: SparkSession, *, catalog: str, scale_factor: float, out_dir: Path, files: int = 32) -> None:
    """Load lineitem, lay it out as loaded / Iceberg zorder / zskip (hilbert, zorder, linear), and
    print the data files Iceberg reads for each filter under each layout."""
    console = Console(width=max(Console().width, 130))
    base = f"{catalog}.demo.lineitem"
    with _step(console, f"generating TPC-H lineitem (scale factor {scale_factor:g}) into {base}"):
        rows = load_lineitem(spark, base, scale_factor=scale_factor, data_dir=out_dir / "tpch", files=files)
    table_bytes = sum(data_files(spark, base)["file_size_in_bytes"].to_pylist())
    target = max(256 * 1024, table_bytes // files)
    console.print(f"[bold]{base}[/]: {rows:,} rows in {files} data files of {target / 2**20:.1f} MiB")
    by = list(LINEITEM_CLUSTER_COLUMNS)
    zorder = f"zorder({','.join(by)})"
    layouts = {
        "as loaded": base,
        f"Iceberg {zorder}": f"{catalog}.demo.lineitem_iceberg_zorder",
        "zskip hilbert (rank)": f"{catalog}.demo.lineitem_hilbert",
        "zskip zorder (rank)": f"{catalog}.demo.lineitem_zorder",
        "zskip linear (rank)": f"{catalog}.demo.lineitem_linear",
    }
    seconds: dict[str, float] = {}
    for label, table in layouts.items():
        if table == base:
            continue
        if label.startswith("Iceberg"):
            # the same file and row-group sizes zskip writes, so both writers roll files alike
            layout = iceberg_layout(spark, zorder, target_file_size_bytes=target, row_group_size_bytes=target // 8)
        else:
            curve = label.split()[1]
            layout = zskip_layout(
                spark, by, curve=curve, target_file_size_bytes=target, row_group_size_bytes=target // 8
            )
        with _step(console, f"laying out: {label}"):
            seconds[label], _ = copy_and_lay_out(spark, base, table, layout)
    queries = lineitem_queries(spark, base)
    counts = {}
    with _step(console, "planning each filter under each layout"):
        for label, table in layouts.items():
            counts[label] = count_files_read(spark, table, queries)
    report = Table(title=f"data files Iceberg reads per filter, clustered by {', '.join(by)} (fewer is better)")
    report.add_column("filter")
    report.add_column("rows", justify="right")
    for label in layouts:
        report.add_column(label.replace(" (rank)", ""), justify="right")
    for i in range(len(queries)):
        first = counts["as loaded"][i]
        cells = [f"{counts[label][i].files_read}/{counts[label][i].files_total}" for label in layouts]
        report.add_row(f"Q{i + 1}", f"{first.rows_matching:,}", *cells)
    totals = [str(sum(c.files_read for c in counts[label])) for label in layouts]
    report.add_row("[bold]total[/]", "", *[f"[bold]{t}[/]" for t in totals])
    report.add_row("layout time (s)", "", "", *[f"{seconds[label]:.1f}" for label in layouts if label in seconds])
    console.print(report)
    console.print(
        "Each cell: files read / data files of that layout. Each rewrite writes files of about the loaded "
        "files' size but ends them where its sort order allows (zskip: at curve-cell boundaries), so "
        "file counts differ a little between layouts.",
        highlight=False,
    )
    for i, where in enumerate(queries):
        console.print(f"  Q{i + 1}: {where}")
    picture = plot_file_boxes(
        {label: file_bounds(spark, layouts[label], by[:2]) for label in list(layouts)[:3]},
        x=by[0],
        y=by[1],
        path=out_dir / "file-boxes.png",
        title="each data file as its min/max box (smaller boxes: fewer files per filter)",
    )
    console.print(f"picture of the files before and after: {picture}")
    console.print(f"how the curves visit a grid: {plot_curves(out_dir / 'curves.png')}")
