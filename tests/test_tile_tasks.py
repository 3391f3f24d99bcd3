"""The tile tasks (oclla.tile_tasks): one tile Cholesky written with them against numpy,
each task on host and device tiles, LAPACK's order for a failing pivot, bad input."""

import numpy as np
import pyopencl.array as cl_array
import pytest
from numpy.linalg import LinAlgError

from oclla import accuracy, tile_tasks as tt

from linalg_helpers import spd


def tile_cholesky(a: np.ndarray, b: int) -> np.ndarray:
    """The right-looking tile Cholesky of the module docstring on host tiles."""
    n = a.shape[0]
    starts = list(range(0, n, b))
    t = {(i, j): a[i:i + b, j:j + b].copy() for i in starts for j in starts if j <= i}
    for k in starts:
        t[k, k] = tt.potrf_tile(t[k, k], base=k)
        for i in starts:
            if i > k:
                t[i, k] = tt.trsm_tile(t[k, k], t[i, k])
        for i in starts:
            if i > k:
                t[i, i] = tt.syrk_tile(t[i, k], t[i, i])
                for j in starts:
                    if k < j < i:
                        t[i, j] = tt.gemm_tile(t[i, k], t[j, k], t[i, j])
    out = np.zeros_like(a)
    for (i, j), v in t.items():
        out[i:i + b, j:j + b] = v
    return np.tril(out)


@pytest.mark.parametrize("n, b", [(1, 4), (37, 16), (48, 16)])
def test_tile_cholesky(dtype, n, b):
    a = spd(n, dtype)
    before = a.copy()
    c = tile_cholesky(a, b)
    np.testing.assert_array_equal(a, before)
    assert accuracy.cholesky_backward_error(a, c, True) < accuracy.THRESHOLD


def test_device_tiles_overwritten(queue, dtype, rng):
    a = spd(20, dtype)
    b = rng.standard_normal((9, 20)).astype(dtype)
    c = rng.standard_normal((9, 7)).astype(dtype)
    d = rng.standard_normal((7, 20)).astype(dtype)
    l_ = tt.potrf_tile(a)
    da, db, dc, dd = (cl_array.to_device(queue, x) for x in (a, b, c, d))
    assert tt.potrf_tile(da) is da
    assert tt.trsm_tile(da, db) is db
    assert tt.gemm_tile(db, dd, dc) is dc
    tol = 50 * accuracy.eps(dtype) * 20
    np.testing.assert_allclose(da.get(), l_, atol=tol)
    x = tt.trsm_tile(l_, b)
    np.testing.assert_allclose(db.get(), x, atol=tol)
    np.testing.assert_allclose(x @ l_.T, b, atol=tol)
    np.testing.assert_allclose(dc.get(), c - x @ d.T, atol=tol)
    s = spd(9, dtype)
    ds = cl_array.to_device(queue, np.tril(s))
    tt.syrk_tile(db, ds)
    np.testing.assert_allclose(np.tril(ds.get()), np.tril(s - x @ x.T), atol=tol)
    assert not np.triu(ds.get(), 1).any()


def test_failing_pivot_names_the_global_order():
    a = spd(12, np.float64)
    a[4, 4] = -1.0
    with pytest.raises(LinAlgError, match="order 105 is not positive definite"):
        tt.potrf_tile(a, base=100)


def test_bad_input(queue):
    a = spd(8, np.float64)
    with pytest.raises(ValueError, match="square"):
        tt.potrf_tile(a[:, :5])
    with pytest.raises(ValueError, match="2-D"):
        tt.potrf_tile(a[0])
    with pytest.raises(TypeError, match="share one dtype"):
        tt.trsm_tile(a, a.astype(np.float32))
    with pytest.raises(TypeError, match="mix"):
        tt.trsm_tile(a, cl_array.to_device(queue, a))
    with pytest.raises(TypeError, match="complex"):
        tt.potrf_tile(a.astype(np.complex128))
    with pytest.raises(ValueError, match="conform"):
        tt.gemm_tile(a, a[:3], a)
    with pytest.raises(ValueError, match="columns"):
        tt.trsm_tile(a, a[:, :3])
    with pytest.raises(ValueError, match="must be 8 x 8"):
        tt.syrk_tile(a, a[:3])
    bad = a.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        tt.syrk_tile(a, bad)
