"""Which files optimize rewrites, and in which groups: pure decisions over file metadata."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

__all__ = [
    "RECLUSTER_GENERATIONS",
    "RECLUSTER_UNCLUSTERED_FRACTION",
    "DataFileInfo",
    "FileGroup",
    "Selection",
    "batches",
    "files_from_arrow",
    "plan_groups",
    "select_files",
]

# incremental mode re-clusters everything when at least this share of the bytes is unclustered ...
RECLUSTER_UNCLUSTERED_FRACTION = 0.5
# ... or when the live clustered files come from more than this many optimize runs
RECLUSTER_GENERATIONS = 8


@dataclass(frozen=True, slots=True)
class DataFileInfo:
    path: str
    partition_key: str
    size_bytes: int
    record_count: int


@dataclass(frozen=True, slots=True)
class FileGroup:
    """Files of one partition rewritten together into ``output_files`` files."""

    partition_key: str
    files: tuple[str, ...]
    size_bytes: int
    record_count: int
    output_files: int


@dataclass(frozen=True, slots=True)
class Selection:
    files: tuple[DataFileInfo, ...]
    full: bool
    reason: str


def files_from_arrow(table: pa.Table) -> list[DataFileInfo]:
    rows = table.to_pydict()
    return [
        DataFileInfo(path, partition or "", int(size), int(count))
        for path, partition, size, count in zip(
            rows["file_path"],
            rows["partition_key"],
            rows["file_size_in_bytes"],
            rows["record_count"],
            strict=True,
        )
    ]


def select_files(
    files: Sequence[DataFileInfo],
    clustered_generation: Mapping[str, int] | None,
    *,
    mode: str,
) -> Selection:
    """The files to rewrite.

    ``clustered_generation`` maps each file written by a zskip optimize under the requested spec to
    the run (generation) that wrote it; ``None`` when the table has no such spec.  ``full`` rewrites
    every file.  ``incremental`` rewrites the files no optimize under this spec wrote, unless those
    hold at least half the bytes or the clustered files come from more than eight runs: then
    everything is re-clustered, since many small overlapping generations skip little.
    """
    if mode == "full":
        return Selection(tuple(files), True, "full mode rewrites every file")
    if clustered_generation is None:
        return Selection(tuple(files), True, "the table is not clustered by this spec yet")
    fresh = tuple(f for f in files if f.path not in clustered_generation)
    if not fresh:
        return Selection((), False, "every file is already clustered by this spec")
    total = sum(f.size_bytes for f in files) or 1
    fresh_fraction = sum(f.size_bytes for f in fresh) / total
    generations = {clustered_generation[f.path] for f in files if f.path in clustered_generation}
    if fresh_fraction >= RECLUSTER_UNCLUSTERED_FRACTION:
        return Selection(tuple(files), True, f"{fresh_fraction:.0%} of the bytes are unclustered: re-clustering all")
    if len(generations) + 1 > RECLUSTER_GENERATIONS:
        return Selection(tuple(files), True, f"{len(generations)} clustered generations overlap: re-clustering all")
    return Selection(fresh, False, f"clustering {len(fresh)} new files ({fresh_fraction:.0%} of the bytes)")


def plan_groups(
    files: Iterable[DataFileInfo], *, target_file_size_bytes: int, max_group_size_bytes: int
) -> list[FileGroup]:
    """Groups per partition, each at most ``max_group_size_bytes`` (a single larger file stays alone).

    Each group is written as ``round(bytes / target)`` files (at least one), so output files land
    near the target size with no trail of small ones.
    """
    by_partition: dict[str, list[DataFileInfo]] = defaultdict(list)
    for info in files:
        by_partition[info.partition_key].append(info)
    groups: list[FileGroup] = []
    for partition in sorted(by_partition):
        current: list[DataFileInfo] = []
        for info in sorted(by_partition[partition], key=lambda f: f.path):
            if current and sum(f.size_bytes for f in current) + info.size_bytes > max_group_size_bytes:
                groups.append(_group(partition, current, target_file_size_bytes))
                current = []
            current.append(info)
        if current:
            groups.append(_group(partition, current, target_file_size_bytes))
    return groups


def _group(partition: str, files: Sequence[DataFileInfo], target: int) -> FileGroup:
    size = sum(f.size_bytes for f in files)
    return FileGroup(
        partition_key=partition,
        files=tuple(f.path for f in files),
        size_bytes=size,
        record_count=sum(f.record_count for f in files),
        output_files=max(1, math.floor(size / target + 0.5)),
    )


def batches(groups: Sequence[FileGroup], *, max_commits: int) -> list[list[FileGroup]]:
    """Split groups into at most ``max_commits`` batches of consecutive groups, balanced by bytes."""
    if not groups:
        return []
    count = max(1, min(max_commits, len(groups)))
    total = sum(g.size_bytes for g in groups) or 1
    out: list[list[FileGroup]] = [[]]
    done = 0
    for group in groups:
        if out[-1] and done >= total * len(out) / count and len(out) < count:
            out.append([])
        out[-1].append(group)
        done += group.size_bytes
    return out
