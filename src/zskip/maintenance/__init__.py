"""Keeping a layout: how much of a table its clustering and indexes cover (``status``)."""

from __future__ import annotations

from zskip.maintenance.status import TableStatus, status

__all__ = ["TableStatus", "status"]
