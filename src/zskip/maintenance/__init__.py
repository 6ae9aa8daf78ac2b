"""Keeping a layout: how much of a table its clustering and indexes cover (``status``)."""

from __future__ import annotations

from zskip.maintenance.status import IndexCoverage, TableStatus, status

__all__ = ["IndexCoverage", "TableStatus", "status"]
