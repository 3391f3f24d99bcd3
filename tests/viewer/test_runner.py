"""Running an algorithm for the viewer: recordings, progress, cancel, failures, the registry."""

import threading

import numpy as np
import pytest
from viewer_testdata import zero_pivot_matrix

import oclla
from oclla.viewer import analysis, registry
from oclla.viewer.runner import RunRequest, execute, expected_steps


def test_a_run_gives_a_recording_with_its_source():
    steps = []
    out = execute(RunRequest("lu", "pivot", n=6, seed=2), on_step=steps.append)
    assert out.error is None and out.showable and not out.warnings
    run = analysis.viewable_runs(out.recording)[0]
    assert (run.algorithm, run.variant, len(run.steps)) == ("lu", "inplace", 5)
    assert steps == [1, 2, 3, 4, 5] == list(range(1, expected_steps(
        RunRequest("lu", "pivot", n=6)) + 1))
    assert run.metrics["source"] == {"family": "random", "seed": 2, "n": 6}
    assert run.snapshots and run.initial.dtype == np.float64


def test_the_warm_up_takes_the_recorded_route(monkeypatch):
    """The untimed first run is recorded too (and the recording dropped): where the
    leaves are fused, the packed Cholesky's unrecorded call factors T2 through an upper
    copy, its recorded one in place (lower), on programs of its own; the warm-up takes
    the recorded run's route, so that the run builds nothing."""
    from oclla import _params, rfp
    _params.override("gemm", dict(KERNEL="tiled", TILE_M=16, TILE_N=32, TILE_K=8, WPT_M=2,
                                  WPT_N=4, VEC=4))
    _params.override("chol", dict(NB=8, LEAF=16, WG=16, ROW_LEAF=1, FUSE_LEAF=1,
                                  TRSM_INVERSE=0, SMALL_N=200))
    triangles, factor = [], rfp.factor_blocked

    def spy(*args, **kwargs):
        triangles.append(kwargs["lower"])
        return factor(*args, **kwargs)

    monkeypatch.setattr(rfp, "factor_blocked", spy)
    out = execute(RunRequest("rfp_cholesky", "blocked", n=40, dtype="float32", family="spd",
                             snapshots=False))
    assert out.error is None
    assert triangles == [False, True] * 2          # T1 upper, T2 in place: warm-up, run


def test_cancel_stops_at_a_step_boundary():
    cancel = threading.Event()

    def on_step(k):
        if k == 3:
            cancel.set()
    out = execute(RunRequest("lu", "pivot", n=10), on_step=on_step, cancel=cancel)
    assert out.cancelled and not out.showable
    assert len(out.recording.runs[0].steps) == 3
    assert "RunCancelled" in out.recording.runs[0].error


def test_a_zero_pivot_is_a_mathematical_failure_shown_where_it_happened():
    req = RunRequest("lu", "pivot", pivoting="none", family="typed",
                     matrix=zero_pivot_matrix(), n=5)
    out = execute(req)
    assert out.math_error and out.showable
    assert "zero pivot in column 2" in out.error
    run = analysis.viewable_runs(out.recording)[0]
    assert run.error.startswith("LinAlgError")
    assert analysis.failed_position(run) == 3


@pytest.mark.skipif(registry.algorithm("cholesky").missing() is not None,
                    reason="Cholesky not in this build")
def test_cholesky_of_a_matrix_that_is_not_spd_stops_at_the_failing_pivot():
    out = execute(RunRequest("cholesky", "pivot", n=6, family="random", seed=1))
    assert out.math_error and "not positive definite" in out.error
    run = analysis.viewable_runs(out.recording)[0]
    position = analysis.failed_position(run)
    assert run.steps[position - 1].phase == "sqrt"


def test_device_problems_are_reported_not_raised():
    out = execute(RunRequest("lu", "pivot", n=4, device="no-such-device-anywhere"))
    assert not out.showable and out.error.startswith("device problem: no OpenCL device matches")


@pytest.mark.parametrize("req, match", [
    (RunRequest("qr"), "unknown algorithm 'qr'"),
    (RunRequest("lu", "tiled"), "lu has variants pivot, crout, window, faithful, blocked; got 'tiled'"),
    (RunRequest("lu", "faithful", pivoting="partial"), "allows pivoting none"),
    (RunRequest("lu", "pivot", n=0), "at least 1"),
    (RunRequest("lu", "pivot", dtype="float16"), "dtype must be one of"),
    (RunRequest("lu", "pivot", family="typed"), "no matrix was given"),
])
def test_bad_requests_are_explained(req, match):
    out = execute(req)
    assert not out.showable and match in out.error


def test_an_algorithm_missing_from_the_build_is_disabled_not_broken(monkeypatch):
    spec = registry.Algorithm("future", "Future algorithm", (registry.Variant("x", "x"),),
                              lambda *a: None, needs=("oclla.nowhere:nothing",))
    assert "oclla.nowhere.nothing is not available" in spec.missing()
    monkeypatch.setattr(registry, "ALGORITHMS", registry.ALGORITHMS + (spec,))
    out = execute(RunRequest("future", "x"))
    assert "Future algorithm cannot run" in out.error


def test_every_registered_algorithm_runs_or_says_why():
    for spec in registry.ALGORITHMS:
        if spec.missing():
            continue
        for v in spec.variants:
            out = execute(RunRequest(spec.key, v.key, n=5, family=spec.family, block=2))
            assert out.error is None, (spec.key, v.key, out.error)
            run = analysis.viewable_runs(out.recording)[0]
            assert run.algorithm == spec.trace_name and run.steps
            assert run.algorithm in registry.DISPLAYS


def test_the_registry_resolves_functions_through_modules():
    assert registry.function(registry.LU) is oclla.lu_factor
    with pytest.raises(AttributeError):
        registry.function("oclla.lu:no_such_function")
