"""``zskip advise``: choose the columns, curve, mapping and indexes of a table from how it is queried.

The workload is the table's workload log (every scan zskip planned on it, ``zskip.workload``) or a
file of SQL queries.  Candidates are sets of one to ``max_columns`` of the columns the workload
filters most, along Hilbert (one column: a plain sort) with rank mapping, the best few along zorder
and linear too, and raw mapping for the best few.  Each is scored by simulating it on one Spark
sample of the table, nothing rewritten (``zskip.maintenance.simulate``): the sample's curve keys,
cut into as many files and row groups as optimize would write, give each simulated row group its
min/max, and every query of the workload is checked against them, weighted by how often it ran.
Every candidate and the current layout (measured by zskip's own planner, query by query) is then
tried with the indexes that pay off on it, and all are ranked together by what the workload's reads
cost per scan: the rows in the row groups read (what a read costs whatever size a layout's row groups
are) plus, for each file opened, the rows opening it costs (Iceberg's ``read.split.open-file-cost``
over the table's bytes per row, ``file_cost_rows``), and on a tie the cheaper candidate (no rewrite,
fewer indexes, fewer columns); with a bound asked (no query slower than a reference,
``zskip.maintenance.objectives``), those holding to it first.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql.types import DataType

from zskip.curves import (
    CURVES,
    order_key_u64,
)
from zskip.display import Progress
from zskip.errors import InvalidOptionError, UnknownColumnError, ZskipError
from zskip.expr import AlwaysTrue, Expr, columns_of
from zskip.expr.nodes import And, IsNull, Not
from zskip.expr.sql import quoted, to_sql
from zskip.iceberg.files import data_files
from zskip.iceberg.frames import collect_arrow
from zskip.iceberg.predicates import filter_of
from zskip.iceberg.spark_errors import reaching_storage
from zskip.iceberg.table import IcebergTable, load_table
from zskip.indexing.api import create_index
from zskip.indexing.upkeep import optimize
from zskip.layout.dimensions import Dimension
from zskip.layout.optimize import DEFAULT_ROW_GROUP_SIZE, ROW_GROUP_PROPERTY
from zskip.layout.sample_fit import SAMPLE_ROWS
from zskip.maintenance.forecasts import (
    Advice,
    LayoutForecast,
    LayoutKey,
    WorkloadQuery,
    layout_key,
)
from zskip.maintenance.logged_joins import LoggedJoin, LoggedJoins, logged_joins
from zskip.maintenance.maintain import recorded_layout
from zskip.maintenance.objectives import Reference, bounded, measure_reference
from zskip.maintenance.simulator import LayoutSimulator
from zskip.maintenance.stars import (
    Axis,
    DimensionAxes,
    StarJoin,
    axis_column,
    star_axes,
    star_joins,
)
from zskip.planning.plan import OPEN_FILE_COST_PROPERTY, PLANNING_PROPERTIES, ScanPlan, open_file_cost
from zskip.planning.sql import scanned_queries
from zskip.planning.workload import predicate_for_schema, read_workload
from zskip.storage import FileAccess
from zskip.units import parse_size

__all__ = ["advise", "read_queries", "split_statements"]

log = logging.getLogger(__name__)

POOL_COLUMNS = 5  # the most filtered columns candidates are drawn from
MAX_AXES = POOL_COLUMNS + 1  # a candidate's axes at most (``_axes``: the pool and the dimensions)
CURVE_TRIES = 8  # the sets of axes that read least along Hilbert, also tried along zorder and linear
RAW_TRIES = 3  # multi-column candidates also tried with raw mapping
WEIGHTED_TRIES = 3  # the best multi-column candidates also tried as a zorder weighted by the workload
WEIGHT_STEP = 0.25  # the refining search moves one axis's weight by this much at a time
MAX_WEIGHT = 4.0  # ... up to this (the lightest axis weighs 1)
REFINE_SEEDS = 2  # the best multi-axis candidates the search starts from
REFINE_SIMULATIONS = 12  # layouts the search simulates at most (about a second each at SSB scale factor 10)


@reaching_storage
def advise(
    spark: SparkSession,
    table: str,
    *,
    queries: str | Path | Sequence[str] | None = None,
    max_columns: int = MAX_AXES,
    target_file_size: int | str | None = None,
    sample_rows: int = SAMPLE_ROWS,
    top: int = 10,
    apply: bool = False,
    no_slower_than: str | None = None,
    progress: Progress | None = None,
) -> Advice:
    """Rank layouts of ``table`` with their indexes by what its workload would read under each,
    simulated on a sample; the current layout is a candidate too.

    ``queries``: SQL queries (a list, or a file of statements separated by ``;``) to use as the
    workload instead of the table's workload log.  ``target_file_size``: as optimize would write
    (default: the recorded layout's, else 128MB).  ``apply=True`` optimizes to the best layout (unless
    it is the current one) and builds its indexes.  ``no_slower_than``: ``"current"`` (the table as it
    is) or a table's name (a copy laid out otherwise, Iceberg's own zorder of it): layouts forecast to
    make no query of the workload slower than there rank first, the cheapest reads among them
    (``zskip.maintenance.objectives``).  Layouts rank by the rows they read plus, per file opened, the
    rows its opening costs (``file_cost_rows``).

    >>> zskip.advise(spark, "lake.db.events").best.label   # doctest: +SKIP
    'hilbert over user_id, ts (rank) + bloom on session_id'
    """
    started = time.monotonic()
    report = progress or (lambda stage, done, total: None)
    if not isinstance(max_columns, int) or isinstance(max_columns, bool) or not 1 <= max_columns <= MAX_AXES:
        raise InvalidOptionError(f"max_columns must be a whole number from 1 to {MAX_AXES}, not {max_columns!r}")
    for name, value in (("sample_rows", sample_rows), ("top", top)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidOptionError(f"{name} must be a whole number of at least 1, not {value!r}")
    if no_slower_than is not None and (not isinstance(no_slower_than, str) or not no_slower_than.strip()):
        raise InvalidOptionError(f"no_slower_than must be 'current' or a table's name, not {no_slower_than!r}")
    statements = read_queries(queries) if queries is not None else None
    iceberg = load_table(spark, table)
    recorded = recorded_layout(iceberg)
    target = parse_size(
        target_file_size if target_file_size is not None else (recorded.target_file_size if recorded else "128MB"),
        name="target_file_size",
    )
    setting = iceberg.property(ROW_GROUP_PROPERTY)
    row_group_size = parse_size(setting or DEFAULT_ROW_GROUP_SIZE, name="row group size")
    files = data_files(spark, iceberg.name)
    if files is None or files.num_rows == 0:
        raise InvalidOptionError(f"{iceberg.name} holds no data: load it before asking how to lay it out")

    # the advisor plans with no recorder (``plan_table(..., recorder=None)``): its own queries never
    # reach the workload log, and the session's settings are left alone
    plans: dict[str, ScanPlan] = {}
    workload = _workload(spark, iceberg, statements, plans)
    pool, types = _pool(iceberg, workload)
    dimensions = star_axes(spark, [(j, q.weight) for q in workload for j in q.joins])
    foreign = {c: t for c, t in _column_types(iceberg, [d.foreign_key for d in dimensions]).items() if c not in types}
    rows = int(pc.sum(files["record_count"]).as_py())
    size = int(pc.sum(files["file_size_in_bytes"]).as_py())
    sample, positions = _sample(spark, iceberg.name, [*types, *foreign], rows, sample_rows)
    types = {c: t for c, t in types.items() if _keyable(sample[c])}
    keyable = {c: t for c, t in {**types, **foreign}.items() if _keyable(sample[c])}
    axes = _axes(workload, types, dimensions, keyable)
    if not axes:
        raise InvalidOptionError(
            f"the workload filters {iceberg.name} only on columns zskip cannot cluster by ({', '.join(pool)})"
        )
    out_files = max(1, math.floor(size / target + 0.5))
    rows_per_group = _rows_per_row_group(
        files, row_group_size, parse_size(setting) if setting else None, iceberg.file_access()
    )
    simulator = LayoutSimulator(
        sample, workload, out_files, rows_per_group, rows, DimensionAxes(spark, {**types, **foreign})
    )
    simulator.measure_current(spark, iceberg.name, positions, report, plans)
    report("counting rare values in the table", 0, 1)
    simulator.count_rare_matches(spark, iceberg.name, list(types))
    report("counting rare values in the table", 1, 1)
    reference = None
    if no_slower_than is not None:
        now_rows = [q.rows_now for q in simulator.current_layout().queries]
        reference = measure_reference(spark, iceberg.name, no_slower_than.strip(), workload, now_rows)
    file_rows = file_cost_rows(iceberg.property(OPEN_FILE_COST_PROPERTY), size, rows)
    layouts = _rank(simulator, axes, types, max_columns, report, _ordering(file_rows), reference)
    now = simulator.current_layout()
    advice = Advice(
        table=iceberg.name,
        scans=simulator.weight,
        distinct_queries=len(workload),
        sample_rows=sample.num_rows,
        simulated_files=out_files,
        simulated_row_groups=max(1, round(rows / rows_per_group)),
        files_now=now.files,
        row_groups_now=now.row_groups,
        rows_now=now.rows,
        table_rows=rows,
        layouts=tuple(layouts[:top]),
        table_bytes=size,
        seconds=time.monotonic() - started,
        reference=reference.name if reference is not None else None,
        file_rows=file_rows,
    )
    log.info("advise %s: %s, %.1fx fewer row groups (%.1f s)", table, advice.best.label, advice.gain, advice.seconds)
    return _apply(spark, advice, target, row_group_size, progress) if apply else advice


def read_queries(queries: str | Path | Sequence[str]) -> list[str]:
    """The statements of a workload: a list of SQL texts, or a file of statements separated by ``;``."""
    if isinstance(queries, (str, Path)):
        path = Path(queries)
        if not path.is_file():
            raise InvalidOptionError(f"queries file {str(path)!r} does not exist: give a file of SQL statements")
        texts = split_statements(path.read_text(encoding="utf-8"))
    elif isinstance(queries, Sequence) and all(isinstance(q, str) for q in queries):
        texts = [q.strip().rstrip(";").strip() for q in queries]
    else:
        raise InvalidOptionError(f"queries must be a file or a list of SQL texts, not {queries!r}")
    texts = [t for t in texts if t]
    if not texts:
        raise InvalidOptionError("the workload holds no query: give at least one SELECT")
    return texts


def split_statements(text: str) -> list[str]:
    """SQL statements separated by ``;`` outside quotes; ``--`` comments dropped.

    >>> split_statements("SELECT ';' AS a; -- two\\nSELECT 2")
    ["SELECT ';' AS a", 'SELECT 2']
    """
    out: list[str] = []
    current: list[str] = []
    for token in re.findall(r"--[^\n]*|'(?:[^']|'')*'|\"[^\"]*\"|`[^`]*`|;|[^;'\"`-]+|-", text):
        if token.startswith("--"):
            continue
        if token == ";":
            out.append("".join(current).strip())
            current = []
        else:
            current.append(token)
    out.append("".join(current).strip())
    return [s for s in out if s]


def _workload(
    spark: SparkSession, iceberg: IcebergTable, statements: list[str] | None, plans: dict[str, ScanPlan]
) -> list[WorkloadQuery]:
    """Distinct filters on the table with how often each ran: from ``statements``' scans of the table
    (with the filters of the dimensions each is joined to; ``plans`` gets zskip's plan of each, join
    stage included), or from its workload log (the logged joins' keys asked of each dimension now).
    Scans with no filter of their own or of a dimension read everything under any layout: left out."""
    counts: Counter[str] = Counter()
    exprs: dict[str, Expr] = {}
    joins: dict[str, tuple[StarJoin, ...]] = {}
    if statements is not None:
        for statement in statements:
            for scanned in scanned_queries(spark, statement):
                found = star_joins(scanned.joins)
                if _same_table(scanned.table, iceberg.name) and (not isinstance(scanned.expr, AlwaysTrue) or found):
                    # one entry per filter on the table and filters of its dimensions
                    text = "\u0001".join([to_sql(scanned.expr), *(f"{j.dimension}: {j.filter}" for j in found)])
                    counts[text] += 1
                    exprs[text] = scanned.expr
                    joins[text] = found
                    plans.setdefault(text, scanned.plan)
        if not counts:
            raise InvalidOptionError(f"no query of the workload filters {iceberg.name}: nothing to advise on")
    else:
        log_rows = read_workload(iceberg.location(), iceberg.file_access())
        logged = Counter(_logged_predicates(iceberg, log_rows))
        resolver = LoggedJoins(spark, iceberg)
        for (text, recorded), count in logged.items():
            try:
                _, _, scan = filter_of(spark, iceberg.name, text, PLANNING_PROPERTIES)
            except ZskipError as exc:  # a column dropped since, say: that filter no longer applies
                log.warning("workload filter %r of %s left out: %s", text, iceberg.name, exc)
                continue
            resolved = resolver.star_joins(recorded)
            if resolved is None:
                continue  # a join that can no longer be named: what the scan read is not known
            found = tuple(j for j in resolved if j.columns)
            if scan is not None and (not isinstance(scan.expr, AlwaysTrue) or found):
                key = "\u0001".join([to_sql(scan.expr), *(f"{j.dimension}: {j.filter}" for j in found)])
                counts[key] += count
                exprs[key] = scan.expr
                joins[key] = found
        if not counts:
            raise InvalidOptionError(
                f"{iceberg.name} has no filtered scans in its workload log: query it with zskip.read or "
                "zskip.sql first, or give the workload as queries (--queries FILE)"
            )
    return [WorkloadQuery(text, exprs[text], count, joins.get(text, ())) for text, count in counts.most_common()]


def _logged_predicates(iceberg: IcebergTable, log_rows: pa.Table) -> list[tuple[str, tuple[LoggedJoin, ...]]]:
    """Each logged scan's filter as SQL over the table's columns as they are called now, with the
    filtered dimensions it was joined to (``zskip.maintenance.logged_joins``).

    A record names its columns by field id (``predicate_fields``), so a column renamed since is found
    under its new name and one dropped since leaves its filter out (records from before 0.4 have only
    names, and are taken as they were written)."""
    if not log_rows.num_rows:
        return []
    names = {f.id: f.name for f in iceberg.schema() if not f.nested}
    out = []
    by_field = log_rows.column("predicate_fields").to_pylist()
    joined = log_rows.column("joins").to_pylist()
    for text, fields, joins in zip(log_rows.column("predicate").to_pylist(), by_field, joined, strict=True):
        if fields is None:
            out.append((str(text), logged_joins(joins)))
            continue
        current = predicate_for_schema(str(fields), names)
        if current is None:
            log.info("workload filter %r of %s left out: a column it filters has left the table", text, iceberg.name)
            continue
        out.append((current, logged_joins(joins)))
    return out


def _filtered_columns(expr: Expr) -> set[str]:
    """Columns ``expr`` filters on; a lone ``IS NOT NULL`` (Spark adds one for a join key) filters
    nothing worth clustering by."""
    parts = expr.children if isinstance(expr, And) else (expr,)
    kept = [p for p in parts if not (isinstance(p, Not) and isinstance(p.child, IsNull))]
    return {str(c) for p in kept for c in columns_of(p)}


def _same_table(scanned: str, table: str) -> bool:
    return scanned.lower() == table.lower() or scanned.lower().endswith("." + table.lower().split(".", 1)[-1])


def _pool(iceberg: IcebergTable, workload: list[WorkloadQuery]) -> tuple[list[str], dict[str, DataType]]:
    """The columns candidates are drawn from: the most filtered (by scans), the columns the table
    partitions by value left out (optimize refuses them)."""
    weights: Counter[str] = Counter()
    for query in workload:
        for column in _filtered_columns(query.expr):
            weights[column] += query.weight
    partition = set(iceberg.identity_partition_columns())
    names = [c for c, _ in weights.most_common() if c not in partition][:POOL_COLUMNS]
    types = _column_types(iceberg, names)
    if not types and not any(q.joins for q in workload):
        raise InvalidOptionError(
            f"the workload filters no column of {iceberg.name} that is not an identity partition column"
        )
    return names, types


def _column_types(iceberg: IcebergTable, names: list[str]) -> dict[str, DataType]:
    """The Spark types of those of ``names`` that are columns of the table."""
    try:
        return iceberg.column_types(names)
    except UnknownColumnError:
        types: dict[str, DataType] = {}
        for name in names:
            with contextlib.suppress(UnknownColumnError):
                types |= iceberg.column_types([name])
        return types


def _axes(
    workload: list[WorkloadQuery],
    types: dict[str, DataType],
    dimensions: dict[Dimension, int],
    keyable: dict[str, DataType],
) -> list[Axis]:
    """The axes candidates are drawn from, most used first (by scans), ``POOL_COLUMNS`` + 1 at most: the
    pool's columns, and a dimension axis for each foreign key and dimension the workload filters
    through (its foreign key a column of the table)."""
    weights: Counter[Axis] = Counter()
    for query in workload:
        for column in _filtered_columns(query.expr):
            if column in types:
                weights[column] += query.weight
    for dimension, weight in dimensions.items():
        if dimension.foreign_key in keyable:
            weights[dimension] += weight
    return [axis for axis, _ in weights.most_common(POOL_COLUMNS + 1)]


def _sample(
    spark: SparkSession, table: str, columns: list[str], rows: int, sample_rows: int
) -> tuple[pa.Table, pa.Table]:
    """A Spark sample of ``columns``, and each sampled row's file and position in it."""
    frame = spark.table(table).select(*[quoted(c) for c in columns], "_file", "_pos")
    fraction = min(1.0, 1.2 * sample_rows / max(rows, 1))
    if fraction < 1.0:
        frame = frame.sample(fraction=fraction, seed=11)
    found = collect_arrow(frame.limit(sample_rows))
    return found.select(columns), found.select(["_file", "_pos"])


def _keyable(column: pa.ChunkedArray) -> bool:
    try:
        order_key_u64(column.slice(0, 1))
    except (TypeError, ValueError):
        return False
    return True


def _rows_per_row_group(files: pa.Table, row_group_size: int, current_setting: int | None, access: FileAccess) -> float:
    """Rows a row group of ``row_group_size`` bytes will hold, from a few files' footers: where the
    table's files already hold several row groups each under a known setting, their rows per row group
    scaled to the new size (Parquet's writer rolls by its own measure of buffered bytes); otherwise
    the bytes a row takes before compression."""
    rows = size = groups = footers = 0
    for path in files["file_path"].to_pylist()[:4]:
        metadata = access.open_parquet(path).metadata
        footers += 1
        groups += metadata.num_row_groups
        for i in range(metadata.num_row_groups):
            rows += metadata.row_group(i).num_rows
            size += metadata.row_group(i).total_byte_size
    if not rows:
        return max(1.0, row_group_size / 64)
    if current_setting and groups >= 2 * footers:
        return max(1.0, rows / groups * row_group_size / current_setting)
    return max(1.0, row_group_size / (size / rows))


def file_cost_rows(open_cost: str | None, table_bytes: int, table_rows: int) -> float:
    """What opening one file costs in rows read: the bytes Iceberg's split planning counts an opening
    as (``open_cost``, the table's ``read.split.open-file-cost``; 4 MiB unless set) over the table's
    bytes per row.  Each file a scan opens is a footer to fetch and parse and reads to start; on a
    table of small files that outweighs the rows a finer cut saves (58,788 films in 24 files: a file
    opened costs about 48,000 rows, a scan reads about 2,000), on one of large files rows decide.

    >>> file_cost_rows(None, 100 * 2**20, 1_000_000)   # 100 MiB of 1M rows: 105 bytes a row
    40000.0
    """
    if table_rows <= 0 or table_bytes <= 0:
        return 0.0
    return open_file_cost(open_cost) / (table_bytes / table_rows)


Ordering = Callable[[LayoutForecast], tuple[float, ...]]


def _ordering(file_rows: float) -> Ordering:
    """How candidates rank, a file opened counting as ``file_rows`` rows read (``file_cost_rows``)."""

    def order(layout: LayoutForecast) -> tuple[float, ...]:
        """With a reference asked, those holding to it first, the others by how far they break it;
        then the least cost per scan (rows read plus files opened at ``file_rows`` each, within 1%),
        then fewest files; then the cheaper candidate: no rewrite, fewer indexes, fewer columns, the
        curve and mapping listed first."""
        over = layout.over_reference or 0.0
        cost = layout.rows + layout.files * file_rows
        return (
            float(over > 0),
            round(math.log(over) / math.log(1.01)) if over > 0 else 0,
            round(math.log(max(cost, 1.0)) / math.log(1.01)),
            round(layout.files, 1),
            int(layout.rewrites),
            len(layout.indexes),
            len(layout.columns),
            CURVES.index(layout.curve) if layout.curve in CURVES else len(CURVES),
            0 if layout.mapping == "rank" else 1,
        )

    return order


def _rank(
    simulator: LayoutSimulator,
    axes: list[Axis],
    types: dict[str, DataType],
    max_columns: int,
    report: Progress,
    order: Ordering,
    reference: Reference | None = None,
) -> list[LayoutForecast]:
    """Every candidate layout over ``axes`` with rank mapping and the current layout, each with the
    indexes that pay off on it (on ``types``' columns); then raw mapping for the best few with a column
    of the table among their axes, weighted zorders, and weights refined from the best; all ranked
    (by ``order``), against ``reference`` where one is asked.  A candidate never holds a foreign key both
    as a column and through its dimension, nor one foreign key through two dimensions."""
    keyed = {**types, **simulator.dimensions.fact_types}

    def scored(
        chosen: Sequence[Axis], curve: str, mapping: str, weights: tuple[float, ...] | None = None
    ) -> LayoutForecast:
        simulated = simulator.simulate(chosen, keyed, curve, mapping, weights)
        layout = bounded(simulator.add_indexes(simulated, types), reference, simulator.rows_per_group)
        simulator.forget(layout.key)  # scored: its cells are not needed again
        return layout

    # every set of axes along Hilbert (one axis: a sort), then the other curves for the best sets only:
    # which sets read least hardly depends on the curve, and each simulation costs a second at SSB SF 10
    chosen_sets = [
        chosen
        for size in range(1, min(max_columns, len(axes)) + 1)
        for chosen in itertools.combinations(axes, size)
        if len({axis_column(a).lower() for a in chosen}) == size
    ]
    layouts = []
    for done, chosen in enumerate(chosen_sets):
        layouts.append(scored(chosen, "linear" if len(chosen) == 1 else "hilbert", "rank"))
        report("simulating layouts", done + 1, len(chosen_sets))
    layouts.sort(key=order)
    best_sets = [lay.columns for lay in layouts if len(lay.columns) > 1][:CURVE_TRIES]
    for done, (chosen, curve) in enumerate(itertools.product(best_sets, ("zorder", "linear"))):
        layouts.append(scored(chosen, curve, "rank"))
        report("trying the other curves", done + 1, 2 * len(best_sets))
    current = simulator.add_indexes(simulator.current_layout(), types)
    layouts.append(bounded(current, reference, simulator.rows_per_group))
    layouts.sort(key=order)
    raw_tries = [lay for lay in layouts if len(lay.columns) > 1 and any(isinstance(a, str) for a in lay.columns)]
    for layout in raw_tries[:RAW_TRIES]:
        layouts.append(scored(layout.columns, layout.curve, "raw"))
    layouts.sort(key=order)
    tried: set[LayoutKey] = set()
    for layout in [lay for lay in layouts if lay.rewrites and len(lay.columns) > 1]:
        if len(tried) == WEIGHTED_TRIES:
            break
        weights = simulator.weights_for(layout.columns)
        key = layout_key(layout.columns, "zorder", layout.mapping, weights)
        if weights is None or key in tried:
            continue
        tried.add(key)
        layouts.append(scored(layout.columns, "zorder", layout.mapping, weights))
    layouts.extend(_refined(layouts, scored, report, order))
    return sorted(layouts, key=order)


def _refined(
    layouts: list[LayoutForecast],
    scored: Callable[..., LayoutForecast],
    report: Progress,
    order: Ordering,
) -> list[LayoutForecast]:
    """Zorders found by moving one axis's weight ``WEIGHT_STEP`` at a time from the best
    ``REFINE_SEEDS`` multi-axis candidates (a Hilbert or linear one starts from its even zorder), each
    move taken while it ranks better (``order``), ``REFINE_SIMULATIONS`` layouts simulated at most:
    where each search ended, when it is a layout not ranked yet (the steps on the way would crowd the
    list with near copies of it).
    The workload's own weights (``weights_for``) step by half an axis; a bound on every query often
    needs a finer one (an order's price weighing 1.25 keeps one query as fast while the rest gain)."""
    known = {lay.key: lay for lay in layouts}
    ranked = set(known)
    found: list[LayoutForecast] = []
    budget = REFINE_SIMULATIONS

    def layout_at(columns: tuple[Axis, ...], mapping: str, weights: tuple[float, ...]) -> LayoutForecast | None:
        nonlocal budget
        even = len(set(weights)) == 1
        key = layout_key(columns, "zorder", mapping, None if even else weights)
        if key not in known:
            if budget == 0:
                return None
            budget -= 1
            known[key] = scored(columns, "zorder", mapping, None if even else weights)
            report("refining weights", REFINE_SIMULATIONS - budget, REFINE_SIMULATIONS)
        return known[key]

    seeds = [lay for lay in sorted(layouts, key=order) if lay.rewrites and len(lay.columns) > 1][:REFINE_SEEDS]
    for seed in seeds:
        at = layout_at(seed.columns, seed.mapping, seed.weights or (1.0,) * len(seed.columns))
        while at is not None:
            base = at.weights or (1.0,) * len(at.columns)
            moves = []
            for axis, step in itertools.product(range(len(base)), (WEIGHT_STEP, -WEIGHT_STEP)):
                weights = tuple(w + step if i == axis else w for i, w in enumerate(base))
                if min(weights) != 1.0 or max(weights) > MAX_WEIGHT:  # the lightest weighs 1: one name each
                    continue
                moved = layout_at(at.columns, at.mapping, weights)
                if moved is not None:
                    moves.append(moved)
            better = min(moves, key=order, default=None)
            if better is None or order(better) >= order(at):
                break
            at = better
        if at is not None and at.key not in ranked:
            ranked.add(at.key)
            found.append(at)
    report("refining weights", REFINE_SIMULATIONS, REFINE_SIMULATIONS)
    return found


def _apply(spark: SparkSession, advice: Advice, target: int, row_group_size: int, progress: Progress | None) -> Advice:
    """Optimize to the best layout (unless it is the current one) and build its indexes, each an
    atomic commit of its own."""
    best = advice.best
    steps = []
    if best.rewrites:
        done = optimize(
            spark,
            advice.table,
            by=list(best.columns),
            curve=best.curve,
            mapping=best.mapping,
            weights=dict(zip((axis_column(a) for a in best.columns), best.weights, strict=True))
            if best.weights is not None
            else None,
            target_file_size=target,
            row_group_size=row_group_size,
            mode="full",
            progress=progress,
        )
        steps.append(f"optimize: {done.files_rewritten:,} files rewritten into {done.files_written:,}")
    for index in best.indexes:
        built = create_index(spark, advice.table, index.column, kind=index.kind, progress=progress)
        steps.append(f"{index.kind} index on {index.column}: {built.files_indexed:,} files indexed")
    return replace(advice, applied=tuple(steps))
