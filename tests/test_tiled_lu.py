"""LU with partial pivoting on tiles (oclla.tiled_lu): the factor against the LAPACK
backward error and scipy's pivots on orders straddling the tile, both dtypes; LAPACK's
info for a zero pivot; the solves (trans 0, 1, 2); the public lu_factor / lu_solve
routed to tiles under a device-limit profile, TiledMatrix inputs, bad input."""

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.linalg as sl
from scipy.linalg import LinAlgWarning

import oclla
from oclla import accuracy, tiled, tiled_lu


def general(n, dtype, seed=0):
    return np.random.default_rng(seed + n).standard_normal((n, n)).astype(dtype)


@pytest.mark.parametrize("n, tile", [(1, 16), (47, 16), (48, 16), (61, 20)])
def test_factor_tiles(queue, dtype, n, tile):
    a = general(n, dtype)
    tm = tiled.TiledMatrix.from_numpy(a, tile=tile, queue=queue)
    piv, info = tiled_lu.factor_lu_tiles(tm)
    lu = tm.to_numpy()
    assert info == 0
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
    assert np.abs(np.tril(lu, -1)).max(initial=0) <= 1


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_solve_tiles(queue, dtype, trans):
    n = 53
    a = general(n, dtype, seed=3)
    b = np.random.default_rng(1).standard_normal((n, 4)).astype(dtype)
    tm = tiled.TiledMatrix.from_numpy(a, tile=16, queue=queue)
    piv, _ = tiled_lu.factor_lu_tiles(tm)
    x = oclla.lu_solve((tm, piv), b, trans=trans, queue=queue)
    assert accuracy.solve_backward_error(a.T if trans else a, x, b) < accuracy.THRESHOLD


def test_zero_pivot_gives_lapack_info(queue):
    a = general(40, np.float64)
    a[:, 21] = 0.0                                  # column 21 in the second tile
    tm = tiled.TiledMatrix.from_numpy(a, tile=16, queue=queue)
    piv, info = tiled_lu.factor_lu_tiles(tm)
    assert info == 22
    with pytest.warns(LinAlgWarning):
        np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
    with pytest.warns(LinAlgWarning, match="Diagonal number 22 is exactly zero"):
        oclla.lu_factor(tiled.TiledMatrix.from_numpy(a, tile=16, queue=queue), queue=queue)


def test_tiled_matrix_input_kept_unless_overwritten(queue):
    a = general(37, np.float32)
    tm = tiled.TiledMatrix.from_numpy(a, tile=16, queue=queue)
    lu, piv = oclla.lu_factor(tm, queue=queue)
    assert isinstance(lu, tiled.TiledMatrix) and lu is not tm and piv.dtype == np.int32
    np.testing.assert_array_equal(tm.to_numpy(), a)
    assert oclla.lu_factor(tm, overwrite_a=True, queue=queue)[0] is tm
    np.testing.assert_array_equal(tm.to_numpy(), lu.to_numpy())


# ---- the public functions on a device whose buffers are smaller than the matrix -----------


def test_public_functions_take_tiles(small_device):
    q = small_device
    n = 401                                        # 1.23 MiB of float64: beyond a buffer
    a = general(n, np.float64)
    before = a.copy()
    assert tiled_lu.route(a, q) == "tiled"
    with oclla.record() as rec:
        lu, piv = oclla.lu_factor(a, queue=q)
    assert [r.variant for r in rec.runs] == ["tiled"]
    assert isinstance(lu, np.ndarray) and piv.dtype == np.int32
    np.testing.assert_array_equal(a, before)
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
    b = np.linspace(-1, 1, 2 * n).reshape(n, 2)
    for trans in (0, 1):
        x = oclla.lu_solve((lu, piv), b, trans=trans, queue=q)
        assert accuracy.solve_backward_error(a.T if trans else a, x, b) < accuracy.THRESHOLD
    x = oclla.lu_solve((lu, cl_array.to_device(q, piv)), b[:, 0], queue=q)
    assert x.shape == (n,)
    assert accuracy.solve_backward_error(a, x, b[:, 0]) < accuracy.THRESHOLD


def test_float32_and_bad_input(small_device):
    q = small_device
    a = general(650, np.float32)                   # 1.6 MiB of float32
    lu, piv = oclla.lu_factor(a, queue=q)
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    with pytest.raises(ValueError, match="partial pivoting only"):
        oclla.lu_factor(a, method="pivot", queue=q)
    bad = a.copy()
    bad[3, 600] = np.inf
    with pytest.raises(ValueError, match="NaN"):
        oclla.lu_factor(bad, queue=q)
    with pytest.raises(ValueError, match=r"piv entries must lie in \[0, 650\)"):
        oclla.lu_solve((lu, piv + 1), np.ones(650, np.float32), queue=q)
    with pytest.raises(oclla.DeviceError, match="4 columns of 100000 entries"):
        oclla.lu_factor(np.broadcast_to(0.0, (100_000, 100_000)), queue=q)   # no memory
    with pytest.raises(ValueError, match="full storage"):
        tiled_lu.factor_lu_tiles(tiled.TiledMatrix((20, 20), np.float32, tile=8,
                                                   triangle="lower", queue=q))


def test_panels_wider_than_the_block(queue):
    """Tile columns wider than the LU's block width NB are factored in sub-panels of NB
    (the panel kernels, the grid kernel above all, are built for panels that narrow)."""
    from oclla import _params
    _params.override("lu", dict(NB=8))
    a = general(77, np.float32, seed=9)
    tm = tiled.TiledMatrix.from_numpy(a, tile=40, queue=queue)
    piv, info = tiled_lu.factor_lu_tiles(tm)
    assert info == 0
    assert accuracy.lu_backward_error(a, tm.to_numpy(), piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
