"""oclla.cholesky / cho_factor / cho_solve against scipy, both methods, both triangles."""

import dataclasses
import re
import sys

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.linalg as sla
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import oclla
from oclla import _knobs, _params, accuracy, rfp
from oclla._device import DeviceError

from linalg_helpers import assert_fails_at_order, forward_units, roomy, spd

DTYPES = (np.float32, np.float64)
# straddle the potrf block (64 here), the TRSM block (32) and the gemm tiles (16..64)
SIZES = (1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 129)
PIVOT_SIZES = (1, 2, 3, 16, 17, 33)


def test_forward_units_detects_a_wrong_factor():
    a = spd(20, np.float32)
    ref = sla.cholesky(a.astype(np.float64))
    assert forward_units(ref.astype(np.float32), ref) < 1
    wrong = ref.astype(np.float32)
    wrong[3, 5] += 1e-3
    assert forward_units(wrong, ref) > accuracy.THRESHOLD


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("lower", (True, False))
def test_blocked_matches_scipy(queue, dtype, n, lower):
    a = spd(n, dtype)
    c = oclla.cholesky(a, lower=lower, queue=queue)
    assert c.dtype == dtype and c.shape == (n, n)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower))
    assert accuracy.passes(forward_units(c, sla.cholesky(a.astype(np.float64), lower=lower)))
    other = np.triu(c, 1) if lower else np.tril(c, -1)
    assert not other.any()
    assert (np.diag(c) > 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (17, 40, 65))
def test_blocked_small_blocks(queue, dtype, n):
    a = spd(n, dtype, seed=3)
    for lower in (True, False):
        c = oclla.cholesky(a, lower=lower, block=8, queue=queue)
        assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower))


# block column width, diagonal leaf order, leaf work-group, the solves' method
# (full, packed): leaves smaller than and
# equal to the block, recursion of several levels, blocks that are one leaf
# inverted by the leaf kernel (items owning entries of several columns: NB=32
# LEAF=32 WG=64, of one column: LEAF=WG=16, more items than entries: LEAF=8
# WG=128); the same shapes with one item per row (ROW_LEAF), where WG sizes the
# panel solve only.  No NB=LEAF=64 set (it cost the most builds of this file on
# PoCL): potf2_block's code is the same for every LEAF (a -D size), NB=LEAF=32
# covers the block inverted whole by its leaf, and the GPU profiles' tests
# (tests/profiles) run the LEAF 64 row leaves
CHOL_SETS = (dict(NB=24, LEAF=8, WG=4, ROW_LEAF=0, TRSM_INVERSE=1, RFP_TRSM_INVERSE=0),
             dict(NB=100, LEAF=7, WG=4, ROW_LEAF=0, TRSM_INVERSE=0, RFP_TRSM_INVERSE=0),
             dict(NB=12, LEAF=16, WG=32, ROW_LEAF=0, TRSM_INVERSE=1, RFP_TRSM_INVERSE=0),
             dict(NB=5, LEAF=8, WG=128, ROW_LEAF=0, TRSM_INVERSE=1, RFP_TRSM_INVERSE=1),
             dict(NB=32, LEAF=32, WG=64, ROW_LEAF=0, TRSM_INVERSE=1, RFP_TRSM_INVERSE=1),
             dict(NB=40, LEAF=16, WG=16, ROW_LEAF=0, TRSM_INVERSE=0, RFP_TRSM_INVERSE=0,
                  SMALL_N=60),
             dict(NB=24, LEAF=8, WG=4, ROW_LEAF=1, TRSM_INVERSE=1, RFP_TRSM_INVERSE=0),
             dict(NB=100, LEAF=16, WG=32, ROW_LEAF=1, TRSM_INVERSE=0, RFP_TRSM_INVERSE=1),
             dict(NB=40, LEAF=24, WG=16, ROW_LEAF=1, TRSM_INVERSE=0, RFP_TRSM_INVERSE=0,
                  SMALL_N=60),
             dict(NB=40, LEAF=40, WG=256, ROW_LEAF=1, TRSM_INVERSE=1, RFP_TRSM_INVERSE=1))


#: Each set runs in one dtype (the dtype is a -D macro of the same code; every set's
#: first build on PoCL is what costs here), alternating so that both dtypes meet both
#: leaf forms, inverting and substituting solves, and SMALL_N.
SETS_AND_DTYPES = [(p, DTYPES[i % 2]) for i, p in enumerate(CHOL_SETS)]


@pytest.mark.parametrize("p, dtype", SETS_AND_DTYPES,
                         ids=lambda v: ("-".join(map(str, v.values())) if isinstance(v, dict)
                                        else np.dtype(v).name))
def test_blocked_parameter_sets(queue, dtype, p):
    _params.override("chol", p)
    for n in (1, p["LEAF"] - 1, p["LEAF"] + 1, p["NB"] - 1, p["NB"] + 1, 97):
        if n < 1:
            continue
        a = spd(n, dtype, seed=5)
        for lower in (True, False):
            c = oclla.cholesky(a, lower=lower, queue=queue)
            err = accuracy.cholesky_backward_error(a, c, lower)
            assert accuracy.passes(err), f"n={n} lower={lower}: backward error {err:.3g}"
            packed = rfp.unpack(rfp.cholesky(rfp.pack(a, lower=lower, queue=queue), n,
                                             lower=lower, queue=queue), n, lower=lower,
                                queue=queue)
            err = accuracy.cholesky_backward_error(a, packed, lower)
            assert accuracy.passes(err), f"packed n={n} lower={lower}: {err:.3g}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_upper_updates_through_a_transposed_panel_copy(queue, dtype):
    """The upper factor's trailing updates (SYRK UᵀU of each block row) through a copy
    of the panel transposed (gemm TN_COPY_K): the same factor as LAPACK's, orders off
    the blocks, the copies there and only for the upper triangle (no thin set: a GPU's
    would take these rank-16 products with its own TN_COPY_K)."""
    tiles = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=4)
    _params.override("gemm", dict(tiles, TN_COPY_K=16))
    _params.override("gemm_thin", dict(tiles, MAX_K=0))
    _params.override("chol", dict(NB=16, LEAF=8, WG=16, ROW_LEAF=1, FUSE_LEAF=0,
                                  TRSM_INVERSE=0, SMALL_N=0))
    for n in (17, 40, 73):
        a = spd(n, dtype, seed=9)
        for lower in (True, False):
            with oclla.record() as rec:
                c = oclla.cholesky(a, lower=lower, queue=queue)
            assert ("gather" in {k.name for k in rec.kernels}) == (not lower), (n, lower)
            err = accuracy.cholesky_backward_error(a, c, lower)
            assert accuracy.passes(err), f"n={n} lower={lower}: backward error {err:.3g}"
            assert accuracy.passes(forward_units(c, sla.cholesky(a.astype(np.float64),
                                                                 lower=lower)))


RECURSIVE_LEAVES = dict(NB=100, LEAF=7, WG=4, TRSM_INVERSE=0, RFP_TRSM_INVERSE=1)
INVERTING_LEAVES = dict(NB=16, LEAF=16, WG=64, ROW_LEAF=0, TRSM_INVERSE=1, RFP_TRSM_INVERSE=1)
ROW_LEAVES = dict(NB=100, LEAF=8, WG=4, ROW_LEAF=1, TRSM_INVERSE=0, RFP_TRSM_INVERSE=1)
INVERTING_ROW_LEAVES = dict(INVERTING_LEAVES, ROW_LEAF=1)


@pytest.mark.parametrize("p, k", [(RECURSIVE_LEAVES, k) for k in (0, 6, 7, 8, 30, 41, 99)]
                         + [(INVERTING_LEAVES, k) for k in (0, 15, 16, 17, 40, 99)]
                         + [(ROW_LEAVES, k) for k in (0, 7, 8, 9, 41, 99)]
                         + [(INVERTING_ROW_LEAVES, k) for k in (0, 1, 15, 16, 40, 109)],
                         ids=lambda v: (f"LEAF{v['LEAF']}" + ("rows" if v.get("ROW_LEAF") else "")
                                        if isinstance(v, dict) else str(v)))
def test_failing_order_inside_a_leaf(queue, p, k):
    _params.override("chol", p)
    assert_fails_at_order(queue, 110, k + 1)


def test_block_width_is_the_leaf_up_to_small_n(queue):
    from oclla.cholesky import block_size
    _params.override("chol", dict(NB=40, LEAF=16, WG=64, SMALL_N=60))
    assert [block_size(queue, np.float32, n) for n in (1, 60, 61)] == [16, 16, 40]


def test_leaf_with_too_few_registers_is_refused(queue):
    p = dict(NB=64, LEAF=64, WG=32, TRSM_INVERSE=1, RFP_TRSM_INVERSE=0, RFP_T2_DEPTH=0,
             SMALL_N=0, ROW_LEAF=0, FUSE_LEAF=0)
    assert "registers" in _params.check("chol", p, roomy(queue), 4)
    assert _params.check("chol", dict(p, WG=64), roomy(queue), 4) is None


def test_row_leaf_shapes(queue):
    row_leaf = _params.chol_row_leaf
    info = roomy(queue)
    p = dict(NB=64, LEAF=64, WG=32, TRSM_INVERSE=1, RFP_TRSM_INVERSE=0, RFP_T2_DEPTH=0,
             SMALL_N=0, ROW_LEAF=1, FUSE_LEAF=0)
    assert _params.check("chol", p, info, 4) is None          # WG sizes the panel solve only
    assert [row_leaf(dict(p, LEAF=leaf)) for leaf in (8, 12, 16, 64, 72)] == \
        [True, False, True, True, False]
    assert not row_leaf(dict(p, ROW_LEAF=0))
    # LEAF 72 has no row kernel: the spread leaf's register rule applies again
    assert "registers" in _params.check("chol", dict(p, LEAF=72), info, 4)
    assert "ROW_LEAF must be one of 0, 1" in _params.check("chol", dict(p, ROW_LEAF=2),
                                                            info, 4)


def test_panel_solve_larger_than_local_memory_is_refused(queue):
    """apply_inverse stages the leaf's inverse and its rows of the panel in local memory:
    a set whose leaf fits but whose panel solve does not is refused."""
    p = dict(NB=64, LEAF=64, WG=256, TRSM_INVERSE=1, RFP_TRSM_INVERSE=0, RFP_T2_DEPTH=0,
             SMALL_N=0, ROW_LEAF=1, FUSE_LEAF=0)
    leaf_bytes = (65 * 65 + 5 * 64) * 8                    # the row leaf's, float64
    solve_bytes = (64 * 64 + 16 * 65) * 8                  # the inverse and 16 rows of 65
    assert _params.chol_apply_rows(p) == 16
    assert _knobs.chol_leaf_local_bytes(p, 8) == solve_bytes > leaf_bytes
    info = oclla.device_info(queue)
    fit = solve_bytes + _knobs.LOCAL_RESERVE                # the least local memory it takes
    for local, refused in ((fit, False), (fit - 8, True)):
        small = type(info)(**dict(info.as_dict(), local_mem_size=local))
        problem = _params.check("chol", p, small, 8)
        assert (problem is not None and "local memory" in problem) == refused, (local, problem)


def test_leaf_larger_than_local_memory_is_refused(queue):
    info = oclla.device_info(queue)
    leaf = int(np.sqrt(info.local_mem_size / 4)) + 1
    p = dict(NB=64, LEAF=leaf, WG=1024, TRSM_INVERSE=1, RFP_TRSM_INVERSE=0, RFP_T2_DEPTH=0,
             SMALL_N=0, ROW_LEAF=0, FUSE_LEAF=0)
    assert "local memory" in _params.check("chol", p, info, 4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", PIVOT_SIZES)
@pytest.mark.parametrize("lower", (True, False))
def test_pivot_matches_scipy(queue, dtype, n, lower):
    a = spd(n, dtype, seed=1)
    c = oclla.cholesky(a, lower=lower, method="pivot", queue=queue)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower))
    assert accuracy.passes(forward_units(c, sla.cholesky(a.astype(np.float64), lower=lower)))


@pytest.mark.parametrize("packed", (False, True))
def test_pivot_method_needs_no_block_width(queue, monkeypatch, packed):
    """The per-pivot Cholesky (full and packed) never asks for the blocked method's block
    width: on an untuned device that lookup self-checks the whole blocked Cholesky
    family (its GEMMs, TRSMs and leaves), which the per-pivot kernels do not use."""
    def refuse(*args, **kwargs):
        raise AssertionError("block_size called by the per-pivot method")
    monkeypatch.setattr(sys.modules["oclla.cholesky"], "block_size", refuse)
    monkeypatch.setattr(rfp, "block_size", refuse)
    a = spd(37, np.float32, seed=3)
    if packed:
        c = rfp.unpack(rfp.cholesky(rfp.pack(a, queue=queue), 37, method="pivot",
                                    queue=queue), 37, queue=queue)
        lower = True
    else:
        c, lower = oclla.cholesky(a, method="pivot", queue=queue), False
    assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower))


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 48), lower=st.booleans(), double=st.booleans(),
       method=st.sampled_from(["blocked", "pivot"]), seed=st.integers(0, 1000))
def test_property_backward_error(n, lower, double, method, seed):
    dtype = np.float64 if double else np.float32
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    a = ((q * np.logspace(0, 3, n)) @ q.T).astype(dtype)       # condition number 1e3
    a = (a + a.T) / 2
    c = oclla.cholesky(a, lower=lower, method=method, block=16)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower))


# ---- one triangle only ---------------------------------------------------------------------

@pytest.mark.parametrize("method", ("blocked", "pivot"))
@pytest.mark.parametrize("lower", (True, False))
def test_other_triangle_is_ignored(queue, method, lower):
    n = 37
    a = spd(n, np.float64)
    garbage = a.copy()
    junk = np.random.default_rng(5).uniform(-1e6, 1e6, (n, n))
    mask = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    garbage[mask] = junk[mask]
    clean = oclla.cholesky(a, lower=lower, method=method, block=16, queue=queue)
    assert np.array_equal(oclla.cholesky(garbage, lower=lower, method=method, block=16,
                                         queue=queue), clean)
    garbage[mask] = np.nan
    assert np.array_equal(oclla.cholesky(garbage, lower=lower, method=method, block=16,
                                         check_finite=False, queue=queue), clean)


@pytest.mark.parametrize("lower", (True, False))
def test_cho_factor_keeps_the_input_triangle(queue, lower):
    a = spd(50, np.float32)
    a[np.triu_indices(50, 1) if lower else np.tril_indices(50, -1)] = 7.0
    c, low = oclla.cho_factor(a, lower=lower, queue=queue)
    assert low is lower
    mask = np.triu(np.ones_like(a, bool), 1) if lower else np.tril(np.ones_like(a, bool), -1)
    assert np.array_equal(c[mask], a[mask])
    ref = oclla.cholesky(a, lower=lower, queue=queue)
    assert np.array_equal(np.where(mask, 0, c), ref)


# ---- cho_solve -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (1, 16, 33, 65))
@pytest.mark.parametrize("lower", (True, False))
def test_cho_solve(queue, dtype, n, lower):
    a = spd(n, dtype, seed=2)
    rng = np.random.default_rng(n)
    factor = oclla.cho_factor(a, lower=lower, queue=queue)
    for b in (rng.standard_normal(n).astype(dtype), rng.standard_normal((n, 3)).astype(dtype)):
        x = oclla.cho_solve(factor, b, queue=queue)
        assert x.shape == b.shape and x.dtype == dtype
        assert accuracy.passes(accuracy.solve_backward_error(a, x, b))
        ref = sla.cho_solve(sla.cho_factor(a.astype(np.float64), lower=lower), b)
        assert accuracy.passes(accuracy.solve_backward_error(a, ref, b))


def test_cho_solve_accepts_scipy_factor(queue):
    a = spd(30, np.float64)
    b = np.arange(30.0)
    x = oclla.cho_solve(sla.cho_factor(a), b, queue=queue)
    assert accuracy.passes(accuracy.solve_backward_error(a, x, b))


# ---- errors --------------------------------------------------------------------------------

def leading_minor(message):
    return int(re.search(r"order (\d+)", message).group(1))


@pytest.mark.parametrize("method", ("blocked", "pivot"))
@pytest.mark.parametrize("lower", (True, False))
@pytest.mark.parametrize("k", (0, 5, 16, 37, 49))
def test_not_positive_definite_names_the_order(queue, method, lower, k):
    a = spd(50, np.float64)
    a[k, k] = -100.0
    with pytest.raises(LinAlgError, match=f"leading minor of order {k + 1} is not positive "
                                          f"definite"):
        oclla.cholesky(a, lower=lower, method=method, block=16, queue=queue)
    _, info = sla.lapack.dpotrf(a, lower=lower)
    assert info == k + 1


def test_indefinite_order_matches_lapack(queue):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((60, 60))
    a = x + x.T                         # symmetric, indefinite
    with pytest.raises(LinAlgError) as ours:
        oclla.cholesky(a, block=16, queue=queue)
    _, info = sla.lapack.dpotrf(a, lower=False)
    assert info > 0 and leading_minor(str(ours.value)) == info


def test_nan_on_the_diagonal_is_not_positive_definite(queue):
    a = spd(10, np.float32)
    a[4, 4] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.cholesky(a, queue=queue)
    for method in ("blocked", "pivot"):
        with pytest.raises(LinAlgError, match="order 5"):
            oclla.cholesky(a, method=method, check_finite=False, queue=queue)


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("method", ["blocked", "pivot"])
def test_nonfinite_device_input(queue, method, overwrite):
    """A device input with NaN or Inf is refused before any positive-definiteness error
    (a copy is checked beside the factorization, an input to overwrite before it) and a
    copied input is left as it was; with check_finite=False the factorization runs."""
    for bad in (np.nan, np.inf):
        a = spd(40, np.float32)
        a[30, 7] = a[7, 30] = bad
        a[2, 2] = -1.0                               # not positive definite either
        d_a = cl_array.to_device(queue, a)
        with pytest.raises(ValueError, match="infs or NaNs"):
            oclla.cholesky(d_a, lower=True, method=method, overwrite_a=overwrite, queue=queue)
        np.testing.assert_array_equal(d_a.get(), a)
    with pytest.raises(LinAlgError, match="order 3"):
        oclla.cholesky(cl_array.to_device(queue, a), method=method, check_finite=False,
                       queue=queue)


@pytest.mark.parametrize("bad, exc, match", [
    (np.ones((3, 4)), ValueError, "square"),
    (np.ones(4), ValueError, "2-D"),
    (np.eye(3, dtype=np.int64), TypeError, "float32 or float64"),
    (np.eye(3, dtype=np.complex128), TypeError, "complex|a.real"),
    (np.array([[1.0, np.inf], [np.inf, 1.0]]), ValueError, "infs or NaNs"),
])
def test_bad_input(queue, bad, exc, match):
    with pytest.raises(exc, match=match):
        oclla.cholesky(bad, queue=queue)
    with pytest.raises(exc, match=match):
        oclla.cho_factor(bad, queue=queue)


def test_bad_method_and_solve_arguments(queue):
    a = spd(4, np.float64)
    with pytest.raises(ValueError, match="method"):
        oclla.cholesky(a, method="lu", queue=queue)
    c = oclla.cho_factor(a, queue=queue)
    with pytest.raises(TypeError, match="c_and_lower"):
        oclla.cho_solve(c[0], np.ones(4), queue=queue)
    with pytest.raises(ValueError, match="rows"):
        oclla.cho_solve(c, np.ones(5), queue=queue)
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.cho_solve(c, np.array([1.0, np.nan, 0, 0]), queue=queue)


@pytest.mark.parametrize("bad", ["c", "b"])
@pytest.mark.parametrize("overwrite_b", [False, True])
def test_cho_solve_finds_nan_in_device_operands_and_touches_neither(queue, monkeypatch, bad,
                                                                    overwrite_b):
    """NaN in a device factor (full or packed) or right-hand side: ValueError, both arrays
    as they were.  Where X is not solved in the caller's b, both counts run beside the
    solve and are read with X (no wait of their own before it); otherwise before it."""
    import oclla._validate as validate
    good_c, _ = oclla.cho_factor(spd(6, np.float64), queue=queue)
    good_b = np.arange(12.0).reshape(6, 2)
    c_host, b_host = good_c.copy(), good_b.copy()
    (c_host if bad == "c" else b_host)[3, 3 if bad == "c" else 1] = np.nan
    c, b = cl_array.to_device(queue, c_host), cl_array.to_device(queue, b_host)
    waits = []
    counted = validate.device_has_nonfinite
    monkeypatch.setattr(validate, "device_has_nonfinite",
                        lambda q, x: waits.append(x.shape) or counted(q, x))
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.cho_solve((c, False), b, overwrite_b=overwrite_b, queue=queue)
    np.testing.assert_array_equal(c.get(), c_host)
    np.testing.assert_array_equal(b.get(), b_host)
    assert (waits != []) == overwrite_b, waits
    arf_host = np.asarray(oclla.rfp.pack(c_host.T, check_finite=False, queue=queue))
    arf = cl_array.to_device(queue, arf_host)
    waits.clear()
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.rfp.cho_solve((arf, True), b, overwrite_b=overwrite_b, queue=queue)
    np.testing.assert_array_equal(arf.get(), arf_host)
    np.testing.assert_array_equal(b.get(), b_host)
    assert (waits != []) == overwrite_b, waits
    x = oclla.cho_solve((cl_array.to_device(queue, good_c), False),
                        cl_array.to_device(queue, good_b), queue=queue)
    np.testing.assert_allclose(x.get(), sla.cho_solve((good_c, False), good_b), rtol=1e-12)


def test_float64_without_fp64(queue, monkeypatch):
    import oclla._validate as validate
    info = dataclasses.replace(oclla.device_info(queue), fp64=False)
    monkeypatch.setattr(validate, "device_info", lambda q: info)
    with pytest.raises(DeviceError, match="fp64"):
        oclla.cholesky(spd(4, np.float64), queue=queue)


def test_empty(queue):
    assert oclla.cholesky(np.empty((0, 0)), queue=queue).shape == (0, 0)


# ---- inputs, overwrite, device arrays ------------------------------------------------------

def test_inputs_are_not_modified(queue):
    a = spd(40, np.float32)
    keep = a.copy()
    b = np.ones(40, np.float32)
    c = oclla.cho_factor(a, queue=queue)
    oclla.cho_solve(c, b, queue=queue)
    oclla.cholesky(a, method="pivot", queue=queue)
    assert np.array_equal(a, keep) and np.array_equal(b, np.ones(40, np.float32))
    bad = a.copy()
    bad[3, 3] = -1
    keep_bad = bad.copy()
    with pytest.raises(LinAlgError):
        oclla.cholesky(bad, queue=queue)
    assert np.array_equal(bad, keep_bad)


def test_overwrite_a(queue):
    a = spd(20, np.float64)
    ref = oclla.cholesky(a, queue=queue)
    out = oclla.cholesky(a, overwrite_a=True, queue=queue)
    assert out is a and np.array_equal(a, ref)


def test_device_arrays(queue):
    a = spd(70, np.float32)
    da = cl_array.to_device(queue, a)
    dc = oclla.cholesky(da, lower=True, queue=queue)
    assert isinstance(dc, cl_array.Array)
    assert np.array_equal(da.get(), a)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, dc.get(), True))
    db = cl_array.to_device(queue, np.ones((70, 2), np.float32))
    dx = oclla.cho_solve((dc, True), db, queue=queue)
    assert isinstance(dx, cl_array.Array)
    assert accuracy.passes(accuracy.solve_backward_error(a, dx.get(), np.ones((70, 2))))
    same = oclla.cholesky(da, lower=True, overwrite_a=True, queue=queue)
    assert same is da and np.array_equal(da.get(), dc.get())


# ---- trace ---------------------------------------------------------------------------------

@pytest.mark.parametrize("lower", (True, False))
def test_pivot_trace_steps(queue, lower):
    n = 12
    wg = oclla._params.params(queue, "wg1d", np.float32)["WG"]
    with oclla.record(snapshots=True) as rec:
        c = oclla.cholesky(spd(n, np.float32), lower=lower, method="pivot", queue=queue)
    run = rec.runs[0]
    assert (run.algorithm, run.variant) == ("cholesky", "pivot")
    phases = [s.phase for s in run.steps if s.phase != "zero"]
    assert phases.count("sqrt") == n
    assert phases.count("normalize") == n - 1
    outer = [s for s in run.steps if s.phase == "outer_product"]
    assert len(outer) == n - 1
    for k, s in enumerate(outer):
        t = n - k - 1
        assert s.region == (k + 1, n, k + 1, n)          # shrinking trailing triangle
        assert s.info["triangle_entries"] == t * (t + 1) // 2
        (kernel,) = s.kernels
        assert kernel.name == "outer_product"
        assert t * (t + 1) // 2 <= kernel.global_size[0] < t * (t + 1) // 2 + wg
    norm = [s for s in run.steps if s.phase == "normalize"]
    assert norm[0].region == ((1, n, 0, 1) if lower else (0, 1, 1, n))
    assert np.array_equal(run.result, c)
    assert len(run.snapshots) == len(run.steps)


def test_blocked_trace_phases(queue):
    _params.override("chol", dict(FUSE_LEAF=0))
    with oclla.record() as rec:
        oclla.cholesky(spd(40, np.float32), lower=True, block=16, queue=queue)
    steps = rec.runs[0].steps
    assert [s.phase for s in steps] == ["panel", "trsm", "syrk"] * 2 + ["panel", "zero"]
    assert steps[2].region == (16, 40, 16, 40)
    assert all(k.end >= k.start > 0 for k in rec.kernels)


def test_leaf_kernels_are_looked_up_once_per_thread_and_parameters(queue):
    """The blocked potrf's leaf kernels are made once per thread (get_kernel's kernels
    are the thread's own) and parameter set: a new set gives new kernels."""
    import threading
    from oclla.cholesky import _leaf
    _params.override("chol", dict(NB=16, LEAF=16, WG=64, ROW_LEAF=1, FUSE_LEAF=0,
                                  TRSM_INVERSE=1, SMALL_N=0))
    first = _leaf(queue, np.float32, False, True)
    assert _leaf(queue, np.float32, False, True) is first and first.order == 16
    assert _leaf(queue, np.float32, False, False) is not first
    assert _leaf(queue, np.float32, True, True) is not first
    other = []
    thread = threading.Thread(target=lambda: other.append(_leaf(queue, np.float32, False,
                                                                True)))
    thread.start()
    thread.join()
    assert other[0] is not first and other[0].kernel is not first.kernel
    _params.override("chol", dict(NB=16, LEAF=8, WG=64, ROW_LEAF=1, FUSE_LEAF=0,
                                  TRSM_INVERSE=1, SMALL_N=0))
    assert _leaf(queue, np.float32, False, True).order == 8
    a = spd(37, np.float32)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, oclla.cholesky(
        a, block=8, queue=queue), False))
