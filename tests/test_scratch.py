"""Scratch memory kept between calls (oclla/_scratch.py): reuse, zeroed flags, the bound
on held memory, out-of-order queues, and a routine that takes its buffers from it."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import oclla
from oclla import _programs, _scratch, accuracy

from test_update import problem


@pytest.fixture
def own_queue(queue):
    """A queue of its own, so that its pool starts empty."""
    q = cl.CommandQueue(queue.context, queue.device,
                        properties=cl.command_queue_properties.PROFILING_ENABLE)
    yield q
    _scratch._pools.pop(q, None)


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
    pool = _scratch._pool(own_queue)
    big = _scratch.buffer(own_queue, 8192)
    del big
    assert pool.managed_bytes >= 8192 and pool.active_bytes == 0
    _scratch.buffer(own_queue, 100)        # held memory past the bound is freed first
    assert pool.managed_bytes < 8192
    _scratch.free_held()
    assert pool.held_blocks == 0


def test_out_of_order_queues_get_plain_buffers(queue):
    props = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        q = cl.CommandQueue(queue.context, queue.device, properties=props)
    except cl.Error:
        pytest.skip("the device has no out-of-order queues")
    try:
        assert _scratch._pool(q) is None
        assert isinstance(_scratch.buffer(q, 100), cl.Buffer)
        assert not _scratch.zeroed_ints(q, 3).get().any()
    finally:
        _scratch._pools.pop(q, None)


def test_product_update_allocates_nothing_the_second_time(own_queue, dtype):
    """The product form's scratch buffers come from a pool: a second call of the same
    order and rank allocates nothing, and its result is the first call's."""
    n, k = 70, 3
    at, c, v = problem(n, k, 1, dtype, seed=4)
    dc, dv = cl_array.to_device(own_queue, c), cl_array.to_device(own_queue, v)

    def managed():
        return {q: p.managed_bytes for q, p in _scratch._pools.items() if p is not None}

    first = oclla.cholesky_update(dc, dv, method="product", queue=own_queue).get()
    pool = _scratch._pools[_programs._twins[own_queue]]      # the update's launch queue
    assert pool.managed_bytes >= 2 * n * 16 * dtype.itemsize  # W and B at least
    assert pool.active_bytes == 0                             # all handed back
    before = managed()
    second = oclla.cholesky_update(dc, dv, method="product", queue=own_queue).get()
    assert managed() == before
    np.testing.assert_array_equal(first, second)
    assert accuracy.passes(accuracy.cholesky_backward_error(at, second, False))
    _scratch._pools.pop(_programs._twins.get(own_queue), None)
