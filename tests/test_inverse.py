"""oclla.inverse: trtri, cho_inverse, cho_logdet, inv_spd, their packed forms, and the
accuracy helpers they are measured with (inverse_error, kahan_sum, logdet_reference,
spd_with_condition)."""

import functools
import operator

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError
from scipy.linalg import lapack

import oclla
from oclla import accuracy, inverse, rfp
from oclla.blas import view_of
from oclla.inverse import INVERSE_METHODS, logdet_device, potri_flops, trtri_flops

from linalg_helpers import spd
from test_views import assert_same, device_view, layouts

#: orders around the device's diagonal block (TRSM_NB, 64 on PoCL) and its recursion
SIZES = (1, 2, 17, 63, 64, 65, 129, 200)
#: the hardest condition numbers the accuracy goal covers, per dtype
HARD = {np.dtype(np.float32): 1e3, np.dtype(np.float64): 1e6}
#: relative error of the log-determinant against the float64 Kahan sum, per dtype
LOGDET_TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
EXAMPLES = settings(max_examples=12, deadline=None)


def lapack_fn(name, dtype):
    return getattr(lapack, ("d" if np.dtype(dtype) == np.float64 else "s") + name)


def factor(a, lower):
    """The float64 Cholesky factor of ``a`` rounded to a's dtype (the factor under test)."""
    c = np.linalg.cholesky(a.astype(np.float64))
    return (c if lower else c.T).astype(a.dtype)


def triangle(x, lower, k=0):
    return np.tril(x, -k) if lower else np.triu(x, k)


# ---- the accuracy helpers ------------------------------------------------------------------

@pytest.mark.parametrize("reflections", [1, 3, None])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spd_with_condition_has_that_condition_number(reflections, dtype):
    cond = HARD[np.dtype(dtype)]
    a = accuracy.spd_with_condition(80, cond, reflections=reflections, rng=5, dtype=dtype)
    assert a.dtype == dtype and a.shape == (80, 80)
    np.testing.assert_array_equal(a, a.T)
    w = np.linalg.eigvalsh(a.astype(np.float64))
    tol = 1e-6 if dtype == np.float64 else 1e-4
    assert w[0] == pytest.approx(1.0, rel=tol * cond) and w[-1] == pytest.approx(cond, rel=tol)
    assert np.linalg.cond(a.astype(np.float64)) == pytest.approx(cond, rel=tol * 10)


def test_spd_with_condition_reflections_fill_the_matrix():
    """One reflection with u > 0 stays near diagonal; a Haar factor spreads the mass."""
    def off_diagonal_share(a):
        return np.linalg.norm(a - np.diag(np.diag(a))) / np.linalg.norm(a)
    one = accuracy.spd_with_condition(200, 100.0, rng=1)
    haar = accuracy.spd_with_condition(200, 100.0, reflections=None, rng=1)
    assert off_diagonal_share(one) < 0.2 < off_diagonal_share(haar)
    assert accuracy.spd_with_condition(0, 5.0).shape == (0, 0)
    np.testing.assert_allclose(accuracy.spd_with_condition(1, 1.0), [[1.0]], rtol=1e-14)
    for bad in (0.5, np.inf, np.nan):
        with pytest.raises(ValueError, match="cond"):
            accuracy.spd_with_condition(4, bad)
    with pytest.raises(ValueError, match="1 x 1"):
        accuracy.spd_with_condition(1, 2.0)


def test_householder_step_is_the_similarity_transform():
    """The corrected last line of Algorithm 3 is H·A·H (eigenvalues kept)."""
    rng = np.random.default_rng(3)
    a, u = np.diag(rng.uniform(1, 9, 6)), rng.uniform(0, 1, 6)
    h = np.eye(6) - 2.0 * np.outer(u, u) / (u @ u)
    np.testing.assert_allclose(accuracy._householder(a, u), h @ a @ h, atol=1e-13)


def test_inverse_error_and_kahan_sum():
    delta = 1e-10
    x = np.eye(2) + np.diag([delta, 0.0])
    # ‖I·X − I‖∞ = δ, n = 2, ‖A‖∞ = 1, ‖X‖∞ = 1 + δ
    assert accuracy.inverse_error(np.eye(2), x) == pytest.approx(
        delta / (2 * (1 + delta) * accuracy.eps(np.float64)))
    a = spd(30, np.float64)
    assert accuracy.inverse_error(a, np.linalg.inv(a)) < 1
    assert accuracy.inverse_error(np.empty((0, 0)), np.empty((0, 0))) == 0.0
    values = np.concatenate([[1.0], np.full(10000, 1e-16)])
    assert functools.reduce(operator.add, values.tolist()) == 1.0     # left to right: lost
    assert accuracy.kahan_sum(values) == pytest.approx(1.0 + 1e-12, rel=1e-15)
    c = np.diag([np.e, 1.0, np.e ** 2])
    assert accuracy.logdet_reference(c) == pytest.approx(6.0)


# ---- the triangular multiplication ---------------------------------------------------------

@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("left", [False, True])
def test_trmm_against_numpy(queue, left, lower, trans):
    m, nrhs, nb = 150, 37, 16          # splits at multiples of nb, leaves of order <= 64
    rng = np.random.default_rng(4)
    t = triangle(rng.standard_normal((m, m)), lower)
    b = rng.standard_normal((m, nrhs) if left else (nrhs, m))
    op = t.T if trans else t
    dt, db = cl_array.to_device(queue, t), cl_array.to_device(queue, b)
    work = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 8 * m * nrhs)
    inverse.trmm(queue, m, nrhs, -2.0, view_of(dt), view_of(db), work, dtype=np.float64,
                 nb=nb, left=left, lower=lower, trans=trans)
    assert accuracy.product_error(db.get(), op if left else b, b if left else op,
                                  alpha=-2.0) < accuracy.THRESHOLD


def test_larger_trmm_leaves(queue, monkeypatch):
    """Leaves larger than the diagonal blocks (the GPU setting), not multiples of them."""
    kind = oclla.device_info(queue).kind
    monkeypatch.setitem(inverse.TRMM_LEAF, kind, 100)
    assert inverse.trmm_leaf(queue, 64) == 100
    for n in (129, 333):
        for lower in (False, True):
            a = accuracy.spd_with_condition(n, 1e6, reflections=3, rng=n)
            inv = oclla.cho_inverse((factor(a, lower), lower), queue=queue)
            assert accuracy.passes(accuracy.inverse_error(a, inv)), (n, lower)


# ---- trtri ---------------------------------------------------------------------------------

@pytest.mark.parametrize("method", INVERSE_METHODS)
@pytest.mark.parametrize("lower", [False, True])
def test_trtri_against_lapack(queue, dtype, lower, method):
    for n in SIZES:
        rng = np.random.default_rng(n)
        t = triangle(rng.uniform(-1, 1, (n, n)) / n, lower) + np.diag(rng.uniform(1, 2, n))
        t = t.astype(dtype)
        for unit in (False, True):
            ref, info = lapack_fn("trtri", dtype)(t, lower=int(lower), unitdiag=int(unit))
            assert info == 0
            x = oclla.trtri(t, lower=lower, unit_diagonal=unit, method=method, queue=queue)
            eps = accuracy.eps(dtype)
            diff = np.abs(triangle(x, lower, int(unit)) - triangle(ref, lower, int(unit)))
            assert diff.max() <= 30 * n * eps * np.abs(ref).max(), (n, unit)
            np.testing.assert_array_equal(triangle(x, not lower, 1), 0)
            if unit:
                np.testing.assert_array_equal(np.diag(x), 1)
                t_unit = triangle(t, lower, 1) + np.eye(n, dtype=dtype)
                assert accuracy.passes(accuracy.inverse_error(t_unit, x))
            else:
                assert accuracy.passes(accuracy.inverse_error(t, x))


def test_trtri_reads_only_its_triangle(queue):
    n = 70
    t = np.triu(spd(n, np.float64)) + np.eye(n)
    ref = oclla.trtri(t, queue=queue)
    poisoned = t.copy()
    poisoned[np.tril_indices(n, -1)] = np.nan
    assert_same(oclla.trtri(poisoned, check_finite=False, queue=queue), ref)
    np.fill_diagonal(poisoned, np.nan)
    unit = oclla.trtri(poisoned, unit_diagonal=True, check_finite=False, queue=queue)
    assert np.isfinite(unit).all()


@pytest.mark.parametrize("lower", [False, True])
def test_zero_diagonal_names_the_order(queue, lower):
    n, k = 90, 70
    c = factor(spd(n, np.float64), lower)
    c[k - 1, k - 1] = 0.0
    c[k + 5, k + 5] = 0.0                  # LAPACK's info is the first one
    _, info = lapack.dtrtri(c, lower=int(lower))
    assert info == k
    before = c.copy()
    for call in (lambda x: oclla.trtri(x, lower=lower, queue=queue),
                 lambda x: oclla.cho_inverse((x, lower), queue=queue)):
        with pytest.raises(LinAlgError, match=f"singular matrix: diagonal entry {k} is zero"):
            call(c)
        np.testing.assert_array_equal(c, before)
        device = cl_array.to_device(queue, c)
        with pytest.raises(LinAlgError, match=f"diagonal entry {k} is zero"):
            oclla.trtri(device, lower=lower, overwrite_t=True, queue=queue)
        np.testing.assert_array_equal(device.get(), before)      # nothing written
    # a unit triangle has no zero diagonal to meet
    assert np.isfinite(oclla.trtri(c, lower=lower, unit_diagonal=True, queue=queue)).all()
    arf = rfp.pack(c, lower=lower)
    with pytest.raises(LinAlgError, match=f"diagonal entry {k} is zero"):
        rfp.cho_inverse((arf, lower), queue=queue)


# ---- cho_inverse and inv_spd ---------------------------------------------------------------

@pytest.mark.parametrize("method", INVERSE_METHODS)
@pytest.mark.parametrize("lower", [False, True])
def test_cho_inverse_accuracy_on_algorithm3_matrices(queue, dtype, lower, method):
    for n in SIZES:
        for reflections in (1, None):
            a = accuracy.spd_with_condition(n, HARD[dtype] if n > 1 else 1.0,
                                            reflections=reflections, rng=n, dtype=dtype)
            c = factor(a, lower)
            inv = oclla.cho_inverse((c, lower), method=method, queue=queue)
            assert inv.dtype == dtype
            np.testing.assert_array_equal(inv, inv.T)
            err = accuracy.inverse_error(a, inv)
            assert accuracy.passes(err), f"n={n} reflections={reflections}: {err:.3g}"
            half = oclla.cho_inverse((c, lower), full=False, method=method, queue=queue)
            np.testing.assert_array_equal(half, triangle(inv, lower))


@pytest.mark.parametrize("lower", [False, True])
def test_cho_inverse_matches_potri_and_reads_one_triangle(queue, dtype, lower):
    n = 150
    a = spd(n, dtype)
    c, _ = oclla.cho_factor(a, lower=lower, queue=queue)     # other triangle: a's
    ref, info = lapack_fn("potri", dtype)(triangle(c, lower), lower=int(lower))
    assert info == 0
    inv = oclla.cho_inverse((c, lower), full=False, queue=queue)
    eps = accuracy.eps(dtype)
    assert np.abs(inv - triangle(ref, lower)).max() <= 30 * n * eps * np.abs(ref).max()
    poisoned = c.copy()
    poisoned[np.triu_indices(n, 1) if lower else np.tril_indices(n, -1)] = np.inf
    assert_same(oclla.cho_inverse((poisoned, lower), full=False, check_finite=False,
                                  queue=queue), inv)


@pytest.mark.parametrize("lower", [False, True])
def test_inv_spd(queue, dtype, lower):
    a = accuracy.spd_with_condition(97, HARD[dtype], reflections=None, rng=2, dtype=dtype)
    inv = oclla.inv_spd(a, lower=lower, queue=queue)
    assert accuracy.passes(accuracy.inverse_error(a, inv))
    np.testing.assert_array_equal(inv, inv.T)
    bad = a.copy()
    bad[40, 40] = -1.0
    with pytest.raises(LinAlgError, match="order 41 is not positive definite"):
        oclla.inv_spd(bad, lower=lower, queue=queue)


def test_device_arrays_stay_on_the_device(queue):
    a = spd(40, np.float32)
    c = factor(a, True)
    dc = cl_array.to_device(queue, c)
    inv = oclla.cho_inverse((dc, True), queue=queue)
    assert isinstance(inv, cl_array.Array) and inv is not dc
    np.testing.assert_array_equal(dc.get(), c)
    assert_same(inv, oclla.cho_inverse((c, True), queue=queue))
    same = oclla.cho_inverse((dc, True), overwrite_c=True, queue=queue)
    assert same is dc
    assert_same(dc, inv)
    x = oclla.trtri(cl_array.to_device(queue, c), lower=True, queue=queue)
    assert isinstance(x, cl_array.Array)
    assert_same(x, oclla.trtri(c, lower=True, queue=queue))
    assert isinstance(oclla.inv_spd(cl_array.to_device(queue, a), queue=queue), cl_array.Array)
    host = a.copy()
    assert oclla.inv_spd(host, overwrite_a=True, queue=queue) is host


# ---- log-determinant -----------------------------------------------------------------------

@pytest.mark.parametrize("lower", [False, True])
def test_logdet_against_kahan(queue, dtype, lower):
    for n in (1, 63, 64, 65, 200, 700):
        a = accuracy.spd_with_condition(n, HARD[dtype] if n > 1 else 1.0, rng=n, dtype=dtype)
        c = factor(a, lower)
        ref = accuracy.logdet_reference(c)
        for arg in (c, cl_array.to_device(queue, c)):
            got = oclla.cho_logdet((arg, lower), queue=queue)
            assert isinstance(got, float)
            assert got == pytest.approx(ref, rel=LOGDET_TOL[dtype], abs=1e-300), n


def test_logdet_where_the_determinant_overflows(queue, dtype):
    n = 3000
    diagonal = np.random.default_rng(1).uniform(10.0, 1000.0, n).astype(dtype)
    c = np.diag(diagonal)
    with np.errstate(over="ignore"):
        assert np.isinf(np.prod(diagonal.astype(np.float64)) ** 2)          # naive det
    ref = accuracy.logdet_reference(c)
    assert oclla.cho_logdet((c, True), queue=queue) == pytest.approx(ref, rel=LOGDET_TOL[dtype])
    tiny = np.diag(np.full(n, 1e-3, dtype))                              # det underflows to 0
    assert oclla.cho_logdet((tiny, False), queue=queue) == pytest.approx(
        accuracy.logdet_reference(tiny), rel=LOGDET_TOL[dtype])
    singular = c.copy()
    singular[5, 5] = 0.0
    assert oclla.cho_logdet((singular, True), queue=queue) == -np.inf


@pytest.mark.parametrize("wide", [False, True])
def test_logdet_accumulators(queue, dtype, wide):
    """Both accumulators, on a long diagonal whose logarithms nearly cancel."""
    n = 100_000
    rng = np.random.default_rng(7)
    d = np.exp(rng.uniform(-3, 3, n)).astype(dtype)
    d = np.concatenate([d, 1.0 / d]).astype(dtype)[rng.permutation(2 * n)]
    ref = 2.0 * accuracy.kahan_sum(np.log(d.astype(np.float64)))
    scale = 2.0 * np.abs(np.log(d.astype(np.float64))).sum()
    got = logdet_device(queue, cl_array.to_device(queue, d).data, 0, 2 * n, 0, dtype=dtype,
                        wide=wide)
    # error relative to the sum of magnitudes (the sum itself is near 0): each logarithm
    # is rounded once, the sum carries no further error worth naming
    assert abs(got - ref) <= 4 * accuracy.eps(np.float64 if wide else dtype) * scale


def test_logdet_without_fp64(queue):
    """A device without fp64 sums float32 factors in float32, compensated; float64 is refused."""
    c = factor(accuracy.spd_with_condition(500, 1e3, rng=3, dtype=np.float32), True)
    previous = oclla.set_profile("apple-arm")
    try:
        with oclla.record() as rec:
            got = oclla.cho_logdet((c, True), queue=queue)
        assert rec.runs[-1].params["wide"] is False
        assert got == pytest.approx(accuracy.logdet_reference(c), rel=1e-5)
        with pytest.raises(oclla.DeviceError, match="fp64"):
            oclla.cho_logdet((c.astype(np.float64), True), queue=queue)
    finally:
        oclla.set_profile(previous)


def test_logdet_is_reduced_on_the_device(queue):
    c = factor(spd(300, np.float32), True)
    with oclla.record() as rec:
        oclla.cho_logdet((cl_array.to_device(queue, c), True), queue=queue)
    names = [k.name for s in rec.runs[-1].steps for k in s.kernels]
    assert names == ["logdet_partial", "logdet_final"]



def test_recorded_inverses_are_one_run_each(queue):
    """The input checks of trtri, cho_inverse and inv_spd (the diagonal and finiteness
    kernels) are not filed as a stray "other" run before the algorithm's run."""
    a = spd(40, np.float32)
    c = factor(a, True)
    with oclla.record() as rec:
        oclla.trtri(c, lower=True, queue=queue)
        oclla.cho_inverse((c, True), queue=queue)
        oclla.inv_spd(a, queue=queue)
    assert [r.algorithm for r in rec.runs] == ["trtri", "cho_inverse", "cholesky",
                                              "cho_inverse"]

# ---- packed (RFP) forms --------------------------------------------------------------------

@pytest.mark.parametrize("uplo", ["L", "U"])
def test_rfp_forms_against_pftri(queue, dtype, uplo):
    lower = uplo == "L"
    for n in (1, 2, 5, 6, 64, 65, 131):
        a = accuracy.spd_with_condition(n, 100.0 if n > 1 else 1.0, rng=n, dtype=dtype)
        arf = lapack_fn("trttf", dtype)(a, uplo=uplo)[0]
        fac, info = lapack_fn("pftrf", dtype)(n, arf, uplo=uplo)
        assert info == 0
        ref, info = lapack_fn("pftri", dtype)(n, fac.copy(), uplo=uplo)
        before = fac.copy()
        got = rfp.cho_inverse((fac, lower), queue=queue)
        np.testing.assert_array_equal(fac, before)
        assert got.shape == ref.shape and got.dtype == dtype
        eps = accuracy.eps(dtype)
        assert np.abs(got - ref).max() <= 30 * n * eps * np.abs(ref).max(), n
        full = rfp.unpack(got, n, lower=lower)
        assert accuracy.passes(accuracy.inverse_error(a, full + triangle(full, lower, 1).T))
        device = rfp.cho_inverse((cl_array.to_device(queue, fac), lower), queue=queue)
        assert isinstance(device, cl_array.Array)
        assert_same(device, got)
        ref_logdet = accuracy.logdet_reference(rfp.unpack(fac, n, lower=lower))
        for arg in (fac, cl_array.to_device(queue, fac)):
            assert rfp.cho_logdet((arg, lower), queue=queue) == pytest.approx(
                ref_logdet, rel=LOGDET_TOL[dtype])


def test_rfp_order_from_length(queue):
    assert [rfp.order_of(rfp.packed_length(n)) for n in range(200)] == list(range(200))
    assert rfp.order_of(rfp.packed_length(70000)) == 70000
    for length in (2, 4, 5, 7, 11):
        with pytest.raises(ValueError, match="no triangle"):
            rfp.order_of(length)
    with pytest.raises(ValueError, match="no triangle"):
        rfp.cho_inverse((np.ones(4), True), queue=queue)
    with pytest.raises(ValueError, match="1-D"):
        rfp.cho_logdet((np.ones((3, 2)), True), queue=queue)
    assert rfp.cho_inverse((np.empty(0), True), queue=queue).shape == (0,)
    assert rfp.cho_logdet((np.empty(0), False), queue=queue) == 0.0


# ---- device views --------------------------------------------------------------------------

@pytest.fixture(scope="module", params=[np.float32, np.float64], ids=["float32", "float64"])
def view_dtype(request, queue):
    dt = np.dtype(request.param)
    if dt == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no fp64")
    return dt


@EXAMPLES
@given(data=st.data(), n=st.integers(1, 40), lower=st.booleans(), overwrite=st.booleans(),
       full=st.booleans())
def test_inverse_on_views(queue, view_dtype, data, n, lower, overwrite, full):
    c = factor(spd(n, view_dtype), lower)
    v = device_view(queue, data.draw(layouts((n, n))), c)
    inv = oclla.cho_inverse((v.view, lower), full=full, overwrite_c=overwrite, queue=queue)
    ref = oclla.cho_inverse((v.contiguous(queue), lower), full=full, queue=queue)
    assert_same(inv, ref)
    assert (inv is v.view) == overwrite
    v.check(written=ref.get() if overwrite else None)
    t = device_view(queue, data.draw(layouts((n, n))), c)
    x = oclla.trtri(t.view, lower=lower, overwrite_t=overwrite, queue=queue)
    ref = oclla.trtri(t.contiguous(queue), lower=lower, queue=queue)
    assert_same(x, ref)
    t.check(written=ref.get() if overwrite else None)
    d = device_view(queue, data.draw(layouts((n, n))), c)
    assert oclla.cho_logdet((d.view, lower), queue=queue) == \
        oclla.cho_logdet((d.contiguous(queue), lower), queue=queue)
    d.check()


@EXAMPLES
@given(data=st.data(), n=st.integers(1, 30), lower=st.booleans())
def test_rfp_forms_on_views(queue, view_dtype, data, n, lower):
    arf = rfp.cholesky(rfp.pack(spd(n, view_dtype), lower=lower), n, lower=lower)
    v = device_view(queue, data.draw(layouts(arf.shape)), arf)
    assert_same(rfp.cho_inverse((v.view, lower), queue=queue),
                rfp.cho_inverse((arf, lower), queue=queue))
    assert rfp.cho_logdet((v.view, lower), queue=queue) == \
        rfp.cho_logdet((cl_array.to_device(queue, arf), lower), queue=queue)
    v.check()


# ---- properties ----------------------------------------------------------------------------

@EXAMPLES
@given(n=st.integers(1, 90), log_cond=st.floats(0.0, 3.0), lower=st.booleans(),
       method=st.sampled_from(INVERSE_METHODS), haar=st.booleans())
def test_property_inverse_and_logdet(queue, n, log_cond, lower, method, haar):
    """For any SPD A: A·cho_inverse ≈ I in units of nε‖A‖‖A⁻¹‖, log det from the factor
    equals numpy's slogdet, and trtri undoes itself."""
    cond = 10.0 ** log_cond if n > 1 else 1.0
    a = accuracy.spd_with_condition(n, cond, reflections=None if haar else 2, rng=n,
                                    dtype=np.float32)
    c = oclla.cholesky(a, lower=lower, queue=queue)
    assert accuracy.passes(accuracy.inverse_error(
        a, oclla.cho_inverse((c, lower), method=method, queue=queue)))
    assert oclla.cho_logdet((c, lower), queue=queue) == pytest.approx(
        np.linalg.slogdet(a.astype(np.float64))[1], rel=1e-4, abs=1e-4 * n)
    twice = oclla.trtri(oclla.trtri(c, lower=lower, method=method, queue=queue), lower=lower,
                        queue=queue)
    np.testing.assert_allclose(twice, c, rtol=0, atol=1e-4 * cond * np.abs(c).max())


# ---- the trace -----------------------------------------------------------------------------

@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("method", INVERSE_METHODS)
def test_trace_steps_and_flops(queue, method, lower):
    n = 256
    c = factor(spd(n, np.float64), lower)
    with oclla.record() as rec:
        oclla.cho_inverse((c, lower), method=method, queue=queue)
    run = rec.runs[-1]
    assert (run.algorithm, run.variant) == ("cho_inverse", method)
    phases = {s.phase for s in run.steps}
    expected = {"zero", "trti2", "trmm", "lauu2", "syrk", "symmetrize"}
    assert phases == (expected | {"trsm", "gemm"} if method == "steps" else expected)
    for s in run.steps:
        r0, r1, c0, c1 = s.region
        assert 0 <= r0 < r1 <= n and 0 <= c0 < c1 <= n, s
        if s.phase != "symmetrize" and s.phase != "zero":       # in the stored triangle
            assert (r1 - 1 >= c0) if lower else (c1 - 1 >= r0), s
        assert s.kernels, s
    flops = sum(s.flops for s in run.steps)
    assert flops == pytest.approx(potri_flops(n), rel=0.01)
    first_lauum = min(s.index for s in run.steps if s.phase == "lauu2")
    trtri_part = sum(s.flops for s in run.steps if s.index < first_lauum)
    assert trtri_part == pytest.approx(trtri_flops(n), rel=0.01)


# ---- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x, q: oclla.trtri(x, queue=q),
    lambda x, q: oclla.cho_inverse((x, False), queue=q),
    lambda x, q: oclla.cho_logdet((x, True), queue=q),
    lambda x, q: oclla.inv_spd(x, queue=q),
], ids=["trtri", "cho_inverse", "cho_logdet", "inv_spd"])
def test_bad_input(queue, call):
    good = spd(5, np.float64)
    cases = [
        (np.ones(5), ValueError, "2-D"),
        (np.ones((2, 3, 3)), ValueError, "2-D"),
        (np.ones((4, 5)), ValueError, "square"),
        (good.astype(np.int64), TypeError, "dtype int64"),
        (good.astype(np.complex128), TypeError, "complex|real"),
        (good.astype(np.float16), TypeError, "float16"),
    ]
    for x, exc, match in cases:
        with pytest.raises(exc, match=match):
            call(x, queue)
    for bad in (np.nan, np.inf):
        x = good.copy()
        x[3, 1] = bad                        # in the triangle no routine reads, even
        before = x.copy()
        with pytest.raises(ValueError, match="infs or NaNs"):
            call(x, queue)
        np.testing.assert_array_equal(x, before)
        device = cl_array.to_device(queue, x)
        with pytest.raises(ValueError, match="infs or NaNs"):
            call(device, queue)
        np.testing.assert_array_equal(device.get(), before)
    empty = call(np.empty((0, 0)), queue)
    assert (empty == 0.0) if isinstance(empty, float) else empty.shape == (0, 0)


def test_bad_pairs_and_methods(queue):
    c = factor(spd(4, np.float64), False)
    for call in (oclla.cho_inverse, oclla.cho_logdet, rfp.cho_inverse, rfp.cho_logdet):
        with pytest.raises(TypeError, match="c_and_lower"):
            call(c, queue=queue)
    with pytest.raises(ValueError, match="method"):
        oclla.cho_inverse((c, False), method="pivot", queue=queue)
    with pytest.raises(ValueError, match="method"):
        oclla.trtri(c, method="recursive", queue=queue)
    other = cl_array.to_device(queue, c)
    other_queue = cl.CommandQueue(cl.Context([queue.device]),
                                  properties=cl.command_queue_properties.PROFILING_ENABLE)
    with pytest.raises(ValueError, match="another OpenCL context"):
        oclla.trtri(other, queue=other_queue)
