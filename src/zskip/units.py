"""Human sizes: ``"128MB"`` and friends to bytes, and back for messages."""

from __future__ import annotations

import re

from zskip.errors import InvalidOptionError

__all__ = ["format_bytes", "parse_size"]

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
    """>>> format_bytes(1536)
    '1.5 KiB'
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"
