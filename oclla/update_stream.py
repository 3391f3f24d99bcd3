"""The streamed rank-k update: a host factor that stays on the host, its panels
through the device (the paper's Section 4: device memory O(n·(k + PANEL))).

Panel p holds the rows R(i0:i0+nb, i0:n) of an upper factor (``lower=False``,
an nb × (n − i0) block, row pitch n − i0 on the device) or the columns
L(i0:n, i0:i0+nb) of a lower one (an (n − i0) × nb block, row pitch nb: the
kernels' lower layout, no transposition).  The blocked method's panel kernels
finish it on the device as a matrix of its own (V and the rotations stay there,
V rotated as it goes) and it comes back final: no later panel touches it.

Pipeline, double-buffered: two device panels and two pinned host staging
buffers (``ALLOC_HOST_PTR``, mapped), three in-order queues.  While the device
factors panel p (the caller's queue), panel p + 1 goes up (an upload queue,
from the pinned staging) and panel p − 1 comes down (a download queue); the
host gathers panel p + 1 from the factor into its staging buffer and scatters
panel p − 1 back, both by threads (numpy copies release the GIL); the
failure flag is copied after each panel into pinned memory too.  Events
order the queues: a panel's kernels wait for its upload, its download for its
kernels, and a staging buffer is refilled only after its previous panel came
down and was scattered.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

from . import trace
from ._device import device_info
from ._programs import flushed_marker, int_zeros
from ._validate import (NONFINITE, SUPPORTED_DTYPES, all_finite, check_dtype, check_fp64,
                        check_host_room, is_device_array)
from .cholesky import _full_region
from .update import _failure, _panel_kernels, _panel_pass, rotations, rotations_input

#: Threads that gather and scatter a panel on the host (numpy copies, GIL released).
COPY_THREADS = max(1, min(8, os.cpu_count() or 1))


def streams(c, queue) -> bool:
    """Whether :func:`oclla.cholesky_update` streams the host factor ``c``: a square
    float32 or float64 matrix larger than one buffer of the device (or than its
    memory)."""
    if is_device_array(c):
        return False
    arr = np.asarray(c)
    info = device_info(queue)
    return (arr.ndim == 2 and arr.shape[0] == arr.shape[1] and arr.dtype in SUPPORTED_DTYPES
            and arr.nbytes > min(info.max_alloc_size, info.global_mem_size))


def _copy_rows(pool, dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src, split by rows over the pool's threads."""
    cuts = np.linspace(0, dst.shape[0], min(COPY_THREADS, dst.shape[0]) + 1).astype(int)
    list(pool.map(lambda ab: np.copyto(dst[ab[0]:ab[1]], src[ab[0]:ab[1]]),
                  zip(cuts[:-1], cuts[1:])))


def stream_update(c, v, *, sign: int, lower: bool, check_finite: bool, queue,
                  overwrite_c: bool = False) -> np.ndarray:
    """The factor of A + sign·V·Vᵀ from a host factor ``c`` that stays on the host.

    ``c`` (n × n, the triangle ``lower`` names) is read a panel at a time
    (module docstring); V and the panels' rotations (or reflectors) live on the
    device.  Each entry of the triangle crosses the bus once each way.  Returns
    a new array, or ``c`` itself, modified in place, where ``overwrite_c`` allows
    and ``c`` is a writable C-contiguous numpy array of its dtype (no second
    host copy: what a factor of half the host's memory needs).  On failure
    (:class:`numpy.linalg.LinAlgError`, the order as :func:`oclla.cholesky_update`)
    a copy is discarded and ``c`` untouched; modified in place, the panels
    before the failing one are those of the partial factor and the rest is
    neither A's factor nor any other.
    """
    c_ = np.asarray(c)
    dtype = check_dtype(c_.dtype, "c")
    check_fp64(queue, dtype)
    if check_finite and not all_finite(c_):
        raise ValueError(NONFINITE)
    n = c_.shape[0]
    v_ = rotations_input(v, queue, n, dtype, check_finite=check_finite)
    in_place = (overwrite_c and c_ is c and c_.flags.writeable and c_.flags.c_contiguous
                and c_.dtype == dtype)
    if not in_place:
        check_host_room(c_.size * dtype.itemsize, f"the updated {n} x {n} factor",
                        "with overwrite_c=True a writable C-contiguous c is updated in place")
    out = c_ if in_place else np.array(c_, dtype=dtype, order="C")
    k = v_.shape[1]
    if k == 0 or n == 0:
        return out
    kernels = _panel_kernels(queue, dtype, k, lower, packed=False, sign=sign)
    step = kernels.rows
    rot, kp = rotations(queue, step, k, dtype, step, reflect=kernels.reflect)
    ctx, mf = queue.context, cl.mem_flags
    count = step * n
    panels = [cl.Buffer(ctx, mf.READ_WRITE, count * dtype.itemsize) for _ in range(2)]
    pinned = [cl.Buffer(ctx, mf.READ_WRITE | mf.ALLOC_HOST_PTR, count * dtype.itemsize)
              for _ in range(2)]
    staging = [cl.enqueue_map_buffer(queue, b, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                     (count,), dtype)[0] for b in pinned]
    upload, download = (cl.CommandQueue(ctx, queue.device) for _ in range(2))
    info = int_zeros(queue)
    starts = range(0, n, step)
    codes_buf = cl.Buffer(ctx, mf.READ_WRITE | mf.ALLOC_HOST_PTR, 4 * len(starts))
    codes = cl.enqueue_map_buffer(queue, codes_buf, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                  (len(starts),), np.int32)[0]     # info after each panel
    codes[:] = 0

    def block(i0: int, nb: int) -> np.ndarray:
        return out[i0:, i0:i0 + nb] if lower else out[i0:i0 + nb, i0:]

    def staged(s: int, i0: int, nb: int) -> np.ndarray:
        m = n - i0
        return staging[s][:nb * m].reshape((m, nb) if lower else (nb, m))

    in_flight = []                                    # (i0, nb, buffer, download event)
    try:
        with ThreadPoolExecutor(COPY_THREADS) as pool, \
                trace.run("cholesky_update", "streamed", queue, (n, k), dtype, lower=lower,
                          sign=sign, rank=k, panel=step):

            def land(i0: int, nb: int, s: int, done: cl.Event) -> None:
                done.wait()
                _copy_rows(pool, block(i0, nb), staged(s, i0, nb))

            for p, i0 in enumerate(starts):
                s, nb, m = p % 2, min(step, n - i0), n - i0
                if len(in_flight) == 2:
                    land(*in_flight.pop(0))
                _copy_rows(pool, staged(s, i0, nb), block(i0, nb))
                up = cl.enqueue_copy(upload, panels[s], staging[s][:nb * m],
                                     is_blocking=False)
                upload.flush()
                cl.enqueue_barrier(queue, wait_for=[up])
                _panel_pass(queue, kernels, panels[s], 0, nb if lower else m, m, 0, v_,
                            i0 * k, rot, kp, sign=sign, info=info,
                            region=_full_region(lower), shift=i0)
                cl.enqueue_copy(queue, codes[p:p + 1], info.data, is_blocking=False)
                in_flight.append((i0, nb, s, cl.enqueue_copy(
                    download, staging[s][:nb * m], panels[s], is_blocking=False,
                    wait_for=[flushed_marker(queue)])))
                download.flush()
            while in_flight:
                land(*in_flight.pop(0))
            queue.finish()
            nonzero = np.flatnonzero(codes)
            failed = (int(nonzero[0]), int(codes[nonzero[0]])) if nonzero.size else None
    finally:
        for ev in in_flight:
            ev[3].wait()
        queue.finish()
        for host in staging + [codes]:
            host.base.release(queue)
        queue.finish()
    if failed:
        p, code = failed
        raise _failure(starts[p] + code, sign)
    return out
