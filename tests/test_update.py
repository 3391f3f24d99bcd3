"""cholesky_update and rfp.cholesky_update: the factor of A ± V·Vᵀ from the factor of A.

Accuracy the LAPACK way (‖Ã − R̃ᵀR̃‖ / (n‖Ã‖ε) < 30, ``oclla.accuracy``) and
against scipy's factor of Ã, sizes straddling the panel width, both methods,
both layouts, both signs; the near-boundary loss of hyperbolic downdates
measured; failing downdates name the order and leave the factor alone;
device views; every bad input; update-then-downdate as a property.
"""

import re

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.linalg as sl
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy, kernels_cl, rfp, update, update_stream
from oclla._params import params, trial

from linalg_helpers import spd
from test_views import assert_same, device_view, layouts

METHODS = ["blocked", "pivot"]
P = update.panel_rows(oclla.get_queue(), np.dtype(np.float32))   # the device's rows per panel
SIZES = (1, 2, P - 1, P, P + 1, 2 * P + 3)       # straddle the panel width; odd and even


def problem(n, k, sign, dtype, seed=0, scale=0.5):
    """(Ã, c, V): an SPD A (condition below ~10) and V (n x k) seeded; for a downdate
    A is Ã + V·Vᵀ, so that Ã stays as well conditioned.  c is scipy's upper factor
    of A in ``dtype`` (float64 values of Ã)."""
    rng = np.random.default_rng(seed + 100 * n + k)
    base = spd(n, np.float64, seed)
    v = (scale * rng.standard_normal((n, k))).astype(dtype)
    v64 = v.astype(np.float64)
    a = base + v64 @ v64.T if sign < 0 else base
    return a + sign * v64 @ v64.T, sl.cholesky(a).astype(dtype), v


@pytest.mark.parametrize("method", METHODS)
def test_accuracy_against_scipy(queue, dtype, method):
    for n in SIZES:
        for k in (1, 3, 20):
            for sign in (1, -1):
                at, c, v = problem(n, k, sign, dtype)
                ref = sl.cholesky(at)
                for lower in (False, True):
                    factor = c.T.copy() if lower else c
                    r = oclla.cholesky_update(factor, v, sign=sign, lower=lower,
                                              method=method, queue=queue)
                    assert r.dtype == dtype and r.shape == (n, n)
                    assert_updated(at, r, ref, lower, f"n={n} k={k} sign={sign} lower={lower}")


def assert_updated(at, r, ref, lower: bool, what: str) -> None:
    """r (lower or upper, as ``lower`` says) is the factor of Ã the LAPACK way, scipy's
    upper factor ``ref`` entrywise (units of n·max|ref|·ε), and its other triangle is
    the input's (zero here)."""
    n = at.shape[0]
    err = accuracy.cholesky_backward_error(at, r, lower)
    assert accuracy.passes(err), f"{what}: backward error {err:.3g}"
    got = np.triu(r) if not lower else np.tril(r).T
    assert not np.any(np.tril(r, -1) if not lower else np.triu(r, 1)), what
    forward = np.abs(got - ref).max() / (n * np.abs(ref).max() * accuracy.eps(r.dtype))
    assert forward < accuracy.THRESHOLD, f"{what}: forward {forward:.3g}"


def test_methods_agree_and_other_triangle_kept(queue, dtype):
    """cho_factor's other triangle (the input's values) comes back unchanged."""
    n, k = 2 * P + 5, 4
    _, _, v = problem(n, k, 1, dtype)
    a = spd(n, dtype)
    for lower in (False, True):
        c, _ = oclla.cho_factor(a, lower=lower, queue=queue)
        rs = [oclla.cholesky_update(c, v, lower=lower, method=m, queue=queue) for m in METHODS]
        other = (lambda x: np.tril(x, -1)) if not lower else (lambda x: np.triu(x, 1))
        for r in rs:
            np.testing.assert_array_equal(other(r), other(c))
            assert accuracy.passes(accuracy.cholesky_backward_error(
                a.astype(np.float64) + v.astype(np.float64) @ v.T.astype(np.float64), r,
                lower))
        np.testing.assert_allclose(rs[0], rs[1], rtol=0, atol=64 * n * accuracy.eps(dtype) *
                                   np.abs(rs[1]).max())


def test_one_dimensional_v_and_exact_conversions(queue):
    _, c, v = problem(40, 1, 1, np.float64)
    np.testing.assert_array_equal(oclla.cholesky_update(c, v[:, 0], queue=queue),
                                  oclla.cholesky_update(c, v, queue=queue))
    small = (np.arange(40) % 3).astype(np.int16)              # exact in float32
    c32 = c.astype(np.float32)
    r = oclla.cholesky_update(c32, small, queue=queue)
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r, oclla.cholesky_update(c32, small.astype(np.float32),
                                                           queue=queue))
    with pytest.raises(TypeError, match="int64"):            # not exact in float32
        oclla.cholesky_update(c32, small.astype(np.int64), queue=queue)


def test_rank_zero_and_empty_return_copies(queue, dtype):
    _, c, _ = problem(20, 1, 1, dtype)
    for method in METHODS:
        r = oclla.cholesky_update(c, np.zeros((20, 0), dtype), method=method, queue=queue)
        assert r is not c
        np.testing.assert_array_equal(r, c)
    d = cl_array.to_device(queue, c)
    r = oclla.cholesky_update(d, np.zeros((20, 0), dtype), queue=queue)
    assert isinstance(r, cl_array.Array) and r is not d
    np.testing.assert_array_equal(r.get(), c)
    assert oclla.cholesky_update(d, np.zeros((20, 0), dtype), overwrite_c=True,
                                 queue=queue) is d
    empty = oclla.cholesky_update(np.zeros((0, 0), dtype), np.zeros(0, dtype), queue=queue)
    assert empty.shape == (0, 0) and empty.dtype == dtype
    assert rfp.cholesky_update(np.zeros(0, dtype), 0, np.zeros(0, dtype),
                               queue=queue).shape == (0,)


@pytest.mark.parametrize("method", METHODS)
def test_failing_downdate_names_the_order_and_keeps_the_factor(queue, dtype, method):
    n, order = 2 * P + 7, P + 3                 # fails in the second panel
    a = spd(n, np.float64)
    c = sl.cholesky(a).astype(dtype)
    v = np.zeros((n, 3), dtype)
    v[order - 1, 1] = 3 * np.sqrt(a[order - 1, order - 1])    # a_jj - v_j^2 < 0
    v[: order - 1, 0] = 0.1
    # scipy's words for it: "35-th leading minor ..." (before 1.15), "... info = [35] ..."
    with pytest.raises(LinAlgError, match=fr"{order}-th leading minor|info = \[{order}\]"):
        sl.cholesky(a - v.astype(np.float64) @ v.T.astype(np.float64))
    message = f"downdated matrix is not positive definite: leading minor of order {order}$"
    before = c.copy()
    with pytest.raises(LinAlgError, match=message):
        oclla.cholesky_update(c, v, sign=-1, method=method, queue=queue)
    np.testing.assert_array_equal(c, before)
    d = cl_array.to_device(queue, c)
    with pytest.raises(LinAlgError, match=message):
        oclla.cholesky_update(d, v, sign=-1, lower=False, method=method, queue=queue)
    np.testing.assert_array_equal(d.get(), before)
    parent = cl_array.to_device(queue, np.pad(c, 1))
    view = parent[1:-1, 1:-1]
    with pytest.raises(LinAlgError, match=message):
        oclla.cholesky_update(view, v, sign=-1, overwrite_c=True, method=method, queue=queue)
    np.testing.assert_array_equal(parent.get(), np.pad(before, 1))
    arf = rfp.pack(c.T.copy(), lower=True)
    with pytest.raises(LinAlgError, match=message):
        rfp.cholesky_update(arf, n, v, sign=-1, method=method, queue=queue)


def test_zero_diagonal_is_refused(queue):
    c = np.triu(np.ones((5, 5)))
    c[2, 2] = 0.0
    with pytest.raises(LinAlgError, match="zero diagonal entry at order 3"):
        oclla.cholesky_update(c, np.ones(5), queue=queue)


@pytest.mark.parametrize("method", METHODS)
def test_downdate_near_the_boundary_loses_what_refactoring_loses(queue, dtype, method):
    """Removing most of A (‖A‖/‖Ã‖ ≈ 5·10⁵): in units of n‖A‖ε the downdate's
    backward error is within the threshold; in units of n‖Ã‖ε it exceeds it,
    as refactoring A − V·Vᵀ formed in the working precision does, by a few times
    more than that refactorization (the known loss of hyperbolic downdates)."""
    n, k = 60, 4
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    at = (q * np.r_[1e-2, np.linspace(1, 2, n - 1)]) @ q.T
    v = (100 * rng.standard_normal((n, k))).astype(dtype)
    a = at + v.astype(np.float64) @ v.T.astype(np.float64)
    r = oclla.cholesky_update(sl.cholesky(a).astype(dtype), v, sign=-1, method=method,
                              queue=queue)
    norm_a, norm_at = (np.abs(m).sum(axis=1).max() for m in (a, at))
    assert norm_a / norm_at > 1e5
    err = accuracy.cholesky_backward_error(at, r, False)         # units of n‖Ã‖ε
    assert accuracy.passes(err * norm_at / norm_a)               # units of n‖A‖ε
    assert not accuracy.passes(err)
    formed = a.astype(dtype) - v @ v.T
    refactored = accuracy.cholesky_backward_error(at, sl.cholesky(formed), False)
    assert not accuracy.passes(refactored)
    assert err < 20 * refactored


# ---- the GPU kernels (the update family's LOCAL_PANEL), run here ---------------------------

#: GPUs' panel kernel, with panels of 16 rows so that small orders straddle them (the
#: rotations: REFLECT=0).
GPU_KERNELS = dict(PANEL=16, LOCAL_PANEL=1, REFLECT=0, PRODUCT=0)    # the rotations


def gpu_kernels(queue, dtype, **knobs):
    """A trial of the GPU kernel set on this device (oclla._params.trial)."""
    return trial(queue, "update", dtype,
                 {**params(queue, "update", dtype), **GPU_KERNELS, **knobs})


@pytest.mark.parametrize("lower", [False, True])
def test_lookahead_gives_the_panel_by_panel_factor(queue, dtype, lower):
    """The blocked method with LOOKAHEAD (a panel's later columns rotated on a second
    queue while the next panel is factored) computes every entry as the plain panel
    after panel does: the same factor, bit for bit, for updates and downdates, on
    orders of two to four panels (a last panel full or not)."""
    rows = update.panel_rows(queue, np.dtype(dtype))
    base = params(queue, "update", dtype)
    for n, k, sign in ((2 * rows + 1, 3, 1), (3 * rows, 5, -1), (4 * rows - 7, 17, 1)):
        at, c, v = problem(n, k, sign, dtype, seed=5)
        c = np.ascontiguousarray(c.T) if lower else c
        out = []
        for ahead in (0, 1):
            with trial(queue, "update", dtype, {**base, "LOOKAHEAD": ahead}):
                out.append(oclla.cholesky_update(c, v, sign=sign, lower=lower, queue=queue))
        np.testing.assert_array_equal(out[0], out[1])
        assert accuracy.passes(accuracy.cholesky_backward_error(at, out[1], lower)), (n, sign)


def test_group_width_gives_the_same_factor(queue, dtype):
    """The knob KB (columns of V per apply_panel pass: 16, 8 or 4, passes of a rank 17
    update 2, 3 or 5 with padded rotations) changes the grouping, not the arithmetic:
    the same factor within rounding (a compiler may contract a multiply-add into an
    FMA in one program and not in another: NVIDIA's differ in the last bit), for an
    update and a downdate, each backward stable."""
    rows = update.panel_rows(queue, np.dtype(dtype))
    base = params(queue, "update", dtype)
    for n, sign in ((2 * rows + 5, 1), (rows + 3, -1)):
        at, c, v = problem(n, 17, sign, dtype, seed=9)
        out = []
        for width in (16, 8, 4):
            with trial(queue, "update", dtype, {**base, "KB": width, "REFLECT": 0,
                                                "PRODUCT": 0}):
                out.append(oclla.cholesky_update(c, v, sign=sign, queue=queue))
        tol = 64 * np.finfo(dtype).eps * np.abs(out[0]).max()
        for r in out:
            np.testing.assert_allclose(r, out[0], rtol=0, atol=tol, err_msg=f"n={n}")
            assert accuracy.passes(accuracy.cholesky_backward_error(at, r, False)), (n, sign)


def test_gpu_kernels_accuracy_both_signs_and_layouts(queue, dtype):
    """factor_panel_local (rotations from prefix sums, the panel in local memory):
    orders straddling the panel, ranks straddling its KF = 16 columns of V per pass
    (one and two passes), both signs, both layouts."""
    p = GPU_KERNELS["PANEL"]
    with gpu_kernels(queue, dtype, KF=16):
        assert update.panel_rows(queue, np.dtype(dtype)) == p
        for n in (1, p - 1, 2 * p + 3):
            for k in (1, 17):
                for sign in (1, -1):
                    at, c, v = problem(n, k, sign, dtype)
                    for lower in (False, True):
                        r = oclla.cholesky_update(c.T.copy() if lower else c, v, sign=sign,
                                                  lower=lower, queue=queue)
                        err = accuracy.cholesky_backward_error(at, r, lower)
                        assert accuracy.passes(err), \
                            f"n={n} k={k} sign={sign} lower={lower}: {err:.3g}"


def test_gpu_kernels_packed_and_streamed_equal_resident(queue):
    """The RFP layout and the streamed panels go through the same kernels (one layout:
    each other one is a program build of its own)."""
    lower = True
    n = 2 * GPU_KERNELS["PANEL"] + 3
    at, c, v = problem(n, 17, -1, np.float32)
    full = c.T.copy() if lower else c
    with gpu_kernels(queue, np.float32):
        ref = oclla.cholesky_update(full, v, sign=-1, lower=lower, queue=queue)
        packed = rfp.cholesky_update(rfp.pack(full, lower=lower), n, v, sign=-1, lower=lower,
                                     queue=queue)
        streamed = update_stream.stream_update(full, v, sign=-1, lower=lower, check_finite=True,
                                        queue=queue)
    np.testing.assert_array_equal(packed, rfp.pack(ref, lower=lower))
    np.testing.assert_array_equal(streamed, ref)
    assert accuracy.passes(accuracy.cholesky_backward_error(at, ref, lower))


def test_gpu_kernels_refuse_failing_downdates_and_zero_diagonals(queue):
    p = GPU_KERNELS["PANEL"]
    n, order = 2 * p + 5, p + 3
    a = spd(n, np.float64)
    c = sl.cholesky(a).astype(np.float32)
    v = np.zeros((n, 18), np.float32)
    v[order - 1, 17] = 3 * np.sqrt(a[order - 1, order - 1])     # second pass over V
    with gpu_kernels(queue, np.float32):
        with pytest.raises(LinAlgError, match=f"leading minor of order {order}$"):
            oclla.cholesky_update(c, v, sign=-1, queue=queue)
        z = np.triu(np.ones((5, 5), np.float32))
        z[2, 2] = 0.0
        with pytest.raises(LinAlgError, match="zero diagonal entry at order 3"):
            oclla.cholesky_update(z, np.ones(5, np.float32), queue=queue)


def test_gpu_kernels_downdate_near_the_boundary(queue, dtype):
    """The prefix-sum rotations near the positive definite boundary (the case of
    test_downdate_near_the_boundary_loses_what_refactoring_loses): within the
    threshold in units of n‖A‖ε, and within a few times the sequential rotations'
    error in units of n‖Ã‖ε (float32: 4.2 times on PoCL, 5.6 on an H200, whose
    fused multiply-adds round differently; float64: 3.1 times on PoCL)."""
    n, k = 60, 4
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    at = (q * np.r_[1e-2, np.linspace(1, 2, n - 1)]) @ q.T
    v = (100 * rng.standard_normal((n, k))).astype(dtype)
    a = at + v.astype(np.float64) @ v.T.astype(np.float64)
    c = sl.cholesky(a).astype(dtype)
    sequential = accuracy.cholesky_backward_error(
        at, oclla.cholesky_update(c, v, sign=-1, method="pivot", queue=queue), False)
    with gpu_kernels(queue, dtype):
        r = oclla.cholesky_update(c, v, sign=-1, queue=queue)
    err = accuracy.cholesky_backward_error(at, r, False)
    norm_a, norm_at = (np.abs(m).sum(axis=1).max() for m in (a, at))
    assert accuracy.passes(err * norm_at / norm_a)
    assert err < 10 * sequential, (err, sequential)


# ---- Householder reflectors for updates (the update family's REFLECT), run here ---------

def test_reflectors_accuracy_across_panels_and_streamed(queue):
    """factor_panel_reflect and apply_panel_reflect (one reflector of length 1 + k per
    row, the trailing part by forward substitution): orders straddling the 16-row
    panel, rank 17 (float64, upper) and rank 1 (float32, lower: one program build
    each), against scipy's factor of Ã and the backward error; the streamed panels
    bitwise equal."""
    p = GPU_KERNELS["PANEL"]
    for dtype, k, lower, tol in ((np.float64, 17, False, 1e-12), (np.float32, 1, True, 1e-5)):
        with gpu_kernels(queue, dtype, REFLECT=1, KF=32):
            for n in (1, p - 1, p, 2 * p + 3):
                assert update.reflects(queue, np.dtype(dtype), k, 1)
                at, c, v = problem(n, k, 1, dtype)
                factor = c.T.copy() if lower else c
                r = oclla.cholesky_update(factor, v, lower=lower, queue=queue)
                assert accuracy.passes(accuracy.cholesky_backward_error(at, r, lower))
                ref = sl.cholesky(at, lower=lower)
                np.testing.assert_allclose(r, ref, rtol=0, atol=tol * n)
            np.testing.assert_array_equal(update_stream.stream_update(
                factor, v, sign=1, lower=lower, check_finite=True, queue=queue), r)


@pytest.mark.parametrize("panel", [4, 32])
def test_reflectors_panel_sizes(queue, panel):
    """apply_panel_reflect's forward substitution for PANEL = 32 (a switch over four
    blocks of eight rows) and PANEL = 4 (not a multiple of eight: the unrolled loops),
    orders straddling the panel, against scipy's factor of Ã."""
    with gpu_kernels(queue, np.float64, PANEL=panel, REFLECT=1, KF=16):
        for n in (panel - 1, 2 * panel + 3):
            at, c, v = problem(n, 5, 1, np.float64)
            r = oclla.cholesky_update(c, v, queue=queue)
            np.testing.assert_allclose(r, sl.cholesky(at), rtol=0, atol=1e-12 * n)


def test_reflectors_only_for_updates_up_to_kf(queue):
    """Downdates, ranks below REFLECT and ranks above KF keep the rotations."""
    f64 = np.dtype(np.float64)
    with gpu_kernels(queue, f64, REFLECT=4, KF=32):
        assert update.reflects(queue, f64, 4, 1) and update.reflects(queue, f64, 32, 1)
        assert not update.reflects(queue, f64, 3, 1)
        assert not update.reflects(queue, f64, 33, 1)
        assert not update.reflects(queue, f64, 16, -1)
    with gpu_kernels(queue, f64, REFLECT=0, KF=32):
        assert not update.reflects(queue, f64, 16, 1)


def test_reflectors_refuse_zero_diagonals_in_any_panel(queue):
    """A zero diagonal entry names its order (first or a later panel) and leaves the
    caller's factor alone."""
    p = GPU_KERNELS["PANEL"]
    c = sl.cholesky(spd(2 * p + 3, np.float64))
    v = np.ones((2 * p + 3, 17))                  # the program of the test above
    with gpu_kernels(queue, np.float64, REFLECT=1, KF=32):
        for order in (1, 3, p + 3):
            z = c.copy()
            z[order - 1, order - 1] = 0.0
            before = z.copy()
            with pytest.raises(LinAlgError, match=f"zero diagonal entry at order {order}:"):
                oclla.cholesky_update(z, v, queue=queue)
            np.testing.assert_array_equal(z, before)


@pytest.mark.parametrize("lower", [True, False])
def test_rfp_update_matches_full_storage(queue, dtype, lower):
    for n in (1, 6, 7, P + 1):
        at, c, v = problem(n, 3, -1, dtype)
        full = c.T.copy() if lower else c
        for method in METHODS:
            r = rfp.cholesky_update(rfp.pack(full, lower=lower), n, v, sign=-1, lower=lower,
                                    method=method, queue=queue)
            ref = oclla.cholesky_update(full, v, sign=-1, lower=lower, method=method,
                                        queue=queue)
            np.testing.assert_array_equal(r, rfp.pack(ref, lower=lower))
            b = np.ones(n, dtype)
            x = rfp.cho_solve((r, lower), b, queue=queue)
            assert accuracy.passes(accuracy.solve_backward_error(at, x, b))


def test_pivot_steps_are_recorded_per_row(queue):
    n, k = 9, 2
    _, c, v = problem(n, k, 1, np.float64)
    with oclla.record(snapshots=True) as rec:
        r = oclla.cholesky_update(c, v, method="pivot", queue=queue)
    steps = rec.steps
    assert [s.phase for s in steps] == ["compute", "apply"] * (n - 1) + ["compute"]
    assert steps[2].region == (1, 2, 1, 2) and steps[3].region == (1, 2, 2, n)
    assert steps[2].info["v_rows"] == (1, 2)
    assert sum(s.flops for s in steps) == update.update_flops(n, k)
    np.testing.assert_array_equal(rec.runs[-1].snapshot_at(len(steps) - 1), r)


def test_blocked_steps_are_recorded_per_panel(queue):
    n, k = 2 * P + 1, 3
    _, c, v = problem(n, k, 1, np.float32)
    rotations = {**params(queue, "update", np.float32), "PANEL": P, "PRODUCT": 0}
    with trial(queue, "update", np.float32, rotations), oclla.record() as rec:
        oclla.cholesky_update(c.T.copy(), v, lower=True, queue=queue)
    steps = rec.steps
    assert [s.phase for s in steps] == ["panel", "apply"] * 2 + ["panel"]
    assert steps[1].region == (P, n, 0, P)                      # below the panel in L
    assert steps[4].region == (2 * P, n, 2 * P, n)
    assert sum(s.flops for s in steps) == update.update_flops(n, k)
    assert [len(s.kernels) for s in steps] == [1] * 5


# ---- device views ------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(data=st.data(), n=st.integers(1, 40), k=st.integers(0, 3), lower=st.booleans(),
       overwrite=st.booleans(), method=st.sampled_from(METHODS))
def test_views(queue, data, n, k, lower, overwrite, method):
    dtype = np.float32
    c, _ = oclla.cho_factor(spd(n, dtype), lower=lower, queue=queue)
    v = np.random.default_rng(n).standard_normal((n, k) if k else n).astype(dtype)
    c_v = device_view(queue, data.draw(layouts((n, n))), c)
    v_v = device_view(queue, data.draw(layouts(v.shape)), v)
    r = oclla.cholesky_update(c_v.view, v_v.view, lower=lower, overwrite_c=overwrite,
                              method=method, queue=queue)
    ref = oclla.cholesky_update(c, v, lower=lower, method=method, queue=queue)
    assert_same(r, ref)
    assert (r is c_v.view) == overwrite
    c_v.check(written=ref if overwrite else None)
    v_v.check()


# ---- bad input ---------------------------------------------------------------------------

def test_bad_input(queue):
    c = np.eye(4)
    v = np.ones(4)
    call = oclla.cholesky_update
    cases = [
        (ValueError, "square", lambda: call(np.ones((4, 3)), v)),
        (ValueError, "2-D", lambda: call(np.ones(4), v)),
        (ValueError, "2-D", lambda: call(np.ones((2, 2, 2)), v)),
        (ValueError, "3 rows", lambda: call(c, np.ones(3))),
        (ValueError, "1-D or 2-D", lambda: call(c, np.ones((4, 1, 1)))),
        (TypeError, "int64", lambda: call(np.eye(4, dtype=np.int64), v)),
        (TypeError, "complex", lambda: call(c.astype(complex), v)),
        (TypeError, r"astype\(numpy.float32\)", lambda: call(c.astype(np.float32), v)),
        (TypeError, "complex", lambda: call(c, v.astype(complex))),
        (ValueError, "infs or NaNs", lambda: call(np.where(c == 0, np.nan, c), v)),
        (ValueError, "infs or NaNs", lambda: call(c, np.r_[1, 1, np.inf, 1])),
        (ValueError, "sign", lambda: call(c, v, sign=0)),
        (ValueError, "sign", lambda: call(c, v, sign=2)),
        (ValueError, "sign", lambda: call(c, v, sign=True)),
        (ValueError, "method", lambda: call(c, v, method="givens")),
        (TypeError, "float64", lambda: call(cl_array.to_device(queue, c),
                                             cl_array.to_device(queue, v.astype(np.float32)))),
        (ValueError, "infs or NaNs", lambda: call(
            cl_array.to_device(queue, c), cl_array.to_device(queue, np.r_[np.nan, 1, 1, 1]))),
        (ValueError, "infs or NaNs", lambda: call(
            cl_array.to_device(queue, np.where(c == 0, np.inf, c)), v)),
        (ValueError, "length", lambda: rfp.cholesky_update(np.ones(5), 4, v)),
        (ValueError, "n must be >= 0", lambda: rfp.cholesky_update(np.ones(1), -1, v)),
        (TypeError, "integer", lambda: rfp.cholesky_update(np.ones(1), 1.0, v)),
    ]
    for error, match, bad in cases:
        with pytest.raises(error, match=match):
            bad()
    # check_finite=False lets NaN through without an error (the result is garbage)
    call(c, np.r_[np.nan, 1, 1, 1], check_finite=False)


# ---- property ----------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 2 * P + 2), k=st.integers(0, 5), lower=st.booleans(),
       method=st.sampled_from(METHODS), seed=st.integers(0, 2 ** 16),
       double=st.booleans())
def test_update_then_downdate_returns_the_factor(queue, n, k, lower, method, seed, double):
    dtype = np.float64 if double and oclla.device_info(queue).fp64 else np.float32
    a = spd(n, np.float64, seed)
    c = sl.cholesky(a, lower=lower).astype(dtype)
    # ‖V·Vᵀ‖ about ‖A‖: the round trip stays well conditioned
    v = (np.random.default_rng(seed).standard_normal((n, k)) / np.sqrt(n)).astype(dtype)
    up = oclla.cholesky_update(c, v, lower=lower, method=method, queue=queue)
    back = oclla.cholesky_update(up, v, sign=-1, lower=lower, method=method, queue=queue)
    err = accuracy.cholesky_backward_error(a, back, lower)
    assert accuracy.passes(err), f"backward error {err:.3g}"


# ---- streamed: the factor on the host --------------------------------------------------------

@pytest.mark.parametrize("lower", [False, True])
def test_streamed_equals_resident(queue, dtype, lower):
    """The streamed mode runs the rotations' panel kernels: bit for bit the factor of the
    resident rotations (PRODUCT 0: a GPU's blocked method takes the product form for
    these updates)."""
    rotations = {**params(queue, "update", dtype), "PRODUCT": 0}
    for n, k, sign in ((1, 1, 1), (P + 1, 2, -1), (2 * P + 7, 20, 1), (2 * P + 7, 3, -1)):
        at, c, v = problem(n, k, sign, dtype)
        factor = c.T.copy() if lower else c
        before = factor.copy()
        streamed = update_stream.stream_update(factor, v, sign=sign, lower=lower, check_finite=True,
                                        queue=queue)
        with trial(queue, "update", dtype, rotations):
            resident = oclla.cholesky_update(factor, v, sign=sign, lower=lower, queue=queue)
        np.testing.assert_array_equal(streamed, resident)
        np.testing.assert_array_equal(factor, before)
        assert accuracy.passes(accuracy.cholesky_backward_error(at, streamed, lower))


def test_streamed_failure_names_the_order_and_keeps_the_factor(queue):
    """The panel that fails is found after the pipeline (a flag per panel): orders in
    the second and the last panel; the factor untouched."""
    n = 2 * P + 7
    a = spd(n, np.float64)
    c = sl.cholesky(a)
    before = c.copy()
    for order in (P + 3, 2 * P + 6):
        v = np.zeros((n, 2))
        v[order - 1, 1] = 3 * np.sqrt(a[order - 1, order - 1])
        with pytest.raises(LinAlgError, match=f"leading minor of order {order}$"):
            update_stream.stream_update(c, v, sign=-1, lower=False, check_finite=True,
                                        queue=queue)
        np.testing.assert_array_equal(c, before)
    with pytest.raises(ValueError, match="infs or NaNs"):
        update_stream.stream_update(np.where(c == 0, np.nan, c), v, sign=1, lower=False,
                             check_finite=True, queue=queue)


def test_a_factor_larger_than_a_buffer_is_streamed(queue, monkeypatch):
    """streams() compares the factor with the device's limits; cholesky_update then
    streams (recorded as the "streamed" variant) and honours overwrite_c."""
    import dataclasses
    c = sl.cholesky(spd(40, np.float64))
    v = np.ones((40, 2))
    assert not update_stream.streams(c, queue)
    assert not update_stream.streams(cl_array.to_device(queue, c), queue)
    small = dataclasses.replace(oclla.device_info(queue), max_alloc_size=c.nbytes - 1)
    monkeypatch.setattr(update_stream, "device_info", lambda q: small)
    assert update_stream.streams(c, queue)
    assert not update_stream.streams(c[:20, :20], queue)
    ref = update_stream.stream_update(c, v, sign=1, lower=False, check_finite=True, queue=queue)
    with oclla.record() as rec:
        r = oclla.cholesky_update(c, v, queue=queue)
    assert rec.runs[-1].variant == "streamed"
    panels = -(-40 // update.panel_rows(queue, np.dtype(np.float64)))
    assert [s.phase for s in rec.steps] == ["panel", "apply"] * (panels - 1) + ["panel"]
    np.testing.assert_array_equal(r, ref)
    work = c.copy()
    assert oclla.cholesky_update(work, v, overwrite_c=True, queue=queue) is work
    np.testing.assert_array_equal(work, ref)
    with pytest.raises(ValueError, match="product"):       # refused before streaming
        oclla.cholesky_update(c, v, sign=-1, method="product", queue=queue)


# ---- the product form (method="product") -------------------------------------------------

from oclla import update_product  # noqa: E402
from oclla._knobs import pow2_at_least  # noqa: E402

PRODUCT_SIZES = (1, 2, update_product.CH - 1, update_product.CH + 1, update_product.TB + 1,
                 update_product.CW + 3, 2 * update_product.CW + 1)   # straddle its blocks


def test_row_coefficients_items_keep_their_r_within_the_pass_local_memory():
    """row_items: a power of two up to 64 whose rows' R (KB x KB reals each, in local
    memory) take no more than the pass's largest kernel (local_bytes), for every rank
    class and both dtypes; float64 at KB = 16 keeps 16 rows per work-group.  An update
    of more columns needs what its widest pass (KB) needs."""
    for itemsize in (4, 8):
        for k in range(1, update_product.KB + 1):
            rc, kb = update_product.row_items(k, itemsize), pow2_at_least(k)
            assert rc & (rc - 1) == 0 and 1 <= rc <= 64, (k, itemsize, rc)
            assert rc * kb * kb * itemsize <= update_product.local_bytes(k, itemsize)
            assert rc == 64 or 2 * rc * kb * kb * itemsize > \
                update_product.local_bytes(k, itemsize)
    assert update_product.row_items(16, 8) == 16
    kb = update_product.KB                 # past one pass: the widest pass's needs
    assert update_product.local_bytes(8 * kb, 8) == update_product.local_bytes(kb, 8)


def test_product_form_accuracy_both_layouts_and_passes(queue, dtype):
    """Updates of every rank class and of more than KB columns (two passes), orders
    straddling the prefix chunks (CH), the solve's blocks (TB) and the row sweep's
    chunks (CW), both triangles: LAPACK-way backward error and scipy's factor."""
    for n in PRODUCT_SIZES:
        for k in (1, 3, update_product.KB + 1):
            at, c, v = problem(n, k, 1, dtype, seed=5)
            ref = sl.cholesky(at)
            for lower in (False, True):
                factor = c.T.copy() if lower else c
                r = oclla.cholesky_update(factor, v, lower=lower, method="product",
                                          queue=queue)
                assert_updated(at, r, ref, lower, f"n={n} k={k} lower={lower}")


@pytest.mark.parametrize("per_cu", [0, 1 << 20], ids=["whole", "split"])
def test_product_form_solve_in_one_launch(queue, dtype, per_cu, monkeypatch):
    """SOLVE = "chain": W in one launch whose work-groups wait for the blocks before
    theirs (orders straddling the solve's TB-row blocks, one to four blocks, a pass of
    fewer than KB columns and two passes, both layouts), with all of W's columns in one
    chain and, for an upper factor, each group of 4 a chain of its own, each work-group
    inverting its own diagonal block: the same factor as the launch per block, within
    rounding, and backward stable."""
    monkeypatch.setattr(update_product, "SPLIT_PER_CU", per_cu)
    tb = update_product.TB
    for n in (1, tb - 1, tb + 1, 3 * tb + 5):
        for k in (3, update_product.KB + 1):
            at, c, v = problem(n, k, 1, dtype, seed=11)
            for lower in (False, True):
                assert update_product.splits(queue, n, update_product.KB, lower) == (
                    bool(per_cu) and not lower)
                factor = c.T.copy() if lower else c
                with gpu_kernels(queue, dtype, SOLVE="steps"):
                    steps = oclla.cholesky_update(factor, v, lower=lower, method="product",
                                                  queue=queue)
                with gpu_kernels(queue, dtype, SOLVE="chain"), oclla.record() as rec:
                    r = oclla.cholesky_update(factor, v, lower=lower, method="product",
                                              queue=queue)
                names = [k.name for s in rec.steps for k in s.kernels]
                assert "solve_chain" in names and "solve_step" not in names
                assert "trtri_blocks" not in names     # each work-group inverts its block
                where = f"n={n} k={k} lower={lower}"
                assert_updated(at, r, sl.cholesky(at), lower, where)
                np.testing.assert_allclose(r, steps, rtol=0, err_msg=where,
                                           atol=64 * np.finfo(dtype).eps * np.abs(steps).max())


@pytest.mark.parametrize("rows", [8, 12])
def test_product_form_prefix_merges_fan_r_factors(queue, dtype, rows):
    """The knob PREFIX_ROWS: each level of the prefix merges a chunk's R with the
    PREFIX_ROWS / KB R's below it (at least one), so the merges number one for the
    chunks plus ⌈log(n/CH)⌉ to that base, and the factor is the same, backward stable
    (ranks 2, 4 and KB + 1: fans of 13 to 2; orders of one chunk to several levels; 12
    rows at ranks 2 and KB + 1 only, each fan a program of its own to build)."""
    ch = update_product.CH
    for n in (ch - 1, 3 * ch + 1, 25 * ch + 3):
        for k in (2, 4, update_product.KB + 1) if rows == 8 else (2, update_product.KB + 1):
            at, c, v = problem(n, k, 1, dtype, seed=17)
            with gpu_kernels(queue, dtype, PREFIX_ROWS=rows), oclla.record() as rec:
                r = oclla.cholesky_update(c, v, method="product", queue=queue)
            assert_updated(at, r, sl.cholesky(at), False, f"rows={rows} n={n} k={k}")
            merges = [len([x for x in s.kernels if x.name == "chunk_merge"])
                      for s in rec.steps if s.phase == "prefix"]
            expected = []
            for c0 in range(0, k, update_product.KB):
                fan = 1 + max(1, rows // pow2_at_least(min(update_product.KB, k - c0)))
                levels, reach = 0, 1
                while reach < -(-n // ch):
                    levels, reach = levels + 1, reach * fan
                expected.append(1 + levels)
            assert merges == expected, (rows, n, k)


def test_product_form_scratch_holds_exactly_what_it_writes(queue, dtype, monkeypatch):
    """Each scratch buffer of the product form (W, B, the prefixes, the solve's row sums
    packed chunk after chunk, ...) is sized for the widest pass (k's class up to KB):
    written past its size, the guard bytes behind it change; orders of one to five
    sweep chunks, one and two passes, both solve routes."""
    import pyopencl as cl
    guard, taken = 4096, []

    def guarded(q, nbytes):
        buf = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, max(1, nbytes) + guard)
        cl.enqueue_fill_buffer(q, buf, np.full(1, 0x5A, np.uint8), 0, max(1, nbytes) + guard)
        taken.append((buf, max(1, nbytes)))
        return buf

    monkeypatch.setattr(update_product.scratch, "buffer", guarded)
    cw = update_product.CW
    for solve in ("steps", "chain"):
        for n, k in ((cw - 1, 1), (2 * cw + 3, 3), (5 * cw - 7, update_product.KB + 1)):
            at, c, v = problem(n, k, 1, dtype, seed=13)
            taken.clear()
            with gpu_kernels(queue, dtype, SOLVE=solve):
                r = oclla.cholesky_update(c, v, method="product", queue=queue)
            assert_updated(at, r, sl.cholesky(at), False, f"{solve} n={n} k={k}")
            for buf, nbytes in taken:
                tail = np.empty(guard, np.uint8)
                cl.enqueue_copy(queue, tail, buf, src_offset=nbytes)
                assert (tail == 0x5A).all(), f"{solve} n={n} k={k}: written past {nbytes} bytes"


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 3 * update_product.CW + 5), k=st.integers(1, update_product.KB + 3),
       lower=st.booleans(), split=st.booleans(), seed=st.integers(0, 2 ** 16),
       double=st.booleans())
def test_product_form_chain_property(queue, n, k, lower, split, seed, double):
    """Any order, rank and layout: the chained solve, its column groups split or not,
    gives the factor of the launch per block (within rounding), backward stable."""
    dtype = np.float64 if double and oclla.device_info(queue).fp64 else np.float32
    at, c, v = problem(n, k, 1, dtype, seed=seed)
    factor = c.T.copy() if lower else c
    with gpu_kernels(queue, dtype, SOLVE="steps"):
        steps = oclla.cholesky_update(factor, v, lower=lower, method="product", queue=queue)
    saved = update_product.SPLIT_PER_CU
    update_product.SPLIT_PER_CU = (1 << 20) if split else 0
    try:
        with gpu_kernels(queue, dtype, SOLVE="chain"):
            r = oclla.cholesky_update(factor, v, lower=lower, method="product", queue=queue)
    finally:
        update_product.SPLIT_PER_CU = saved
    assert_updated(at, r, sl.cholesky(at), lower, f"n={n} k={k} lower={lower}")
    np.testing.assert_allclose(r, steps, rtol=0,
                               atol=64 * np.finfo(dtype).eps * np.abs(steps).max())


def test_chain_splits_while_its_work_groups_fit(queue, monkeypatch):
    """solve_chain splits an upper factor's chain by column groups of 4 while the
    work-groups (blocks x groups) number at most SPLIT_PER_CU per compute unit; never a
    lower factor's, nor a pass of 4 columns or fewer (one group)."""
    units = oclla.device_info(queue).compute_units
    monkeypatch.setattr(update_product, "SPLIT_PER_CU", 2)
    tb, most = update_product.TB, 2 * units
    fits = most // 4 * tb                           # blocks x 4 groups at most `most`
    assert update_product.splits(queue, fits, 16, False)
    assert not update_product.splits(queue, (most // 4 + 1) * tb, 16, False)
    assert not update_product.splits(queue, fits, 16, True)
    assert not update_product.splits(queue, tb, 4, False)
    assert update_product.splits(queue, most // 2 * tb, 8, False)
    assert not update_product.splits(queue, (most // 2 + 1) * tb, 8, False)


def test_the_chain_and_the_host_mark_unstored_entries_alike():
    """solve_chain reads an entry of W until it no longer holds UNSTORED, which the host
    fills in: the kernel's bits and the host's must be the same (else the chain waits for
    ever or reads V as W), and a signalling NaN's, which arithmetic on any real (a
    computed NaN included) never returns."""
    source = kernels_cl.read_source("update_product.cl")
    found = dict(re.findall(r"#define UNSTORED (0x[0-9a-f]+)U(L?)", source))
    kernel = {8 if suffix else 4: int(bits, 16) for bits, suffix in found.items()}
    assert kernel == {size: int(bits[0]) for size, bits in update_product.UNSTORED.items()}
    words = {int(bits, 16) for bits in re.findall(r"#define UNSTORED_WORD (0x[0-9a-f]+)", source)}
    for size, real in ((8, np.float64), (4, np.float32)):
        marker = update_product.UNSTORED[size].view(real)
        assert np.isnan(marker[0])
        # update_rank1's state starts as the fill leaves it: ints of the same positive
        # value in either byte order, UNSTORED_WORD (its tickets counted from there, its
        # stopping row a minimum that stays above any order)
        word = update_product.UNSTORED[size].view(np.int32)
        assert (word == word[0]).all() and int(word[0]) in words and word[0] > 2 ** 30, \
            (size, word, words)
        with np.errstate(invalid="ignore"):
            for computed in (marker * 1, marker + 0, -marker, np.sqrt(-np.ones(1, real))):
                assert computed.view(update_product.UNSTORED[size].dtype)[0] != \
                    update_product.UNSTORED[size][0]


def test_product_form_agrees_with_the_rotations_on_device_arrays(queue):
    n, k = 70, 5
    _, c, v = problem(n, k, 1, np.float64, seed=2)
    dc = cl_array.to_device(queue, c)
    product = oclla.cholesky_update(dc, v, method="product", queue=queue)
    assert isinstance(product, cl_array.Array)
    np.testing.assert_allclose(product.get(), oclla.cholesky_update(c, v, queue=queue),
                               rtol=0, atol=1e-12 * np.abs(c).max())
    np.testing.assert_array_equal(dc.get(), c)                 # the input left alone


def test_product_form_refuses_zero_diagonals_at_their_order(queue):
    for bad in (0, 40, 69):
        c = np.triu(np.ones((70, 70))) + 70 * np.eye(70)
        c[bad, bad] = 0.0
        with pytest.raises(LinAlgError, match=f"zero diagonal entry at order {bad + 1}"):
            oclla.cholesky_update(c, np.ones((70, 2)), method="product", queue=queue)


def test_product_form_takes_updates_of_full_factors_only(queue):
    c = np.eye(4)
    with pytest.raises(ValueError, match="product"):
        oclla.cholesky_update(c, np.ones(4), sign=-1, method="product", queue=queue)
    packed = rfp.pack(np.eye(4), queue=queue)
    with pytest.raises(ValueError, match="product"):
        rfp.cholesky_update(packed, 4, np.ones(4), method="product", queue=queue)


def test_product_form_steps_are_recorded(queue):
    n = 40
    _, c, v = problem(n, update_product.KB + 2, 1, np.float32)
    with oclla.record() as rec:
        oclla.cholesky_update(c, v, method="product", queue=queue)
    assert [s.phase for s in rec.steps] == ["solve", "prefix", "apply"] * 2
    assert rec.steps[0].info["v_rows"] == (0, n)           # V read whole by the solve
    names = {k.name for s in rec.steps for k in s.kernels}
    solve = {"steps": "solve_step", "chain": "solve_chain"}[
        params(queue, "update", np.float32)["SOLVE"]]
    assert {solve, "row_coefficients", "apply_product"} <= names


def test_blocked_method_routes_updates_up_to_product_rank(queue):
    """With the knob PRODUCT (GPUs' default 128; 0 here), the blocked method does updates
    of full factors of rank <= PRODUCT in product form; larger ranks, downdates and
    packed factors keep the rotations."""
    n = 40
    with gpu_kernels(queue, np.float64, PRODUCT=4):
        for k, sign, phases in ((4, 1, {"solve", "prefix", "apply"}),
                                (5, 1, {"panel", "apply"}), (4, -1, {"panel", "apply"})):
            at, c, v = problem(n, k, sign, np.float64, seed=9)
            with oclla.record() as rec:
                r = oclla.cholesky_update(c, v, sign=sign, queue=queue)
            assert {s.phase for s in rec.steps} == phases, (k, sign)
            assert accuracy.passes(accuracy.cholesky_backward_error(at, r, False))
        at, c, v = problem(n, 2, 1, np.float64, seed=9)
        packed = rfp.pack(np.ascontiguousarray(c.T), queue=queue)
        with oclla.record() as rec:
            rfp.cholesky_update(packed, n, v, queue=queue)
        assert {s.phase for s in rec.steps} == {"panel", "apply"}


def test_product_route_leaves_large_w_to_the_rotations(queue):
    """An update whose W = L⁻¹V passes update_product.GUARD leaves the factor as it was
    (apply_product reads the flag on the device) and is done by rotations (the product
    form would lose accuracy there): applied twice, the update would fail the bound."""
    n, k = 30, 2
    base = spd(n, np.float64, 1) * 1e-6
    v = np.random.default_rng(3).standard_normal((n, k)) * 1e2
    at = base + v @ v.T
    c = sl.cholesky(base)
    with gpu_kernels(queue, np.float64, PRODUCT=16):
        with oclla.record() as rec:
            r = oclla.cholesky_update(c, v, queue=queue)
    phases = [s.phase for s in rec.steps]
    assert phases[:3] == ["solve", "prefix", "apply"] and "panel" in phases[3:]
    assert accuracy.passes(accuracy.cholesky_backward_error(at, r, False))


@pytest.mark.parametrize("lower", [False, True], ids=["upper", "lower"])
def test_a_pass_past_the_guard_leaves_its_columns_to_the_rotations(queue, lower):
    """Of an update of more than KB columns, the passes before the one whose W passes
    GUARD stay applied, and the rotations do the columns from that pass on (not all of
    them: the first pass's columns applied twice would fail the bound)."""
    n, kb = 30, update_product.KB
    base = spd(n, np.float64, 2)
    v = np.random.default_rng(4).standard_normal((n, kb + 3))
    v[:, kb:] *= 1e6                  # the second pass's W ~ 1e6 > GUARD, the first's ~ 1
    at = base + v @ v.T
    c = sl.cholesky(base, lower=lower)
    with gpu_kernels(queue, np.float64, PRODUCT=2 * kb):
        with oclla.record() as rec:
            r = oclla.cholesky_update(c, v, lower=lower, queue=queue)
    phases = [s.phase for s in rec.steps]
    assert phases[:6] == ["solve", "prefix", "apply"] * 2 and "panel" in phases[6:], phases
    assert accuracy.passes(accuracy.cholesky_backward_error(at, r, lower))
