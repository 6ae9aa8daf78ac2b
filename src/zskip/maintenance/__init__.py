"""Keeping a layout: maintenance cycles that cluster and index new data (``maintain``), and how much
of a table its clustering and indexes cover (``status``)."""

from __future__ import annotations

from zskip.maintenance.maintain import MaintainResult, maintain, maintain_cycles
from zskip.maintenance.status import TableStatus, status

__all__ = ["MaintainResult", "TableStatus", "maintain", "maintain_cycles", "status"]
