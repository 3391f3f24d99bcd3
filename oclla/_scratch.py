"""Scratch device memory that outlives a call: one pyopencl memory pool per queue.

A routine's work buffers (the product-form update's W, B, prefixes, row sums and its
flag; on CPU devices the device copy of a host operand, :func:`private_copy`) are
taken from the queue's pool and handed back to it when the routine drops them, so a
second call of the same shapes makes no allocation.  On NVIDIA's OpenCL driver a
buffer's allocation and release cost tens of microseconds each (the product-form
update at n = 8192, k = 16 made eight and spent 0.2-0.3 ms of its 1.8-2.4 ms on them;
benchmarks/results/nvidia-h200-2026-11-28-scratch.txt).

Reuse is safe because a pool serves one in-order queue: a buffer handed back while
kernels that use it are still queued is next written by commands enqueued after
them on that same queue.  Every scratch buffer must therefore be used on the queue
it was taken for (a twin queue of :func:`oclla._programs.launch_queue` has its own
pool), or on another queue only by commands that the queue's later commands wait for
(a twin's, inside its block; the status flags), and out-of-order queues get plain
allocations.  The pool holds at most :func:`held_limit` bytes of memory nobody uses;
beyond that it frees what it holds.
"""

from __future__ import annotations


import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pyopencl.tools as cl_tools

from ._device import device_info
from ._programs import int_array
from ._queue_state import made

#: Most bytes a queue's pool keeps unused between calls, at least: past its bound
#: (:func:`held_limit`) the pool frees what it holds before its next allocation (the
#: update's scratch at n = 16384, k = 16 in float64 is 0.28 GiB; a routine whose
#: scratch is larger, as that update's from n ≈ 22600, allocates it anew on every
#: call: 0.9 ms of host time at 567 MiB on an H200,
#: benchmarks/results/nvidia-h200-2026-11-30-chain.txt).
HELD_BYTES = 512 * 2 ** 20

#: A pool's bound is also its device's global memory over this: the packed upper
#: Cholesky of order 8192 in float64 holds a packed array, its T2 and the slabs of
#: its products, more than HELD_BYTES, and a fresh packed array each call made its
#: first copy 0.98 ms instead of 0.23 (H200,
#: benchmarks/results/nvidia-h200-2026-12-01-packed-t2.txt).
HELD_SHARE = 32


def held_limit(queue: cl.CommandQueue) -> int:
    """Most bytes the queue's pool keeps unused: HELD_BYTES, or its device's global
    memory over HELD_SHARE where that is more (an H200's 139 GiB: 4.4 GiB)."""
    return max(HELD_BYTES, device_info(queue).global_mem_size // HELD_SHARE)

#: Largest device copy of a host operand (:func:`private_copy`) taken from the pool;
#: larger ones are plain allocations, freed when the call ends.
PRIVATE_BYTES = 128 * 2 ** 20

def _pool(queue: cl.CommandQueue):
    """The queue's memory pool (None for an out-of-order queue), kept in its state
    (:mod:`oclla._queue_state`): freed with the queue once its buffers are."""
    def make():
        in_order = not (queue.properties
                        & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return cl_tools.MemoryPool(cl_tools.ImmediateAllocator(queue)) if in_order else None
    return made(queue, "pool", make)


def buffer(queue: cl.CommandQueue, nbytes: int):
    """A device buffer of at least ``nbytes`` bytes (contents undefined) for commands on
    ``queue`` only, returned to the queue's pool when it is no longer referenced."""
    pool = _pool(queue)
    if pool is None:
        return cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, max(1, nbytes))
    if pool.managed_bytes - pool.active_bytes > held_limit(queue):
        pool.free_held()
    return pool.allocate(max(1, nbytes))


def private_copy(queue: cl.CommandQueue, host: np.ndarray) -> cl_array.Array:
    """A device copy of the numpy array ``host`` (written by a blocking copy) that the
    caller computes in on ``queue`` and never hands out: on a CPU device from the
    queue's pool, up to :data:`PRIVATE_BYTES`, since a new buffer's pages cost their
    first touch there (PoCL: a 64 MB copy into a new buffer 39 ms, into a reused one
    8-9 ms; benchmarks/results/pocl-2core-epyc-2026-11-28-update-kb.txt).  Elsewhere a
    new buffer: on an H200 the pool gave nothing measurable beside the host copies
    (benchmarks/results/nvidia-h200-2026-11-28-host-copies.txt)."""
    if host.nbytes > PRIVATE_BYTES or not queue.device.type & cl.device_type.CPU:
        return cl_array.to_device(queue, host)
    return cl_array.to_device(queue, host, allocator=lambda nbytes: buffer(queue, nbytes))


_ZEROS = np.zeros(1, np.int32)


def zeroed_ints(queue: cl.CommandQueue, size: int = 1) -> cl_array.Array:
    """A device int32 array of ``size`` zeros (flags, counters) from the queue's pool,
    zeroed by a fill command on ``queue``; like every scratch buffer, for commands on
    ``queue`` and reads through it only.  The array carries the fill's event, so that
    its reads wait for the fill on an out-of-order queue too."""
    data = buffer(queue, 4 * size)
    zeroed = int_array(queue, data, size)
    zeroed.add_event(cl.enqueue_fill_buffer(queue, data, _ZEROS, 0, 4 * size))
    return zeroed
