"""Tiled matrices and the Cholesky factorization on them (oclla.tiled).

The factorization and the solves on tiles of sizes that straddle the matrix
order (odd orders, one tile, a last tile of one column), both dtypes, both
triangles, backward errors the LAPACK way (oclla.accuracy, < 30); TiledMatrix
round trips and every bad argument; and the public functions under a
device-limit profile whose buffers hold less than the matrix, which routes
them to tiles: factor, other triangle, solve, failures that name LAPACK's order
and leave the caller's array alone, TiledMatrix operands.
"""

import numpy as np
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy, tiled
from oclla.blas import View

from linalg_helpers import assert_fails_at_order, spd

#: A device whose buffers hold 1 MiB and whose memory is 2 MiB: a float64 matrix of
#: order 363 or more exceeds one buffer; up to about 590 its triangle fits in tiles.


def factor_and_solve(queue, a, tile, lower, triangle=None):
    """The tiled factor of ``a`` (host copy) and the solution of A·x = b for two columns."""
    tri = triangle if triangle is not None else ("lower" if lower else "upper")
    tm = tiled.TiledMatrix.from_numpy(a, tile=tile, triangle=tri, queue=queue)
    tiled.factor_tiles(tm, lower=lower, clean=True)
    b = np.random.default_rng(3).standard_normal((a.shape[0], 2)).astype(a.dtype)
    x = cl_array.to_device(queue, b)
    tiled.solve_tiles(tm, View(x.data, 0, 2), 2, lower=lower)
    return tm.to_numpy(), b, x.get()


@pytest.mark.parametrize("n, tile", [(1, 16), (31, 16), (32, 16), (33, 16), (70, 23)])
@pytest.mark.parametrize("lower", [True, False])
def test_factor_and_solve_on_tiles(queue, dtype, n, tile, lower):
    a = spd(n, dtype)
    c, b, x = factor_and_solve(queue, a, tile, lower)
    assert accuracy.cholesky_backward_error(a, c, lower) < accuracy.THRESHOLD
    assert accuracy.solve_backward_error(a, x, b) < accuracy.THRESHOLD
    other = np.triu(c, 1) if lower else np.tril(c, -1)
    assert not other.any()                      # clean: the diagonal tiles' other triangle
    np.testing.assert_allclose(c, np.linalg.cholesky(a.astype(np.float64))
                               if lower else np.linalg.cholesky(a.astype(np.float64)).T,
                               rtol=0, atol=1e-3 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("lower", [True, False])
def test_panels_uploaded_and_downloaded_as_the_factorization_goes(queue, lower):
    """source/write_to: the uninitialised tiles filled panel by panel from the host and
    each finished panel written back, on the second queue: the same factor."""
    a = spd(70, np.float32)
    tm = tiled.TiledMatrix((70, 70), np.float32, tile=16, triangle="lower" if lower else
                           "upper", queue=queue)
    out = np.full_like(a, 7.0)
    tiled.factor_tiles(tm, lower=lower, clean=True, source=a, write_to=out)
    np.testing.assert_array_equal(out, tm.to_numpy(np.full_like(a, 7.0)))
    assert accuracy.cholesky_backward_error(a, out, lower) < accuracy.THRESHOLD


def test_full_storage_factors_the_lower_triangle(queue):
    a = spd(45, np.float64)
    c, b, x = factor_and_solve(queue, a, 16, True, triangle=None)
    assert accuracy.cholesky_backward_error(a, c, True) < accuracy.THRESHOLD
    np.testing.assert_array_equal(np.triu(c, 1), 0)


@settings(max_examples=10)
@given(n=st.integers(1, 60), parts=st.integers(1, 5), lower=st.booleans())
def test_any_order_and_tile(queue, n, parts, lower):
    """Any order with any tile from n/5 to n + 5: the backward error stays below 30."""
    tile = max(1, -(-n // parts)) + (parts == 1) * 5
    a = spd(n, np.float64, seed=n)
    c, b, x = factor_and_solve(queue, a, tile, lower)
    assert accuracy.cholesky_backward_error(a, c, lower) < accuracy.THRESHOLD
    assert accuracy.solve_backward_error(a, x, b) < accuracy.THRESHOLD


def test_not_positive_definite_names_the_order(queue):
    """The failing pivot anywhere (first tile, a later one, the last entry): LAPACK's
    order, for both triangles."""
    for order in (1, 20, 37, 50):
        a = spd(50, np.float64)
        a[order - 1, order - 1] = -1.0
        for lower in (True, False):
            tm = tiled.TiledMatrix.from_numpy(a, tile=16, triangle="lower" if lower else
                                              "upper", queue=queue)
            with pytest.raises(LinAlgError,
                               match=f"leading minor of order {order} is not positive"):
                tiled.factor_tiles(tm, lower=lower)


# ---- TiledMatrix ------------------------------------------------------------------------

def test_round_trip_and_views(queue, dtype):
    a = np.arange(7 * 11, dtype=dtype).reshape(7, 11)
    tm = tiled.TiledMatrix.from_numpy(a, tile=4, queue=queue)
    assert (tm.shape, tm.dtype, tm.tile, tm.triangle) == ((7, 11), dtype, 4, None)
    assert len(tm.panels) == 3 and tm.nbytes == a.nbytes
    assert "panels=3" in repr(tm)
    np.testing.assert_array_equal(tm.to_numpy(), a)
    view = tm.view(5, 9)                         # panel 2 holds columns 8..10, ld 3
    assert view.buf is tm.panels[2].buf and (view.off, view.ld) == (5 * 3 + 1, 3)
    twin = tm.copy()
    out = np.full(a.shape, -1, dtype)
    assert twin.to_numpy(out) is out
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("triangle", ["lower", "upper"])
def test_a_triangle_stores_its_tiles_only(queue, triangle):
    a = np.arange(1, 10 * 10 + 1, dtype=np.float64).reshape(10, 10)
    tm = tiled.TiledMatrix.from_numpy(a, tile=4, triangle=triangle, queue=queue)
    blocks = np.arange(10) // 4
    keep = (blocks[:, None] >= blocks[None, :]) if triangle == "lower" else \
        (blocks[:, None] <= blocks[None, :])
    np.testing.assert_array_equal(tm.to_numpy(), np.where(keep, a, 0))
    assert tm.nbytes == tiled.tiled_bytes((10, 10), 4, 8, triangle) == keep.sum() * 8
    with pytest.raises(ValueError, match=r"entry \(0, 9\) is not stored"
                       if triangle == "lower" else r"entry \(9, 0\) is not stored"):
        tm.view(*((0, 9) if triangle == "lower" else (9, 0)))


def test_bad_arguments(queue):
    with pytest.raises(ValueError, match="triangle must be"):
        tiled.TiledMatrix((4, 4), np.float32, tile=2, triangle="both", queue=queue)
    with pytest.raises(ValueError, match="square shape"):
        tiled.TiledMatrix((4, 5), np.float32, tile=2, triangle="lower", queue=queue)
    with pytest.raises(ValueError, match="tile must be a positive"):
        tiled.TiledMatrix((4, 4), np.float32, tile=0, queue=queue)
    with pytest.raises(ValueError, match="non-negative"):
        tiled.TiledMatrix((-1, 4), np.float32, tile=2, queue=queue)
    with pytest.raises(TypeError, match="float32 or float64"):
        tiled.TiledMatrix((4, 4), np.int64, tile=2, queue=queue)
    with pytest.raises(ValueError, match="2-D"):
        tiled.TiledMatrix.from_numpy(np.ones(4), queue=queue)
    with pytest.raises(ValueError, match="infs or NaNs"):
        tiled.TiledMatrix.from_numpy(np.full((3, 3), np.nan), queue=queue)
    tm = tiled.TiledMatrix.from_numpy(np.eye(4), tile=2, triangle="lower", queue=queue)
    with pytest.raises(ValueError, match="out must be"):
        tm.to_numpy(np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError, match="triangle='upper'"):
        tiled.factor_tiles(tm, lower=False)
    with pytest.raises(ValueError, match="square matrix"):
        tiled.factor_tiles(tiled.TiledMatrix((4, 6), np.float64, tile=2, queue=queue),
                           lower=True)
    empty = tiled.TiledMatrix.from_numpy(np.zeros((0, 0)), triangle="lower", queue=queue)
    tiled.factor_tiles(empty, lower=True)
    assert empty.to_numpy().shape == (0, 0)


# ---- the public functions, on a device whose buffers are smaller than the matrix ----------


def test_route_and_tile_follow_the_device_limits(small_device):
    q = small_device
    assert tiled.route(np.eye(300), q) is None            # 0.7 MiB: one buffer
    assert tiled.route(np.eye(400), q) == "tiled"         # 1.2 MiB, tiles 1.0 MiB
    assert tiled.route(np.eye(700), q) == "out_of_core"   # tiles 2.3 MiB
    assert tiled.route(np.eye(400, dtype=np.float32), q) is None
    assert tiled.route(np.ones((400, 401)), q) is None    # not square: as_matrix refuses
    assert tiled.route(cl_array.zeros(q, (10, 10), np.float64), q) is None
    assert tiled.choose_tile(q, 400, np.float64) == 320   # 1 MiB / (400 · 8) = 327
    with pytest.raises(oclla.DeviceError, match="one column of 200000 entries"):
        tiled.choose_tile(q, 200_000, np.float64)


@pytest.mark.parametrize("lower", [True, False])
def test_public_functions_tile_a_matrix_beyond_one_buffer(small_device, lower):
    q = small_device
    n = 401                                        # 1.2 MiB of float64
    a = spd(n, np.float64)
    before = a.copy()
    with oclla.record() as rec:
        c = oclla.cholesky(a, lower=lower, queue=q)
    assert rec.runs[0].variant == "tiled" and rec.runs[0].params["tile"] == 320
    assert {s.phase for s in rec.steps} >= {"panel", "trsm", "syrk"}
    assert accuracy.cholesky_backward_error(a, c, lower) < accuracy.THRESHOLD
    assert not (np.triu(c, 1) if lower else np.tril(c, -1)).any()
    np.testing.assert_array_equal(a, before)
    factor, low = oclla.cho_factor(a, lower=lower, queue=q)
    other = (lambda m: np.triu(m, 1)) if lower else (lambda m: np.tril(m, -1))
    np.testing.assert_array_equal(other(factor), other(a))      # the input's, untouched
    np.testing.assert_array_equal(np.tril(factor) if lower else np.triu(factor), c)
    b = np.arange(2 * n, dtype=np.float64).reshape(n, 2) / n
    x = oclla.cho_solve((factor, low), b, queue=q)
    assert accuracy.solve_backward_error(a, x, b) < accuracy.THRESHOLD
    xb = oclla.cho_solve((factor, low), b[:, 0], queue=q)       # 1-D b keeps its shape
    assert xb.shape == (n,)
    np.testing.assert_allclose(xb, x[:, 0], rtol=1e-12, atol=1e-12)
    work = a.copy()
    assert oclla.cholesky(work, lower=lower, overwrite_a=True, queue=q) is work
    np.testing.assert_array_equal(work, c)


def test_failure_names_the_order_and_leaves_the_input(small_device):
    q = small_device
    a = assert_fails_at_order(q, 400, 351)         # in the second tile (320 wide)
    before = a.copy()
    a[0, 0] = np.inf
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.cho_factor(a, queue=q)
    with pytest.raises(ValueError, match="method must be"):
        oclla.cholesky(before, method="crout", queue=q)
    with pytest.raises(TypeError, match="float32 or float64"):
        oclla.cholesky(np.ones((400, 400), np.int64), queue=q)
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.cho_solve((a, True), np.ones(400), queue=q)
    with pytest.raises(ValueError, match="b has 399 rows; the matrix is 400 x 400"):
        oclla.cho_solve((before, True), np.ones(399), queue=q)


def test_tiled_matrix_operands(queue):
    """cholesky and cho_factor take a TiledMatrix (a copy, or in place with overwrite_a);
    cho_solve takes the tiled factor with host or device right-hand sides."""
    a = spd(50, np.float32)
    tm = tiled.TiledMatrix.from_numpy(a, tile=16, triangle="upper", queue=queue)
    before = tm.to_numpy()
    u = oclla.cholesky(tm, queue=queue)
    assert isinstance(u, tiled.TiledMatrix) and u is not tm
    np.testing.assert_array_equal(tm.to_numpy(), before)
    assert accuracy.cholesky_backward_error(a, u.to_numpy(), False) < accuracy.THRESHOLD
    c, low = oclla.cho_factor(tm, overwrite_a=True, queue=queue)
    assert c is tm and low is False
    b = np.ones((50, 3), np.float32)
    x = oclla.cho_solve((c, low), b, queue=queue)
    assert accuracy.solve_backward_error(a, x, b) < accuracy.THRESHOLD
    xd = oclla.cho_solve((c, low), cl_array.to_device(queue, b), queue=queue)
    np.testing.assert_array_equal(xd.get(), x)
    with pytest.raises(ValueError, match="block columns"):
        oclla.cho_solve((c, True), b, queue=queue)
    with pytest.raises(TypeError, match="astype"):
        oclla.cho_solve((c, low), b.astype(np.float64), queue=queue)


def test_a_factor_on_another_queue_of_the_context(queue):
    """cho_solve runs on the queue it is given, after the work on the factor's own."""
    import pyopencl as cl
    other = cl.CommandQueue(queue.context,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    a = spd(40, np.float64)
    tm = tiled.TiledMatrix.from_numpy(a, tile=16, triangle="lower", queue=other)
    c, low = oclla.cho_factor(tm, lower=True, overwrite_a=True, queue=queue)
    b = np.ones((40, 1))
    x = oclla.cho_solve((c, low), b, queue=queue)
    assert accuracy.solve_backward_error(a, x, b) < accuracy.THRESHOLD
