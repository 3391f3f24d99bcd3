"""LU with partial pivoting over several OpenCL devices of one context.

The matrix is a :class:`oclla.multi_device.MultiTiles` in full storage: tile
column p (every row) on device ``p mod D``.  Right-looking over the tile
columns, as :mod:`oclla.tiled_lu` on one device, with one panel of
look-ahead::

    owner(0) factors tile column 0          (the blocked LU's panel kernels)
    for each tile column k (columns K, rows R = k0 .. n, R' below K):
        every other device that owns a tile column receives L[R, K] and the
        panel's pivots through page-locked host memory
        (:class:`oclla.multi_device.Relay` in row chunks, after the owner's event;
        the buffers are the MultiTiles' :class:`~oclla.multi_device.Exchange`)
        on each device, for its own tile columns q ≠ k:
            rows interchanged by panel k's pivots                  (laswp)
            for q > k, the next one first:
                A[K, Q]  = L[K, K]⁻¹·A[K, Q]                      (TRSM)
                A[R', Q] -= L[R', K]·A[K, Q]                       (GEMM)
                if q = k + 1: factor tile column q now             (look-ahead)
        the owner of k waits for the download of k before it interchanges
        rows of tile column k again (step k + 1's laswp)

The result has :func:`scipy.linalg.lu_factor`'s layout; LAPACK's info (the
first exactly zero diagonal entry of U) comes back with the pivots.
:func:`lu_factor` factors a host matrix.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import trace
from ._device import driver_errors
from ._programs import int_zeros
from .blas import gemm, laswp, trsm
from .multi_device import SLOTS, MultiTiles, lanes
from .tiled import Panel
from .tiled_lu import factor_panel, first_failure, panel_rows


__all__ = ["factor_lu_multi", "lu_factor"]


def factor_lu_multi(mt: MultiTiles) -> tuple:
    """P·A = L·U of a full-storage :class:`oclla.multi_device.MultiTiles` in place.

    Parameters
    ----------
    mt : oclla.multi_device.MultiTiles
        Made with ``full=True``; overwritten by U and L's multipliers.

    Returns
    -------
    piv : numpy.ndarray of int32
        The 0-based row interchanges (scipy's ``piv``).
    info : int
        LAPACK's info: 0, or the 1-based column of the first exactly zero
        diagonal entry of U.

    Raises
    ------
    ValueError
        ``mt`` not in full storage.
    """
    if not mt.full:
        raise ValueError("the LU needs a MultiTiles in full storage (full=True)")
    n, nb, dtype, queues = mt.n, mt.tile, mt.dtype, mt.queues
    count, devices = len(mt.panels), len(queues)
    if n == 0:
        return np.empty(0, np.int32), 0
    item = dtype.itemsize
    ex = mt.exchange
    scratch, recv, recv_piv = ex.scratch, ex.recv, ex.recv_piv
    last_read = [[None] * SLOTS for _ in queues]
    pivots, flags, factored = [None] * count, [None] * count, [None] * count

    def factor(p: int) -> None:
        panel, d = mt.panels[p], mt.owner(p)
        q, j0, jb = queues[d], mt.panels[p].c0, mt.panels[p].w
        m = n - j0
        pivots[p] = cl_array.to_device(q, np.arange(jb, dtype=np.int32), async_=True)
        flags[p] = int_zeros(q)
        with trace.step("panel", (j0, n, j0, j0 + jb), pivot=(j0, j0),
                        flops=m * jb * jb - jb ** 3 / 3.0):
            cl.enqueue_copy(q, scratch[d], panel.buf, byte_count=m * jb * item,
                            src_offset=j0 * jb * item)
            factor_panel(q, scratch[d], m, jb, pivots[p], flags[p], dtype)
            cl.enqueue_copy(q, panel.buf, scratch[d], byte_count=m * jb * item,
                            dst_offset=j0 * jb * item)
        factored[p] = cl.enqueue_marker(q)
        q.flush()

    with trace.device_labels(lanes(queues)), \
            trace.run("lu", "multi_device", queues[0], (n, n), dtype, tile=nb,
                      devices=devices):
        factor(0)
        for k in range(count):
            src, home = mt.panels[k], mt.owner(k)
            k0, kb = src.c0, src.w
            m, slot = n - k0, k % SLOTS
            users = [d for d in range(devices)
                     if any(mt.owner(j) == d and j != k for j in range(count))]
            targets = [d for d in users if d != home]
            arrived = {}
            if targets:             # L[R, K] and the pivots, through host memory
                with trace.step("send", (k0, n, k0, k0 + kb), nbytes=m * kb * item):
                    panel_down, panels, _ = ex.relay.send(
                        home, src.buf, k0 * kb * item, m * kb * item,
                        [(d, recv[d][slot], [last_read[d][slot]]) for d in targets],
                        factored[k], row_bytes=kb * item)
                    _, pivs, _ = ex.relay_piv.send(
                        home, pivots[k].data, 0, kb * 4,
                        [(d, recv_piv[d][slot], [last_read[d][slot]]) for d in targets],
                        factored[k])
                arrived = {d: [panels[d], pivs[d]] for d in targets}
            for d in users:
                q = queues[d]
                if d == home:
                    lpanel, piv = src, pivots[k].data
                else:
                    cl.enqueue_barrier(q, wait_for=arrived[d])
                    lpanel, piv = Panel(recv[d][slot], k0, k0, m, kb), recv_piv[d][slot]
                own = [j for j in range(count) if mt.owner(j) == d and j != k]
                with trace.step("laswp", (k0, n, 0, n)):
                    for j in own:
                        other = mt.panels[j]
                        laswp(q, panel_rows(other, k0), 0, other.w, piv, 0, kb,
                              dtype=dtype)
                for j in own:
                    if j < k:
                        continue
                    other = mt.panels[j]
                    j0, jb = other.c0, other.w
                    with trace.step("trsm", (k0, k0 + kb, j0, j0 + jb),
                                    flops=float(kb * kb * jb)):
                        trsm(q, kb, jb, lpanel.view(k0, k0), other.view(k0, j0),
                             dtype=dtype, left=True, lower=True, unit=True)
                    if m > kb:
                        with trace.step("gemm", (k0 + kb, n, j0, j0 + jb),
                                        flops=2.0 * (m - kb) * jb * kb):
                            gemm(q, m - kb, jb, kb, -1.0, lpanel.view(k0 + kb, k0),
                                 other.view(k0, j0), 1.0, other.view(k0 + kb, j0),
                                 dtype=dtype)
                    if j == k + 1:
                        factor(j)
                if d != home:
                    last_read[d][slot] = cl.enqueue_marker(q)
                q.flush()
            if targets:             # tile column k is interchanged again at step k + 1
                cl.enqueue_barrier(queues[home], wait_for=[panel_down])
        for q in ex.copyqs + queues:
            q.finish()
    starts = [p.c0 for p in mt.panels]
    piv = np.concatenate([j0 + p.get() for j0, p in zip(starts, pivots)]).astype(np.int32)
    info = first_failure(starts, flags)
    if not info:
        last = mt.panels[-1]
        corner = np.empty(1, dtype)
        cl.enqueue_copy(queues[mt.owner(count - 1)], corner, last.buf,
                        src_offset=((n - 1 - last.r0) * last.w + last.w - 1) * item)
        info = n if corner[0] == 0 else 0
    return piv, info


@driver_errors
def lu_factor(a, *, queues, tile: int | None = None, check_finite: bool = True) -> tuple:
    """P·A = L·U of a square host matrix on several devices, as :func:`oclla.lu_factor`.

    Parameters
    ----------
    a : (n, n) array_like of float32/float64
        Never written.
    queues : sequence of pyopencl.CommandQueue
        Profiling queues of one context (:func:`oclla.multi_device.context_queues`);
        the tile columns go round-robin to them.
    tile : int, optional
        Tile width (default :data:`oclla.tiled.TILE`, at most n).
    check_finite : bool, default True
        Reject NaN/Inf (ValueError).

    Returns
    -------
    lu : numpy.ndarray
        U on and above the diagonal, L's multipliers below (scipy's layout).
    piv : numpy.ndarray of int32
        The 0-based row interchanges.

    Raises
    ------
    ValueError
        Not square, NaN/Inf, no queues or queues of several contexts.
    TypeError
        A dtype other than float32/float64.
    oclla.DeviceError
        float64 without ``cl_khr_fp64``, tiles beyond a device's buffer or memory.

    Warns
    -----
    scipy.linalg.LinAlgWarning
        An exactly singular U (the zero diagonal entry named, as scipy does).
    """
    arr = np.asarray(a)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"a must be square, got shape {arr.shape}")
    mt = MultiTiles.from_numpy(arr, queues=queues, tile=tile, check_finite=check_finite,
                               full=True)
    try:
        piv, info = factor_lu_multi(mt)
        lu = mt.to_numpy()
    finally:
        mt.release()
    if info:
        from scipy.linalg import LinAlgWarning
        warnings.warn(f"Diagonal number {info} is exactly zero. Singular matrix.",
                      LinAlgWarning, stacklevel=2)
    return lu, piv
