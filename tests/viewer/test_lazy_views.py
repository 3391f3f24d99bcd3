"""Views hidden at start are built when first shown, once, and show the state of that moment."""

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6 import QtWidgets

import oclla
from oclla.viewer import analysis, lu_steps, packed
from oclla.viewer.lazy import LazyPage
from oclla.viewer.window import MainWindow

SIDES = ("main_view", "sparse_main", "tiles_main", "compare_view", "sparse_compare")


@pytest.fixture
def plots(monkeypatch):
    """Counts the pyqtgraph PlotItems (colour bars included) built from now on."""
    made = []
    init = pg.PlotItem.__init__

    def counting(self, *args, **kwargs):
        made.append(type(self).__name__)
        init(self, *args, **kwargs)

    monkeypatch.setattr(pg.PlotItem, "__init__", counting)
    return made


def built(window) -> set:
    return {name for name in SIDES if window._sides[name].is_built}


def test_a_new_window_builds_only_what_it_shows(qtbot, settings, plots):
    w = MainWindow(settings, device_lister=lambda: [])
    qtbot.addWidget(w)
    assert plots == ["PlotItem", "PlotItem"]          # the timeline's kernels and steps
    w.show()
    qtbot.waitExposed(w)
    qtbot.wait(20)                                    # painted: still nothing else built
    assert w.pages.currentWidget() is w.welcome and w.timeline.isVisible()
    assert built(w) == set() and len(plots) == 2


def test_a_page_shown_once_is_built_once(window, recordings, plots):
    assert window.open_recording(recordings["lu8"])
    view = window.main_view
    assert built(window) == {"main_view"}
    assert plots == ["PlotItem", "ColorBarItem"]      # the heat map alone
    assert not any(p.is_built for p in (view._buffer, view._vectors, view._factors))
    m = window.model
    m.go_to(5)                                        # B does not exist yet
    second = oclla.load_recording(recordings["lu8_faithful"]).runs[0]
    for _ in range(2):
        m.set_compare(second)
        b = window.compare_view
        np.testing.assert_array_equal(b.matrix.array,
                                      analysis.matrix_at(second, m.compare_position))
        assert f"step {m.compare_position}/" in b.matrix.plot.titleLabel.text
        assert b.summary.isVisible() and b.matrix.vmax == window.colour_range()
        m.set_compare(None)
        assert window.compare_view is b and not b.isVisibleTo(window)
    assert built(window) == {"main_view", "compare_view"} and len(plots) == 4


def test_a_view_built_late_takes_the_look_of_that_moment(window, recordings):
    window.set_theme("dark")
    window.do_more_decimals()
    window.do_substeps(True)                           # before any view exists
    assert built(window) == set() and window.model.substeps
    window.open_recording(recordings["lu8"])
    window.model.go_to(3)
    view = window.main_view
    assert view.matrix.theme.name == "dark" and view.matrix.decimals == 3
    panel = view.factors
    assert panel.isVisible() and panel.views["L"].theme.name == "dark"
    assert (panel.views["L"].decimals, panel.views["P"].decimals) == (3, 0)
    want = lu_steps.factors_at(window.model.run, 3)
    np.testing.assert_array_equal(panel.views["L"].array, want.lower)     # NaN where unknown
    window.do_substeps(False)
    window.do_substeps(True)
    assert view.factors is panel and panel.isVisible()


def test_the_rfp_buffer_is_built_by_the_first_packed_run(window, recordings):
    window.open_recording(recordings["lu8"])
    view = window.main_view
    assert not view._buffer.is_built
    window.open_recording(recordings["rfp7"])
    window.model.go_to(2)
    buffer = view.buffer
    assert buffer.isVisibleTo(window) and view.is_packed
    rfp, _ = packed.orient(analysis.matrix_at(window.model.run, 2))
    np.testing.assert_array_equal(buffer.array, rfp)
    window.open_recording(recordings["lu8"])
    assert not view._buffer.isVisibleTo(window)
    window.open_recording(recordings["rfp7"])
    assert view.buffer is buffer and buffer.isVisibleTo(window)


def test_a_lazy_page_builds_on_show_or_on_ask(qtbot):
    calls = []

    def make():
        calls.append(1)
        return QtWidgets.QLabel("built")

    shown, asked = LazyPage(make), LazyPage(make)
    for page in (shown, asked):
        qtbot.addWidget(page)
    assert not shown.is_built and shown.built_widget() is None and calls == []
    shown.show()
    label = shown.built_widget()
    assert label.text() == "built" and label.isVisible() and calls == [1]
    shown.hide()
    shown.show()
    assert shown.widget() is label and calls == [1]
    assert asked.widget().parent() is asked and not asked.isVisible() and calls == [1, 1]
