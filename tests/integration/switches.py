"""Turning zskip's planning of every query on and off around a block (the session fixture starts with it off)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import zskip
from zskip.planning.enable import ENABLED


@contextmanager
def zskip_off(spark: Any) -> Iterator[None]:
    """Spark's own plans inside the block, whatever the session's setting."""
    before = spark.conf.get(ENABLED, "false")
    spark.conf.set(ENABLED, "false")
    try:
        yield
    finally:
        spark.conf.set(ENABLED, before)


@contextmanager
def zskip_on(spark: Any) -> Iterator[None]:
    """zskip in every query inside the block; afterwards the session is as it was."""
    was = zskip.enabled(spark)
    zskip.enable(spark)
    try:
        yield
    finally:
        if not was:
            zskip.disable(spark)
