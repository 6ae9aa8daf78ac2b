"""What a Spark application's queries scanned, read from the application itself: its SQL metrics, through
the REST API of its UI (``/api/v1/applications/<id>/sql``), the rows each Iceberg scan output.

Imports nothing of zskip's: jobs that must never import zskip use it too.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any


class Executions:
    """The SQL executions of an application, through its UI's REST API."""

    def __init__(self, ui_port: int) -> None:
        self.base = f"http://127.0.0.1:{ui_port}/api/v1/applications"
        self.seen = -1

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(self.base + path, timeout=30) as answer:
            return json.load(answer)

    def application(self) -> str:
        return str(self._get("")[0]["id"])

    def mark(self) -> None:
        """From now on: executions after the latest one so far."""
        self.seen = max((e["id"] for e in self._all()), default=-1)

    def _all(self) -> list[dict[str, Any]]:
        return list(self._get(f"/{self.application()}/sql?details=true&planDescription=false&offset=0&length=100000"))

    def scanned(self, table: str) -> int:
        """Rows the scans of ``table`` output in the executions since the last ``mark``, which then moves."""
        deadline = time.monotonic() + 30
        scan_deadline = time.monotonic() + 10
        while True:  # the UI learns of a finished execution from Spark's listener bus, a moment later
            executions = [e for e in self._all() if e["id"] > self.seen]
            # a statement run just before ``mark`` (a SET) may be listed only now: the query's own
            # execution, with its scan of ``table``, is waited for a while longer
            counts = [_output_rows(node) for e in executions for node in e.get("nodes", []) if _scans(node, table)]
            finished = executions and all(e["status"] != "RUNNING" for e in executions)
            # an execution is listed as finished before its metrics are aggregated (Spark does that
            # asynchronously after the execution's end): a scan without its row count is waited for too,
            # until a scan that ran no task (nothing to read: no count ever comes) is taken as 0 rows
            late = time.monotonic() > scan_deadline
            complete = all(count is not None for count in counts)
            if finished and (complete or late) and (counts or late):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"no finished execution with its metrics after {self.seen}: {executions}")
            time.sleep(0.2)
        self.seen = max(e["id"] for e in executions)
        return sum(count or 0 for count in counts)

    def await_job(self, prefix: str, statement: threading.Thread, seconds: float = 300) -> list[str]:
        """Wait until the application runs a job whose description starts with ``prefix`` while
        ``statement`` (the thread running the statement that starts it) lives; the descriptions seen."""
        started = time.monotonic()
        seen: list[str] = []
        while statement.is_alive() and time.monotonic() - started < seconds:
            seen = [d for d in self.running_jobs() if d.startswith(prefix)]
            if seen:
                break
            time.sleep(0.2)
        return seen

    def running_jobs(self) -> list[str]:
        """The descriptions (or names) of the application's jobs running now."""
        jobs = self._get(f"/{self.application()}/jobs?status=running")
        return [str(job.get("description") or job.get("name") or "") for job in jobs]


def _scans(node: dict[str, Any], table: str) -> bool:
    return str(node["nodeName"]).startswith("BatchScan") and table in node["nodeName"]


def _output_rows(node: dict[str, Any]) -> int | None:
    """The rows a scan node output, or None while its metrics are not aggregated yet."""
    for metric in node.get("metrics", []):
        if metric["name"] == "number of output rows" and str(metric["value"]).strip():
            return int(str(metric["value"]).replace(",", ""))
    return None
