"""oclla.wls_solve (Jung & O'Leary's Algorithm 1) and the Tables 1/2 benchmark driver."""

import dataclasses
import warnings

import numpy as np
import pytest
from numpy.linalg import LinAlgError
from scipy.linalg import LinAlgWarning

import oclla
from oclla import bench_wls, wls
from oclla.bench_wls import problem


@pytest.fixture(scope="module")
def queue():
    return oclla.get_queue()


def normal_equations(a, d2, b):
    c = (a * d2) @ a.T
    return c, a @ (d2 * b)


def relative_error(x, a, d2, b):
    c, g = normal_equations(a, d2, b)
    exact = np.linalg.solve(c, g)
    return float(np.linalg.norm(x - exact) / np.linalg.norm(exact))


def check_contract(res, a, d2, b, tol):
    """The stopping rule held, and x is as accurate as it implies: the last correction
    was at most tol·‖x‖ and the corrections contract, so x's error is below tol."""
    assert res.converged and res.corrections[-1] <= tol
    assert len(res.corrections) == len(res.residuals) == res.iterations
    assert relative_error(res.x, a, d2, b) <= tol


@pytest.mark.parametrize("packed", (False, True))
@pytest.mark.parametrize("table", (1, 2))
def test_paper_problems_converge(queue, packed, table):
    a, d2, b = problem(64, table)
    res = oclla.wls_solve(a, d2, b, packed=packed, queue=queue)
    assert isinstance(res, oclla.WLSResult)
    assert res.dtype == np.float32 and res.fallback is None
    assert res.x.dtype == np.float64 and res.x.shape == (64,)
    check_contract(res, a, d2, b, 1e-8)
    c, g = normal_equations(a, d2, b)
    exact = np.linalg.solve(c, g)
    err0 = np.linalg.norm(res.x0 - exact) / np.linalg.norm(exact)
    err = np.linalg.norm(res.x - exact) / np.linalg.norm(exact)
    assert err < err0 * 1e-3                      # refinement gained three digits at least
    assert len(res.residuals) == len(res.residual_norms) == res.iterations >= 1


@pytest.mark.parametrize("table", (1, 2))
@pytest.mark.parametrize("scale", (1e8, 1e-20))
def test_stopping_is_invariant_to_scaling_the_weights(queue, table, scale):
    # d2 -> s·d2 scales C, g and r by s and leaves x alone: the stopping test must
    # not notice (the paper's ‖r‖/‖x‖ <= tol ran 100 steps at 1e8 and stopped after
    # one at 1e-20, with 1e4 times the error on Table 2)
    a, d2, b = problem(64, table)
    base = oclla.wls_solve(a, d2, b, queue=queue)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LinAlgWarning)
        scaled = oclla.wls_solve(a, scale * d2, b, queue=queue)
    check_contract(scaled, a, scale * d2, b, 1e-8)
    assert scaled.dtype == np.float32 and scaled.fallback is None
    assert abs(scaled.iterations - base.iterations) <= 1
    # the same accuracy: within a factor 10, or both at float64's limit κ(C)·ε₆₄
    c, _ = normal_equations(a, d2, b)
    limit = np.linalg.cond(c) * np.finfo(np.float64).eps
    errors = relative_error(base.x, a, d2, b), relative_error(scaled.x, a, d2, b)
    assert max(errors) <= 10 * min(errors) + 10 * limit


@pytest.mark.parametrize("scale", (1.0, 1e8, 1e-20))
def test_unreachable_tol_stops_at_float64_rounding_level(queue, scale):
    # tol = 0 asks for more than float64 residuals can tell: refinement stops once
    # the corrections stall with the residual at its rounding level, converged,
    # after a few steps and not max_iter, and without giving up the float32 factor
    a, d2, b = problem(64, 2)
    res = oclla.wls_solve(a, scale * d2, b, tol=0.0, queue=queue)
    assert res.converged and res.dtype == np.float32 and res.fallback is None
    assert res.iterations <= 12
    assert res.corrections[-1] > wls.RHO * res.corrections[-2]        # stalled
    c, g = normal_equations(a, scale * d2, b)
    assert np.linalg.norm(g - c @ res.x) <= wls._rounding_level(a, scale * d2, b, res.x)
    assert relative_error(res.x, a, d2, b) <= 10 * np.linalg.cond(c) * np.finfo(float).eps


def test_rounding_level_tells_rounding_from_error():
    a, d2, b = problem(32, 2)
    c, g = normal_equations(a, d2, b)
    x = np.linalg.solve(c, g)                     # backward stable: rounding-level residual
    level = wls._rounding_level(a, d2, b, x)
    assert 0 < np.linalg.norm(g - c @ x) <= level
    wrong = x * (1 + 1e-9)                        # a relative error of 1e-9 is not rounding
    assert np.linalg.norm(g - c @ wrong) > level
    # it scales with the weights as the residual does
    assert wls._rounding_level(a, 1e8 * d2, b, x) == pytest.approx(1e8 * level, rel=1e-12)


def test_ill_conditioned_needs_more_steps(queue):
    runs = [oclla.wls_solve(*problem(64, table), queue=queue) for table in (1, 2)]
    assert runs[1].iterations > runs[0].iterations


def test_pivot_method(queue):
    a, d2, b = problem(20, 1)
    res = oclla.wls_solve(a, d2, b, method="pivot", queue=queue)
    check_contract(res, a, d2, b, 1e-8)


def test_timings(queue):
    res = oclla.wls_solve(*problem(40, 1), queue=queue)
    t = res.timings
    assert set(t) == {"assembly", "factorization", "solve", "refinement", "total"}
    assert all(v >= 0 for v in t.values())
    assert t["total"] == pytest.approx(t["assembly"] + t["factorization"] + t["solve"]
                                       + t["refinement"])


def test_no_refinement(queue):
    a, d2, b = problem(30, 1)
    res = oclla.wls_solve(a, d2, b, refine=False, queue=queue)
    assert res.iterations == 0 and res.residuals == [] and not res.converged
    assert np.array_equal(res.x, res.x0)


def test_iteration_limit_warns(queue):
    a, d2, b = problem(30, 2)
    with pytest.warns(LinAlgWarning, match="did not reach"):
        res = oclla.wls_solve(a, d2, b, tol=0.0, max_iter=3, queue=queue)
    assert res.iterations == 3 and not res.converged


def test_float32_breakdown_falls_back_to_float64(queue):
    # d2[1] = 1e-50 underflows to 0 in float32: C = diag(1, 0) there, diag(1, 1e-50) in float64
    res = oclla.wls_solve(np.eye(2), np.array([1.0, 1e-50]), np.ones(2), queue=queue)
    assert res.dtype == np.float64
    assert "order 2" in res.fallback and "float64" in res.fallback
    assert np.allclose(res.x, [1.0, 1.0], rtol=1e-12, atol=0)


def test_float32_breakdown_without_fp64(queue, monkeypatch):
    info = dataclasses.replace(oclla.device_info(queue), fp64=False)
    monkeypatch.setattr(wls, "device_info", lambda q: info)
    with pytest.raises(LinAlgError, match="too ill-conditioned for single precision.*no fp64"):
        oclla.wls_solve(np.eye(2), np.array([1.0, 1e-50]), np.ones(2), queue=queue)


def test_singular_even_in_float64(queue):
    a = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 0.0]])   # rank 1: AD²Aᵀ = diag(5, 0) exactly
    with pytest.raises(LinAlgError, match="leading minor of order 2"):
        oclla.wls_solve(a, np.ones(3), np.ones(3), queue=queue)


@pytest.mark.parametrize("args, kwargs, exc, match", [
    ((np.ones((4, 3)), np.ones(3), np.ones(3)), {}, ValueError, "m > n"),
    ((np.ones((2, 3)), -np.ones(3), np.ones(3)), {}, ValueError, ">= 0"),
    ((np.ones((2, 3)), np.array([1, np.nan, 1]), np.ones(3)), {}, ValueError, ">= 0"),
    ((np.ones((2, 3)), np.ones(4), np.ones(3)), {}, ValueError, r"shape \(3,\)"),
    ((np.ones((2, 3)), np.ones(3), np.ones(2)), {}, ValueError, r"b must have shape \(3,\)"),
    ((np.ones(3), np.ones(3), np.ones(3)), {}, ValueError, "2-D"),
    ((np.array([[1, np.inf, 1], [0, 1, 1.0]]), np.ones(3), np.ones(3)), {}, ValueError,
     "infs or NaNs"),
    ((np.eye(2, 3), np.ones(3), np.ones(3)), dict(tol=-1.0), ValueError, "tol"),
    ((np.eye(2, 3), np.ones(3), np.ones(3)), dict(max_iter=0), ValueError, "max_iter"),
    ((np.eye(2, 3), np.ones(3), np.ones(3)), dict(method="qr"), ValueError, "method"),
    ((np.eye(2, 3, dtype=complex), np.ones(3), np.ones(3)), {}, TypeError, "real numbers"),
])
def test_bad_input(queue, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        oclla.wls_solve(*args, queue=queue, **kwargs)


def test_inputs_not_modified(queue):
    a, d2, b = problem(16, 1)
    keep = a.copy(), d2.copy(), b.copy()
    oclla.wls_solve(a, d2, b, queue=queue)
    assert all(np.array_equal(x, y) for x, y in zip((a, d2, b), keep))


# ---- the benchmark driver ------------------------------------------------------------------

def test_problem_generators():
    a, d2, b = problem(8, 2)
    assert a.shape == (8, 16) and b.shape == (16,)
    assert d2[0] == pytest.approx(1e-4) and d2[-1] == pytest.approx(1e4)
    assert np.all((a >= 0) & (a <= 1))
    a1, d21, _ = problem(8, 1)
    assert np.all((d21 >= 0) & (d21 <= 1))


def test_run_row_and_table(queue):
    row = bench_wls.run_row(32, 2, queue=queue)
    for key in bench_wls.COLUMNS:
        assert np.isfinite(row[key])
    assert row["err_refined"] < row["err_x0"]
    row512 = dict(row, m=512)
    text = bench_wls.format_table(2, [row512], "test device")
    assert "Table 2" in text and "ours" in text
    assert "2.92e-02" in text and "1.16e-10" in text          # the paper's row for m = 512


def test_main_prints_both_tables(capsys, tmp_path):
    out = tmp_path / "rows.json"
    assert bench_wls.main(["--sizes", "24", "--no-cupy", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Table 1" in text and "Table 2" in text
    assert out.read_text().count('"m": 24') == 2


def test_main_rejects_bad_sizes():
    with pytest.raises(SystemExit):
        bench_wls.main(["--sizes", "abc"])
    with pytest.raises(SystemExit):
        bench_wls.main(["--sizes", "16", "--tables", "3"])


def test_trace_names_every_device_phase(queue):
    with oclla.record() as rec:
        res = oclla.wls_solve(*problem(20, 1), packed=True, queue=queue)
    names = [r.algorithm for r in rec.runs]
    assert names[:2] == ["ad2at", "rfp_cholesky"]
    assert names[2:] == ["rfp_cho_solve"] * (1 + res.iterations)      # x0, then each step


def _ill_conditioned_problem():
    """κ(AD²Aᵀ) ≈ 1e9 (κ·ε₃₂ ≫ 1): float32 refinement converges slowly, stalls or the
    float32 factor breaks down, depending on the factor's rounding."""
    m, n = 64, 128
    rng = np.random.default_rng(0)
    d2 = 10.0 ** (-6 + 12 * np.arange(n) / (n - 1))
    return rng.random((m, n)), d2, rng.random(n)


def test_ill_conditioned_problem_is_solved_to_float64_accuracy(queue):
    a, d2, b = _ill_conditioned_problem()
    result = oclla.wls_solve(a, d2, b, queue=queue)
    assert result.converged
    assert (result.dtype == np.float64) == (result.fallback is not None)
    x_ref = np.linalg.solve((a * d2) @ a.T, a @ (d2 * b))
    assert np.linalg.norm(result.x - x_ref) <= 1e-6 * np.linalg.norm(x_ref)


@pytest.fixture
def overshooting_float32(monkeypatch):
    """A float32 factor whose corrections overshoot twofold (x += 2·dx: the error
    only changes sign, the residual never shrinks): refinement with it stalls."""
    real_solve = wls._DeviceFactor.solve

    def overshooting(self, g64):
        dx = real_solve(self, g64)
        return 2.0 * dx if self.dtype == np.float32 else dx
    monkeypatch.setattr(wls._DeviceFactor, "solve", overshooting)


def test_stalled_float32_refinement_switches_to_float64(queue, overshooting_float32):
    a, d2, b = problem(40, 1)
    result = oclla.wls_solve(a, d2, b, queue=queue)
    assert result.converged and result.dtype == np.float64
    assert "stopped improving" in result.fallback
    x_ref = np.linalg.solve((a * d2) @ a.T, a @ (d2 * b))
    assert np.linalg.norm(result.x - x_ref) <= 1e-6 * np.linalg.norm(x_ref)


def test_stalled_refinement_without_fp64_keeps_the_best_iterate(queue, monkeypatch,
                                                                 overshooting_float32):
    info = dataclasses.replace(oclla.device_info(queue), fp64=False)
    monkeypatch.setattr(wls, "device_info", lambda q: info)
    a, d2, b = problem(40, 1)
    with pytest.warns(LinAlgWarning, match="did not reach"):
        result = oclla.wls_solve(a, d2, b, max_iter=30, queue=queue)
    assert not result.converged and result.dtype == np.float32 and result.fallback is None
    r = a @ (d2 * b) - a @ (d2 * (a.T @ result.x))
    assert np.linalg.norm(r) <= min(result.residual_norms) * (1 + 1e-12)
