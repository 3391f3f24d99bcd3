"""Comparisons that answer their question: named sides, one colour scale, numbers per side."""

import numpy as np
import oclla
import pyqtgraph as pg
import pytest
from lecture_helpers import close, grab, record
from PySide6 import QtCore
from viewer_testdata import synthetic_recording, synthetic_run

from oclla.viewer import analysis, first_runs, registry
from oclla.viewer.run_dialog import RunDialog

A = first_runs.TINY_PIVOT


@pytest.fixture(scope="module")
def pivoting_pair():
    """Partial pivoting and none on the 5 × 5 with 1e-8 at (0, 0)."""
    partial = record(lambda: oclla.lu_factor(A, method="pivot", pivoting="partial"))
    none = record(lambda: oclla.lu_factor(A, method="pivot", pivoting="none"))
    return partial, analysis.viewable_runs(none)[0]


@pytest.fixture
def comparing(window, pivoting_pair):
    partial, none = pivoting_pair
    window.model.set_recording(partial)
    window.model.set_compare(none)
    window.model.go_to(2)
    return window


def test_titles_name_the_difference(comparing):
    w = comparing
    assert w.main_view.matrix.plot.titleLabel.text.startswith("A: partial pivoting · step 2/4")
    assert w.compare_view.matrix.plot.titleLabel.text.startswith("B: no pivoting · step 2/4")
    legend = [label.text for _item, label in w.timeline.legend.items]
    assert legend == ["A: partial pivoting", "B: no pivoting"]


def test_difference_titles_fall_back_to_full_titles(pivoting_pair):
    _partial, none = pivoting_pair
    a, b = registry.difference_titles(none, none)
    assert a == "LU, per pivot, in place, no pivoting" and b == a + " (again)"


def test_both_sides_share_one_colour_scale(comparing, qtbot):
    w = comparing
    levels = [tuple(v.matrix.colorbar.levels()) for v in (w.main_view, w.compare_view)]
    assert levels[0] == levels[1]
    # B's entries grow to about 1e8: the one scale is B's, and its colour bar says so
    assert levels[0][1] >= analysis.value_range(w.model.compare_run) > 1e7
    ticks = w.compare_view.matrix.colorbar.axis.tickValues(*levels[0], 400)
    assert any(len(values) > 1 for _spacing, values in ticks)     # more than a lone "0"


def test_each_side_says_growth_smallest_pivot_and_backward_error(comparing):
    w = comparing
    texts = [v.summary.text() for v in (w.main_view, w.compare_view)]
    assert all(v.summary.isVisible() for v in (w.main_view, w.compare_view))
    for text in texts:
        assert "growth" in text and "smallest |pivot|" in text and "backward error" in text
    run_a, run_b = w.model.run, w.model.compare_run
    assert analysis.smallest_pivot(run_b) == pytest.approx(1e-8)
    assert analysis.smallest_pivot(run_a) > 0.1
    assert analysis.growth_by_position(run_b)[-1] > 1e7 > analysis.growth_by_position(run_a)[-1]
    assert "1e-08" in texts[1]
    w.model.set_compare(None)
    assert not w.main_view.summary.isVisible()


def test_compare_dialog_is_named_and_runs_on_the_same_matrix(comparing):
    w = comparing
    dialog = w.run_dialog("compare")
    assert "Compare" in dialog.windowTitle() and "B" in dialog.windowTitle()
    assert dialog.same.isChecked() and dialog.same_matrix
    assert not dialog.family.isVisible() and not dialog.n.isEnabled()
    req = dialog.request()
    np.testing.assert_array_equal(req.matrix, w.model.run.initial)
    assert req.n == 5 and req.source_name == "same matrix as A"
    dialog.same.setChecked(False)
    assert dialog.n.isEnabled() or dialog.family.currentData() != "random"
    assert w.run_dialog("main").windowTitle() == "New run"
    assert not w.run_dialog("main").same.isVisibleTo(w.run_dialog("main"))


def test_typed_matrix_sets_the_order_and_is_remembered(qtbot):
    from oclla.viewer.runner import RunRequest
    dialog = RunDialog(None, RunRequest(family="typed", matrix=A, n=5), lambda: [])
    qtbot.addWidget(dialog)
    assert dialog.n.value() == 5
    dialog.typed.setPlainText("1 2 3; 4 5 6; 7 8 10")
    assert dialog.n.value() == 3
    np.testing.assert_array_equal(dialog.request().matrix[0], [1, 2, 3])


@pytest.fixture
def long_titles(window):
    """Two 12 × 12 runs with the longest titles of the per-pivot LU variants, at step 10."""
    runs = synthetic_run(n=12, variant="faithful"), synthetic_run(n=12, variant="window")
    window.model.set_recording(synthetic_recording(*runs))
    window.do_compare_other()
    window.model.go_to(10)
    return window


@pytest.mark.parametrize("size", [(1280, 820), (1100, 720), (1600, 900)])   # default, resized
def test_each_side_fits_its_view_with_its_colour_bar(long_titles, qtbot, size):
    w = long_titles
    w.resize(*size)
    qtbot.waitUntil(lambda: w.size() == QtCore.QSize(*size))
    qtbot.wait(20)
    titles = ("A: per pivot, as in the SYCL post · step 10/11 · eliminate",
              "B: per pivot, delayed updates · step 10/11 · eliminate")
    widths = []
    for side, title in zip((w.main_view, w.compare_view), titles):
        view = side.matrix
        widths.append(view.width())
        port = QtCore.QRectF(view.viewport().rect())
        for item in (view.plot, view.colorbar, view.plot.titleLabel):
            assert port.contains(item.sceneBoundingRect()), (size, item)
        assert view.plot.titleLabel.text == title          # the whole title, maybe on 2 lines
        # the pixels: every column of cells, then the colour bar's low (blue) end right of
        # them (the cells all hold positive values: blue is the bar's alone)
        image = grab(view)
        right = view.view_to_widget(12, 12).x()
        assert view.view_to_widget(11.5, 11.5).x() < right < view.width() - 40
        low = pg.colormap.get(view.colormap_name).mapToQColor(0.0).name()
        bar = np.flatnonzero(close(image[:, right:], low, 30).any(axis=0))
        assert bar.size >= 10, size                          # the bar is 18 px wide
        assert right + bar.max() < view.width() - 20         # and its tick labels beside it
    assert abs(widths[0] - widths[1]) <= 2                   # the sides share the width
