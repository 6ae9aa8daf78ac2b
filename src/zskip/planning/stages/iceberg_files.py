"""The first stage: the files of the tasks Spark's own Iceberg scan planned."""

from __future__ import annotations

from zskip.planning.plan import Candidates, PlanInputs

__all__ = ["iceberg_files"]


def iceberg_files(inputs: PlanInputs, candidates: Candidates) -> Candidates:
    """The files of the tasks Spark's scan planned (Iceberg pruned by partition and file min/max)."""
    return Candidates.of(dict.fromkeys(inputs.scan.paths))
