"""The order in which each curve visits a small grid: why Z-order and Hilbert keep boxes compact."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from zskip.curves import hilbert_inverse, z_deinterleave
from zskip.viz.figures import save_png

__all__ = ["plot_curves"]


def plot_curves(path: str | Path, *, bits: int = 3) -> Path:
    """Draw the linear, Z-order and Hilbert paths over a ``2**bits`` square grid to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = 1 << (2 * bits)
    keys = np.arange(cells, dtype=np.uint64)
    side = 1 << bits
    paths = {
        "linear (sort by x, then y)": [keys // np.uint64(side), keys % np.uint64(side)],
        "Z-order": z_deinterleave(keys, 2, bits),
        "Hilbert": hilbert_inverse(keys, 2, bits),
    }
    figure, axes = plt.subplots(1, 3, figsize=(12, 4.2))
    for axis, (title, (x, y)) in zip(axes, paths.items(), strict=True):
        axis.plot(x, y, "-", color="#335", linewidth=1.5)
        axis.scatter(x, y, c=np.arange(cells), cmap="viridis", s=30, zorder=3)
        quarter = cells // 4  # the cells of the first quarter of the keys: one "file"
        axis.scatter(x[:quarter], y[:quarter], facecolors="none", edgecolors="#c33", s=120, zorder=4)
        axis.set_title(title)
        axis.set_xlabel("x rank")
        axis.set_ylabel("y rank")
        axis.set_aspect("equal")
    figure.suptitle("Visiting order of each curve; circled: the cells of the first quarter of the keys")
    return save_png(figure, path, dpi=110)
