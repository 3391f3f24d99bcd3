"""Rendered pixels: the overlays are drawn where the trace says, in their colours."""

import numpy as np
from PIL import Image
from PySide6 import QtGui
from viewer_testdata import synthetic_run

from oclla.viewer import analysis
from oclla.viewer import theme as themes
from oclla.viewer.export import qimage_to_rgb
from oclla.viewer.matrix_view import MatrixView


def rgb(hex_color):
    c = QtGui.QColor(hex_color)
    return np.array([c.red(), c.green(), c.blue()])


def close_to(pixel, color, tol=40):
    return np.abs(np.asarray(pixel[:3], int) - rgb(color)).max() <= tol


def render(qtbot, run, position, tmp_path, name="m.png"):
    view = MatrixView()
    qtbot.addWidget(view)
    view.resize(420, 380)
    view.show()
    qtbot.waitExposed(view)
    view.show_matrix(analysis.matrix_at(run, position), analysis.value_range(run),
                     analysis.overlays(run, position), "test")
    qtbot.wait(20)
    path = tmp_path / name
    assert view.grab().save(str(path))
    return view, np.asarray(Image.open(path).convert("RGB"))


def pixel(view, image, x, y):
    p = view.view_to_widget(x, y)
    ratio = image.shape[1] / view.width()         # device pixel ratio of the grab
    return image[int(round(p.y() * ratio)), int(round(p.x() * ratio))]


def test_active_submatrix_outline_has_the_overlay_colour(qtbot, tmp_path):
    run = synthetic_run(n=6)
    view, image = render(qtbot, run, 3, tmp_path)       # step 2: region (2, 6, 2, 6)
    assert analysis.overlays(run, 3).active == (2, 6, 2, 6)
    for x, y in ((4.5, 2.0), (6.0, 4.5), (4.5, 6.0)):   # top, right and bottom edges
        assert close_to(pixel(view, image, x, y), themes.OVERLAYS["active"]), (x, y)
    assert close_to(pixel(view, image, 2.5, 2.0), themes.OVERLAYS["pivot"])   # pivot cell edge
    for x, y in ((0.5, 0.5), (4.5, 4.5), (5.5, 1.5)):   # inside and outside: no outline
        assert not close_to(pixel(view, image, x, y), themes.OVERLAYS["active"]), (x, y)


def test_overlays_follow_the_step(qtbot, tmp_path):
    run = synthetic_run(n=6, swaps={0: [(0, 4)]})
    view, image = render(qtbot, run, 1, tmp_path)       # step 0: swap rows 0 and 4
    # the left edge, off the middle of the row where a cell's number may reach the edge
    assert close_to(pixel(view, image, 0.0, 3.15), themes.OVERLAYS["active"])
    assert close_to(pixel(view, image, 3.5, 4.0), themes.OVERLAYS["swap"])    # outlined,
    assert not close_to(pixel(view, image, 3.5, 4.5), themes.OVERLAYS["swap"])  # not tinted
    view.show_matrix(analysis.matrix_at(run, 0), 4.0, analysis.overlays(run, 0), "start")
    qtbot.wait(20)
    start = qimage_to_rgb(view.grab().toImage())
    assert not view.active.isVisible() and not view.pivot.isVisible()
    assert not close_to(pixel(view, start, 0.0, 3.15), themes.OVERLAYS["active"])
