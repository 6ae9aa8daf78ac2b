"""How much of a table its layout and indexes cover now: what ``zskip status`` prints.

Clustered means written by an optimize under the table's current clustering spec (the files whose
key ranges its clustering store records), so an append, or a rewrite by another tool, shows up as
unclustered bytes until the next optimize.  Index coverage is ``list_indexes``' own count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

from pyspark.sql import SparkSession

from zskip.curves import ClusteringSpec
from zskip.display import Displayed
from zskip.iceberg.files import data_files
from zskip.iceberg.frames import collect_arrow
from zskip.iceberg.spark_errors import reaching_storage
from zskip.iceberg.table import load_table
from zskip.indexing.api import IndexInfo, index_coverage
from zskip.layout.write_keys import WRITE_ORDER_PROPERTY, WRITE_ORDERS
from zskip.planning.workload import read_workload
from zskip.tablefiles.clustering_store import STORE_PROPERTY, SUMMARY_PROPERTY, read_store
from zskip.units import format_bytes

__all__ = ["DRIFT_GAIN", "TableStatus", "status"]

DRIFT_GAIN = 1.5


@dataclass(frozen=True)
class TableStatus(Displayed):
    """Coverage of ``table``'s current snapshot by its clustering and its indexes."""

    table: str
    snapshot_id: int | None
    files: int
    rows: int
    bytes: int
    clustering: str | None  # the spec's summary (columns, curve, mapping); None: never optimized
    files_clustered: int
    rows_clustered: int
    bytes_clustered: int
    last_optimize: str | None  # when the last optimize committed (UTC, ISO 8601)
    indexes: tuple[IndexInfo, ...] = field(default_factory=tuple)
    scans_recorded: int = 0  # records in the table's workload log (zskip.workload)
    # with drift=True: the advisor's best candidate for the recorded workload, and its predicted gain
    # (row groups per scan now over under it); None: not asked, or no filtered scan recorded
    advised: str | None = None
    advised_gain: float | None = None
    # how writes into the table are clustered (zskip.write.order and whether the store records the key)
    write_order: str | None = None

    @property
    def drifted(self) -> bool:
        """Whether the advisor predicts the recorded workload would read at least 1.5x fewer row
        groups under another layout or with other indexes."""
        return self.advised_gain is not None and self.advised_gain >= DRIFT_GAIN

    @property
    def clustered_share(self) -> float:
        """Share of the rows written by an optimize under the current spec (1.0 for an empty table)."""
        return self.rows_clustered / self.rows if self.rows else 1.0

    @property
    def bytes_unclustered(self) -> int:
        return self.bytes - self.bytes_clustered

    @property
    def up_to_date(self) -> bool:
        """Every row clustered and every index covering every file (nothing for maintenance to do)."""
        clustered = self.clustering is None or self.rows_clustered == self.rows
        return clustered and all(i.files_indexed == i.files_total and not i.files_missing for i in self.indexes)

    def _to_do(self) -> str:
        steps = []
        if self.clustering is not None and self.rows_clustered < self.rows:
            steps.append(f"zskip optimize {self.table}")
        if any(i.files_indexed < i.files_total or i.files_missing for i in self.indexes):
            steps.append(f"zskip index refresh {self.table}")
        return "no: run " + " and ".join(steps)

    def to_json(self) -> str:
        data = asdict(self)
        data |= {"clustered_share": self.clustered_share, "bytes_unclustered": self.bytes_unclustered}
        data["up_to_date"] = self.up_to_date
        data["drifted"] = self.drifted
        return json.dumps(data, indent=2)

    def display_title(self) -> str:
        return f"zskip status of {self.table}"

    def display_rows(self) -> list[tuple[str, str]]:
        rows = [
            ("snapshot", str(self.snapshot_id) if self.snapshot_id is not None else "none (empty table)"),
            ("data", f"{self.files:,} files, {self.rows:,} rows, {format_bytes(self.bytes)}"),
        ]
        if self.clustering is None:
            rows.append(("clustering", "none: run zskip optimize TABLE --by COLUMNS"))
        else:
            rows += [
                ("clustering", self.clustering),
                (
                    "clustered",
                    f"{self.clustered_share:.1%} of rows ({self.files_clustered:,} of {self.files:,} files); "
                    f"unclustered {format_bytes(self.bytes_unclustered)}",
                ),
                ("last optimize", self.last_optimize or "unknown (expired snapshot)"),
            ]
            if self.write_order is not None:
                rows.append(("clustered writes", self.write_order))
        if not self.indexes:
            rows.append(("indexes", "none"))
        for index in self.indexes:
            share = index.files_indexed / index.files_total if index.files_total else 1.0
            text = (
                f"{share:.1%} of files ({index.files_indexed:,} of {index.files_total:,}); "
                f"unindexed {format_bytes(index.bytes_unindexed)}"
            )
            if index.files_missing:
                text += f"; {index.files_missing} index files missing"
            if index.unused is not None:
                text = index.unused
            rows.append((f"index {index.kind} on {index.column}", text))
        rows.append(("workload log", f"{self.scans_recorded:,} scans recorded"))
        if self.advised is not None and self.advised_gain is not None:
            verdict = "drifted" if self.drifted else "no drift"
            rows.append(
                (
                    "workload drift",
                    f"{verdict}: the advisor's best is {self.advised}, {self.advised_gain:.1f}x fewer row groups "
                    f"than now" + (f" (zskip advise {self.table} --apply)" if self.drifted else ""),
                )
            )
        rows.append(("up to date", "yes" if self.up_to_date else self._to_do()))
        return rows


@reaching_storage
def status(spark: SparkSession, table: str, *, drift: bool = False) -> TableStatus:
    """Share of ``table``'s rows clustered under its current spec, each index's coverage, the
    unclustered and unindexed bytes, and when the last optimize committed.  ``drift=True`` also asks
    the advisor (``zskip.advise``, a Spark sample: seconds) whether the recorded workload would read
    less under another layout.

    >>> zskip.status(spark, "lake.db.t").clustered_share  # doctest: +SKIP
    0.99
    """
    iceberg = load_table(spark, table)
    snapshot = iceberg.current_snapshot_id()
    files = data_files(spark, iceberg.name, snapshot_id=snapshot) if snapshot is not None else None
    paths = files["file_path"].to_pylist() if files is not None else []
    counts = files["record_count"].to_pylist() if files is not None else []
    sizes = files["file_size_in_bytes"].to_pylist() if files is not None else []
    store = read_store(iceberg)
    clustered = set(store.file_generations()) if store is not None else set()
    mine = [i for i, path in enumerate(paths) if path in clustered]
    summary = iceberg.property(SUMMARY_PROPERTY)
    advice = _drift(spark, iceberg.name) if drift else (None, None)
    return TableStatus(
        table=iceberg.name,
        snapshot_id=snapshot,
        files=len(paths),
        rows=int(sum(counts)),
        bytes=int(sum(sizes)),
        clustering=_describe(summary, store.spec, {f.id: f.name for f in iceberg.schema()})
        if store is not None
        else None,
        files_clustered=len(mine),
        rows_clustered=int(sum(counts[i] for i in mine)),
        bytes_clustered=int(sum(sizes[i] for i in mine)),
        last_optimize=_last_optimize(spark, iceberg.name) if store is not None else None,
        indexes=tuple(index_coverage(iceberg, dict(zip(paths, sizes, strict=True)))),
        scans_recorded=read_workload(iceberg.location(), iceberg.file_access()).num_rows,
        advised=advice[0],
        advised_gain=advice[1],
        write_order=_write_order(iceberg.property(WRITE_ORDER_PROPERTY), store.has_write_keys)
        if store is not None
        else None,
    )


def _write_order(value: str | None, recorded: bool) -> str:
    """What zskip's rule does to a write into the table, in a few words (``zskip.layout.write_keys``;
    short: the CLI prints each row on one line of a terminal)."""
    if not recorded:
        return "off until the next optimize (store by an older zskip)"
    mode = (value or "auto").strip().lower()
    if mode not in WRITE_ORDERS:
        return f"auto ({WRITE_ORDER_PROPERTY} = {value!r} is not valid)"
    said = "the default" if value is None else f"{WRITE_ORDER_PROPERTY} = {mode}"
    return {
        "none": f"off ({said})",
        "range": f"range ({said}): by curve-key ranges",
        "sort": f"sort ({said}): each task sorts",
        "auto": f"auto ({said}): range, or sort under Iceberg's order",
    }[mode]


def _drift(spark: SparkSession, table: str) -> tuple[str | None, float | None]:
    """The advisor's best candidate for the recorded workload and its predicted gain (None, None:
    nothing to advise on)."""
    from zskip.errors import InvalidOptionError
    from zskip.maintenance.advise import advise

    try:
        advice = advise(spark, table, top=1)
    except InvalidOptionError:  # no filtered scan recorded, or none on a column zskip clusters by
        return None, None
    return advice.best.label, advice.gain


def _describe(summary: str | None, spec: ClusteringSpec, names: Mapping[int, str]) -> str:
    """The layout in words, its columns as the table calls them now (field ids of the spec)."""
    if not summary:
        return "recorded (no summary)"
    try:
        data = json.loads(summary)
    except ValueError:
        return summary
    if not isinstance(data, dict):
        return summary
    shown = []
    for column in spec.columns:
        if column.field_id is None:
            shown.append(f"{column.name} (not tied to a column: unused)")
        elif column.field_id not in names:
            shown.append(f"{column.name} (dropped since: unused)")
        else:
            shown.append(names[column.field_id])
    return f"{data.get('curve', '?')} over {', '.join(shown)} ({data.get('mapping', '?')} mapping)"


def _last_optimize(spark: SparkSession, table: str) -> str | None:
    """When the newest snapshot that set a clustering store was committed (None: expired)."""
    found = collect_arrow(
        spark.sql(
            f"SELECT max(committed_at) AS at FROM {table}.snapshots WHERE summary['{STORE_PROPERTY}'] IS NOT NULL"
        )
    )
    value = found["at"][0].as_py() if found.num_rows else None
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat(timespec="seconds")
    return str(value)
