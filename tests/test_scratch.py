"""Scratch memory kept between calls (oclla/_scratch.py): reuse, zeroed flags, the bound
on held memory, out-of-order queues, a routine that takes its buffers from it, and the
private device copies of host operands (pooled; device results never)."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools
import pytest

import oclla
from oclla import _programs, _scratch, accuracy
from oclla._queue_state import state_of

from test_update import problem


@pytest.fixture
def own_queue(queue):
    """A queue of its own, so that its pool starts empty."""
    return cl.CommandQueue(queue.context, queue.device,
                           properties=cl.command_queue_properties.PROFILING_ENABLE)


def test_a_buffer_handed_back_is_reused(own_queue):
    pool = _scratch._pool(own_queue)
    first = _scratch.buffer(own_queue, 1000)
    assert pool.active_blocks == 1 and pool.held_blocks == 0
    del first
    assert pool.active_blocks == 0 and pool.held_blocks == 1
    managed = pool.managed_bytes
    again = _scratch.buffer(own_queue, 1000)
    assert pool.held_blocks == 0 and pool.managed_bytes == managed     # no new allocation
    assert again.size >= 1000


def test_zeroed_ints_are_zero_in_reused_memory(own_queue):
    data = _scratch.buffer(own_queue, 64)
    cl.enqueue_copy(own_queue, data, np.full(16, -7, np.int32))
    del data
    flags = _scratch.zeroed_ints(own_queue, 16)
    assert flags.shape == (16,) and flags.dtype == np.int32
    assert not flags.get().any()


def test_pools_hold_at_most_held_bytes(own_queue, monkeypatch):
    monkeypatch.setattr(_scratch, "HELD_BYTES", 4096)
    monkeypatch.setattr(_scratch, "HELD_SHARE", 2 ** 62)     # no share of the device's
    pool = _scratch._pool(own_queue)
    big = _scratch.buffer(own_queue, 8192)
    del big
    assert pool.managed_bytes >= 8192 and pool.active_bytes == 0
    _scratch.buffer(own_queue, 100)        # held memory past the bound is freed first
    assert pool.managed_bytes < 8192


def test_pools_hold_a_share_of_their_devices_memory(own_queue, monkeypatch):
    """The bound is the device's global memory over HELD_SHARE where that is more than
    HELD_BYTES: a pool keeps what it holds below it and frees it past it."""
    memory = oclla.device_info(own_queue).global_mem_size
    assert _scratch.held_limit(own_queue) == max(_scratch.HELD_BYTES, memory // 32)
    monkeypatch.setattr(_scratch, "HELD_BYTES", 1024)
    monkeypatch.setattr(_scratch, "HELD_SHARE", memory // 8192)     # a bound of 8 KiB
    assert 8192 <= _scratch.held_limit(own_queue) < 8192 + 8192
    pool = _scratch._pool(own_queue)
    block = _scratch.buffer(own_queue, 4096)
    del block
    _scratch.buffer(own_queue, 100)        # 4 KiB held: below the bound, kept
    assert pool.managed_bytes >= 4096
    monkeypatch.setattr(_scratch, "HELD_SHARE", memory // 2048)     # 2 KiB
    _scratch.buffer(own_queue, 100)        # past it: freed first
    assert pool.managed_bytes < 4096


def test_out_of_order_queues_get_plain_buffers(queue):
    props = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        q = cl.CommandQueue(queue.context, queue.device, properties=props)
    except cl.Error:
        pytest.skip("the device has no out-of-order queues")
    assert _scratch._pool(q) is None
    assert isinstance(_scratch.buffer(q, 100), cl.Buffer)
    assert not _scratch.zeroed_ints(q, 3).get().any()


def test_product_update_allocates_nothing_the_second_time(own_queue, dtype):
    """The product form's scratch buffers come from a pool: a second call of the same
    order and rank allocates nothing, and its result is the first call's."""
    n, k = 70, 3
    at, c, v = problem(n, k, 1, dtype, seed=4)
    dc, dv = cl_array.to_device(own_queue, c), cl_array.to_device(own_queue, v)

    def managed():
        return [_scratch._pool(q).managed_bytes for q in (own_queue, twin)]

    first = oclla.cholesky_update(dc, dv, method="product", queue=own_queue).get()
    twin = state_of(own_queue).twin                           # the update's launch queue
    pool = _scratch._pool(twin)
    assert pool.managed_bytes >= 2 * n * k * dtype.itemsize   # W and B at least
    assert pool.active_bytes == 0                             # all handed back
    before = managed()
    second = oclla.cholesky_update(dc, dv, method="product", queue=own_queue).get()
    assert managed() == before
    np.testing.assert_array_equal(first, second)
    assert accuracy.passes(accuracy.cholesky_backward_error(at, second, False))


def test_host_operands_are_copied_into_pooled_memory_on_cpus(own_queue, dtype):
    """On a CPU device a host operand's device copy (the factor's work array, a solve's
    factor and right-hand side) comes from the queue's pool and goes back to it: a
    second host call of the same shapes allocates nothing there and returns the same
    numpy result; nothing is left in use.  Other devices take new buffers (the pool
    holds the calls' flags alone)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 40))
    a = (x @ x.T + 40 * np.eye(40)).astype(dtype)
    b = rng.standard_normal((40, 3)).astype(dtype)
    pool = _scratch._pool(own_queue)
    first = oclla.cholesky(a, queue=own_queue)
    assert isinstance(first, np.ndarray)
    if not own_queue.device.type & cl.device_type.CPU:
        assert pool.managed_bytes < a.nbytes
    else:
        assert pool.managed_bytes >= a.nbytes
    assert pool.active_bytes == 0
    managed = pool.managed_bytes
    second = oclla.cholesky(a, queue=own_queue)
    np.testing.assert_array_equal(first, second)
    assert pool.managed_bytes == managed                 # the second made nothing new
    x1 = oclla.cho_solve((first, False), b, queue=own_queue)
    managed = pool.managed_bytes          # the factor, b and the solve's own scratch
    x2 = oclla.cho_solve((first, False), b, queue=own_queue)
    np.testing.assert_array_equal(x1, x2)
    assert pool.active_bytes == 0
    assert pool.managed_bytes == managed
    assert accuracy.passes(accuracy.solve_backward_error(a, x2, b))


def test_large_host_operands_get_their_own_buffers(own_queue, monkeypatch):
    """A host operand larger than PRIVATE_BYTES is copied into a buffer of its own,
    freed with the call: the pool keeps none of it."""
    monkeypatch.setattr(_scratch, "PRIVATE_BYTES", 1024)
    a = 50 * np.eye(30) + np.ones((30, 30))
    pool = _scratch._pool(own_queue)
    r = oclla.cholesky(a, queue=own_queue)
    assert pool.managed_bytes < a.nbytes
    assert accuracy.passes(accuracy.cholesky_backward_error(a, r, False))


def test_device_results_are_never_pooled(own_queue):
    """A device operand's result is the caller's: not a pooled block (a pooled block
    dropped while another queue still reads it could be handed out again)."""
    a = cl_array.to_device(own_queue, 50 * np.eye(30) + np.ones((30, 30)))
    r = oclla.cholesky(a, queue=own_queue)
    assert isinstance(r, cl_array.Array)
    assert not isinstance(r.base_data, cl_tools.PooledBuffer)


def test_int_arrays_match_pyopencl_s_checked_constructor(queue):
    """The flags and counters are made by pyopencl's fast constructor: the same array as
    its checking one gives, zeroed, on the queue."""
    for made in (_scratch.zeroed_ints(queue, 3), _programs.int_zeros(queue, 3)):
        like = cl_array.Array(queue, 3, np.int32, data=made.data)
        assert (made.shape, made.strides, made.size, made.nbytes, made.dtype) == \
            (like.shape, like.strides, like.size, like.nbytes, like.dtype)
        assert made.queue is queue and made.context == queue.context
        assert made.get().tolist() == [0, 0, 0]
