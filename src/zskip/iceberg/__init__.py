"""The only layer that talks to the JVM: sessions, Iceberg tables, staged scans and commits."""

from __future__ import annotations

from zskip.iceberg.session import has_iceberg, session

__all__ = ["has_iceberg", "session"]
