"""Comparisons that answer their question: named sides, one colour scale, numbers per side."""

import numpy as np
import oclla
import pytest
from lecture_helpers import record

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
