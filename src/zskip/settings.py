"""Every setting zskip reads and every table property it reads or writes, declared once.

Code reads a setting through its entry here (``ENABLED.key``, ``RANGE_ROWS.default``), never by a
literal key: ``tests/test_settings.py`` fails on a ``spark.zskip.*`` or ``zskip.*`` property literal
anywhere else, and on any difference from the JVM's registry (``io.zskip.settings.ZskipSettings``),
which declares the same entries for the extension's rule and hosted planner.  The tables of
``docs/reference/settings.md`` are written from here (``python -m zskip.settings``).

>>> RANGE_ROWS.key, RANGE_ROWS.default
('spark.zskip.planning.bitmapRangeRows', '4')
>>> flag("off", default=True), flag("yes", default=False), flag("maybe", default=True)
(False, True, True)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "CACHE_BYTES",
    "CAPTURE",
    "ENABLED",
    "ENVIRONMENT",
    "LISTED_FILES",
    "PLANNER_PYTHON",
    "PREFIX",
    "PROPERTIES",
    "RANGE_ROWS",
    "SETTINGS",
    "Setting",
    "TableProperty",
    "flag",
    "markdown_tables",
]

Kind = Literal["boolean", "number", "count", "bytes", "duration", "interpreter"]
Scope = Literal["session", "application", "environment"]

PREFIX = "spark.zskip."
# how a boolean setting may be written; anything else leaves the setting at its default
TRUE_WORDS = frozenset({"true", "1", "on", "yes"})
FALSE_WORDS = frozenset({"false", "0", "off", "no"})


@dataclass(frozen=True)
class Setting:
    """One Spark setting (or, of scope ``environment``, one environment variable of the process).

    ``default`` is the text the setting has when unset; ``shown`` is how the docs state the default
    when it is not one text (it depends on where zskip runs); ``see`` is the docs page that says more,
    relative to ``docs/reference``, with the words that link it."""

    key: str
    default: str
    kind: Kind
    scope: Scope
    description: str
    shown: str = ""
    see: tuple[str, str] | None = None

    def text(self, settings: Mapping[str, str]) -> str:
        """This setting's text in ``settings`` (a session's ``spark.zskip.*`` settings), else its default."""
        value = settings.get(self.key)
        return self.default if value is None else str(value)


@dataclass(frozen=True)
class TableProperty:
    """One table property: who sets it (``you`` or the zskip verb whose commit writes it), and what it holds."""

    key: str
    set_by: str
    description: str
    see: tuple[str, str] | None = None


def flag(text: str | None, *, default: bool) -> bool:
    """A boolean setting's value: ``true``/``1``/``on``/``yes`` or ``false``/``0``/``off``/``no`` in any
    case; anything else (or unset) is ``default``, so a typo never turns zskip's rule into an error."""
    if text is None:
        return default
    word = str(text).strip().lower()
    return True if word in TRUE_WORDS else False if word in FALSE_WORDS else default


ENABLED = Setting(
    "spark.zskip.enabled",
    "true",
    "boolean",
    "session",
    "false pauses zskip's rule: plans and writes are Spark's own",
    shown="`true` once zskip is on",
    see=("every query", "../how-to/every-query.md"),
)
CAPTURE = Setting(
    "spark.zskip.workload.capture",
    "true",
    "boolean",
    "session",
    "false: scans are not recorded in the table's workload log",
    see=("workload log", "../concepts/workload-log.md"),
)
RANGE_ROWS = Setting(
    "spark.zskip.planning.bitmapRangeRows",
    "4",
    "number",
    "session",
    "a range-only predicate reads a file's bitmaps only where min/max expect fewer matching rows than "
    "this in a row group; 0: always read them",
    see=("planning", "../concepts/planning.md"),
)
SMALL_JOIN_SIDE = Setting(
    "spark.zskip.planning.smallJoinSideBytes",
    "16777216",
    "bytes",
    "session",
    "a filtered dimension side Spark estimates at most this large is read in the driver by Iceberg's "
    "reader instead of a Spark job",
    see=("star schemas", "../how-to/star-schemas.md"),
)
AGGREGATES = Setting(
    "spark.zskip.planning.aggregates",
    "true",
    "boolean",
    "session",
    "false: an aggregate over a filtered scan reads every row group it keeps, even those whose statistics answer it",
    see=("aggregates", "../concepts/aggregates.md"),
)
LISTED_FILES = Setting(
    "spark.zskip.planning.listedFiles",
    "true",
    "boolean",
    "session",
    "false: scans of zskip's tables are planned by Iceberg from its manifests instead of from zskip's "
    "in-memory file lists",
)
PLANNER_PYTHON = Setting(
    "spark.zskip.planner.python",
    "",
    "interpreter",
    "application",
    "the Python interpreter of the hosted planner, with zskip and PySpark",
    shown="`spark.pyspark.python`, `PYSPARK_PYTHON`, `python3`",
    see=("a cluster with the extension", "../getting-started/cluster.md"),
)
PLANNER_TIMEOUT = Setting(
    "spark.zskip.planner.timeout",
    "30s",
    "duration",
    "application",
    "a query waits this long for zskip's plan, then keeps Spark's; the planner is restarted",
)
PLANNER_START_WAIT = Setting(
    "spark.zskip.planner.startWait",
    "30s",
    "duration",
    "application",
    "how long queries wait for the planner's first start, which begins with the application "
    "(0: queries before it keep Spark's plans)",
)
PLANNER_START_TIMEOUT = Setting(
    "spark.zskip.planner.startTimeout",
    "120s",
    "duration",
    "application",
    "how long the planner may take to start before it is restarted",
)
PROCEDURES_MAX_CONCURRENT = Setting(
    "spark.zskip.procedures.maxConcurrent",
    "8",
    "count",
    "application",
    "how many CALL zskip.system.* may run at once in the application; one more is refused with a one-line error",
    see=("security", "../concepts/security.md"),
)
PROCEDURES_TIMEOUT = Setting(
    "spark.zskip.procedures.timeout",
    "24h",
    "duration",
    "application",
    "how long a CALL zskip.system.* may run (a session may set a shorter bound): past it the call fails "
    "with one line, its Spark jobs are cancelled and it publishes nothing it had not committed; 0 for no bound",
    see=("security", "../concepts/security.md"),
)
CACHE_BYTES = Setting(
    "ZSKIP_PLANNING_CACHE_BYTES",
    str(1 << 30),
    "bytes",
    "environment",
    "bounds the bytes of the footers, index blobs and manifests planning keeps (one cache per process, "
    "shared by every session of a driver or of the hosted planner); an entry larger than a quarter of it "
    "is read each time it is needed",
)

SETTINGS: tuple[Setting, ...] = (
    ENABLED,
    CAPTURE,
    RANGE_ROWS,
    SMALL_JOIN_SIDE,
    AGGREGATES,
    LISTED_FILES,
    PLANNER_PYTHON,
    PLANNER_TIMEOUT,
    PLANNER_START_WAIT,
    PLANNER_START_TIMEOUT,
    PROCEDURES_MAX_CONCURRENT,
    PROCEDURES_TIMEOUT,
)
ENVIRONMENT: tuple[Setting, ...] = (CACHE_BYTES,)

WRITE_ORDER = TableProperty(
    "zskip.write.order",
    "you",
    "how writes into a table zskip clustered are ordered: auto (default), range, sort or none",
    see=("keep a table laid out", "../how-to/keep-laid-out.md"),
)
CLUSTERING_STORE = TableProperty(
    "zskip.clustering.store",
    "optimize",
    "the clustering store: the spec, every file's and row group's curve-key range, the key clustered writes sort by",
)
CLUSTERING = TableProperty(
    "zskip.clustering",
    "optimize",
    "the layout in words (columns by field id, curve, mapping, file size), what maintain keeps",
)
CLUSTERED_FIELDS = TableProperty(
    "zskip.clustering.field-ids",
    "optimize",
    "the clustered field ids and the store they describe, so the rule decides a query on other columns "
    "without the planner",
)
VALUE_ORDERED_FIELDS = TableProperty(
    "zskip.clustering.value-ordered-field-ids",
    "optimize",
    "of those, the columns whose curve coordinate follows their own order (all but a dimension's), so the "
    "rule decides a filter bounding one of them on one side without the planner",
)
CURVE = TableProperty(
    "zskip.clustering.curve",
    "optimize",
    "the curve and the store it describes: along Hilbert's, a filter on one such column is decided "
    "without the planner whatever its bounds",
)
INDEX_MANIFEST = TableProperty(
    "zskip.index.manifest", "index builds", "the index manifest, swapped by compare-and-swap"
)
INDEXED_FIELDS = TableProperty(
    "zskip.index.field-ids",
    "index builds",
    "the field ids with an index answering conditions and the manifest they describe",
)
SUMMED_FIELDS = TableProperty(
    "zskip.index.sums-field-ids",
    "index builds",
    "the field ids with a sums index or that are a cube's measures, and the manifest they describe, so the "
    "rule leaves an aggregate summing another column to Spark without the planner",
)

PROPERTIES: tuple[TableProperty, ...] = (
    WRITE_ORDER,
    CLUSTERING_STORE,
    CLUSTERING,
    CLUSTERED_FIELDS,
    VALUE_ORDERED_FIELDS,
    CURVE,
    INDEX_MANIFEST,
    INDEXED_FIELDS,
    SUMMED_FIELDS,
)

# where the generated tables sit in docs/reference/settings.md
BEGIN = "<!-- generated by `python -m zskip.settings --write`: edit src/zskip/settings.py instead -->"
END = "<!-- end of the generated tables -->"


def _described(description: str, see: tuple[str, str] | None) -> str:
    return description + (f" ([{see[0]}]({see[1]}))" if see else "")


def _default(setting: Setting) -> str:
    if setting.shown:
        return setting.shown
    if setting.kind == "bytes" and int(setting.default) >= 1 << 20:
        from zskip.units import format_bytes

        return f"`{setting.default}` ({format_bytes(int(setting.default))})"
    return f"`{setting.default}`"


def markdown_tables() -> str:
    """The settings reference's tables, from the registry."""
    lines = [
        "| setting | default | scope | what |",
        "|---|---|---|---|",
        *(f"| `{s.key}` | {_default(s)} | {s.scope} | {_described(s.description, s.see)} |" for s in SETTINGS),
        "",
        "The process's environment, not Spark's:",
        "",
        "| variable | default | what |",
        "|---|---|---|",
        *(f"| `{s.key}` | {_default(s)} | {_described(s.description, s.see)} |" for s in ENVIRONMENT),
        "",
        "Table properties:",
        "",
        "| property | set by | what |",
        "|---|---|---|",
        *(f"| `{p.key}` | {p.set_by} | {_described(p.description, p.see)} |" for p in PROPERTIES),
    ]
    return "\n".join(lines)


def with_tables(page: str) -> str:
    """``page`` (the settings reference) with the text between its markers written from the registry."""
    head, begin, rest = page.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the page has no {BEGIN!r} ... {END!r} markers to write the tables between")
    return f"{head}{BEGIN}\n{markdown_tables()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> None:
    # imported here, not with the module: every process that imports zskip imports this module, some
    # in a directory anyone may have left an argparse.py in (PySpark's workers run in the JVM's)
    import argparse

    parser = argparse.ArgumentParser(prog="python -m zskip.settings", description=__doc__.split("\n")[0])
    parser.add_argument("--write", type=Path, metavar="PAGE", help="rewrite the tables of PAGE in place")
    args = parser.parse_args(argv)
    if args.write is None:
        sys.stdout.write(markdown_tables() + "\n")
    else:
        args.write.write_text(with_tables(args.write.read_text()))


if __name__ == "__main__":
    main()
