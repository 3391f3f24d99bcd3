"""Out-of-core LU (oclla.out_of_core_lu): host matrices streamed through the device.

The streamed factorization against the LAPACK backward error (< 30) and
scipy's pivots on orders straddling the block width, both dtypes; the bytes
it moves (exactly what the left-looking schedule must move); exactly singular
input (LAPACK's info, lu_factor's warning); the streamed solve; the public
functions under a device-limit profile whose memory is smaller than the
matrix's tiles (numpy arrays, Fortran order, memory-mapped ``.npy`` files,
overwrite_a, the caller's array untouched otherwise).
"""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, strategies as st
from scipy.linalg import LinAlgWarning

import oclla
from oclla import accuracy, out_of_core_lu, tiled_lu


def general(n: int, dtype, seed: int = 0) -> np.ndarray:
    """A seeded Gaussian matrix: its pivots are distinct (no ties in magnitude)."""
    return np.random.default_rng(seed).standard_normal((n, n)).astype(dtype)


def expected_bytes(n: int, w: int, itemsize: int) -> tuple:
    """(up, down): every block column up once and down once, and for block column j
    every block column k < j − 1 from row k0 on up again."""
    starts = list(range(0, n, w))
    streamed = sum((n - k0) * min(w, n - k0)
                   for j in range(len(starts)) for k0 in starts[:max(0, j - 1)])
    return (n * n + streamed) * itemsize, n * n * itemsize


@pytest.mark.parametrize("n, tile", [(1, 16), (47, 16), (48, 16), (61, 20)])
def test_streamed_factor(queue, dtype, n, tile):
    a = general(n, dtype, seed=n)
    work = a.copy()
    piv, info, stats = out_of_core_lu.factor_streamed(work, queue=queue, tile=tile)
    assert info == 0 and piv.dtype == np.int32
    assert accuracy.lu_backward_error(a, work, piv) < accuracy.THRESHOLD
    ref, ref_piv = scipy.linalg.lu_factor(a)
    np.testing.assert_array_equal(piv, ref_piv)
    if dtype == np.float64:
        np.testing.assert_allclose(work, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
    assert (stats.bytes_up, stats.bytes_down) == expected_bytes(n, tile, dtype.itemsize)
    assert stats.tile == min(tile, n)
    assert stats.flops == pytest.approx(2 * n ** 3 / 3 - n ** 2 / 2 - n / 6)
    assert stats.seconds > 0 and stats.transfer_s > 0 and stats.compute_s > 0
    assert 0 <= stats.overlap_s <= min(stats.transfer_s, stats.compute_s)


@given(n=st.integers(1, 60), tile=st.integers(1, 24), seed=st.integers(0, 2**32 - 1),
       double=st.booleans())
def test_property_random_orders_and_tiles(queue, n, tile, seed, double):
    dtype = np.float64 if double else np.float32
    a = np.random.default_rng(seed).uniform(-1, 1, (n, n)).astype(dtype)
    work = a.copy()
    piv, info, _ = out_of_core_lu.factor_streamed(work, queue=queue, tile=tile)
    assert info == 0
    assert accuracy.lu_backward_error(a, work, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, scipy.linalg.lu_factor(a)[1])


def test_pinned_and_pageable_transfers_agree(queue):
    a = general(61, np.float32, seed=3)
    pinned, pageable = a.copy(), a.copy()
    p1, _, s1 = out_of_core_lu.factor_streamed(pinned, queue=queue, tile=16)
    p2, _, s2 = out_of_core_lu.factor_streamed(pageable, queue=queue, tile=16, pinned=False)
    assert s1.pinned and not s2.pinned and s2.host_copy_s == 0
    np.testing.assert_array_equal(pinned, pageable)
    np.testing.assert_array_equal(p1, p2)
    assert (s1.bytes_up, s1.bytes_down) == (s2.bytes_up, s2.bytes_down)


@pytest.mark.parametrize("column", [0, 20, 33, 60])
def test_singular_gives_lapacks_info(queue, column):
    """A zero column c makes U's diagonal entry c exactly zero: info c + 1, as scipy's
    getrf; the factorization goes on (the rest of the factor as LAPACK's)."""
    a = general(61, np.float64, seed=column)
    a[:, column] = 0.0
    work = a.copy()
    piv, info, _ = out_of_core_lu.factor_streamed(work, queue=queue, tile=16)
    ref, ref_piv, ref_info = scipy.linalg.lapack.dgetrf(a)
    assert info == ref_info == column + 1
    np.testing.assert_array_equal(piv, ref_piv)
    np.testing.assert_allclose(work, ref, rtol=0, atol=1e-10 * np.abs(ref).max())


@pytest.mark.parametrize("pinned", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
def test_streamed_solve(queue, dtype, trans, pinned):
    """The streamed solve, both transposes, with and without staging: block columns
    alternate between two device buffers."""
    import pyopencl.array as cl_array
    from oclla.blas import view_of
    n = 61
    a = general(n, dtype, seed=7)
    lu, piv = scipy.linalg.lu_factor(a)
    b = np.linspace(-1, 1, 3 * n).reshape(n, 3).astype(dtype)
    x = cl_array.to_device(queue, b)
    out_of_core_lu.solve_streamed(lu, cl_array.to_device(queue, piv.astype(np.int32)).data,
                                  view_of(x), 3, trans=trans, queue=queue, tile=16,
                                  pinned=pinned)
    assert accuracy.solve_backward_error(a if trans == 0 else a.T, x.get(), b) \
        < accuracy.THRESHOLD


def test_interchanges_are_lapacks_order():
    rows = out_of_core_lu._interchanges(np.array([2, 2, 3]), 4)
    a = np.arange(4)
    for i, p in enumerate([2, 2, 3]):
        a[[i, p]] = a[[p, i]]
    np.testing.assert_array_equal(rows, a)


# ---- the public function, on a device with less memory than the matrix's tiles ---------


def test_route(small_device):
    q = small_device
    assert out_of_core_lu.route(general(300, np.float64), q) is None      # one buffer
    assert out_of_core_lu.route(general(400, np.float64), q) is None      # tiles fit
    assert tiled_lu.route(general(400, np.float64), q) == "tiled"
    assert out_of_core_lu.route(general(501, np.float64), q) == "out_of_core"
    assert out_of_core_lu.route(general(501, np.float32), q) is None
    with pytest.raises(oclla.DeviceError, match="4 columns of 60000 entries"):
        out_of_core_lu.route(np.broadcast_to(1.0, (60_000, 60_000)), q)   # no memory


def test_lu_factor_streams_from_host_memory(small_device):
    q = small_device
    n = 501
    a = general(n, np.float64, seed=1)
    before = a.copy()
    with oclla.record() as rec:
        lu, piv = oclla.lu_factor(a, queue=q)
    assert [r.variant for r in rec.runs] == ["out_of_core"]
    steps = rec.runs[0].steps
    assert sum(s.phase == "panel" for s in steps) == -(-n // 112)
    np.testing.assert_array_equal(a, before)                   # the caller's array untouched
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, scipy.linalg.lu_factor(a)[1])
    b = np.linspace(-1, 1, 2 * n).reshape(n, 2)
    for trans in (0, 1):
        with oclla.record() as rec:
            x = oclla.lu_solve((lu, piv), b, trans=trans, queue=q)
        assert [r.variant for r in rec.runs] == [f"out_of_core trans={trans}"]
        assert accuracy.solve_backward_error(a if trans == 0 else a.T, x, b) \
            < accuracy.THRESHOLD
    with pytest.raises(ValueError, match=r"piv entries must lie in \[0, 501\)"):
        oclla.lu_solve((lu, piv + 1), b, queue=q)
    work = a.copy()
    lu2, piv2 = oclla.lu_factor(work, overwrite_a=True, queue=q)
    assert lu2 is work
    np.testing.assert_array_equal(lu2, lu)
    np.testing.assert_array_equal(piv2, piv)


def test_fortran_order_float32_and_singular(small_device):
    q = small_device
    a = general(701, np.float32, seed=2)                       # 1.9 MiB of tiles: streamed
    assert out_of_core_lu.route(a, q) == "out_of_core"
    lu, piv = oclla.lu_factor(np.asfortranarray(a), queue=q)
    assert lu.flags.c_contiguous
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    a[:, 650] = 0.0
    with pytest.warns(LinAlgWarning, match="Diagonal number 651 is exactly zero"):
        lu, piv = oclla.lu_factor(a, queue=q)
    assert lu[650, 650] == 0
    with pytest.raises(ValueError, match="partial pivoting only"):
        oclla.lu_factor(a, pivoting="none", queue=q)
    a[3, 3] = np.nan
    with pytest.raises(ValueError):
        oclla.lu_factor(a, queue=q)


def test_memory_mapped_input(small_device, tmp_path):
    """A .npy opened "r+" is factored in the file with overwrite_a; opened "r" it is only
    read."""
    q = small_device
    a = general(501, np.float64, seed=4)
    path = tmp_path / "a.npy"
    np.save(path, a)
    ref, ref_piv = oclla.lu_factor(a, queue=q)
    mm = np.load(path, mmap_mode="r")
    lu, piv = oclla.lu_factor(mm, overwrite_a=True, queue=q)        # not writable: a copy
    assert lu is not mm
    np.testing.assert_array_equal(lu, ref)
    np.testing.assert_array_equal(piv, ref_piv)
    mm = np.load(path, mmap_mode="r+")
    lu, piv = oclla.lu_factor(mm, overwrite_a=True, queue=q)
    assert lu is mm
    mm.flush()
    del mm, lu
    np.testing.assert_array_equal(np.load(path), ref)
