"""LU sub-steps (search, swap, multipliers, update) and L, U, P growing, from real recordings."""

import numpy as np
import oclla
import pytest
from lecture_helpers import record

from oclla import accuracy
from oclla.viewer import analysis, lu_steps, matrices


@pytest.fixture(scope="module", params=["float64", "float32"])
def lu6(request):
    a = matrices.random(6, seed=3).astype(request.param)
    return analysis.viewable_runs(record(lambda: oclla.lu_factor(a, method="pivot")))[0]


def test_each_step_splits_into_its_moves(lu6):
    run = lu6
    assert lu_steps.substeps(run, 0) == []
    for p in range(1, analysis.n_positions(run)):
        frames = lu_steps.substeps(run, p)
        k = run.steps[p - 1].pivot[1]
        swaps = run.steps[p - 1].info.get("swaps", [])
        names = [f.name for f in frames]
        assert names == (["search", "swap", "multipliers", "update"] if swaps
                         else ["search", "multipliers", "update"])
        before, after = analysis.matrix_at(run, p - 1), analysis.matrix_at(run, p)
        assert frames[0].matrix is before and frames[-1].matrix is after
        col = np.abs(before[k:, k])
        assert frames[0].pivot_row == k + int(np.argmax(col))      # partial pivoting's row
        mult = frames[-2].matrix
        np.testing.assert_array_equal(mult[k + 1:, k], after[k + 1:, k])
        np.testing.assert_array_equal(mult[k + 1:, k + 1:], frames[-3].matrix[k + 1:, k + 1:])
        assert f"a_{k}{k}" in frames[-2].formula


def test_the_check_holds_at_every_sub_step(lu6):
    run = lu6
    for p in range(1, analysis.n_positions(run)):
        for f in lu_steps.substeps(run, p):
            fac = lu_steps.factors(run, f.matrix, f.finished, f.perm, f.check)
            assert accuracy.passes(fac.check), (p, f.name, fac.check)


def test_the_final_factors_are_the_run_s(lu6):
    run = lu6
    fac = lu_steps.factors_at(run, analysis.n_positions(run) - 1)
    assert not np.isnan(fac.lower).any() and not np.isnan(fac.upper).any()
    a = np.asarray(run.initial, np.float64)
    residual = fac.p_matrix @ a - fac.lower @ fac.upper
    assert np.abs(residual).max() <= 30 * 6 * np.abs(a).max() * accuracy.eps(run.dtype) * 6
    np.testing.assert_array_equal(np.sort(fac.perm), np.arange(6))
    start = lu_steps.factors_at(run, 0)
    assert np.isnan(start.lower).all() and np.isnan(start.upper).all()
    np.testing.assert_array_equal(start.p_matrix, np.eye(6))


def test_a_wrong_check_is_seen(lu6):
    run = lu6
    m = analysis.matrix_at(run, 2).copy()
    m[4, 4] += 1.0
    fac = lu_steps.factors(run, m, 2, lu_steps.perm_before(run, 2))
    assert not accuracy.passes(fac.check)


def test_without_pivoting_the_first_move_takes_the_diagonal():
    a = matrices.diagdom(5, seed=1)
    run = analysis.viewable_runs(record(lambda: oclla.lu_factor(a, method="pivot",
                                                                pivoting="none")))[0]
    frames = lu_steps.substeps(run, 2)
    assert [f.name for f in frames] == ["pivot", "multipliers", "update"]
    assert frames[0].formula.startswith("pivot: a_11 =") and "no pivoting" in frames[0].formula
    assert lu_steps.frame_overlays(run, 2, frames[0]).pivot == (1, 1)


def test_steps_of_another_shape_have_no_sub_steps():
    a = matrices.random(6, seed=3)
    crout = analysis.viewable_runs(record(lambda: oclla.lu_factor(a, method="pivot",
                                                                  variant="crout")))[0]
    assert all(lu_steps.substeps(crout, p) == [] for p in range(analysis.n_positions(crout)))


def test_stepping_walks_through_the_sub_steps(window, lu6):
    m = window.model
    rec = oclla.Recording()
    rec.runs.append(lu6)
    m.set_recording(rec)
    window.do_substeps(True)
    assert m.substeps and window.main_view.factors.isVisible()
    names = []
    for _ in range(8):
        window.do_forward()
        names.append((m.position, m.frame.name if m.frame is not None else "recorded"))
    counts = [len(m.frames(p)) for p in (1, 2, 3)]
    expected = []
    for p, count in zip((1, 2, 3), counts):
        frames = [f.name for f in m.frames(p)]
        expected += [(p, n) for n in frames[:-1]] + [(p, "recorded")]
    assert names == expected[:8]
    kernels = m.step_kernels                      # a sub-step lights its step's kernels
    assert kernels and all(lu6.kernels[i].step == m.position - 1 for i in kernels)
    for _ in range(8):
        window.do_back()
    assert (m.position, m.sub) == (0, None)
    m.go_to(3)
    assert m.sub is None
    window.do_substeps(False)
    window.do_forward()
    assert (m.position, m.sub) == (4, None)
    assert not window.main_view.factors.isVisible()


def test_a_sub_step_shows_its_formula_and_l_u_p(window, lu6, qtbot):
    rec = oclla.Recording()
    rec.runs.append(lu6)
    window.model.set_recording(rec)
    window.do_substeps(True)
    p = next(p for p in range(1, 6) if lu6.steps[p - 1].info.get("swaps"))
    swap = [f.name for f in window.model.frames(p)].index("swap")
    window.model.go_to(p, sub=swap)
    qtbot.wait(20)
    view = window.main_view
    assert view.caption.isVisible() and view.caption.text().startswith("swap rows")
    assert "swap" in view.matrix.plot.titleLabel.text
    panel = view.factors
    k = p - 1
    np.testing.assert_array_equal(np.isnan(panel.views["L"].array[:, k:]), True)
    assert not np.isnan(panel.views["L"].array[:, :k]).any()
    assert panel.views["P"].array.sum() == 6
    assert "✓" in panel.check.text()
    assert view.matrix.swaps.path().boundingRect().height() > 0     # the two rows outlined
