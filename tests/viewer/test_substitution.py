"""Ax = b after the LU: forward and back substitution as steps of the same run."""

import numpy as np
import oclla
import pytest

from oclla import accuracy
from oclla.viewer import analysis, substitution
from oclla.viewer.runner import RunRequest, execute, rhs


@pytest.fixture(scope="module", params=["float64", "float32"])
def solved(request):
    out = execute(RunRequest(n=5, seed=1, dtype=request.param, solve=True, warmup=False))
    assert out.error is None
    return out.recording


def test_substitution_follows_the_factorization(solved):
    run = analysis.viewable_runs(solved)[0]
    phases = [s.phase for s in run.steps]
    assert phases == ["eliminate"] * 4 + ["forward"] * 5 + ["back"] * 5
    assert [s.info["row"] for s in run.steps[4:]] == [0, 1, 2, 3, 4, 4, 3, 2, 1, 0]
    assert all(not s.kernels for s in run.steps[4:])
    assert [r.algorithm for r in solved.runs] == ["lu", "lu_solve"]   # the device solve
    assert analysis.backward_error(run) < accuracy.THRESHOLD


def test_y_and_x_appear_entry_by_entry_and_solve_the_system(solved):
    run = analysis.viewable_runs(solved)[0]
    a = np.asarray(run.initial, np.float64)
    b = rhs(run.initial, 1).astype(np.float64)
    for p, (known_y, known_x) in ((4, (0, 0)), (5, (1, 0)), (9, (5, 0)), (10, (5, 1)),
                                  (14, (5, 5))):
        values, _cell = substitution.vectors_at(run, p)
        assert (~np.isnan(values[:, 1])).sum() == known_y
        assert (~np.isnan(values[:, 2])).sum() == known_x
    values, cell = substitution.vectors_at(run, 12)
    assert cell == (2, 2) and not np.isnan(values[2:, 2]).any() and np.isnan(values[:2, 2]).all()
    x = substitution.vectors_at(run, 14)[0][:, 2].astype(run.dtype)     # its precision
    assert accuracy.solve_backward_error(a, x, b) < accuracy.THRESHOLD
    lu = analysis.final_array(run).astype(np.float64)
    pb, y = values[:, 0], substitution.kept(run)["y"]
    np.testing.assert_allclose((np.tril(lu, -1) + np.eye(5)) @ y, pb,
                               atol=30 * 5 * accuracy.eps(run.dtype))


def test_the_window_shows_the_vectors_and_the_formula(window, solved):
    window.model.set_recording(solved)
    window.model.go_to(7)                             # forward substitution, row 2
    view = window.main_view
    assert view.vectors.isVisible()
    assert view.caption.text().startswith("forward substitution")
    assert "y_2" in view.caption.text()
    assert view.vectors.overlays.active == (2, 3, 1, 2)
    assert view.matrix.overlays.active == (2, 3, 0, 2)          # row 2 of L, left of it
    window.model.go_to(2)
    assert view.vectors.isVisible() and not view.caption.isVisible()


def test_runs_without_a_solve_show_no_vectors(window, recordings):
    window.open_recording(recordings["lu8"])
    assert not window.main_view.vectors.isVisible()
    run = window.model.run
    assert substitution.vectors_at(run, 3) is None
    run.metrics["solve"] = {"pb": [1.0], "y": [1.0, 2.0], "x": [1.0]}
    assert substitution.kept(run) is None


def test_the_command_line_solves_only_lu(tmp_path):
    from oclla.viewer.app import main
    out = tmp_path / "s.oclrec"
    assert main(["--algorithm", "lu", "--n", "4", "--solve", "--export", str(out)]) == 0
    run = analysis.viewable_runs(oclla.load_recording(out))[0]
    assert substitution.kept(run) is not None and run.steps[-1].phase == "back"
