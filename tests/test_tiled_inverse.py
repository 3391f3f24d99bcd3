"""The inverse and log-determinant on tiles (oclla.tiled_inverse).

TRTRI and LAUUM on TiledMatrix factors (L in block columns, U in block rows)
whose tiles straddle the order (odd orders, one tile, a last tile of one
column), both dtypes, the inverse's accuracy by oclla.accuracy.inverse_error
(< 30), the log-determinant against numpy's slogdet; the public functions under
a device-limit profile whose buffers hold less than the matrix (routed to
tiles), TiledMatrix operands, and every failure: LAPACK's order in the
LinAlgError, the caller's arrays untouched.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy, tiled, tiled_inverse

from linalg_helpers import assert_fails_at_order, spd


def lower_factor(a):
    """numpy's Cholesky factor of ``a`` in its dtype, with garbage above the diagonal
    (the tiled inverse must neither read it nor leave it)."""
    low = np.linalg.cholesky(a.astype(np.float64)).astype(a.dtype)
    return low + np.triu(np.full_like(low, 5.0), 1)


def symmetric(lower_triangle):
    return np.tril(lower_triangle) + np.tril(lower_triangle, -1).T


def assert_diagonal_tiles_lower(result, tile):
    """The strict upper triangle of every diagonal tile is zero (the garbage is gone)."""
    for k0 in range(0, result.shape[0], tile):
        np.testing.assert_array_equal(np.triu(result[k0:k0 + tile, k0:k0 + tile], 1), 0)


def slogdet(a):
    sign, value = np.linalg.slogdet(a.astype(np.float64))
    assert sign == 1
    return value


@pytest.mark.parametrize("n, tile", [(1, 16), (31, 16), (32, 16), (33, 16), (70, 23)])
@pytest.mark.parametrize("triangle", ["lower", None, "upper"])
def test_inverse_and_logdet_on_tiles(queue, dtype, n, tile, triangle):
    """Lower storage holds L, upper storage U = Lᵀ (compared here transposed)."""
    a = spd(n, dtype)
    c = lower_factor(a)
    as_lower = (lambda m: m.T) if triangle == "upper" else (lambda m: m)
    tm = tiled.TiledMatrix.from_numpy(as_lower(c), tile=tile, triangle=triangle, queue=queue)
    logdet = tiled_inverse.logdet_tiles(tm)
    assert logdet == pytest.approx(slogdet(a), rel=1e-5 if dtype == np.float32 else 1e-12,
                                   abs=1e-4 if dtype == np.float32 else 1e-12)
    x = tm.copy()
    tiled_inverse.invert_tiles(x, product=False)
    xl = as_lower(x.to_numpy())
    assert accuracy.passes(accuracy.inverse_error(np.tril(c), np.tril(xl)))
    assert_diagonal_tiles_lower(xl, tile)
    tiled_inverse.invert_tiles(tm)
    r = as_lower(tm.to_numpy())
    assert_diagonal_tiles_lower(r, tile)
    assert accuracy.passes(accuracy.inverse_error(a, symmetric(r)))


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 60), parts=st.integers(1, 5), lower=st.booleans())
def test_any_order_and_tile(queue, n, parts, lower):
    tile = max(1, -(-n // parts))
    a = spd(n, np.float64, seed=n)
    c = lower_factor(a)
    tm = tiled.TiledMatrix.from_numpy(c if lower else c.T, tile=tile,
                                      triangle="lower" if lower else "upper", queue=queue)
    assert tiled_inverse.logdet_tiles(tm) == pytest.approx(slogdet(a), rel=1e-12, abs=1e-12)
    tiled_inverse.invert_tiles(tm)
    r = tm.to_numpy()
    assert accuracy.passes(accuracy.inverse_error(a, symmetric(r if lower else r.T)))


def test_zero_on_the_diagonal_is_found_before_anything_is_written(queue):
    a = spd(50, np.float64)
    c = lower_factor(a)
    c[37, 37] = 0.0
    c[45, 45] = 0.0
    tm = tiled.TiledMatrix.from_numpy(c, tile=16, triangle="lower", queue=queue)
    before = tm.to_numpy()
    with pytest.raises(LinAlgError, match="singular matrix: diagonal entry 38 is zero"):
        tiled_inverse.invert_tiles(tm)
    np.testing.assert_array_equal(tm.to_numpy(), before)
    assert tiled_inverse.logdet_tiles(tm) == -np.inf


def test_tiled_matrix_operands(queue, dtype):
    """cho_inverse, inv_spd and cho_logdet take a lower TiledMatrix: a copy, or the matrix
    itself with overwrite; the upper triangle is refused."""
    a = spd(45, dtype)
    c = lower_factor(a)
    tm = tiled.TiledMatrix.from_numpy(c, tile=16, triangle="lower", queue=queue)
    before = tm.to_numpy()
    inv = oclla.cho_inverse((tm, True), queue=queue)
    assert isinstance(inv, tiled.TiledMatrix) and inv is not tm
    np.testing.assert_array_equal(tm.to_numpy(), before)
    assert accuracy.passes(accuracy.inverse_error(a, symmetric(inv.to_numpy())))
    assert oclla.cho_logdet((tm, True), queue=queue) == pytest.approx(slogdet(a), rel=1e-5)
    assert oclla.cho_inverse((tm, True), overwrite_c=True, queue=queue) is tm
    np.testing.assert_array_equal(tm.to_numpy(), inv.to_numpy())
    ta = tiled.TiledMatrix.from_numpy(a, tile=16, triangle="lower", queue=queue)
    spd_inv = oclla.inv_spd(ta, lower=True, queue=queue)
    np.testing.assert_array_equal(np.tril(ta.to_numpy()), np.tril(a))
    assert accuracy.passes(accuracy.inverse_error(a, symmetric(spd_inv.to_numpy())))
    upper = tiled.TiledMatrix.from_numpy(c.T, tile=16, triangle="upper", queue=queue)
    inv_u = oclla.cho_inverse((upper, False), queue=queue)
    np.testing.assert_allclose(inv_u.to_numpy().T, inv.to_numpy(),
                               rtol=1e-4 if dtype == np.float32 else 1e-12)
    tu = tiled.TiledMatrix.from_numpy(a, tile=16, triangle="upper", queue=queue)
    assert oclla.inv_spd(tu, overwrite_a=True, queue=queue) is tu
    assert accuracy.passes(accuracy.inverse_error(a, symmetric(tu.to_numpy().T)))
    with pytest.raises(ValueError, match="block columns"):
        oclla.cho_inverse((upper, True), queue=queue)
    with pytest.raises(ValueError, match="block rows"):
        oclla.inv_spd(ta, lower=False, queue=queue)
    with pytest.raises(ValueError, match="method must be"):
        oclla.cho_inverse((tm, True), method="lu", queue=queue)


# ---- the public functions, on a device whose buffers are smaller than the matrix ----------

@pytest.mark.parametrize("dtype_, n", [(np.float64, 401), (np.float32, 521)])
@pytest.mark.parametrize("lower", [True, False])
def test_public_functions_beyond_one_buffer(small_device, dtype_, n, lower):
    q = small_device
    assert tiled.route(np.eye(n, dtype=dtype_), q) == "tiled"
    a = spd(n, dtype_)
    low = lower_factor(a)
    c = low if lower else low.T.copy()
    c_before, a_before = c.copy(), a.copy()
    with oclla.record() as rec:
        inv = oclla.cho_inverse((c, lower), queue=q)
    assert [(r.algorithm, r.variant) for r in rec.runs] == [("cho_inverse", "tiled")]
    assert {s.phase for s in rec.steps} >= {"check", "trmm", "trsm", "trti2", "lauu2", "syrk"}
    tile = tiled.choose_tile(q, n, dtype_)
    assert {s.region[:3:2] for s in rec.steps if s.phase == "trti2"} == {(0, 0), (tile, tile)}
    assert all(0 <= r0 <= r1 <= n and 0 <= c0 <= c1 <= n
               for r0, r1, c0, c1 in (s.region for s in rec.steps))
    assert all(s.kernels for s in rec.steps)
    np.testing.assert_array_equal(inv, inv.T)
    assert accuracy.passes(accuracy.inverse_error(a, inv))
    half = oclla.cho_inverse((c, lower), full=False, queue=q)
    np.testing.assert_array_equal(half, np.tril(inv) if lower else np.triu(inv))
    both = oclla.inv_spd(a, lower=lower, queue=q)
    assert accuracy.passes(accuracy.inverse_error(a, both))
    logdet = oclla.cho_logdet((c, lower), queue=q)
    assert logdet == pytest.approx(slogdet(a), rel=1e-5 if dtype_ == np.float32 else 1e-12)
    np.testing.assert_array_equal(c, c_before)
    np.testing.assert_array_equal(a, a_before)


def test_failures_beyond_one_buffer_name_lapacks_order(small_device):
    q = small_device
    n = 401
    a_before = assert_fails_at_order(q, n, 351, routine=oclla.inv_spd)  # in the second tile
    c = lower_factor(spd(n, np.float64))
    c[200, 200] = 0.0
    c[390, 390] = 0.0
    c_before = c.copy()
    for lower, m in ((True, c), (False, c.T.copy())):
        with pytest.raises(LinAlgError, match="singular matrix: diagonal entry 201 is zero"):
            oclla.cho_inverse((m, lower), queue=q)
    np.testing.assert_array_equal(c, c_before)
    assert oclla.cho_logdet((c, True), queue=q) == -np.inf
    c[5, 7] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.cho_inverse((c, True), queue=q)
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.cho_logdet((c, True), queue=q)
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.inv_spd(np.where(np.eye(n) > 0, np.inf, a_before), queue=q)
    with pytest.raises(TypeError, match="float32 or float64"):
        oclla.inv_spd(np.ones((n, n), np.int64), queue=q)
    big = spd(700, np.float64)                      # its triangle's tiles: 2.3 MiB
    with pytest.raises(oclla.DeviceError, match="does not fit the device's memory"):
        oclla.inv_spd(big, queue=q)
    with pytest.raises(oclla.DeviceError, match="does not fit the device's memory"):
        oclla.cho_inverse((big, False), queue=q)
    assert oclla.cho_logdet((big, True), queue=q) == pytest.approx(
        2 * np.log(np.diagonal(big)).sum(), rel=1e-12)      # only its diagonal is sent
