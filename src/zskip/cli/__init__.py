"""The ``zskip`` command line."""

from __future__ import annotations

from zskip.cli.main import cli, main

__all__ = ["cli", "main"]
