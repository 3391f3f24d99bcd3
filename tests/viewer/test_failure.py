"""A failed Cholesky opens at its first non-positive pivot, marked, and stops there."""

import numpy as np
import pytest
from lecture_helpers import close, grab
from viewer_testdata import synthetic_recording, synthetic_run

from oclla.viewer import analysis, first_runs
from oclla.viewer import theme as themes
from oclla.viewer.runner import RunRequest, execute


@pytest.fixture(scope="module")
def failed():
    out = execute(RunRequest(algorithm="cholesky", variant="pivot", family="typed",
                             matrix=first_runs.NOT_SPD, n=4, warmup=False))
    assert out.showable and out.math_error
    return out


def test_the_run_stops_at_the_negative_pivot(failed):
    raw = [r for r in failed.recording.runs if r.algorithm == "cholesky"][0]
    run = analysis.viewable_runs(failed.recording)[0]
    assert len(raw.steps) > 7                      # the device went on …
    assert len(run.steps) == 7                     # … the view stops at the failure
    assert analysis.failed_position(raw) == 7
    assert analysis.failed_position(run) == 7
    value, where = analysis.pivot_value(run, 7)
    assert value == pytest.approx(-0.5) and where == (2, 2)
    assert (7, "fail") in analysis.markers(run)


def test_negative_pivots_fail_only_where_they_must_be_positive():
    lu = synthetic_run(n=4, error="LinAlgError: singular")
    lu.snapshots[1][1, 1] = -3.0                   # a negative LU pivot is fine …
    lu.snapshots[2][2, 2] = 0.0                    # … a zero one is not
    assert analysis.failed_position(lu) == 3
    chol = synthetic_run(n=4, algorithm="cholesky", error="LinAlgError: not positive")
    chol.snapshots[1][1, 1] = -3.0
    assert analysis.failed_position(chol) == 2
    assert analysis.bad_pivot(chol, -1e-300) and not analysis.bad_pivot(lu, -1e-300)
    finished = synthetic_run(n=4)
    assert analysis.failed_position(finished) is None
    assert analysis.until_failure(finished) is finished


def test_the_window_opens_at_the_failure_with_its_value(window, failed, qtbot):
    window.model.set_recording(failed.recording)
    assert window.model.position == 7 == window.model.last_position
    title = window.main_view.matrix.plot.titleLabel.text
    assert "FAILED: pivot -0.5 at (2, 2)" in title
    assert window.main_view.matrix.numbers[2 * 4 + 2].textItem.toPlainText() == "-0.50"
    view = window.main_view.matrix
    qtbot.wait(20)
    image = grab(view)
    edge = view.view_to_widget(2.5, 2.0)             # top edge of the pivot cell, in red
    assert close(image[edge.y() - 2:edge.y() + 3, edge.x()], themes.MARKERS["fail"], 40).any()
    assert analysis.overlays(window.model.run, 7).failed
    assert not analysis.overlays(window.model.run, 6).failed


def test_a_replayed_failure_opens_where_it_failed(window, failed, tmp_path):
    path = tmp_path / "failed.oclrec"
    failed.recording.save(path)
    assert window.open_recording(path)
    assert window.model.position == 7


def test_a_failed_recording_with_a_position_given_keeps_it(window):
    run = synthetic_run(n=5, algorithm="cholesky", error="LinAlgError")
    run.snapshots[2][2, 2] = -1.0
    window.model.set_recording(synthetic_recording(run), position=1)
    assert window.model.position == 1 and window.model.last_position == 3
    np.testing.assert_array_equal(window.main_view.matrix.array, run.snapshots[0])
