"""AD²Aᵀ shows its inputs: A and the diagonal of D², the step's column outlined."""

import numpy as np
import oclla
import pytest

from oclla.viewer import analysis, matrices
from oclla.viewer.runner import RunRequest, execute


@pytest.fixture(scope="module")
def ad2at():
    out = execute(RunRequest(algorithm="ad2at", variant="pivot", n=5, seed=2, warmup=False))
    assert out.error is None
    return out.recording


def test_the_run_keeps_a_and_d2(ad2at, tmp_path):
    run = analysis.viewable_runs(ad2at)[0]
    kept = analysis.inputs(run)
    np.testing.assert_array_equal(kept["A"], matrices.random(5, seed=2))
    assert kept["d2"].shape == (5, 1) and ((0.5 <= kept["d2"]) & (kept["d2"] < 2)).all()
    c = analysis.final_array(run)
    a, d2 = kept["A"], kept["d2"][:, 0]
    np.testing.assert_allclose(np.tril(c), np.tril(a @ np.diag(d2) @ a.T), rtol=1e-12,
                               atol=1e-12)
    path = tmp_path / "ad2at.oclrec"
    ad2at.save(path)
    again = analysis.viewable_runs(oclla.load_recording(path))[0]
    np.testing.assert_array_equal(analysis.inputs(again)["A"], a)


def test_a_scale_step_outlines_its_column_and_weight(window, ad2at):
    window.model.set_recording(ad2at)
    run = window.model.run
    p = next(i + 1 for i, s in enumerate(run.steps) if s.phase == "scale" and
             s.region[2] == 2)
    window.model.go_to(p)
    views = window.main_view.inputs
    assert set(views) == {"A", "d2"} and all(v.isVisible() for v in views.values())
    assert views["A"].overlays.active == (0, 5, 2, 3)
    assert views["d2"].overlays.active == (2, 3, 0, 1)
    assert views["A"].active.isVisible()
    window.model.go_to(p + 1)                        # the outer product: C's step
    assert views["A"].overlays.active is None


def test_runs_without_inputs_hide_them(window, ad2at, recordings):
    window.model.set_recording(ad2at)
    window.open_recording(recordings["lu8"])
    assert not any(v.isVisible() for v in window.main_view.inputs.values())


@pytest.mark.parametrize("bad", [{"A": "text"}, {"A": [[1, 2], [3]]}, "nope", {"A": []}])
def test_damaged_inputs_are_ignored(bad):
    run = analysis.viewable_runs(execute(RunRequest(n=3, warmup=False)).recording)[0]
    run.metrics["inputs"] = bad
    assert analysis.inputs(run) == {}
