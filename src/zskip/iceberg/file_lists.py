"""The file lists of scans the JVM helper sent whole, remembered by digest: the helper sends a list it
sent before by its digest alone, so a repeated query's scans cross py4j as a few bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FILE_LISTS", "FileLists"]


class FileLists:
    """The file lists of scans the JVM helper sent whole, by digest (it sends a list it sent before by its
    digest alone).  Holds more than the helper remembers sending; a digest not here is asked for again."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.lists: OrderedDict[str, tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]] = OrderedDict()
        self.lock = threading.Lock()

    def of(
        self, item: Mapping[str, Any], fetch: Callable[[], Mapping[str, Any]]
    ) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
        """The paths, record counts and sizes of the scan ``item`` describes (``fetch``: the helper's whole list)."""
        digest = item.get("files_digest")
        if "files" in item or digest is None:
            found = _file_list(item)
        else:
            with self.lock:
                cached = self.lists.get(digest)
                if cached is not None:
                    self.lists.move_to_end(digest)
                    return cached
            found = _file_list(fetch())
        if digest is not None:
            with self.lock:
                self.lists[digest] = found
                self.lists.move_to_end(digest)
                while len(self.lists) > self.capacity:
                    self.lists.popitem(last=False)
        return found


FILE_LISTS = FileLists(1024)


def _file_list(item: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[int, ...], tuple[int, ...]]:
    prefix = item["prefix"]
    paths = tuple(p[1:] if p.startswith("\u0000") else prefix + p for p in item["files"])
    return paths, tuple(item["records"]), tuple(item["sizes"])
