"""Pictures: curve paths, and data files as min/max boxes before and after clustering."""

from __future__ import annotations

from zskip.viz.boxes import plot_file_boxes
from zskip.viz.curves import plot_curves

__all__ = ["plot_curves", "plot_file_boxes"]
