"""The device-side NaN/Inf count behind ``check_finite`` for device arrays, and host
operands read in place."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings, strategies as st

from oclla import _params, _validate
from oclla._programs import int_zeros


@pytest.mark.parametrize("runs", [0, 1])
def test_count_nonfinite_counts_every_nan_and_inf(queue, dtype, runs):
    """Both access patterns (wg1d RUNS: contiguous runs per work-item, or entries a
    launch's width apart), sizes below, at and past the launch's 64 Ki items with ragged
    ends: NaN, +Inf and -Inf at the first, the last and inner entries are each counted,
    the largest finite numbers, subnormals and zeros not, into the slot asked for."""
    _params.override("wg1d", {"RUNS": runs})
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    rng = np.random.default_rng(4)
    for n in (1, 7, 1000, 65536, 3 * 65536 + 5):
        x = rng.standard_normal(n).astype(dtype)
        x[rng.integers(0, n, 3)] = (info.max, -info.max, info.smallest_subnormal)
        bad = np.unique(np.r_[0, n - 1, rng.integers(0, n, 5)])
        x[bad] = np.resize(np.array([np.nan, np.inf, -np.inf], dtype), bad.size)
        count = int_zeros(queue, 2)
        _validate.count_nonfinite(queue, cl_array.to_device(queue, x), count, slot=1)
        assert count.get().tolist() == [0, bad.size], (n, runs)
        finite = np.where(np.isfinite(x), x, dtype.type(0))
        count = int_zeros(queue, 1)
        _validate.count_nonfinite(queue, cl_array.to_device(queue, finite), count)
        assert count.get()[0] == 0, (n, runs)


def test_read_only_reads_a_host_array_in_place_on_a_cpu(queue, dtype):
    """On a CPU device, for a call that reads its results back before it returns, a host
    operand is read where it lies (a CL_MEM_USE_HOST_PTR buffer over its memory, no copy:
    a later write to the numpy array shows through); elsewhere, and for a call whose
    results stay on the device (it returns before its kernels end), a copy.  A device
    operand is itself; a non-contiguous or misaligned host array is copied."""
    host = np.arange(24, dtype=dtype).reshape(4, 6)
    host.flags.writeable = False                 # read-only memory is enough
    on_device = _validate.read_only(queue, host, results_to_host=True)
    np.testing.assert_array_equal(on_device.get(), host)
    in_place = bool(queue.device.type & cl.device_type.CPU)
    assert bool(on_device.data.flags & cl.mem_flags.USE_HOST_PTR) == in_place
    host.flags.writeable = True
    host[1, 2] = -7
    assert (on_device.get()[1, 2] == -7) == in_place
    for results_to_host in (True, False):
        assert _validate.read_only(queue, on_device, results_to_host=results_to_host) \
            is on_device
    kept = _validate.read_only(queue, host, results_to_host=False)
    strided = np.asfortranarray(host)
    copied = _validate.read_only(queue, strided, results_to_host=True)
    raw = np.zeros(host.nbytes + 1, np.uint8)            # entries one byte off alignment
    unaligned = raw[1:].view(host.dtype).reshape(host.shape)
    unaligned[...] = host
    moved = _validate.read_only(queue, unaligned, results_to_host=True)
    for copy, source in ((kept, host), (copied, strided), (moved, unaligned)):
        assert not copy.data.flags & cl.mem_flags.USE_HOST_PTR
        np.testing.assert_array_equal(copy.get(), source)
    host[0, 0] = 99
    assert kept.get()[0, 0] == 0


def test_solves_and_products_leave_host_operands_read_in_place_unchanged(queue, dtype):
    """The routines that read host operands in place (the solves' factors, RFP
    pack/unpack, AD²Aᵀ, matmul) never write them: every bit of each operand is as it
    was, for one and for many right-hand sides (the few-column route and the GEMMs)."""
    import oclla
    from oclla import rfp
    rng = np.random.default_rng(8)
    n = 150
    x = rng.standard_normal((n, n))
    a = x.astype(dtype)
    spd = (x @ x.T / n + np.eye(n)).astype(dtype)
    lu, piv = oclla.lu_factor(a, queue=queue)
    c = oclla.cho_factor(spd, queue=queue)[0]
    arf = rfp.cholesky(rfp.pack(spd, queue=queue), n, queue=queue)
    operands = (a, spd, lu, piv, c, arf)
    before = [o.copy() for o in operands]
    for nrhs in (1, 40):
        b = rng.standard_normal((n, nrhs)).astype(dtype)
        oclla.lu_solve((lu, piv), b, queue=queue)
        oclla.lu_solve((lu, piv), b, trans=1, queue=queue)
        oclla.cho_solve((c, False), b, queue=queue)
        rfp.cho_solve((arf, True), b, queue=queue)
    rfp.pack(spd, queue=queue)
    rfp.unpack(arf, n, queue=queue)
    oclla.assemble_ad2at(a, np.ones(n, dtype), queue=queue)
    oclla.blas.matmul(a, spd, trans_a=True, queue=queue)
    for was, now in zip(before, operands):
        assert was.tobytes() == now.tobytes()


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from([(), (0,), (1,), (37,), (0, 5), (1, 1), (9, 3), (64, 17),
                              (301, 7), (5, 4, 3)]),
       dtype=st.sampled_from([np.float32, np.float64]),
       bad=st.sampled_from([None, np.nan, np.inf, -np.inf]),
       where=st.floats(0, 1), block_bytes=st.sampled_from([8, 64, 1 << 20]),
       transposed=st.booleans())
def test_all_finite_matches_numpy(shape, dtype, bad, where, block_bytes, transposed):
    """all_finite agrees with numpy's isfinite(...).all() for every shape (0-d, empty,
    3-D), layout and position of one NaN/Inf, in one block or in many shared among
    threads (CHECK_BYTES made small)."""
    arr = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    if transposed:
        arr = arr.T
    if bad is not None and arr.size:
        arr.flat[min(int(where * arr.size), arr.size - 1)] = bad
    saved = _validate.CHECK_BYTES
    _validate.CHECK_BYTES = block_bytes
    try:
        assert _validate.all_finite(arr) == bool(np.isfinite(arr).all())
    finally:
        _validate.CHECK_BYTES = saved
