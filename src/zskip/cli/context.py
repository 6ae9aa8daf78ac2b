"""What every ``zskip`` verb gets from the command line's shared options: where the catalog is, and a
Spark session started on first use."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["Context"]


@dataclass
class Context:
    warehouse: str
    catalog: str
    master: str
    _spark: Any = None

    def spark(self) -> Any:
        """The Spark session, started on first use (so ``--help`` stays instant)."""
        if self._spark is None:
            import zskip

            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            self._spark = zskip.session(warehouse=self.warehouse, catalog=self.catalog, master=self.master)
        return self._spark
