"""Choosing a layout from the workload (``advise``); keeping it: maintenance cycles that cluster and
index new data (``maintain``), and how much of a table its clustering and indexes cover (``status``)."""

from __future__ import annotations

from zskip.maintenance.advise import advise
from zskip.maintenance.forecasts import Advice
from zskip.maintenance.maintain import MaintainResult, maintain, maintain_cycles
from zskip.maintenance.status import TableStatus, status

__all__ = ["Advice", "MaintainResult", "TableStatus", "advise", "maintain", "maintain_cycles", "status"]
