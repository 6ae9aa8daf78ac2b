"""zskip's own class in the JVM: what planning asks the JVM, each question answered in one py4j call.

py4j costs a fraction of a millisecond per call, and a query touched over a hundred Java objects
one call at a time (the parsed plan's nodes, each scan's filters, the table's state).
``io.zskip.bridge.Bridge`` (``jvm/common/src/main/java/io/zskip/``, in the jar the session has)
walks those objects inside the JVM and answers in JSON.  Long answers come back through a local
file (see ``Answers.java``).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from zskip.iceberg.jvm import jvm_of

__all__ = ["bridge", "read_answer", "read_text"]

_lock = threading.Lock()
_BRIDGES: list[tuple[Any, Any]] = []  # (JVM view, Bridge instance): one per JVM


def bridge(spark: Any) -> Any:
    """The ``io.zskip.bridge.Bridge`` instance in ``spark``'s JVM."""
    jvm = jvm_of(spark)
    for known, instance in _BRIDGES:
        if known is jvm:
            return instance
    with _lock:
        for known, instance in _BRIDGES:
            if known is jvm:
                return instance
        instance = jvm.io.zskip.bridge.Bridge()
        _BRIDGES.append((jvm, instance))
        return instance


def read_answer(answer: str) -> Any:
    """The JSON an answer of the bridge holds (a long answer names a local file: read, then removed)."""
    return json.loads(read_text(answer))


def read_text(answer: str) -> str:
    """The text an answer of the bridge holds (a long answer names a local file: read, then removed)."""
    if answer.startswith("\u0000"):
        path = answer[1:]
        try:
            with open(path, encoding="utf-8") as stream:
                return stream.read()
        finally:
            os.unlink(path)
    return answer
