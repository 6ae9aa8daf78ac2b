"""The object-storage benchmark's runs against a store that misbehaves, beside its fault-free runs.

``bench/object_storage.py --faults SEED`` measures the S3 catalog's queries a second time with the
relay (``bench/s3_requests.py``) answering as a store under load does (``Faults.typical``: 8% of
requests throttled, 3% failed, 2% cut before the answer, 5% delayed), and rebuilds lineorder's bitmaps
once without faults and once with them.  What is counted: the relay's requests and faults by client,
the requests zskip tried again (its own count: the driver's for planning, the tasks' for the index
build, as its progress says), time as medians, and whether every query returned Spark's rows.

``--baseline`` compares the fault-free figures with those of an earlier run's ``object-storage.json``
(the same command on code from before zskip retried anything), side by side per query.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.common import markdown_table
from bench.s3_requests import JVM, ZSKIP, Faults, RelayCounts, RequestCounts

__all__ = ["baseline_lines", "faults_lines", "index_build"]

BUILD_HEADER = [
    "run",
    "seconds",
    "requests (zskip / JVM)",
    "faults met (zskip)",
    "faults met (JVM)",
    "requests zskip retried",
    "builds failed",
]
_RETRIED = re.compile(r"\((\d+) requests retried\)")


def index_build(spark: Any, lineorder: str, columns: Sequence[str], counts: RelayCounts) -> dict[str, Any]:
    """Drop and build again the bitmaps of ``columns``: seconds, the relay's requests, the requests zskip's
    tasks retried (from the build's progress), and whether every build succeeded (else the error's line)."""
    from zskip import create_index, drop_index
    from zskip.errors import ZskipError

    retried: dict[str, int] = {}

    def progress(column: str) -> Callable[[str, int, int], None]:
        def told(stage: str, done: int, total: int) -> None:
            found = _RETRIED.search(stage)
            if found:
                retried[column] = max(retried.get(column, 0), int(found.group(1)))

        return told

    before = counts.snapshot()
    started = time.perf_counter()
    failures: dict[str, str] = {}
    for column in columns:
        try:
            drop_index(spark, lineorder, column, "bitmap")
            create_index(spark, lineorder, column, kind="bitmap", progress=progress(column))
        except ZskipError as exc:  # reported, and built again once the store behaves
            failures[column] = str(exc).splitlines()[0]
    return {
        "seconds": time.perf_counter() - started,
        "requests": RequestCounts.since(before, counts.snapshot()),
        "retried": sum(retried.values()),
        "failures": failures,
    }


def _faults_met(requests: dict[str, float], client: str) -> str:
    kinds = ("throttled", "failed", "cut", "delayed")
    return ", ".join(f"{requests.get(f'{client} fault {kind}', 0):.0f} {kind}" for kind in kinds)


def _all_requests(requests: dict[str, float], client: str) -> float:
    return sum(n for key, n in requests.items() if key.startswith(f"{client} ") and key.split(" ")[-1].isupper())


def faults_lines(
    faults: Faults, clean: dict[str, dict[str, Any]], faulty: dict[str, dict[str, Any]], builds: dict[str, Any]
) -> list[str]:
    """The report's section on the runs under faults: ``clean`` and ``faulty`` are the S3 catalog's
    measurements by query without and with faults, ``builds`` the index rebuilds of both."""

    def ms(seconds: float) -> str:
        return f"{seconds * 1000:,.0f}"

    rows = []
    for name, under in faulty.items():
        free = clean[name]
        rows.append(
            [
                name,
                f"{ms(free['cold']['zskip_seconds'])} / {ms(under['cold']['zskip_seconds'])}",
                f"{ms(free['warm']['zskip_seconds'])} / {ms(under['warm']['zskip_seconds'])}",
                f"{free['wall']['zskip_seconds']:.2f} / {under['wall']['zskip_seconds']:.2f}",
                f"{under['wall']['spark_seconds']:.2f}",
                f"{_all_requests(under['cold']['zskip_requests'], ZSKIP):.0f}",
                _faults_met(under["cold"]["zskip_requests"], ZSKIP),
                f"{under['zskip_retried']}",
                "yes" if under["wall"]["result_rows"] == free["wall"]["result_rows"] else "no",
            ]
        )
    clean_build, faulty_build = builds["clean"], builds["faults"]
    lines = [
        "## Under faults",
        "",
        f"The S3 catalog's queries measured again with the relay misbehaving as a store under load does: "
        f"{faults.throttled:.0%} of requests answered 503 SlowDown, {faults.failed:.0%} 500 InternalError, "
        f"{faults.cut:.0%} cut before the answer and {faults.delayed:.0%} delayed {faults.delay * 1000:.0f} ms "
        f"(seed {faults.seed}), every client alike. The clients retry with their own settings' defaults "
        "(S3A's `fs.s3a.retry.*` for Spark and Iceberg here; zskip follows the same settings). "
        "Milliseconds of zskip's planning (`zskip.sql` until it hands back the frame), seconds of its wall "
        "time; fault-free / under faults. Requests and faults: zskip's own (pyarrow) in one cold plan "
        "(medians); retried: the requests zskip's planning tried again over all runs of the query "
        "(the store's client retries most faults itself, unseen by zskip).",
        "",
        markdown_table(
            [
                "query",
                "zskip cold, ms",
                "zskip warm, ms",
                "zskip wall, s",
                "Spark wall under faults, s",
                "zskip requests, cold",
                "faults they met",
                "zskip retried",
                "Spark's rows",
            ],
            rows,
        ),
        "",
        "Rebuilding lineorder's bitmaps (drop, then `create_index`, four columns), once without faults and "
        "once with them:",
        "",
        markdown_table(
            BUILD_HEADER,
            [
                [
                    run,
                    f"{build['seconds']:.1f}",
                    f"{_all_requests(build['requests'], ZSKIP):.0f} / {_all_requests(build['requests'], JVM):.0f}",
                    _faults_met(build["requests"], ZSKIP),
                    _faults_met(build["requests"], JVM),
                    build["retried"],
                    "; ".join(f"{c}: {why}" for c, why in build["failures"].items()) or "none",
                ]
                for run, build in (("fault-free", clean_build), ("under faults", faulty_build))
            ],
        ),
        "",
    ]
    cold = [faulty[n]["cold"]["zskip_seconds"] / clean[n]["cold"]["zskip_seconds"] for n in faulty]
    wall = [faulty[n]["wall"]["zskip_seconds"] / clean[n]["wall"]["zskip_seconds"] for n in faulty]
    lines += [
        f"Under faults, zskip's cold planning took {statistics.median(cold):.2f}x its fault-free time "
        f"(median over the queries; {min(cold):.2f}x to {max(cold):.2f}x) and its wall time "
        f"{statistics.median(wall):.2f}x ({min(wall):.2f}x to {max(wall):.2f}x); the index rebuild "
        f"{faulty_build['seconds'] / clean_build['seconds']:.2f}x.",
        "",
    ]
    return lines


def baseline_lines(
    baseline: dict[str, Any], results: dict[str, dict[str, Any]], source: str, *, order: str = "just before this one"
) -> list[str]:
    """Fault-free zskip planning of this run beside an earlier run's (``baseline``, its JSON), per query
    and storage: medians, this run's over the earlier one's, and the same over Spark's own planning in
    each run (what the machine's drift between two runs moves alike: it cancels there)."""
    rows: list[list[str]] = []
    ratios: dict[str, list[float]] = {"cold": [], "warm": [], "cold over Spark": [], "warm over Spark": []}
    for name, by_storage in results.items():
        for storage, measured in by_storage.items():
            before = baseline["results"].get(name, {}).get(storage)
            if before is None:
                continue
            cells = [name, storage]
            for state in ("cold", "warm"):
                was, now = before[state]["zskip_seconds"], measured[state]["zskip_seconds"]
                relative = (now / measured[state]["spark_seconds"]) / (was / before[state]["spark_seconds"])
                ratios[state].append(now / was)
                ratios[f"{state} over Spark"].append(relative)
                cells += [f"{was * 1000:,.0f}", f"{now * 1000:,.0f}", f"{now / was:.2f}", f"{relative:.2f}"]
            spark_ratio = measured["cold"]["spark_seconds"] / before["cold"]["spark_seconds"]
            cells.append(f"{spark_ratio:.2f}")
            rows.append(cells)
    if not rows:
        return []
    header = ["query", "storage", "cold before", "cold now", "now / before", "over Spark's, now / before",
              "warm before", "warm now", "now / before", "over Spark's, now / before",
              "Spark's own cold planning, now / before"]  # fmt: skip

    def spread(key: str) -> str:
        values = ratios[key]
        return f"{statistics.median(values):.2f}x ({min(values):.2f}x to {max(values):.2f}x)"

    return [
        "## Fault-free, against the code before retries",
        "",
        f"zskip's planning in this run (fault-free) beside {source}: the same command, tables and machine, "
        f"run {order}. Medians, milliseconds. Spark's own planning, which zskip's retries do not touch, shows "
        "the two runs' noise; zskip's planning over Spark's in the same run, now over before, takes it out.",
        "",
        markdown_table(header, rows),
        "",
        f"Now over before, median over queries and storages: cold {spread('cold')}, warm {spread('warm')}; "
        f"over Spark's own planning in each run: cold {spread('cold over Spark')}, warm {spread('warm over Spark')}.",
        "",
    ]
