"""Writing a matplotlib figure to a PNG, creating its folder, and freeing the figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["save_png"]


def save_png(figure: Any, path: str | Path, *, dpi: int = 100) -> Path:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=dpi, bbox_inches="tight")  # keep axis labels and titles inside the picture
    plt.close(figure)
    return out
