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


def listening_ports(pid: int) -> list[int]:
    """The TCP ports process ``pid`` listens on (its sockets in LISTEN state, IPv4 and IPv6)."""
    inodes = set()
    for fd in (Path("/proc") / str(pid) / "fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = []
    for table in ("tcp", "tcp6"):
        lines = (Path("/proc") / str(pid) / "net" / table).read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                ports.append(int(local.rsplit(":", 1)[1], 16))
    return sorted(ports)
