"""Presentation mode: the matrix gets the screen, its numbers grow with its cells."""

import numpy as np
import oclla
import pytest
from lecture_helpers import close, grab, record, text_height

from oclla.viewer import matrices
from oclla.viewer.matrix_view import cell_text, text_pixels
from oclla.viewer.settings import Settings
from oclla.viewer.window import MainWindow


@pytest.fixture
def lu8(window):
    a = matrices.random(8, seed=4)
    window.model.set_recording(record(lambda: oclla.lu_factor(a, method="pivot")))
    return window


def test_presentation_gives_the_matrix_the_window(lu8, qtbot):
    w = lu8
    assert w.timeline_dock.isVisible() and w.details_dock.isVisible()
    w.do_presentation(True)
    assert not w.timeline_dock.isVisible() and not w.details_dock.isVisible()
    assert not w.menuBar().isVisible()
    w.do_presentation(False)
    assert w.timeline_dock.isVisible() and w.details_dock.isVisible()
    assert w.menuBar().isVisible()


def test_the_docks_as_left_survive_presentation_and_a_restart(qtbot, tmp_path):
    from PySide6 import QtCore
    ini = str(tmp_path / "layout.ini")
    horizontal = QtCore.Qt.Orientation.Horizontal

    def make(presenting=False):
        w = MainWindow(Settings(QtCore.QSettings(ini, QtCore.QSettings.Format.IniFormat)),
                       device_lister=lambda: [])
        qtbot.addWidget(w)
        w.model.set_presentation(presenting)        # as --presentation does, before show
        w.show()
        qtbot.waitExposed(w)
        return w

    def docks(w):
        return w.timeline_dock.isVisible(), w.details_dock.isVisible()
    w = make()
    w.timeline_dock.toggleViewAction().trigger()            # the user hides the timeline
    w.resizeDocks([w.details_dock], [420], horizontal)
    qtbot.waitUntil(lambda: w.details_dock.width() == 420)
    w.do_presentation(True)
    assert docks(w) == (False, False)
    w.do_presentation(False)
    assert docks(w) == (False, True) and w.details_dock.width() == 420
    w.close()

    w = make()                                                # a new window: as left
    assert docks(w) == (False, True) and w.details_dock.width() == 420
    w.timeline_dock.toggleViewAction().trigger()
    w.details_dock.toggleViewAction().trigger()
    assert docks(w) == (True, False)
    w.do_presentation(True)
    w.close()                                                 # closed while presenting

    w = make()                                                # the layout before presenting
    assert docks(w) == (True, False) and w.menuBar().isVisible()
    w.close()

    w = make(presenting=True)                                 # started presenting
    assert docks(w) == (False, False) and not w.menuBar().isVisible()
    w.do_presentation(False)
    assert docks(w) == (True, False) and w.menuBar().isVisible()


def test_an_8x8_on_a_1080p_screen_has_numbers_of_at_least_28_px(lu8, qtbot):
    w = lu8
    w.do_presentation(True)
    w.resize(1920, 1080)
    qtbot.waitUntil(lambda: w.width() == 1920)
    qtbot.wait(50)
    w.model.go_to(0)
    view = w.main_view.matrix
    view._draw_numbers()
    assert view.text_px >= 28
    image = grab(view)
    heights = [text_height(view, image, r, c) for r in (0, 3, 7) for c in (0, 5, 7)]
    assert min(heights) >= 28, heights          # the digits drawn, measured in the pixels
    # nothing clipped: the last row and column lie inside the widget
    corner = view.view_to_widget(8, 8)
    assert 0 < corner.x() <= view.width() and 0 < corner.y() <= view.height()


def test_presentation_buttons_are_light_on_black(lu8, qtbot):
    w = lu8
    w.do_presentation(True)
    qtbot.wait(20)
    button = w.transport.buttons[2]
    pixels = grab(button)
    assert close(pixels, "#FFFFFF", 30).mean() > 0.5        # a white face …
    assert close(grab(w.transport.scrub), "#000000", 30).mean() > 0.5   # … on black


@pytest.mark.parametrize("value, decimals, text", [
    (-0.00445, 2, "-4e-3"), (3.33e-09, 2, "3e-9"), (-1.61e-08, 3, "-2e-8"), (0.0, 2, "0.00"),
    (1.9599, 2, "1.96"), (123456.0, 2, "1e5"), (-2.5, 0, "-2"), (-0.001, 1, "-1e-3"),
    (4.4721, 4, "4.4721"), (float("inf"), 2, "inf"), (float("nan"), 2, "nan"),
    (0.005, 2, "0.01"), (-0.0, 2, "0.00"), (9999.5, 1, "9999.5"), (-1e300, 2, "-1e300")])
def test_cell_numbers_are_fixed_point_and_short(value, decimals, text):
    assert cell_text(value, decimals) == text


def test_the_widest_number_fits_its_cell(qtbot):
    from PySide6 import QtGui
    for cell in (30.0, 60.0, 120.0):
        px = text_pixels(["-0.45", "-12.34", "1e-8"], cell, None)
        font = QtGui.QFont()
        font.setPixelSize(px)
        width = QtGui.QFontMetricsF(font).horizontalAdvance("-12.34")
        assert width <= cell and px <= 0.42 * cell
    assert text_pixels(["-0.45"], 10.0, None) == 0          # too small: no numbers
    assert text_pixels(["1"], 500.0, 24.0) == 24            # capped outside presentation


def test_decimals_are_a_setting(lu8):
    w = lu8
    w.model.go_to(0)
    before = w.main_view.matrix.numbers[0].textItem.toPlainText()
    w.do_more_decimals()
    after = w.main_view.matrix.numbers[0].textItem.toPlainText()
    assert w.settings.decimals == 3
    assert len(after) == len(before) + 1 and after.startswith(before[:-1])
    for _ in range(5):
        w.do_fewer_decimals()
    assert w.settings.decimals == 0
    assert "." not in w.main_view.matrix.numbers[0].textItem.toPlainText()
    v = float(np.asarray(w.model.run.initial)[0, 0])
    assert w.main_view.matrix.numbers[0].textItem.toPlainText() == cell_text(v, 0)
