"""LU: every method and variant against scipy, the LAPACK accuracy measure, bad input."""

import dataclasses
import warnings

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.linalg as sl
from hypothesis import given, strategies as st
from numpy.linalg import LinAlgError
from scipy.linalg import LinAlgWarning

import oclla
from oclla import accuracy, DeviceError

from linalg_helpers import random_matrix

SIZES = [1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 257]
PIVOTING_METHODS = [dict(method="blocked"), dict(method="pivot", variant="inplace"),
                    dict(method="pivot", variant="crout"), dict(method="pivot", variant="window")]
ALL_METHODS = PIVOTING_METHODS + [dict(method="pivot", variant="faithful")]
IDS = ["blocked", "inplace", "crout", "window", "faithful"]

# The SYCL post's example: A = L U without pivoting.
POST_A = np.array([[2, 4, 3, 5], [-4, -7, -5, 8], [6, 8, 2, 9], [4, 9, -2, 14]], float)
POST_L = np.array([[1, 0, 0, 0], [-2, 1, 0, 0], [3, -4, 1, 0], [2, 1, 3, 1]], float)
POST_U = np.array([[2, 4, 3, 5], [0, 1, 1, 18], [0, 0, -3, 66], [0, 0, 0, -212]], float)


def diagonally_dominant(rng, n, dtype):
    return (rng.standard_normal((n, n)) + 2 * n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("options", PIVOTING_METHODS, ids=IDS[:4])
@pytest.mark.parametrize("n", SIZES)
def test_partial_pivoting_matches_scipy(rng, dtype, n, options):
    a = random_matrix(rng, n, dtype)
    lu, piv = oclla.lu_factor(a, **options)
    assert lu.dtype == dtype and piv.dtype == np.int32
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    ref_lu, ref_piv = sl.lu_factor(a)
    np.testing.assert_array_equal(piv, ref_piv)


@pytest.mark.parametrize("n", [1, 2, 17, 64, 65, 100])
def test_faithful_variant(rng, dtype, n):
    a = diagonally_dominant(rng, n, dtype)
    lu, piv = oclla.lu_factor(a, method="pivot", variant="faithful")
    np.testing.assert_array_equal(piv, np.arange(n))
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD


@pytest.mark.parametrize("options", ALL_METHODS, ids=IDS)
def test_post_example_known_factors(options):
    lu, piv = oclla.lu_factor(POST_A, pivoting="none", **options)
    np.testing.assert_array_equal(piv, np.arange(4))
    np.testing.assert_allclose(np.tril(lu, -1) + np.eye(4), POST_L, atol=1e-12)
    np.testing.assert_allclose(np.triu(lu), POST_U, atol=1e-12)


@pytest.mark.parametrize("options", PIVOTING_METHODS, ids=IDS[:4])
@pytest.mark.parametrize("n", [5, 33, 70])
def test_no_pivoting_on_dominant_matrix(rng, dtype, n, options):
    a = diagonally_dominant(rng, n, dtype)
    lu, piv = oclla.lu_factor(a, pivoting="none", **options)
    np.testing.assert_array_equal(piv, np.arange(n))
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD


@pytest.mark.parametrize("block", [1, 2, 8, 16, 24, 48])
@pytest.mark.parametrize("n", [7, 47, 96, 131])
def test_blocked_any_block_size(rng, n, block):
    a = random_matrix(rng, n, np.float64)
    lu, piv = oclla.lu_factor(a, block=block)
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])


@given(n=st.integers(1, 80), seed=st.integers(0, 2**32 - 1),
       method=st.sampled_from(["blocked", "pivot"]), double=st.booleans())
def test_property_random_shapes(n, seed, method, double):
    dtype = np.float64 if double else np.float32
    a = np.random.default_rng(seed).uniform(-1, 1, (n, n)).astype(dtype)
    lu, piv = oclla.lu_factor(a, method=method)
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])


def test_ties_pick_the_first_row():
    a = np.array([[1.0, 2.0, 0.0], [-1.0, 0.0, 1.0], [1.0, 5.0, 2.0]])
    for options in PIVOTING_METHODS:
        _, piv = oclla.lu_factor(a, **options)
        np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])


# ---- lu_solve and lu -------------------------------------------------------------------

@pytest.mark.parametrize("trans", [0, 1, 2])
@pytest.mark.parametrize("n, nrhs", [(1, 1), (17, 1), (65, 3), (130, 40)])
def test_lu_solve(rng, dtype, n, nrhs, trans):
    a = random_matrix(rng, n, dtype)
    b = random_matrix(rng, n, dtype, nrhs)
    factors = oclla.lu_factor(a)
    x = oclla.lu_solve(factors, b, trans=trans)
    op = a.T if trans else a
    assert x.shape == b.shape and x.dtype == dtype
    assert accuracy.solve_backward_error(op, x, b) < accuracy.THRESHOLD
    x1 = oclla.lu_solve(factors, b[:, 0], trans=trans)
    assert x1.shape == (n,)           # a 1-D b is its one-column 2-D solve, bit for bit
    np.testing.assert_array_equal(x1, oclla.lu_solve(factors, b[:, :1], trans=trans)[:, 0])


def test_lu_solve_matches_scipy_and_accepts_scipy_factors(rng):
    a = random_matrix(rng, 40, np.float64)
    b = random_matrix(rng, 40, np.float64, 2)
    np.testing.assert_allclose(oclla.lu_solve(sl.lu_factor(a), b), sl.lu_solve(sl.lu_factor(a), b),
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("permute_l", [False, True])
def test_lu_three_factors(rng, dtype, permute_l):
    a = random_matrix(rng, 50, dtype)
    if permute_l:
        pl, u = oclla.lu(a, permute_l=True)
        ref_pl, ref_u = sl.lu(a, permute_l=True)
        np.testing.assert_allclose(pl, ref_pl, atol=50 * accuracy.eps(dtype) * 50)
        p = np.eye(50, dtype=dtype)
        l = pl
    else:
        p, l, u = oclla.lu(a)
        ref_p, _, _ = sl.lu(a)
        np.testing.assert_array_equal(p, ref_p)
    assert accuracy.plu_backward_error(a, p, l, u) < accuracy.THRESHOLD
    assert np.allclose(np.triu(u), u)


# ---- device arrays ------------------------------------------------------------------------

def test_device_arrays_stay_on_device(queue, rng, dtype):
    a = random_matrix(rng, 33, dtype)
    d_a = cl_array.to_device(queue, a)
    lu, piv = oclla.lu_factor(d_a)
    assert isinstance(lu, cl_array.Array) and isinstance(piv, cl_array.Array)
    np.testing.assert_array_equal(d_a.get(), a)                 # input untouched
    assert accuracy.lu_backward_error(a, lu.get(), piv.get()) < accuracy.THRESHOLD
    d_b = cl_array.to_device(queue, random_matrix(rng, 33, dtype, 2))
    x = oclla.lu_solve((lu, piv), d_b)
    assert isinstance(x, cl_array.Array)
    assert accuracy.solve_backward_error(a, x.get(), d_b.get()) < accuracy.THRESHOLD


def test_device_overwrite_a(queue, rng):
    a = random_matrix(rng, 20, np.float32)
    d_a = cl_array.to_device(queue, a)
    lu, _ = oclla.lu_factor(d_a, overwrite_a=True)
    assert lu is d_a
    np.testing.assert_allclose(d_a.get(), sl.lu_factor(a)[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("options", ALL_METHODS, ids=IDS)
def test_device_array_nonfinite_detected(queue, options, overwrite):
    """NaN/Inf in a device input is refused before the singular-matrix warning (a copy
    is checked beside the factorization, an input to overwrite before it); a copied
    input is left as it was."""
    for bad in (np.nan, np.inf):
        a = np.eye(20, dtype=np.float32)
        a[2, 1] = bad
        a[7, 7] = 0.0                                 # exactly singular as well
        d_a = cl_array.to_device(queue, a)
        with warnings.catch_warnings():
            warnings.simplefilter("error")           # no LinAlgWarning first
            with pytest.raises(ValueError, match="infs or NaNs"):
                oclla.lu_factor(d_a, overwrite_a=overwrite, queue=queue, **options)
        np.testing.assert_array_equal(d_a.get(), a)


# ---- bad input and edge cases -----------------------------------------------------------

@pytest.mark.parametrize("options", ALL_METHODS, ids=IDS)
def test_input_never_modified(rng, options):
    a = diagonally_dominant(rng, 30, np.float64)
    before = a.copy()
    oclla.lu_factor(a, **options)
    np.testing.assert_array_equal(a, before)


def test_overwrite_a_writes_into_the_input(rng):
    a = random_matrix(rng, 30, np.float64)
    expected = sl.lu_factor(a)[0]
    lu, _ = oclla.lu_factor(a, overwrite_a=True)
    assert lu is a
    np.testing.assert_allclose(a, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 4), (5,), (2, 2, 2), ()])
def test_bad_shapes(shape):
    with pytest.raises(ValueError, match="square|2-D"):
        oclla.lu_factor(np.ones(shape))


@pytest.mark.parametrize("dtype_", [np.int64, np.int32, np.complex128, np.float16, bool, object])
def test_bad_dtypes(dtype_):
    with pytest.raises(TypeError, match="float32 or float64"):
        oclla.lu_factor(np.eye(3).astype(dtype_))


def test_fortran_and_strided_inputs(rng):
    a = random_matrix(rng, 24, np.float64)
    ref = oclla.lu_factor(a)
    for view in (np.asfortranarray(a), random_matrix(rng, 48, np.float64)[::2, ::2]):
        lu, piv = oclla.lu_factor(view)
        assert accuracy.lu_backward_error(view, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(oclla.lu_factor(np.asfortranarray(a))[0], ref[0])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_rejected(bad):
    a = np.eye(5)
    a[3, 2] = bad
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.lu_factor(a)
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.lu_solve(sl.lu_factor(np.eye(5)), a[:, 2])


@pytest.mark.parametrize("options", ALL_METHODS, ids=IDS)
def test_check_finite_false_does_not_crash(options):
    """NaN let through (one entry, a whole column, everything) gives NaN in the factor
    and pivots inside the matrix, never a crash."""
    n = 40
    one, column, everything = np.eye(n), np.eye(n), np.full((n, n), np.nan)
    one[3, 2] = np.nan
    column[:, 5] = np.nan
    for a in (one, column, everything):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LinAlgWarning)
            lu, piv = oclla.lu_factor(a, check_finite=False, **options)
        assert lu.shape == (n, n) and piv.shape == (n,)
        assert np.isnan(lu).any() and piv.min() >= 0 and piv.max() < n


def test_empty_and_scalar():
    lu, piv = oclla.lu_factor(np.empty((0, 0), np.float32))
    assert lu.shape == (0, 0) and piv.shape == (0,) and lu.dtype == np.float32
    lu, piv = oclla.lu_factor(np.array([[3.0]]))
    np.testing.assert_array_equal(lu, [[3.0]])
    np.testing.assert_array_equal(piv, [0])
    assert oclla.lu_solve((lu, piv), np.array([6.0]))[0] == 2.0
    assert oclla.lu_solve((np.empty((0, 0)), np.empty(0, int)), np.empty(0)).shape == (0,)


@pytest.mark.parametrize("options", PIVOTING_METHODS, ids=IDS[:4])
def test_singular_warns_like_scipy(options):
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    with pytest.warns(LinAlgWarning, match="Diagonal number 3 is exactly zero"):
        lu, piv = oclla.lu_factor(a, **options)
    with pytest.warns(LinAlgWarning, match="Diagonal number 1 is exactly zero"):
        oclla.lu_factor(np.zeros((4, 4)), **options)
    assert lu[2, 2] == 0.0
    np.testing.assert_array_equal(piv, [1, 2, 2])


def test_singular_last_column_faithful():
    a = np.array([[2.0, 1.0], [4.0, 2.0]])
    with pytest.warns(LinAlgWarning, match="Diagonal number 2"):
        oclla.lu_factor(a, method="pivot", variant="faithful")


@pytest.mark.parametrize("options", ALL_METHODS, ids=IDS)
def test_zero_pivot_without_pivoting_raises(options):
    a = np.array([[0.0, 1.0], [1.0, 1.0]])
    with pytest.raises(LinAlgError, match="zero pivot in column 0"):
        oclla.lu_factor(a, pivoting="none", **options)


def test_bad_options():
    a = np.eye(3)
    with pytest.raises(ValueError, match="method"):
        oclla.lu_factor(a, method="crout")
    with pytest.raises(ValueError, match="variants"):
        oclla.lu_factor(a, method="blocked", variant="faithful")
    with pytest.raises(ValueError, match="pivoting"):
        oclla.lu_factor(a, pivoting="full")
    with pytest.raises(ValueError, match="does not pivot"):
        oclla.lu_factor(a, method="pivot", variant="faithful", pivoting="partial")


def test_lu_solve_bad_input(rng):
    lu, piv = oclla.lu_factor(random_matrix(rng, 4, np.float64))
    with pytest.raises(ValueError, match="rows"):
        oclla.lu_solve((lu, piv), np.ones(5))
    with pytest.raises(ValueError, match="shape"):
        oclla.lu_solve((lu, piv[:3]), np.ones(4))
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        oclla.lu_solve((lu, np.array([0, 1, 9, 3])), np.ones(4))
    with pytest.raises(TypeError, match="integers"):
        oclla.lu_solve((lu, piv.astype(float)), np.ones(4))
    with pytest.raises(ValueError, match="trans"):
        oclla.lu_solve((lu, piv), np.ones(4), trans=3)
    with pytest.raises(TypeError, match="pair"):
        oclla.lu_solve(lu, np.ones(4))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        oclla.lu_solve((lu, piv), np.ones((4, 1, 1)))
    b = np.ones(4)
    oclla.lu_solve((lu, piv), b)
    np.testing.assert_array_equal(b, np.ones(4))


def test_float64_without_fp64_is_a_device_error(monkeypatch, queue):
    import oclla._validate as validate
    no_fp64 = dataclasses.replace(oclla.device_info(queue), fp64=False)
    monkeypatch.setattr(validate, "device_info", lambda q: no_fp64)
    with pytest.raises(DeviceError, match="cl_khr_fp64"):
        oclla.lu_factor(np.eye(3))
    oclla.lu_factor(np.eye(3, dtype=np.float32))


def test_too_large_for_the_device(queue):
    """Beyond one buffer the LU takes tiles (tests/test_tiled_lu.py); beyond the
    device's memory it streams from host memory (tests/test_out_of_core_lu.py)."""
    from oclla import out_of_core_lu, tiled_lu
    info = oclla.device_info(queue)
    n = int(np.sqrt(info.global_mem_size / 4)) + 16
    huge = np.broadcast_to(np.float32(1.0), (n, n))      # no memory behind it
    with pytest.raises(DeviceError, match="streams it from host memory"):
        tiled_lu.plan_tile(queue, n, np.float32)
    assert out_of_core_lu.route(huge, queue) == "out_of_core"


# ---- the trace ---------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["inplace", "crout", "window", "faithful"])
def test_per_pivot_recording_shrinks(rng, variant):
    n = 12
    a = diagonally_dominant(rng, n, np.float32)
    with oclla.record(snapshots=True) as rec:
        lu, piv = oclla.lu_factor(a, method="pivot", variant=variant)
    run = rec.runs[0]
    steps = [s for s in run.steps if s.phase == "eliminate"]
    assert len(steps) == n - 1
    for k, s in enumerate(steps):
        assert s.region == (k, n, k, n)
        assert s.pivot == (k, k)
        assert s.kernels and all(kr.end >= kr.start >= kr.submit >= kr.queued > 0
                                 for kr in s.kernels)
    np.testing.assert_array_equal(run.initial, a)
    np.testing.assert_allclose(run.snapshot_at(len(run.steps) - 1), lu, rtol=1e-6)


def test_blocked_recording_phases(rng):
    a = random_matrix(rng, 40, np.float64)
    with oclla.record() as rec:
        oclla.lu_factor(a, block=16)
    run = rec.runs[0]
    assert [s.phase for s in run.steps[:4]] == ["panel", "laswp", "trsm", "gemm"]
    assert run.steps[3].region == (16, 40, 16, 40)
    gemm_flops = sum(s.flops for s in run.steps if s.phase == "gemm")
    assert gemm_flops == 2 * 24 * 24 * 16 + 2 * 8 * 8 * 16
    assert run.params["block"] == 16
    swaps = [sw for s in run.steps if s.phase == "panel" for sw in s.info["swaps"]]
    _, piv = sl.lu_factor(a)
    assert swaps == [(k, int(p)) for k, p in enumerate(piv) if p != k]


def test_per_pivot_snapshots_follow_elimination(rng, dtype):
    """After step k the recorded matrix is k+1 steps of right-looking elimination."""
    n = 9
    a = random_matrix(rng, n, dtype)
    with oclla.record(snapshots=True) as rec:
        oclla.lu_factor(a, method="pivot")
    run = rec.runs[0]
    m = a.astype(np.float64)
    for k in range(n - 1):
        p = k + int(np.argmax(np.abs(m[k:, k])))
        m[[k, p]] = m[[p, k]]
        m[k + 1:, k] /= m[k, k]
        m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k, k + 1:])
        np.testing.assert_allclose(run.snapshot_at(k), m, rtol=0,
                                   atol=100 * n * accuracy.eps(dtype) * np.abs(m).max())


def test_empty_device_array(queue):
    lu, piv = oclla.lu_factor(cl_array.empty(queue, (0, 0), np.float32))
    assert lu.shape == (0, 0) and piv.shape == (0,)
    assert isinstance(lu, cl_array.Array) and isinstance(piv, cl_array.Array)
