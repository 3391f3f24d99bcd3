"""oclla.rfp against LAPACK's ?trttf, ?tfttr, ?pftrf and ?pftrs."""

import dataclasses
import re

import numpy as np
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError
from scipy.linalg import lapack

import oclla
from oclla import accuracy, rfp
from oclla._device import DeviceError

from linalg_helpers import spd

DTYPES = (np.float32, np.float64)
SIZES = (1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65, 128, 129)
PIVOT_SIZES = (1, 2, 3, 4, 7, 16, 17)
UPLO = ("L", "U")


def lapack_fn(name, dtype):
    return getattr(lapack, ("d" if dtype == np.float64 else "s") + name)


# ---- layout --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("uplo", UPLO)
def test_pack_unpack_bit_identical_to_lapack(queue, dtype, n, uplo):
    a = np.random.default_rng(n).standard_normal((n, n)).astype(dtype)
    lower = uplo == "L"
    ref, info = lapack_fn("trttf", dtype)(a, uplo=uplo)
    assert info == 0
    arf = rfp.pack(a, lower=lower, queue=queue)
    assert arf.dtype == dtype and arf.shape == (n * (n + 1) // 2,)
    assert np.array_equal(arf, ref)
    full, info = lapack_fn("tfttr", dtype)(n, ref, uplo=uplo)
    assert np.array_equal(rfp.unpack(arf, n, lower=lower, queue=queue), full)


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 70), lower=st.booleans())
def test_property_round_trip(n, lower):
    a = np.arange(n * n, dtype=np.float64).reshape(n, n)
    tri = np.tril(a) if lower else np.triu(a)
    assert np.array_equal(rfp.unpack(rfp.pack(a, lower=lower), n, lower=lower), tri)


@pytest.mark.parametrize("n", (4, 5))
@pytest.mark.parametrize("lower", (True, False))
def test_layout_blocks_are_where_pftrf_puts_them(n, lower):
    """T1 (order n1), S and T2 (order n2) of Layout: their Fortran (0,0), (1,0), (1,1)."""
    a = np.arange(1.0, n * n + 1).reshape(n, n)         # every entry distinct
    arf = rfp.pack(a, lower=lower)
    lay = rfp.layout(n, lower)
    n1 = lay.n1
    assert lay.n1 + lay.n2 == n and lay.lda == n + 1 - n % 2
    assert (arf[lay.t1], arf[lay.t1 + 1 + lay.lda]) == (a[0, 0], a[1, 1])
    assert (arf[lay.t2], arf[lay.t2 + 1 + lay.lda]) == (a[n1, n1], a[n1 + 1, n1 + 1])
    if lower:       # S = A21, n2 x n1
        assert (arf[lay.s], arf[lay.s + 1]) == (a[n1, 0], a[n1 + 1, 0])
    else:           # S = A12, n1 x n2
        assert (arf[lay.s], arf[lay.s + 1]) == (a[0, n1], a[1, n1])


def test_pack_reads_one_triangle(queue):
    a = spd(9, np.float64)
    junk = a.copy()
    junk[np.triu_indices(9, 1)] = np.nan
    assert np.array_equal(rfp.pack(junk, check_finite=False, queue=queue),
                          rfp.pack(a, queue=queue))


# ---- Cholesky ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", (True, False))
@pytest.mark.parametrize("tile", ((32, 8), (4, 2)), ids=("tile32", "tile4"))
def test_transpose_between_layouts(queue, dtype, lower, tile, monkeypatch):
    """rfp.cl's transpose: the packed triangle of x in one layout becomes the other
    layout's packed triangle of xᵀ, bit for bit (so a symmetric matrix keeps its
    entries, a factor L becomes U = Lᵀ), at orders within one tile and across several,
    odd and even, from and to offsets inside larger buffers; nothing else written."""
    monkeypatch.setattr(rfp, "TRANSPOSE_TILE", tile[0])
    monkeypatch.setattr(rfp, "TRANSPOSE_ROWS", tile[1])
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 4, 5, 31, 32, 33, 64, 65, 100, 129):
        x = rng.standard_normal((n, n)).astype(dtype)
        size = rfp.packed_length(n)
        src = cl_array.to_device(queue, np.concatenate([np.full(3, 7, dtype),
                                                        rfp.pack(x, lower=lower)]))
        dst = cl_array.to_device(queue, np.full(size + 7, -1, dtype))
        rfp._transpose_packed(queue, src.data, 3, dst.data, 5, n, lower=lower, dtype=dtype)
        out = dst.get()
        assert np.array_equal(out[5:5 + size], rfp.pack(x.T, lower=not lower)), n
        assert np.all(out[:5] == -1) and np.all(out[5 + size:] == -1), n
        if n % 2 == 0:     # T2 left out: its entries of dst untouched, the rest as above
            dst = cl_array.to_device(queue, np.full(size, -1, dtype))
            rfp._transpose_packed(queue, src.data, 3, dst.data, 0, n, lower=lower,
                                  dtype=dtype, t2_too=False)
            r, c = np.tril_indices(n // 2)          # dst's T2: (r, c) of its triangle
            r, c = (r, c) if not lower else (c, r)
            t2 = np.zeros(size, bool)
            t2[rfp._offsets(r + n // 2, c + n // 2, n, not lower)] = True
            out, expected = dst.get(), rfp.pack(x.T, lower=not lower)
            assert np.all(out[t2] == -1), n
            assert np.array_equal(out[~t2], expected[~t2]), n


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_transpose_triangle_touches_only_the_two_triangles(queue, dtype):
    """rfp.cl's transpose_triangle: dst's entry (c, r) := src's (r, c) for the entries
    (r, c) of src's triangle, bit for bit, at orders within one tile and across several,
    between views at offsets inside larger buffers with their own leading dimensions;
    nothing else of dst written, src untouched."""
    from oclla.blas import View
    rng = np.random.default_rng(9)
    for n, lower in ((1, True), (2, False), (31, True), (33, False), (64, True), (70, False)):
        lds, ldd, so, do = n + 3, n + 5, 7, 11
        src = rng.standard_normal(so + n * lds + 2).astype(dtype)
        dst = rng.standard_normal(do + n * ldd + 2).astype(dtype)
        d_src, d_dst = cl_array.to_device(queue, src), cl_array.to_device(queue, dst)
        rfp._transpose_triangle(queue, View(d_src.data, so, lds), View(d_dst.data, do, ldd),
                                n, lower=lower, dtype=dtype)
        r, c = np.tril_indices(n) if lower else np.triu_indices(n)
        want = dst.copy()
        want[do + c * ldd + r] = src[so + r * lds + c]
        assert np.array_equal(d_dst.get(), want), (n, lower)
        assert np.array_equal(d_src.get(), src), (n, lower)


def check_factor(a, c, ref, n, uplo, dtype):
    lower = uplo == "L"
    full = rfp.unpack(c, n, lower=lower)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, full, lower))
    diff = np.abs(c.astype(np.float64) - ref).max() / (n * np.abs(ref).max() * accuracy.eps(dtype))
    assert accuracy.passes(diff)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("uplo", UPLO)
def test_blocked_matches_pftrf(queue, dtype, n, uplo):
    a = spd(n, dtype)
    arf = lapack_fn("trttf", dtype)(a, uplo=uplo)[0]
    ref, info = lapack.dpftrf(n, arf.astype(np.float64), uplo=uplo)
    assert info == 0
    c = rfp.cholesky(arf, n, lower=uplo == "L", block=16, queue=queue)
    check_factor(a, c, ref, n, uplo, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", PIVOT_SIZES)
@pytest.mark.parametrize("uplo", UPLO)
def test_pivot_matches_pftrf(queue, dtype, n, uplo):
    a = spd(n, dtype, seed=1)
    arf = lapack_fn("trttf", dtype)(a, uplo=uplo)[0]
    ref, info = lapack.dpftrf(n, arf.astype(np.float64), uplo=uplo)
    c = rfp.cholesky(arf, n, lower=uplo == "L", method="pivot", queue=queue)
    check_factor(a, c, ref, n, uplo, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", (1, 2, 17, 64, 65))
@pytest.mark.parametrize("uplo", UPLO)
def test_solve_with_pftrs_and_ours(queue, dtype, n, uplo):
    a = spd(n, dtype, seed=2)
    lower = uplo == "L"
    b = np.random.default_rng(n).standard_normal((n, 3)).astype(dtype)
    c = rfp.cholesky(rfp.pack(a, lower=lower, queue=queue), n, lower=lower, queue=queue)
    x_lapack, info = lapack_fn("pftrs", dtype)(n, c, b, uplo=uplo)
    assert info == 0
    assert accuracy.passes(accuracy.solve_backward_error(a, x_lapack, b))
    x = rfp.cho_solve((c, lower), b, queue=queue)
    assert x.shape == b.shape
    assert accuracy.passes(accuracy.solve_backward_error(a, x, b))
    x1 = rfp.cho_solve((c, lower), b[:, 0], queue=queue)
    assert x1.shape == (n,)
    assert accuracy.passes(accuracy.solve_backward_error(a, x1, b[:, 0]))


@pytest.mark.parametrize("method", ("blocked", "pivot"))
def test_factors_in_place_in_half_the_memory(queue, method):
    n = 40
    a = spd(n, np.float32)
    darf = cl_array.to_device(queue, rfp.pack(a))
    assert darf.nbytes == n * (n + 1) // 2 * 4
    out = rfp.cholesky(darf, n, method=method, overwrite_a=True, queue=queue)
    assert out is darf
    assert accuracy.passes(accuracy.cholesky_backward_error(a, rfp.unpack(darf.get(), n),
                                                            True))


@pytest.mark.parametrize("method", ("blocked", "pivot"))
@pytest.mark.parametrize("uplo", UPLO)
@pytest.mark.parametrize("n, k", [(9, 2), (9, 7), (10, 4), (10, 6), (33, 30)])
def test_not_positive_definite_order_matches_pftrf(queue, method, uplo, n, k):
    a = spd(n, np.float64)
    a[k, k] = -50.0
    arf = lapack.dtrttf(a, uplo=uplo)[0]
    _, info = lapack.dpftrf(n, arf, uplo=uplo)
    assert info == k + 1
    with pytest.raises(LinAlgError, match=f"leading minor of order {info} is not positive"):
        rfp.cholesky(arf, n, lower=uplo == "L", method=method, block=4, queue=queue)


@pytest.mark.parametrize("call", [
    lambda arf: rfp.cholesky(arf[:-1], 6),
    lambda arf: rfp.unpack(arf, 5),
    lambda arf: rfp.cho_solve((arf, True), np.ones(7)),
])
def test_wrong_length(queue, call):
    arf = rfp.pack(spd(6, np.float64))
    with pytest.raises(ValueError, match=re.escape("needs n(n+1)/2")):
        call(arf)


def test_bad_arguments(queue):
    arf = rfp.pack(spd(6, np.float64))
    with pytest.raises(ValueError, match="1-D"):
        rfp.cholesky(arf.reshape(3, 7), 6)
    with pytest.raises(ValueError, match=">= 0"):
        rfp.unpack(arf, -1)
    with pytest.raises(TypeError, match="integer"):
        rfp.cholesky(arf, 6.0)
    with pytest.raises(TypeError, match="float32 or float64"):
        rfp.cholesky(arf.astype(np.int32), 6)
    with pytest.raises(ValueError, match="method"):
        rfp.cholesky(arf, 6, method="ldl")
    bad = arf.copy()
    bad[3] = np.inf
    with pytest.raises(ValueError, match="infs or NaNs"):
        rfp.cholesky(bad, 6)
    with pytest.raises(TypeError, match="pair"):
        rfp.cho_solve(arf, np.ones(6))


def test_float64_without_fp64(queue, monkeypatch):
    import oclla._validate as validate
    arf = rfp.pack(spd(5, np.float64))
    info = dataclasses.replace(oclla.device_info(queue), fp64=False)
    monkeypatch.setattr(validate, "device_info", lambda q: info)
    for call in (lambda: rfp.cholesky(arf, 5, queue=queue),
                 lambda: rfp.unpack(arf, 5, queue=queue),
                 lambda: rfp.pack(spd(5, np.float64), queue=queue)):
        with pytest.raises(DeviceError, match="fp64"):
            call()


def test_inputs_not_modified_and_overwrite(queue):
    a = spd(12, np.float32)
    arf = rfp.pack(a)
    keep = arf.copy()
    c = rfp.cholesky(arf, 12, queue=queue)
    b = np.ones(12, np.float32)
    rfp.cho_solve((c, True), b, queue=queue)
    assert np.array_equal(arf, keep) and np.array_equal(b, np.ones(12, np.float32))
    out = rfp.cholesky(arf, 12, overwrite_a=True, queue=queue)
    assert out is arf and np.array_equal(arf, c)


def test_device_arrays(queue):
    a = spd(20, np.float32)
    da = cl_array.to_device(queue, a)
    darf = rfp.pack(da, queue=queue)
    assert isinstance(darf, cl_array.Array)
    dc = rfp.cholesky(darf, 20, queue=queue)
    assert isinstance(dc, cl_array.Array)
    assert np.array_equal(darf.get(), rfp.pack(a))
    full = rfp.unpack(dc, 20, queue=queue)
    assert isinstance(full, cl_array.Array)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, full.get(), True))


# ---- trace ---------------------------------------------------------------------------------

@pytest.mark.parametrize("uplo", UPLO)
def test_pivot_trace_two_triangles(queue, uplo):
    n = 9
    lower = uplo == "L"
    with oclla.record(snapshots=True) as rec:
        c = rfp.cholesky(rfp.pack(spd(n, np.float32), lower=lower), n, lower=lower,
                         method="pivot", queue=queue)
    run = next(r for r in rec.runs if r.algorithm == "rfp_cholesky")
    outer = [s for s in run.steps if s.phase == "outer_product"]
    assert len(outer) == n - 1
    assert [s.phase for s in run.steps].count("sqrt") == n
    n1 = rfp.layout(n, lower).n1
    for k, s in enumerate(outer):
        assert s.info["logical_region"] == (k + 1, n, k + 1, n)
        t = n - k - 1
        assert s.info["triangle_entries"] == t * (t + 1) // 2
        # the trailing triangle lies in both packed parts until it passes n1
        assert len(s.info["regions"]) == (2 if k + 1 < n1 else 1)
    assert run.snapshots[0].shape == (n + 1 - n % 2, (n + 1) // 2)
    assert np.array_equal(run.result, rfp.picture(c, n))


@pytest.mark.parametrize("method", ["pivot", "blocked"])
def test_snapshots_make_no_second_queue(queue, method):
    """A recording with snapshots waits for the packed factorization's second queue only
    where the run made one: a per-pivot run (and a blocked one on a device whose sweeps
    are not fused) leaves its queue without one."""
    import pyopencl as cl
    from oclla import _programs
    from oclla.cholesky import sweeps_fused
    fresh = cl.CommandQueue(queue.context, queue.device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    if method == "blocked" and sweeps_fused(fresh, np.dtype(np.float32), 17):
        pytest.skip("this device's packed sweep takes a second queue")
    a = spd(33, np.float32, seed=2)
    with oclla.record(snapshots=True) as rec:
        packed = rfp.cholesky(rfp.pack(a, queue=fresh), 33, method=method, queue=fresh)
    assert rec.runs[-1].steps
    assert _programs.side_queue_made(fresh) is None
    np.testing.assert_allclose(rfp.unpack(packed, 33, queue=fresh),
                               np.linalg.cholesky(a.astype(np.float64)), atol=1e-4)
