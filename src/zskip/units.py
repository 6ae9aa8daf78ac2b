"""Human sizes and durations: ``"128MB"`` to bytes and back for messages, ``"5m"`` to seconds."""

from __future__ import annotations

import math
import re
from datetime import timedelta

from zskip.errors import InvalidOptionError

__all__ = ["format_bytes", "parse_duration", "parse_size"]

_UNITS = {
    "": 1,
    "B": 1,
    "K": 1 << 10,
    "KB": 1 << 10,
    "KIB": 1 << 10,
    "M": 1 << 20,
    "MB": 1 << 20,
    "MIB": 1 << 20,
}
_UNITS |= {"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}


def parse_size(value: int | str, *, name: str = "size") -> int:
    """Bytes in ``value``: an int, or text such as ``"128MB"``, ``"1.5 GiB"`` (binary units).

    >>> parse_size("128MB"), parse_size(1024)
    (134217728, 1024)
    """
    if isinstance(value, bool):
        raise InvalidOptionError(f"{name} must be a number of bytes or text like '128MB', not {value!r}")
    if isinstance(value, int):
        size = value
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(value))
        if not match or match.group(2).upper() not in _UNITS:
            raise InvalidOptionError(f"{name} must be a number of bytes or text like '128MB', not {value!r}")
        size = int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    if size <= 0:
        raise InvalidOptionError(f"{name} must be positive, got {value!r}")
    return size


def format_bytes(size: float) -> str:
    """``size`` bytes in binary units.

    >>> format_bytes(1536)
    '1.5 KiB'
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: timedelta | float | str, *, name: str = "duration") -> float:
    """Seconds in ``value``: a ``timedelta``, a number of seconds, or text such as ``"30s"``,
    ``"5m"``, ``"12h"``, ``"3d"``.

    >>> parse_duration("5m"), parse_duration(90)
    (300.0, 90.0)
    """
    example = "a duration like 30s, 5m, 12h or 3d"
    if isinstance(value, bool):
        raise InvalidOptionError(f"{name} must be {example}, not {value!r}")
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        try:
            unit = _DURATION_UNITS.get(text[-1:], 0)
            seconds = float(text[:-1]) * unit if unit else float(text)
        except ValueError:
            raise InvalidOptionError(f"{name} must be {example}, not {value!r}") from None
    else:
        raise InvalidOptionError(f"{name} must be {example}, not {value!r}")
    if not math.isfinite(seconds):
        # NaN compares false with everything: as vacuum's age it would delete files of any age
        raise InvalidOptionError(f"{name} must be a finite duration like 30m, 12h or 3d, not {value!r}")
    if seconds < 0:
        raise InvalidOptionError(f"{name} must not be negative, got {value!r}")
    return seconds
