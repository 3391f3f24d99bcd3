"""oclla.assemble_ad2at: C = A·diag(d2)·Aᵀ, one triangle, full and packed, both methods."""

import dataclasses

import numpy as np
import pyopencl.array as cl_array
import pytest
from scipy.linalg import lapack

import oclla
from oclla import accuracy, rfp
from oclla._device import DeviceError

DTYPES = (np.float32, np.float64)
# m straddles the gemm tiles (16..64) and both RFP parities; n >= m
SHAPES = ((1, 1), (1, 4), (2, 2), (3, 7), (15, 30), (16, 16), (17, 34), (31, 40),
          (32, 64), (33, 33), (63, 126), (64, 70), (65, 130))
PIVOT_SHAPES = ((1, 1), (2, 3), (7, 9), (16, 20), (17, 17))


@pytest.fixture(scope="module")
def queue():
    return oclla.get_queue()


def problem(m, n, dtype, seed=0):
    rng = np.random.default_rng(seed + 31 * m + n)
    return rng.random((m, n)).astype(dtype), rng.random(n).astype(dtype)


def error_units(c, a, d2):
    """max |C − C_exact| / (n·ε·(|A|·d2·|A|ᵀ)), entrywise: the inner-product error bound γ_n."""
    a64, d64 = a.astype(np.float64), d2.astype(np.float64)
    exact = (a64 * d64) @ a64.T
    bound = np.abs(a64) * np.abs(d64) @ np.abs(a64).T * a.shape[1] * accuracy.eps(c.dtype)
    nz = bound > 0
    return float(np.max(np.abs(c - exact)[nz] / bound[nz], initial=0.0))


def test_error_units_detects_a_wrong_entry():
    a, d2 = problem(10, 20, np.float32)
    exact = ((a.astype(np.float64) * d2) @ a.T.astype(np.float64)).astype(np.float32)
    assert error_units(exact, a, d2) < 1
    exact[4, 2] *= 1 + 1e-4
    assert error_units(exact, a, d2) > accuracy.THRESHOLD


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", SHAPES)
@pytest.mark.parametrize("lower", (True, False))
def test_blocked_full(queue, dtype, m, n, lower):
    a, d2 = problem(m, n, dtype)
    c = oclla.assemble_ad2at(a, d2, lower=lower, queue=queue)
    assert c.shape == (m, m) and c.dtype == dtype
    tri = np.tril(c) if lower else np.triu(c)
    assert np.array_equal(c, tri)                       # other triangle zero
    both = np.where(np.tri(m, dtype=bool) if lower else ~np.tri(m, k=-1, dtype=bool),
                    c, c.T)
    assert accuracy.passes(error_units(both, a, d2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", SHAPES)
@pytest.mark.parametrize("uplo", ("L", "U"))
def test_blocked_packed_matches_trttf_layout(queue, dtype, m, n, uplo):
    a, d2 = problem(m, n, dtype, seed=1)
    lower = uplo == "L"
    arf = oclla.assemble_ad2at(a, d2, packed=True, lower=lower, queue=queue)
    assert arf.shape == (m * (m + 1) // 2,) and arf.dtype == dtype
    tfttr = getattr(lapack, ("d" if dtype == np.float64 else "s") + "tfttr")
    full, info = tfttr(m, arf, uplo=uplo)         # LAPACK reads our layout
    assert info == 0
    sym = full + (np.tril(full, -1).T if lower else np.triu(full, 1).T)
    assert accuracy.passes(error_units(sym, a, d2))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m, n", PIVOT_SHAPES)
@pytest.mark.parametrize("packed", (False, True))
@pytest.mark.parametrize("lower", (True, False))
def test_pivot_matches_blocked(queue, dtype, m, n, packed, lower):
    a, d2 = problem(m, n, dtype, seed=2)
    c = oclla.assemble_ad2at(a, d2, packed=packed, lower=lower, method="pivot", queue=queue)
    full = rfp.unpack(c, m, lower=lower) if packed else c
    assert np.array_equal(full, np.tril(full) if lower else np.triu(full))
    sym = full + (np.tril(full, -1).T if lower else np.triu(full, 1).T)
    assert accuracy.passes(error_units(sym, a, d2))


@pytest.mark.parametrize("method", ("blocked", "pivot"))
@pytest.mark.parametrize("lower", (True, False))
def test_symmetric(queue, method, lower):
    a, d2 = problem(20, 45, np.float64)
    c = oclla.assemble_ad2at(a, d2, lower=lower, symmetric=True, method=method, queue=queue)
    assert np.array_equal(c, c.T)
    assert accuracy.passes(error_units(c, a, d2))


def test_zero_weights_and_factorable(queue):
    a, d2 = problem(30, 60, np.float64)
    d2[::2] = 0.0
    c = oclla.assemble_ad2at(a, d2, symmetric=True, queue=queue)
    assert accuracy.passes(error_units(c, a, d2))
    l = oclla.cholesky(c, lower=True, queue=queue)
    assert accuracy.passes(accuracy.cholesky_backward_error(c, l, True))


# ---- errors --------------------------------------------------------------------------------

@pytest.mark.parametrize("d2, exc, match", [
    (np.array([1.0, -0.5, 1.0, 1.0]), ValueError, r"d2 must be >= 0.*d2\[1\] = -0.5"),
    (np.array([1.0, np.nan, 1.0, 1.0]), ValueError, "d2 must be >= 0"),
    (np.array([1.0, np.inf, 1.0, 1.0]), ValueError, "infs or NaNs"),
    (np.ones(3), ValueError, r"shape \(4,\)"),
    (np.ones((4, 1)), ValueError, r"shape \(4,\)"),
    (np.array(["a", "b", "c", "d"]), TypeError, "real numbers"),
])
def test_bad_weights(queue, d2, exc, match):
    a = np.ones((2, 4))
    with pytest.raises(exc, match=match):
        oclla.assemble_ad2at(a, d2, queue=queue)


def test_bad_device_weights(queue):
    a = np.ones((2, 4), np.float32)
    d2 = cl_array.to_device(queue, np.array([1, 1, -1, 1], np.float32))
    with pytest.raises(ValueError, match=">= 0"):
        oclla.assemble_ad2at(a, d2, queue=queue)
    d2 = cl_array.to_device(queue, np.array([1, 1, np.nan, 1], np.float32))
    with pytest.raises(ValueError, match=">= 0"):
        oclla.assemble_ad2at(a, d2, queue=queue)
    with pytest.raises(TypeError, match="dtype"):
        oclla.assemble_ad2at(a, cl_array.to_device(queue, np.ones(4)), queue=queue)


def test_bad_matrix(queue):
    with pytest.raises(ValueError, match="m > n.*singular"):
        oclla.assemble_ad2at(np.ones((5, 4)), np.ones(4), queue=queue)
    with pytest.raises(ValueError, match="2-D"):
        oclla.assemble_ad2at(np.ones(4), np.ones(4), queue=queue)
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.assemble_ad2at(np.array([[1.0, np.nan]]), np.ones(2), queue=queue)
    with pytest.raises(TypeError, match="float32 or float64"):
        oclla.assemble_ad2at(np.ones((2, 3), np.int32), np.ones(3), queue=queue)
    with pytest.raises(ValueError, match="symmetric=True"):
        oclla.assemble_ad2at(np.ones((2, 3)), np.ones(3), packed=True, symmetric=True,
                             queue=queue)
    with pytest.raises(ValueError, match="method"):
        oclla.assemble_ad2at(np.ones((2, 3)), np.ones(3), method="gemm", queue=queue)


def test_float64_without_fp64(queue, monkeypatch):
    import oclla._validate as validate
    info = dataclasses.replace(oclla.device_info(queue), fp64=False)
    monkeypatch.setattr(validate, "device_info", lambda q: info)
    with pytest.raises(DeviceError, match="fp64"):
        oclla.assemble_ad2at(np.ones((2, 3)), np.ones(3), queue=queue)


def test_inputs_not_modified_and_device_arrays(queue):
    a, d2 = problem(12, 30, np.float32)
    keep_a, keep_d = a.copy(), d2.copy()
    host = oclla.assemble_ad2at(a, d2.astype(np.float64), packed=True, queue=queue)
    assert np.array_equal(a, keep_a) and np.array_equal(d2, keep_d)
    da, dd = cl_array.to_device(queue, a), cl_array.to_device(queue, d2)
    dev = oclla.assemble_ad2at(da, dd, packed=True, queue=queue)
    assert isinstance(dev, cl_array.Array)
    assert np.array_equal(dev.get(), host)
    assert np.array_equal(da.get(), a)


def test_empty(queue):
    assert oclla.assemble_ad2at(np.empty((0, 3)), np.ones(3), queue=queue).shape == (0, 0)
    assert oclla.assemble_ad2at(np.empty((0, 3)), np.ones(3), packed=True,
                                queue=queue).shape == (0,)


# ---- trace ---------------------------------------------------------------------------------

@pytest.mark.parametrize("packed", (False, True))
def test_pivot_trace(queue, packed):
    m, n = 9, 14
    a, d2 = problem(m, n, np.float32)
    with oclla.record(snapshots=True) as rec:
        c = oclla.assemble_ad2at(a, d2, packed=packed, method="pivot", queue=queue)
    run = next(r for r in rec.runs if r.algorithm == "ad2at")
    assert [s.phase for s in run.steps] == ["scale", "outer_product"] * n
    entries = m * (m + 1) // 2
    for k, s in enumerate(run.steps[1::2]):
        assert s.info["triangle_entries"] == entries
        assert s.kernels[0].global_size[0] >= entries
        assert run.steps[2 * k].region == (0, m, k, k + 1)
    expected = rfp.picture(c, m) if packed else c
    assert np.array_equal(run.result, expected)
