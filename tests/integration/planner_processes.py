"""The zskip planner processes running on this machine (``python -m zskip.hosted``), by /proc.

Imports nothing of zskip's: jobs that must never import zskip use it too.
"""

from __future__ import annotations

from pathlib import Path


def planner_pids(application: str | None = None) -> list[int]:
    """The zskip planner processes running (of ``application``, an id, when given)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if b"zskip.hosted" in command and (application is None or application.encode() in command):
            pids.append(int(entry.name))
    return pids
