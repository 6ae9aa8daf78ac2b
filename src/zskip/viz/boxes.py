"""Data files drawn as their min/max boxes in two columns, side by side for several layouts."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from zskip.viz.figures import save_png

__all__ = ["plot_file_boxes"]


def plot_file_boxes(
    layouts: Mapping[str, pa.Table],
    *,
    x: str,
    y: str,
    path: str | Path,
    title: str | None = None,
) -> Path:
    """One panel per layout; each file is a rectangle from its lower to its upper bound in ``x`` and ``y``.

    ``layouts`` maps a panel title to a table with ``<x>__lower``, ``<x>__upper``, ``<y>__lower``,
    ``<y>__upper`` columns (``zskip.layout.inspection.file_bounds``).  Small, separate boxes mean a
    filter on either column reads few files; boxes spanning the whole plot mean every file is read.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    from zskip.layout.inspection import epoch_day, key_text, plot_values

    panels = len(layouts)
    figure, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 5), squeeze=False)
    for axis, (name, bounds) in zip(axes[0], layouts.items(), strict=True):
        x0 = plot_values(bounds[f"{x}__lower"].combine_chunks())
        x1 = plot_values(bounds[f"{x}__upper"].combine_chunks())
        y0 = plot_values(bounds[f"{y}__lower"].combine_chunks())
        y1 = plot_values(bounds[f"{y}__upper"].combine_chunks())
        colors = matplotlib.colormaps["tab20"](np.arange(len(x0)) % 20)
        boxes = [Rectangle((a, c), b - a, d - c) for a, b, c, d in zip(x0, x1, y0, y1, strict=True)]
        axis.add_collection(PatchCollection(boxes, facecolor=colors, edgecolor="#222", alpha=0.35, linewidth=0.6))
        if len(x0):
            axis.set_xlim(np.nanmin(x0), np.nanmax(x1))
            axis.set_ylim(np.nanmin(y0), np.nanmax(y1))
        axis.set_title(f"{name}\n{len(x0)} files")
        axis.set_xlabel(x)
        axis.set_ylabel(y)
        for column, setter in ((x, axis.xaxis), (y, axis.yaxis)):
            kind = bounds.schema.field(f"{column}__lower").type
            if pa.types.is_date(kind):
                setter.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: epoch_day(v)[:7]))
            elif pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
                # strings are drawn at their order key; label the ticks with the text they start with
                setter.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: key_text(v)))
        axis.tick_params(axis="x", labelrotation=30)
    if title:
        figure.suptitle(title)
    return save_png(figure, path, dpi=100)
