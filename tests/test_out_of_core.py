"""Out-of-core Cholesky (oclla.out_of_core): host matrices streamed through the device.

The streamed factorization against the LAPACK backward error (< 30) on orders
straddling the panel width, both dtypes and triangles; the bytes it moves
(exactly what the left-looking schedule must move) and the profiling
statistics; failures that name LAPACK's order; the public functions under a
device-limit profile whose memory is smaller than the matrix (numpy arrays
and memory-mapped ``.npy`` files, overwrite_a, the caller's array untouched
otherwise), and the streamed solve.
"""

import numpy as np
import pytest
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy, out_of_core, tiled

from linalg_helpers import spd

#: Buffers of 1 MiB, 2 MiB of memory: a float64 matrix of order 700 (3.7 MiB) is
#: beyond the device's memory even in tiles, and streams in panels of 80 columns.


def expected_bytes(n: int, w: int, itemsize: int) -> tuple:
    """(up, down) of the left-looking schedule: each panel's triangle part up once and
    down once, and for panel j every panel k < j − 1 from row j0 on up again."""
    starts = list(range(0, n, w))
    triangle = sum((n - j0) * min(w, n - j0) for j0 in starts)
    streamed = sum((n - j0) * min(w, n - k0)
                   for j, j0 in enumerate(starts) for k0 in starts[:max(0, j - 1)])
    return (triangle + streamed) * itemsize, triangle * itemsize


@pytest.mark.parametrize("n, tile", [(1, 16), (47, 16), (48, 16), (61, 20)])
@pytest.mark.parametrize("lower", [True, False])
def test_streamed_factor(queue, dtype, n, tile, lower):
    a = spd(n, dtype)
    dest = np.zeros_like(a)
    stats = out_of_core.factor_streamed(a, dest, lower=lower, queue=queue, tile=tile,
                                        clean=True)
    assert accuracy.cholesky_backward_error(a, dest, lower) < accuracy.THRESHOLD
    assert not (np.triu(dest, 1) if lower else np.tril(dest, -1)).any()
    assert (stats.bytes_up, stats.bytes_down) == expected_bytes(n, tile, dtype.itemsize)
    assert stats.tile == min(tile, n)
    assert stats.flops == pytest.approx(n ** 3 / 3 + n ** 2 / 2 + n / 6)
    assert stats.seconds > 0 and stats.transfer_s > 0 and stats.compute_s > 0
    assert 0 <= stats.overlap_s <= min(stats.transfer_s, stats.compute_s)
    assert 0 <= stats.hidden <= 1 and stats.bandwidth_gbs > 0 and stats.gflops > 0


def test_in_place_keeps_the_other_triangle(queue):
    """src is dest (cho_factor's copy, or overwrite_a): the panels become the factor, the
    other triangle outside the diagonal tiles stays the input's."""
    a = spd(50, np.float64)
    work = a.copy()
    out_of_core.factor_streamed(work, work, lower=False, queue=queue, tile=16)
    np.testing.assert_array_equal(np.tril(work, -1), np.tril(a, -1))
    assert accuracy.cholesky_backward_error(a, work, False) < accuracy.THRESHOLD


@pytest.mark.parametrize("order", [1, 17, 50])
def test_not_positive_definite_names_the_order(queue, order):
    a = spd(50, np.float32)
    a[order - 1, order - 1] = -1.0
    for lower in (True, False):
        with pytest.raises(LinAlgError, match=f"leading minor of order {order} is not"):
            out_of_core.factor_streamed(a, np.zeros_like(a), lower=lower, queue=queue,
                                        tile=16)


def test_interval_arithmetic():
    spans = out_of_core._merge([(0, 4), (2, 6), (8, 9)])
    assert spans == [(0, 6), (8, 9)]
    assert out_of_core._union_length([(0, 4), (2, 6), (8, 9)]) == 7
    assert out_of_core._overlap(spans, [(5, 8), (8, 10)]) == 2


# ---- the public functions, on a device with less memory than the matrix ---------------


def test_plan_follows_the_device_limits(small_device):
    q = small_device
    assert out_of_core.plan_tile(q, 700, np.float64) == 80    # 0.9 · 2 MiB / (4 · 5600)
    assert out_of_core.plan_tile(q, 700, np.float64, tile=33) == 33
    with pytest.raises(oclla.DeviceError, match="4 columns of 100000 entries"):
        out_of_core.plan_tile(q, 100_000, np.float64)


@pytest.mark.parametrize("lower", [True, False])
def test_public_functions_stream_from_host_memory(small_device, lower):
    q = small_device
    n = 701
    a = spd(n, np.float64)
    assert tiled.route(a, q) == "out_of_core"
    before = a.copy()
    with oclla.record() as rec:
        c = oclla.cholesky(a, lower=lower, queue=q)
    assert [r.variant for r in rec.runs] == ["out_of_core"]
    steps = rec.runs[0].steps                    # the transfers are steps of their own
    assert sum(s.phase == "download" for s in steps) == -(-n // 80)
    assert sum(s.bytes for s in steps if s.phase in ("upload", "download")) == \
        sum(expected_bytes(n, 80, 8))
    assert accuracy.cholesky_backward_error(a, c, lower) < accuracy.THRESHOLD
    assert not (np.triu(c, 1) if lower else np.tril(c, -1)).any()
    np.testing.assert_array_equal(a, before)
    factor, low = oclla.cho_factor(a, lower=lower, queue=q)
    np.testing.assert_array_equal(np.tril(factor) if lower else np.triu(factor), c)
    np.testing.assert_array_equal(np.triu(factor, 1) if lower else np.tril(factor, -1),
                                  np.triu(a, 1) if lower else np.tril(a, -1))
    b = np.linspace(-1, 1, 3 * n).reshape(n, 3)
    with oclla.record() as rec:
        x = oclla.cho_solve((factor, low), b, queue=q)
    assert [r.variant for r in rec.runs] == ["out_of_core"]
    assert accuracy.solve_backward_error(a, x, b) < accuracy.THRESHOLD


def test_memory_mapped_input(small_device, tmp_path):
    """A .npy opened "r+" is factored in the file with overwrite_a; opened "r" it is only
    read; a failure leaves a read-only or copied input as it was."""
    q = small_device
    a = spd(700, np.float64)
    path = tmp_path / "a.npy"
    np.save(path, a)
    ref = oclla.cholesky(a, lower=True, queue=q)
    mm = np.load(path, mmap_mode="r")
    c = oclla.cholesky(mm, lower=True, overwrite_a=True, queue=q)     # not writable: a copy
    assert c is not mm
    np.testing.assert_array_equal(c, ref)
    mm = np.load(path, mmap_mode="r+")
    assert oclla.cholesky(mm, lower=True, overwrite_a=True, queue=q) is mm
    mm.flush()
    del mm
    np.testing.assert_array_equal(np.load(path), ref)
    bad = a.copy()
    bad[650, 650] = -1.0
    np.save(path, bad)
    mm = np.load(path, mmap_mode="r+")
    with pytest.raises(LinAlgError, match="leading minor of order 651 is not"):
        oclla.cho_factor(mm, queue=q)
    del mm
    np.testing.assert_array_equal(np.load(path), bad)


def test_fortran_order_and_float32(small_device):
    q = small_device
    a = spd(1000, np.float32)                     # 3.8 MiB of float32: beyond 2 MiB
    assert tiled.route(a, q) == "out_of_core"
    c = oclla.cholesky(np.asfortranarray(a), queue=q)
    assert c.flags.c_contiguous
    assert accuracy.cholesky_backward_error(a, c, False) < accuracy.THRESHOLD


@pytest.mark.parametrize("lower", [True, False])
def test_ill_conditioned(queue, dtype, lower):
    """κ₂ = 1e10 (float64) or 1e5 (float32), Haar eigenvectors: the tiled and the streamed
    factor stay backward stable."""
    a = accuracy.spd_with_condition(77, 1e10 if dtype == np.float64 else 1e5,
                                    reflections=None, rng=5, dtype=dtype)
    tm = tiled.TiledMatrix.from_numpy(a, tile=16, triangle="lower" if lower else "upper",
                                      queue=queue)
    tiled.factor_tiles(tm, lower=lower)
    assert accuracy.cholesky_backward_error(a, tm.to_numpy(), lower) < accuracy.THRESHOLD
    work = a.copy()
    out_of_core.factor_streamed(work, work, lower=lower, queue=queue, tile=20)
    assert accuracy.cholesky_backward_error(a, work, lower) < accuracy.THRESHOLD


# ---- page-locked staging ---------------------------------------------------------------


def test_pinned_and_pageable_transfers_agree(queue):
    """The same factor and the same bytes with and without the staging buffers."""
    a = spd(61, np.float32)
    pinned, pageable = np.zeros_like(a), np.zeros_like(a)
    s1 = out_of_core.factor_streamed(a, pinned, lower=True, queue=queue, tile=16)
    s2 = out_of_core.factor_streamed(a, pageable, lower=True, queue=queue, tile=16,
                                     pinned=False)
    assert s1.pinned and not s2.pinned and s2.host_copy_s == 0 and s1.host_copy_s > 0
    np.testing.assert_array_equal(pinned, pageable)
    assert (s1.bytes_up, s1.bytes_down) == (s2.bytes_up, s2.bytes_down)


def test_staging_round_trip(queue, monkeypatch):
    """Rectangles up and down through two slots, copied in row blocks by threads; an
    upload of a rectangle a pending download writes sees the downloaded values."""
    import pyopencl as cl
    from oclla import _staging
    monkeypatch.setattr(_staging, "SMALL", 16)
    copyq = tiled.copy_queue(queue)
    host = np.arange(40 * 30, dtype=np.float64).reshape(40, 30)
    out = np.zeros_like(host)
    bufs = [cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 40 * 30 * 8) for _ in range(3)]
    with _staging.Staging(copyq, 40 * 30, np.float64, slots=2, threads=3) as st:
        st.upload(bufs[0], host, 5, 7, 20, 11)
        st.download(bufs[0], out, 0, 0, 20, 11)        # out[:20, :11] = host[5:25, 7:18]
        st.upload(bufs[1], out, 0, 0, 20, 11)          # waits for that download
        st.download(bufs[1], out, 20, 19, 20, 11)
        whole = np.zeros_like(host)
        st.download(bufs[2], whole, 0, 0, 40, 30,
                    wait_for=[st.upload(bufs[2], host, 0, 0, 40, 30)])
    np.testing.assert_array_equal(out[:20, :11], host[5:25, 7:18])
    np.testing.assert_array_equal(out[20:, 19:], host[5:25, 7:18])
    np.testing.assert_array_equal(out[20:, :19], 0)
    np.testing.assert_array_equal(whole, host)


@pytest.mark.parametrize("pinned", [True, False])
@pytest.mark.parametrize("lower", [True, False])
def test_streamed_solve(queue, pinned, lower):
    """The streamed solve with and without staging: panels alternate between two device
    buffers, each upload waiting for the computation that last read its buffer."""
    import pyopencl.array as cl_array
    from oclla.blas import view_of
    a = spd(71, np.float64)
    c = np.linalg.cholesky(a) if lower else np.linalg.cholesky(a).T.copy()
    b = np.linspace(-1, 1, 71 * 3).reshape(71, 3)
    x = cl_array.to_device(queue, b)
    out_of_core.solve_streamed(c, view_of(x), 3, lower=lower, queue=queue, tile=16,
                               pinned=pinned)
    assert accuracy.solve_backward_error(a, x.get(), b) < accuracy.THRESHOLD
