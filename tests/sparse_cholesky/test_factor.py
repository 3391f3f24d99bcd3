"""oclla.sparse.cholesky and Factor: backward errors, solves against scipy's spsolve, every
ordering, RL = RLB, logdet, L/P conventions, refactor, not positive definite, bad inputs."""

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy
from oclla.sparse import gallery, numeric
from oclla.sparse._input import lower_triangle
from oclla.sparse.orderings import ORDERINGS


@pytest.fixture(scope="module")
def lap2d():
    return gallery.laplacian_2d(13, 11)          # n = 143, odd


def _check(f, a, dtype):
    err = accuracy.sparse_cholesky_backward_error(a, f.L(), f.P())
    assert err < accuracy.THRESHOLD, err
    return err


def test_probe_error_bounds_the_backward_error_from_below(queue, dtype, lap2d):
    """accuracy.sparse_cholesky_probe_error (the benchmark's check of large factors):
    at most the exact measure (up to the rounding of its own products) and below the
    limit for our factor; both far above it for a
    factor with one wrong entry."""
    a = lap2d.astype(dtype)
    f = oclla.sparse.cholesky(a, queue=queue)
    exact = accuracy.sparse_cholesky_backward_error(a, f.L(), f.P())
    probe = accuracy.sparse_cholesky_probe_error(a, f.L(), f.P(), vectors=3)
    assert probe <= exact + 1.0 and exact < accuracy.THRESHOLD  # + the products' rounding
    l = f.L().tolil()
    l[100, 90] += 0.5
    bad = sp.csc_array(l)
    assert accuracy.sparse_cholesky_probe_error(a, bad, f.P()) > 100 * accuracy.THRESHOLD
    assert accuracy.sparse_cholesky_probe_error(sp.csc_array((0, 0)), bad[:0, :0], []) == 0.0


@pytest.mark.parametrize("method", numeric.METHODS)
def test_backward_error_and_solve(queue, dtype, method, lap2d):
    a = lap2d.astype(dtype)
    f = oclla.sparse.cholesky(a, method=method, large=5e3, queue=queue)
    assert f.method == method and f.dtype == dtype
    _check(f, a, dtype)
    rng = np.random.default_rng(1)
    b = rng.standard_normal(a.shape[0]).astype(dtype)
    x = f.solve(b)
    assert x.shape == b.shape and x.dtype == dtype
    ref = sla.spsolve(sp.csc_array(lap2d), b.astype(np.float64))
    assert accuracy.sparse_solve_backward_error(lap2d, x, b) < accuracy.THRESHOLD
    assert np.abs(x - ref).max() <= 1e3 * accuracy.eps(dtype) * np.abs(ref).max()
    bm = rng.standard_normal((a.shape[0], 3)).astype(dtype)
    xm = f.solve(bm)
    assert xm.shape == (a.shape[0], 3)
    assert accuracy.sparse_solve_backward_error(lap2d, xm, bm) < accuracy.THRESHOLD


def test_rl_and_rlb_give_the_same_factor(queue):
    a = gallery.laplacian_3d(6)
    fs = [oclla.sparse.cholesky(a, method=m, large=2e4, queue=queue) for m in numeric.METHODS]
    l_rl, l_rlb = (f.L() for f in fs)
    assert np.array_equal(fs[0].P(), fs[1].P())
    assert abs(l_rl - l_rlb).max() <= 1e-13 * abs(l_rl).max()


@pytest.mark.parametrize("ordering", ORDERINGS)
def test_every_ordering(queue, ordering):
    a = gallery.random_spd(90, density=0.04, seed=3)
    f = oclla.sparse.cholesky(a, ordering=ordering, queue=queue)
    if ordering != "best":
        assert f.symbolic.ordering == ordering
    _check(f, a, np.float64)
    p = f.P()
    assert np.array_equal(np.sort(p), np.arange(a.shape[0]))
    b = np.ones(a.shape[0])
    assert accuracy.sparse_solve_backward_error(a, f.solve(b), b) < accuracy.THRESHOLD


def test_l_p_convention_and_counts(queue, lap2d):
    f = oclla.sparse.cholesky(lap2d, queue=queue)
    l, p = f.L(), f.P()
    assert isinstance(l, sp.csc_array) and l.shape == lap2d.shape
    assert sp.triu(l, 1).nnz == 0
    assert l.nnz == f.nnz == f.symbolic.nnz_l
    assert f.supernodes == f.symbolic.super_ptr.size - 1 > 0
    dense = lap2d.toarray()[p][:, p]
    assert np.abs((l @ l.T).toarray() - dense).max() < 1e-12
    assert "Factor" in repr(f)


def test_logdet(queue, dtype, lap2d):
    f = oclla.sparse.cholesky(lap2d.astype(dtype), queue=queue)
    ref = np.linalg.slogdet(lap2d.toarray())[1]
    assert abs(f.logdet() - ref) <= 1e2 * accuracy.eps(dtype) * abs(ref)


def test_device_right_hand_side_stays_on_device(queue, lap2d):
    f = oclla.sparse.cholesky(lap2d, queue=queue)
    b = np.arange(lap2d.shape[0], dtype=np.float64)
    xd = f.solve(cl_array.to_device(queue, b))
    assert isinstance(xd, cl_array.Array)
    assert np.allclose(xd.get(), f.solve(b), rtol=0, atol=1e-12)


def test_refactor_same_pattern(queue, lap2d):
    f = oclla.sparse.cholesky(lap2d, queue=queue)
    sym = f.symbolic
    a2 = sp.csc_array(lap2d * 3.0 + sp.eye(lap2d.shape[0]))
    assert f.refactor(a2) is f and f.symbolic is sym
    _check(f, a2, np.float64)
    b = np.ones(a2.shape[0])
    assert accuracy.sparse_solve_backward_error(a2, f.solve(b), b) < accuracy.THRESHOLD
    # the two L storages swap: every refactor factors its own matrix, not a stale one
    a3 = sp.csc_array(lap2d * 0.5 + 2.0 * sp.eye(lap2d.shape[0]))
    for a in (a3, a2, a3):
        f.refactor(a)
        _check(f, a, np.float64)


def test_refactor_refuses_another_pattern_and_keeps_the_factor(queue, lap2d):
    f = oclla.sparse.cholesky(lap2d, queue=queue)
    before = f.L().toarray()
    other = sp.csc_array(lap2d + sp.eye(lap2d.shape[0], k=5) + sp.eye(lap2d.shape[0], k=-5))
    with pytest.raises(ValueError, match="pattern"):
        f.refactor(other)
    with pytest.raises(TypeError, match="float64"):
        f.refactor(lap2d.astype(np.float32))
    bad = lap2d.copy()
    bad.data[bad.indices == bad.indices] *= -1.0          # negative definite, same pattern
    with pytest.raises(LinAlgError, match="not positive definite"):
        f.refactor(bad)
    assert np.array_equal(f.L().toarray(), before)
    f.refactor(lap2d * 2.0)                       # the second storage now exists ...
    twice = f.L().toarray()
    with pytest.raises(LinAlgError, match="not positive definite"):
        f.refactor(bad)                           # ... and a failure still keeps the factor
    assert np.array_equal(f.L().toarray(), twice)


@pytest.mark.parametrize("fmt,lower", [("csc", None), ("csr", None), ("csc", True),
                                       ("csr", False)])
def test_refactor_fast_path_matches_full_validation(queue, monkeypatch, lap2d, fmt, lower):
    """A second refactor of the same stored pattern gathers the values through the
    cached map (no sorting, no full validation): same factor as a fresh cholesky, and
    the same errors."""
    from oclla.sparse import factor as factor_module
    n = lap2d.shape[0]
    rng = np.random.default_rng(8)
    off = sp.triu(lap2d, 1)
    off.data = rng.uniform(-1.0, -0.1, off.nnz)
    sym = off + off.T
    a1 = (sym + sp.diags(np.asarray(abs(sym).sum(axis=1)).ravel() + 1.0)).asformat(fmt)
    a2 = (3.0 * a1 + sp.eye(n, format=fmt)).asformat(fmt)

    def pick(a):
        return {None: a, True: sp.tril(a, format=fmt), False: sp.triu(a, format=fmt)}[lower]
    f = oclla.sparse.cholesky(pick(a1), lower=lower, queue=queue)
    f.refactor(pick(a1), lower=lower)               # full validation; builds the map
    assert f._refill is not None
    fresh = oclla.sparse.cholesky(a2, queue=queue)
    full = []
    monkeypatch.setattr(factor_module, "lower_triangle",
                        lambda *a, **k: full.append(1) or lower_triangle(*a, **k))
    f.refactor(pick(a2), lower=lower)
    assert not full                                 # the fast path
    assert abs(f.L() - fresh.L()).max() <= 1e-14 * abs(fresh.L()).max()
    if lower is None:
        bad = a2.copy()
        k = int(np.flatnonzero(bad.indices != np.repeat(np.arange(n), np.diff(bad.indptr)))[0])
        bad.data[k] += 1.0                          # one entry without its mirror's value
        with pytest.raises(ValueError, match="not symmetric"):
            f.refactor(bad)
    nan = pick(a2).copy()
    nan.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        f.refactor(nan, lower=lower)
    assert not full
    assert abs(f.L() - fresh.L()).max() <= 1e-14 * abs(fresh.L()).max()   # kept


def test_refactor_fast_path_falls_back_for_other_formats_and_patterns(queue, lap2d):
    f = oclla.sparse.cholesky(lap2d, queue=queue)
    f.refactor(sp.csc_array(lap2d))
    coo = sp.coo_array(lap2d * 2.0)                 # another format: full validation
    f.refactor(coo)
    assert abs(f.L() - oclla.sparse.cholesky(coo, queue=queue).L()).max() < 1e-13
    other = sp.csc_array(lap2d + sp.eye(lap2d.shape[0], k=5) + sp.eye(lap2d.shape[0], k=-5))
    with pytest.raises(ValueError, match="pattern"):
        f.refactor(other)
    with pytest.raises(TypeError, match="float64"):
        f.refactor(sp.csc_array(lap2d).astype(np.float32))


@pytest.mark.parametrize("large", [np.inf, 0.0], ids=["batched", "blas"])
def test_not_positive_definite_names_original_column(queue, large):
    n = 40
    a = sp.lil_array(sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n)))
    a[29, 29] = -2.0              # the only bad pivot
    a = sp.csc_array(a)
    original = a.copy()
    with pytest.raises(LinAlgError,
                       match=r"^the matrix is not positive definite: column 29 \(original"):
        oclla.sparse.cholesky(a, ordering="metis", large=large, queue=queue)
    assert (a != original).nnz == 0


def test_upper_or_lower_triangle_only(queue, lap2d):
    low, up = sp.csc_array(sp.tril(lap2d)), sp.csc_array(sp.triu(lap2d))
    with pytest.raises(ValueError, match="symmetric"):
        oclla.sparse.cholesky(low, queue=queue)
    for part, flag in ((low, True), (up, False)):
        f = oclla.sparse.cholesky(part, lower=flag, queue=queue)
        _check(f, lap2d, np.float64)


@pytest.mark.parametrize("bad, error", [
    (np.eye(3), TypeError),
    (sp.csc_array(np.eye(3, dtype=np.int64)), TypeError),
    (sp.csc_array(np.eye(3, dtype=np.complex128)), TypeError),
    (sp.csc_array(np.ones((3, 4))), ValueError),
    (sp.csc_array(np.array([[1.0, np.nan], [np.nan, 1.0]])), ValueError),
])
def test_bad_inputs(queue, bad, error):
    with pytest.raises(error):
        oclla.sparse.cholesky(bad, queue=queue)


def test_bad_options_and_right_hand_sides(queue, lap2d):
    with pytest.raises(ValueError, match="method"):
        oclla.sparse.cholesky(lap2d, method="ll", queue=queue)
    with pytest.raises(ValueError, match="ordering"):
        oclla.sparse.cholesky(lap2d, ordering="nope", queue=queue)
    f = oclla.sparse.cholesky(lap2d.astype(np.float32), queue=queue)
    with pytest.raises(TypeError, match="astype"):
        f.solve(np.ones(lap2d.shape[0]))                  # float64 into a float32 factor
    with pytest.raises(ValueError, match="rows"):
        f.solve(np.ones(lap2d.shape[0] + 1, np.float32))
    with pytest.raises(ValueError):
        f.solve(np.full(lap2d.shape[0], np.nan, np.float32))
    b = np.ones(lap2d.shape[0], np.float32)
    keep = b.copy()
    f.solve(b)
    assert np.array_equal(b, keep)


def test_empty_and_one_by_one(queue):
    f = oclla.sparse.cholesky(sp.csc_array(np.array([[4.0]])), queue=queue)
    assert np.allclose(f.solve(np.array([2.0])), [0.5])
    assert np.isclose(f.logdet(), np.log(4.0))


@pytest.mark.parametrize("large", [0.0, np.inf], ids=["blas", "batched"])
def test_solve_on_either_route(queue, large, lap2d):
    f = oclla.sparse.cholesky(lap2d, large=large, queue=queue)
    assert f._plan.large.all() if large == 0.0 else not f._plan.large.any()
    b = np.random.default_rng(4).standard_normal((lap2d.shape[0], 2))
    x = f.solve(b)
    assert accuracy.sparse_solve_backward_error(lap2d, x, b) < accuracy.THRESHOLD


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 50), density=st.floats(0.01, 0.2), seed=st.integers(0, 10 ** 6),
       double=st.booleans(), method=st.sampled_from(numeric.METHODS),
       large=st.sampled_from([0.0, 2e3, np.inf]),
       ordering=st.sampled_from(["natural", "rcm", "metis"]))
def test_property_backward_error_and_solve(n, density, seed, double, method, large, ordering):
    """B·Bᵀ + 0.01·I of a random sparse B: SPD, condition up to about 10⁴."""
    dtype = np.float64 if double else np.float32
    rng = np.random.default_rng(seed)
    b = sp.random_array((n, n), density=density, rng=rng, format="csr")
    a = sp.csc_array(b @ b.T + 0.01 * sp.eye_array(n), dtype=dtype)
    f = oclla.sparse.cholesky(a, method=method, large=large, ordering=ordering)
    assert accuracy.sparse_cholesky_backward_error(a, f.L(), f.P()) < accuracy.THRESHOLD
    rhs = rng.standard_normal(n).astype(dtype)
    assert accuracy.sparse_solve_backward_error(a, f.solve(rhs), rhs) < accuracy.THRESHOLD
