"""``zskip bench``: run a benchmark script from zskip's source checkout (``bench/``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

SCRIPTS = {
    "advise": "advise.py",
    "advise-skewed": "advise_skewed.py",
    "curves": "curves.py",
    "optimize": "optimize.py",
    "indexes": "indexes.py",
    "object-storage": "object_storage.py",
    "planning": "planning.py",
    "ssb": "ssb.py",
}


def _bench_dir() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "bench" / "common.py").exists():
            return parent / "bench"
    raise click.ClickException(
        "the benchmarks live in zskip's source checkout (bench/); clone the repository and run from there"
    )


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("name", type=click.Choice(sorted(SCRIPTS)))
@click.option("--sf", "scale_factor", type=float, default=None, help="Scale factor (TPC-H / SSB benchmarks).")
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def bench(name: str, scale_factor: float | None, extra: tuple[str, ...]) -> None:
    """Run benchmark NAME (results under docs/benchmarks/); other options go to the script (see its --help)."""
    script = _bench_dir() / SCRIPTS[name]
    command = [sys.executable, str(script)]
    if scale_factor is not None:
        command += ["--scale-factor", f"{scale_factor:g}"]
    command += list(extra)
    raise SystemExit(subprocess.call(command))
