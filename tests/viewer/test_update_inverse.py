"""Update/downdate, inverse, log-determinant and hybrid runs in the viewer.

Real runs on the device (made once per module, no warm-up run), then the model
state the views draw: regions written and read, the operand V and its used-up
rows, the failing order of a downdate, the log-determinant's value, and the
timeline's lanes per device (host work in a lane of its own).
"""

import numpy as np
import pytest
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy
from oclla.trace import KernelRecord, Run, Step
from oclla.viewer import analysis, registry, runner
from oclla.viewer import theme as themes
from oclla.viewer.details import legend_html, step_summary
from oclla.viewer.export import qimage_to_rgb
from oclla.viewer.run_dialog import RunDialog
from oclla.viewer.run_view import position_title
from oclla.viewer.runner import RunRequest
from oclla.viewer.timeline import TimelineView, lane_keys


def _run(**kwargs):
    req = RunRequest(family="spd", warmup=False, seed=1, **kwargs)
    out = runner.execute(req)
    runs = analysis.viewable_runs(out.recording)
    return out, runs[-1]


#: The blocked downdate's order: more than two panels of rows on every device (64 rows
#: a panel on CPUs, the update knob PANEL).
DOWNDATE_N = 150


@pytest.fixture(scope="module")
def made():
    """name -> (outcome, run) of the runs the tests look at."""
    return {
        "update": _run(algorithm="cholesky_update", variant="pivot", n=6, rank=2),
        "downdate": _run(algorithm="cholesky_downdate", variant="blocked", n=DOWNDATE_N,
                         rank=3, dtype="float32"),
        "fails": _run(algorithm="cholesky_downdate", variant="pivot", n=6, rank=2, fail=True),
        "fails_blocked": _run(algorithm="cholesky_downdate", variant="blocked", n=40, rank=2,
                              fail=True),
        "potri": _run(algorithm="cho_inverse", variant="steps", n=10, block=4),
        "trtri": _run(algorithm="trtri", variant="blocked", n=8, block=4, dtype="float32"),
        "logdet": _run(algorithm="cho_logdet", variant="reduce", n=7),
        "hybrid": _run(algorithm="hybrid", variant="static", n=48, block=16),
    }


# ---- update and downdate ----------------------------------------------------------------

def test_update_operand_keeps_or_breaks_positive_definiteness():
    a = np.asarray(np.random.default_rng(0).standard_normal((9, 9)))
    a = a @ a.T + 9 * np.eye(9)
    low = np.linalg.cholesky(a)
    v = registry.update_operand(low, {"rank": 3, "seed": 4})
    assert v.shape == (9, 3)
    assert np.linalg.norm(np.linalg.solve(low, v), 2) == pytest.approx(registry.V_NORM)
    assert np.linalg.eigvalsh(a - v @ v.T).min() > 0
    bad = registry.update_operand(low, {"rank": 3, "seed": 4, "fail": True})
    j = registry.fail_order(9)
    d = a - bad @ bad.T
    assert np.linalg.eigvalsh(d[:j - 1, :j - 1]).min() > 0      # order j − 1 still fine
    assert np.linalg.eigvalsh(d[:j, :j]).min() < 0              # order j is not


def test_update_run_rotates_row_by_row_and_consumes_v(made):
    out, run = made["update"]
    assert out.error is None and run.algorithm == "cholesky_update"
    assert registry.run_title(run) == "Cholesky update, per row"
    assert [s.phase for s in run.steps[:4]] == ["compute", "apply", "compute", "apply"]
    v = analysis.inputs(run)["V"]
    assert v.shape == (6, 2)
    ov = analysis.overlays(run, 4)                 # step 3: apply row 1 of R (column of L)
    assert ov.active == (2, 6, 1, 2) and ov.pivot == (1, 1) and ov.multipliers is None
    vo = analysis.input_overlays(run, 4, "V", v.shape)
    assert vo.active == (2, 6, 0, 2) and vo.consumed == 2      # rows 0, 1 used up
    assert analysis.input_overlays(run, 3, "V", v.shape).active == (1, 2, 0, 2)
    assert analysis.input_overlays(run, 0, "V", v.shape).consumed == 0
    assert analysis.backward_error(run) < 30
    assert "rows 2:6 of V; rows :2 used up" in step_summary(run, 4)
    assert "V's grey rows are used up" in legend_html(run, themes.LIGHT)


def test_blocked_downdate_in_panels(made):
    out, run = made["downdate"]
    assert out.error is None and registry.run_title(run) == "Cholesky downdate, panels of rows"
    n, w = DOWNDATE_N, run.steps[0].region[1]      # the device's panel width (< n / 2)
    assert 2 * w < n
    assert [(s.phase, s.region) for s in run.steps[:3]] == [
        ("panel", (0, w, 0, w)), ("apply", (w, n, 0, w)), ("panel", (w, 2 * w, w, 2 * w))]
    assert analysis.input_overlays(run, 1, "V", (n, 3)).active == (0, w, 0, 3)
    assert analysis.input_overlays(run, 2, "V", (n, 3)).active == (w, n, 0, 3)
    assert analysis.input_overlays(run, 2, "V", (n, 3)).consumed == w
    assert analysis.backward_error(run) < 30               # float32, A − V·Vᵀ


@pytest.mark.parametrize("name, j, phase", [("fails", 4, "compute"),
                                             ("fails_blocked", 21, "panel")])
def test_a_failing_downdate_opens_at_its_order(made, name, j, phase):
    out, run = made[name]
    assert out.math_error and "order" in out.error
    assert registry.error_order(run) == j == registry.fail_order(run.shape[0])
    p = analysis.failed_position(run)
    assert len(run.steps) == p                              # cut after the failing step
    r0, r1, c0, c1 = run.steps[p - 1].region                # the step that formed row j − 1
    assert run.steps[p - 1].phase == phase and r0 <= j - 1 < r1 and c0 <= j - 1 < c1
    if phase == "compute":
        assert p == 2 * (j - 1) + 1                         # compute, apply per row before
    ov = analysis.overlays(run, p)
    assert ov.failed and ov.pivot == (j - 1, j - 1)
    assert position_title(run, p).endswith(
        f"FAILED: downdate loses positive definiteness at order {j}")
    assert analysis.backward_error(run) is None


# ---- inverse and log-determinant ------------------------------------------------------------

def test_cholesky_inverse_steps_read_and_write_blocks(made):
    out, run = made["potri"]
    assert out.error is None and run.variant == "steps"
    phases = [s.phase for s in run.steps]
    assert phases[:4] == ["zero", "trti2", "trmm", "trsm"] and phases[-1] == "symmetrize"
    trmm = phases.index("trmm")
    step = run.steps[trmm]                          # T21 := −X22·T21: reads the inverse below
    assert step.region == (8, 10, 4, 8)
    ov = analysis.overlays(run, trmm + 1)
    assert ov.active == (8, 10, 4, 8) and ov.reads == [(8, 10, 8, 10)]
    assert analysis.overlays(run, trmm + 2).reads == [(4, 8, 4, 8)]     # trsm: T11
    gemm = phases.index("gemm")                     # lauum's A(i, :i) += A(i+, i)ᵀ·A(i+, :i)
    assert gemm > phases.index("lauu2") and run.steps[gemm].region == (4, 8, 0, 4)
    assert analysis.overlays(run, gemm + 1).reads == [(8, 10, 4, 8), (8, 10, 0, 4)]
    assert analysis.overlays(run, gemm + 2).reads == [(8, 10, 4, 8)]    # syrk after it
    assert analysis.backward_error(run) < 30
    assert "reads rows" in step_summary(run, trmm + 1)


def test_trtri_recursive_reads_both_diagonal_blocks(made):
    out, run = made["trtri"]
    assert out.error is None
    trmm = [s for s in run.steps if s.phase == "trmm"][-1]
    r0, r1, c0, c1 = trmm.region
    assert analysis.overlays(run, trmm.index + 1).reads == [(r0, r1, r0, r1),
                                                            (c0, c1, c0, c1)]
    assert analysis.backward_error(run) < 30


def test_logdet_shows_the_diagonal_and_the_value(made):
    out, run = made["logdet"]
    assert out.error is None and len(run.steps) == 1
    ov = analysis.overlays(run, 1)
    assert ov.cells == [(i, i) for i in range(7)] and ov.active is None
    expected = accuracy.logdet_reference(run.initial)
    assert run.metrics["logdet"] == pytest.approx(expected, rel=1e-12)
    assert position_title(run, 1).endswith(f"log det A = {run.metrics['logdet']:.10g}")


# ---- hybrid: host work in its own lane -------------------------------------------------------

def test_hybrid_run_has_a_host_lane(made, qtbot):
    out, run = made["hybrid"]
    assert out.error is None and analysis.backward_error(run) < 30
    assert lane_keys(run) == ["", "host"]
    host = [k for k in run.kernels if k.device == "host"]
    assert len(host) == 3 and all(k.end >= k.start > 0 for k in host)
    view = TimelineView()
    qtbot.addWidget(view)
    view.set_runs(run)
    labels = [t[1] for t in view.kernels_plot.getAxis("left")._tickLevels[0]]
    assert labels[1:] == ["host", "launch"] and labels[0] == run.device[:13] + "…" \
        or labels[0] == run.device
    first = run.kernels.index(host[0])
    lanes = view.lanes[0]
    x = (lanes.starts[first] + lanes.ends[first]) / 2
    assert lanes.kernel_at(x, 1.5) == first         # the host lane
    assert lanes.kernel_at(x, 0.5) != first


def test_two_devices_get_two_lanes(qtbot):
    run = Run("cholesky", "test", (4, 4), "float64", "GPU A")
    run.steps = [Step("cholesky", 0, "gemm", (0, 4, 0, 4), kernels=[
        KernelRecord("gemm", 0, 10, 20, 500, step=0),
        KernelRecord("potf2", 0, 10, 30, 400, step=0, device="CPU B")])]
    view = TimelineView()
    qtbot.addWidget(view)
    view.set_runs(run, run)
    labels = [t[1] for t in view.kernels_plot.getAxis("left")._tickLevels[0]]
    assert labels == ["A GPU A", "A CPU B", "A launch", "B GPU A", "B CPU B", "B launch"]
    assert view.lanes[1].y == 3.5
    assert view.lanes[0].kernel_at(0.2, 1.5) == 1 and view.lanes[0].kernel_at(0.2, 0.5) == 0


def test_recording_round_trip_and_checked_v_rows(made, tmp_path):
    out, _ = made["update"]
    path = tmp_path / "update.oclrec"
    out.recording.save(path)
    run = analysis.viewable_runs(oclla.load_recording(path))[-1]
    assert analysis.inputs(run)["V"].shape == (6, 2)
    assert analysis.input_overlays(run, 4, "V", (6, 2)).consumed == 2
    assert analysis.backward_error(run) < 30
    out.recording.runs[-1].steps[0].info["v_rows"] = (3, 1)
    out.recording.save(tmp_path / "bad.oclrec")
    with pytest.raises(oclla.RecordingError, match="v_rows"):
        oclla.load_recording(tmp_path / "bad.oclrec")
    out.recording.runs[-1].steps[0].info["v_rows"] = (0, 1)
    out.recording.runs[-1].steps[0].kernels[0].device = 7
    out.recording.save(tmp_path / "bad2.oclrec")
    with pytest.raises(oclla.RecordingError, match="device"):
        oclla.load_recording(tmp_path / "bad2.oclrec")
    out.recording.runs[-1].steps[0].kernels[0].device = ""


# ---- the Run dialog -----------------------------------------------------------------------

def test_dialog_offers_rank_and_failure(qtbot):
    d = RunDialog(None, RunRequest(), device_lister=lambda: [])
    qtbot.addWidget(d)
    form = d._form
    assert not form.isRowVisible(d.rank) and not form.isRowVisible(d.fail)
    d.algorithm.setCurrentIndex(d.algorithm.findData("cholesky_downdate"))
    assert form.isRowVisible(d.rank) and form.isRowVisible(d.fail)
    assert d.family.currentData() == "spd"
    d.rank.setValue(5)
    d.fail.setChecked(True)
    req = d.request()
    assert (req.algorithm, req.rank, req.fail) == ("cholesky_downdate", 5, True)
    d.algorithm.setCurrentIndex(d.algorithm.findData("cholesky_update"))
    assert form.isRowVisible(d.rank) and not form.isRowVisible(d.fail)
    assert d.request().fail is False
    keys = [d.algorithm.itemData(i) for i in range(d.algorithm.count())]
    assert {"trtri", "cho_inverse", "cho_logdet", "hybrid"} <= set(keys)


def test_bad_rank_from_the_command_line_exits_2(capsys):
    from oclla.viewer.app import main
    with pytest.raises(SystemExit) as exc:
        main(["--algorithm", "cholesky_update", "--rank", "0", "--export", "x.png"])
    assert exc.value.code == 2 and "--rank must be at least 1" in capsys.readouterr().err


def test_the_library_refuses_what_the_runner_reports():
    """The failing downdate is the library's own LinAlgError, with LAPACK's order."""
    a = np.eye(4) * 4.0
    low = np.linalg.cholesky(a)
    v = registry.update_operand(low, {"rank": 1, "seed": 0, "fail": True})
    with pytest.raises(LinAlgError, match=f"order {registry.fail_order(4)}"):
        oclla.cholesky_update(low, v, sign=-1, lower=True, method="pivot")


# ---- rendered ------------------------------------------------------------------------------

def _shown(qtbot, array, overlays):
    from oclla.viewer.matrix_view import MatrixView
    view = MatrixView()
    qtbot.addWidget(view)
    view.resize(420, 420)
    view.show()
    qtbot.waitExposed(view)
    view.show_matrix(array, float(np.abs(array).max()), overlays, "test")
    qtbot.wait(20)
    return view, qimage_to_rgb(view.grab().toImage())


def test_rendered_failed_downdate_and_used_up_rows(made, qtbot):
    """The failing row's diagonal cell is outlined in the failure's red; V's used-up rows
    are greyed (their cells no longer their own colour), the row read outlined green."""
    from test_render import close_to, pixel
    _, run = made["fails"]
    p = analysis.failed_position(run)
    j = registry.error_order(run)
    factor, image = _shown(qtbot, analysis.matrix_at(run, p), analysis.overlays(run, p))
    assert close_to(pixel(factor, image, j - 0.5, j - 1.0), themes.MARKERS["fail"])
    v = analysis.inputs(run)["V"]
    ov = analysis.input_overlays(run, p, "V", v.shape)
    assert ov.consumed == j and ov.active == (j - 1, j, 0, v.shape[1])
    vview, vimg = _shown(qtbot, v, ov)
    plain, pimg = _shown(qtbot, v, None)             # the same V, nothing greyed
    assert close_to(pixel(vview, vimg, 0.5, j - 1.0), themes.OVERLAYS["active"])   # top edge
    diff = lambda r: np.abs(pixel(vview, vimg, 0.5, r).astype(int)       # noqa: E731
                            - pixel(plain, pimg, 0.5, r).astype(int)).max()
    assert diff(0.5) > 20                            # a used-up row: greyed
    assert diff(v.shape[0] - 0.5) <= 8               # a row still to come: its own colour


def test_hostile_numbers_in_a_recording_are_not_trusted():
    """What a loaded run may hold (any error text, any sign, any order) draws nothing
    absurd and raises nothing."""
    run = Run("cholesky_update", "pivot", (3, 1), "float64", "d", {"sign": "many"},
              error="LinAlgError: leading minor of order " + "9" * 5000)
    run.steps = [Step("cholesky_update", 0, "compute", (0, 1, 0, 1), (0, 0))]
    assert registry.error_order(run) is None
    assert analysis.failed_position(run) == 1                # its last step
    run.initial = run.result = np.eye(3)
    run.metrics["inputs"] = {"V": [[1.0], [0.0], [0.0]]}
    run.error = None
    assert analysis.backward_error(run) > 0                  # sign "many" taken as +1
    big = Run("cho_logdet", "full", (1 << 31, 1 << 31), "float64", "d")
    big.steps = [Step("cho_logdet", 0, "reduce", (0, 1 << 31, 0, 1 << 31))]
    assert analysis.overlays(big, 1).cells == []
