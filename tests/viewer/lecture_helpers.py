"""Helpers of the lecture-hall tests: real recordings made here, pixels read from grabs."""

import numpy as np
import oclla
from PySide6 import QtGui

from oclla.viewer.export import qimage_to_rgb


def record(fn):
    with oclla.record(snapshots=True) as rec:
        fn()
    return rec


def grab(widget) -> np.ndarray:
    """The widget's pixels (h, w, 3), at one image pixel per widget pixel."""
    image = widget.grab().toImage()
    return qimage_to_rgb(image.scaled(widget.width(), widget.height()))


def close(pixels, color, tol=60) -> np.ndarray:
    """Mask of the pixels within ``tol`` of ``color`` in every channel."""
    c = QtGui.QColor(color)
    ref = np.array([c.red(), c.green(), c.blue()])
    return (np.abs(pixels.astype(int) - ref) <= tol).all(axis=-1)


def cell_pixels(view, image, row: int, col: int, inset: float = 0.08) -> np.ndarray:
    """The pixels inside cell (row, col) of a MatrixView, its edges left out."""
    a = view.view_to_widget(col + inset, row + inset)
    b = view.view_to_widget(col + 1 - inset, row + 1 - inset)
    return image[a.y():b.y(), a.x():b.x()]


def text_height(view, image, row: int, col: int) -> int:
    """Rows of the cell that hold pixels of the cell's text colour (the glyphs' height)."""
    item = view.numbers[row * view.shape[1] + col]
    color = item.textItem.defaultTextColor().name()
    rows = close(cell_pixels(view, image, row, col), color, 40).any(axis=1)
    hits = np.flatnonzero(rows)
    return int(hits[-1] - hits[0] + 1) if hits.size else 0
