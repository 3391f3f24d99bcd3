"""LU with partial pivoting on a tiled matrix (one matrix in many device buffers).

The matrix is a :class:`oclla.tiled.TiledMatrix` in full storage
(``triangle=None``): panel p is block column p (columns J = j0 .. j0 + jb,
every row), one buffer each.  :func:`factor_lu_tiles` factors it in place,
right-looking over the tile columns, into LAPACK's (and
:func:`scipy.linalg.lu_factor`'s) layout, P·A = L·U::

    for each tile column p (columns J, rows R = j0 .. n, R' = j0 + jb .. n):
        A[R, J] = P_p·L[R, J]·U[J, J]      the panel with partial pivoting, by
                                           the device's LU panel kernels
                                           (:class:`oclla.lu_blocked.Panels`)
                                           in a scratch buffer of m x jb
        rows of every other tile column interchanged by P_p       (laswp)
        for each later tile column q (columns Q):
            A[J, Q]  = L[J, J]⁻¹·A[J, Q]                  (TRSM, unit lower)
            A[R', Q] -= L[R', J]·A[J, Q]                  (GEMM)

The pivots of panel p are 0-based rows of the whole matrix (``piv[i] = j``:
row i was interchanged with row j, in order).  An exactly zero pivot does not
stop the factorization: LAPACK's ``info`` (1-based column of the first zero
diagonal entry of U) comes back with the pivots.

:func:`solve_lu_tiles` solves A·X = B or Aᵀ·X = B with the factor, tile
column by tile column (TRSM with the diagonal tile, one GEMM for the rows
below or above it).  :func:`oclla.lu_factor` and :func:`oclla.lu_solve` come
here by themselves for a host matrix larger than one buffer of the device
(:func:`route`), or a TiledMatrix.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import trace
from ._device import DeviceError, device_info
from ._params import params
from ._programs import int_zeros, launch_queue
from ._validate import check_host_room
from .blas import View, gemm, laswp, trsm
from .lu_blocked import Panels
from .tiled import (MEMORY_SHARE, TiledMatrix, choose_tile, exceeds_buffer, host_matrix,
                    tiled_bytes)


def lu_tiles_bytes(n: int, tile: int, itemsize: int) -> int:
    """Device bytes of a tiled LU of order n: the full tiles and one scratch panel."""
    return tiled_bytes((n, n), tile, itemsize) + n * min(tile, n) * itemsize


def plan_tile(queue, n: int, dtype) -> int:
    """The tile of a tiled LU of order n: :func:`oclla.tiled.choose_tile`'s, halved
    (to multiples of 16 while that leaves 16) until the tiles and the scratch panel
    fit :data:`~oclla.tiled.MEMORY_SHARE` of the device's memory.  DeviceError where
    not even tiles of one column do (:func:`oclla.lu_factor` streams such a matrix
    from host memory instead: :mod:`oclla.out_of_core_lu`)."""
    dtype = np.dtype(dtype)
    info = device_info(queue)
    tile = choose_tile(queue, n, dtype)
    while lu_tiles_bytes(n, tile, dtype.itemsize) > MEMORY_SHARE * info.global_mem_size:
        if tile == 1:
            raise DeviceError(f"the LU of a {n} x {n} {dtype} matrix needs "
                              f"{lu_tiles_bytes(n, 1, dtype.itemsize) / 2**20:.1f} MiB of "
                              f"tiles at least, more than {MEMORY_SHARE:.0%} of "
                              f"{info.name}'s {info.global_mem_size / 2**20:.1f} MiB "
                              f"(oclla.lu_factor streams it from host memory)")
        tile //= 2
        tile = tile - tile % 16 if tile >= 16 else tile
    return tile


def route(a, queue) -> str | None:
    """How :func:`oclla.lu_factor` treats ``a``: None (one buffer, as always) or "tiled"
    (a host square matrix larger than one buffer; DeviceError where its tiles do not
    fit the device, :func:`plan_tile`)."""
    if not exceeds_buffer(a, queue):
        return None
    arr = np.asarray(a)
    plan_tile(queue, arr.shape[0], arr.dtype)
    return "tiled"


def check_square_full(tm: TiledMatrix) -> None:
    """ValueError unless ``tm`` is a square matrix in full storage (block columns)."""
    if tm.shape[0] != tm.shape[1] or tm.triangle is not None:
        raise ValueError(f"the tiled LU needs a square matrix in full storage "
                         f"(triangle=None), got {tm!r}")


def panel_rows(panel, j0: int) -> View:
    """Rows j0 .. of a block column's buffer (its leading dimension is its width)."""
    return View(panel.buf, (j0 - panel.r0) * panel.w, panel.w)


def first_failure(starts, flags) -> int:
    """LAPACK's info from the panels' flags: ``starts[i]`` is panel i's first column
    (0-based) and ``flags[i]`` its one-int device array (0, or the 1-based column within
    the panel of its first exactly zero pivot); the global 1-based column of the first
    such pivot, or 0.  Reads the flags in order and stops at the first set one."""
    for j0, flag in zip(starts, flags):
        local = int(flag.get()[0])
        if local:
            return j0 + local
    return 0


def factor_panel(queue, scratch: cl.Buffer, m: int, jb: int, piv, info, dtype) -> None:
    """P·A = L·U of the m x jb panel at the start of ``scratch`` (row-major, leading
    dimension jb); pivots (0-based, within the panel) into ``piv``, the first zero
    pivot's column (1-based) into ``info``.

    Right-looking in sub-panels of the device's LU block width NB (the panel kernels,
    :class:`oclla.lu_blocked.Panels`, are built for panels that narrow: the grid
    kernel holds a panel's columns in registers): each sub-panel factored by them,
    its interchanges applied to the panel's columns left and right of it, then the
    TRSM of its block row and the GEMM of the panel's columns right of it."""
    p = params(queue, "lu", dtype)
    a = View(scratch, 0, jb)
    panels = Panels(queue, a, m, piv, info, p, dtype=dtype, no_pivot=False)
    nb = max(1, p["NB"])
    for c in range(0, jb, nb):
        w = min(nb, jb - c)
        panels.factor(c, w)
        rest = jb - c - w
        if jb > w:                          # the columns left and right of it
            laswp(queue, a, 0, jb - w, piv.data, c, c + w, dtype=dtype, gap=(c, w))
        if rest:
            trsm(queue, w, rest, a.at(c, c), a.at(c, c + w), dtype=dtype, left=True,
                 lower=True, unit=True)
            if m > c + w:
                gemm(queue, m - c - w, rest, w, -1.0, a.at(c + w, c), a.at(c, c + w), 1.0,
                     a.at(c + w, c + w), dtype=dtype)


def factor_lu_tiles(tm: TiledMatrix) -> tuple:
    """Factor the square tiled matrix in place (module docstring); returns (piv, info):
    the 0-based interchanges as a numpy int32 array of length n, and LAPACK's info
    (0, or the 1-based column of the first exactly zero diagonal entry of U)."""
    check_square_full(tm)
    n, dtype, item = tm.shape[0], tm.dtype, tm.dtype.itemsize
    starts = [panel.c0 for panel in tm.panels]
    if n == 0:
        return np.empty(0, np.int32), 0
    scratch = cl.Buffer(tm.queue.context, cl.mem_flags.READ_WRITE, n * tm.tile * item)
    pivots, flags = [], []
    with trace.run("lu", "tiled", tm.queue, (n, n), dtype, tile=tm.tile), \
            launch_queue(tm.queue) as queue:
        for p, panel in enumerate(tm.panels):
            j0, jb = panel.c0, panel.w
            m = n - j0
            piv = cl_array.to_device(queue, np.arange(jb, dtype=np.int32), async_=True)
            info = int_zeros(queue)
            with trace.step("panel", (j0, n, j0, j0 + jb), pivot=(j0, j0),
                            flops=m * jb * jb - jb ** 3 / 3.0):
                nbytes = m * jb * item
                cl.enqueue_copy(queue, scratch, panel.buf, byte_count=nbytes,
                                src_offset=j0 * jb * item)
                factor_panel(queue, scratch, m, jb, piv, info, dtype)
                cl.enqueue_copy(queue, panel.buf, scratch, byte_count=nbytes,
                                dst_offset=j0 * jb * item)
            with trace.step("laswp", (j0, n, 0, n)):
                for q, other in enumerate(tm.panels):
                    if q != p:
                        laswp(queue, panel_rows(other, j0), 0, other.w, piv.data, 0, jb,
                              dtype=dtype)
            for other in tm.panels[p + 1:]:
                q0, qb = other.c0, other.w
                with trace.step("trsm", (j0, j0 + jb, q0, q0 + qb), flops=float(jb * jb * qb)):
                    trsm(queue, jb, qb, panel.view(j0, j0), other.view(j0, q0), dtype=dtype,
                         left=True, lower=True, unit=True)
                if m > jb:
                    with trace.step("gemm", (j0 + jb, n, q0, q0 + qb),
                                    flops=2.0 * (m - jb) * qb * jb):
                        gemm(queue, m - jb, qb, jb, -1.0, panel.view(j0 + jb, j0),
                             other.view(j0, q0), 1.0, other.view(j0 + jb, q0), dtype=dtype)
            pivots.append(piv)
            flags.append(info)
        last = np.empty(1, dtype)
        cl.enqueue_copy(queue, last, tm.panels[-1].buf, src_offset=(
            (n - 1 - tm.panels[-1].r0) * tm.panels[-1].w + tm.panels[-1].w - 1) * item)
    scratch.release()
    piv = np.concatenate([j0 + p.get() for j0, p in zip(starts, pivots)]).astype(np.int32)
    info = first_failure(starts, flags) or (n if last[0] == 0 else 0)
    return piv, info


def solve_lu_tiles(tm: TiledMatrix, piv, b: View, nrhs: int, *, trans: int = 0,
                   queue=None) -> None:
    """B := A⁻¹·B (``trans`` 0) or A⁻ᵀ·B (1 or 2) for the tiled LU factor ``tm`` and
    the device pivots ``piv`` (an int32 buffer of n 0-based interchanges); B is
    n x nrhs at ``b`` on ``queue`` (default: the factor's)."""
    check_square_full(tm)
    n, dtype, queue = tm.shape[0], tm.dtype, queue or tm.queue
    panels = tm.panels
    with trace.run("lu_solve", f"tiled trans={trans}", queue, (n, nrhs), dtype, tile=tm.tile):
        with trace.step("solve", (0, n, 0, n), flops=2.0 * n * n * nrhs):
            if trans == 0:
                laswp(queue, b, 0, nrhs, piv, 0, n, dtype=dtype)
                for p in panels:                           # L·Y = P·B
                    j0, jb = p.c0, p.w
                    trsm(queue, jb, nrhs, p.view(j0, j0), b.at(j0, 0), dtype=dtype,
                         lower=True, unit=True)
                    if n > j0 + jb:
                        gemm(queue, n - j0 - jb, nrhs, jb, -1.0, p.view(j0 + jb, j0),
                             b.at(j0, 0), 1.0, b.at(j0 + jb, 0), dtype=dtype)
                for p in reversed(panels):                 # U·X = Y
                    j0, jb = p.c0, p.w
                    trsm(queue, jb, nrhs, p.view(j0, j0), b.at(j0, 0), dtype=dtype,
                         lower=False)
                    if j0:
                        gemm(queue, j0, nrhs, jb, -1.0, p.view(0, j0), b.at(j0, 0), 1.0,
                             b, dtype=dtype)
            else:
                for p in panels:                           # Uᵀ·Y = B
                    j0, jb = p.c0, p.w
                    if j0:
                        gemm(queue, jb, nrhs, j0, -1.0, p.view(0, j0), b, 1.0, b.at(j0, 0),
                             dtype=dtype, trans_a=True)
                    trsm(queue, jb, nrhs, p.view(j0, j0), b.at(j0, 0), dtype=dtype,
                         lower=False, trans=True)
                for p in reversed(panels):                 # Lᵀ·Z = Y
                    j0, jb = p.c0, p.w
                    if n > j0 + jb:
                        gemm(queue, jb, nrhs, n - j0 - jb, -1.0, p.view(j0 + jb, j0),
                             b.at(j0 + jb, 0), 1.0, b.at(j0, 0), dtype=dtype, trans_a=True)
                    trsm(queue, jb, nrhs, p.view(j0, j0), b.at(j0, 0), dtype=dtype,
                         lower=True, trans=True, unit=True)
                laswp(queue, b, 0, nrhs, piv, 0, n, dtype=dtype, forward=False)


# ---- what oclla.lu_factor and oclla.lu_solve call -----------------------------------------

def lu_factor_beyond(a, *, overwrite_a: bool, check_finite: bool, queue) -> tuple:
    """:func:`oclla.lu_factor` of a TiledMatrix (factored in place with ``overwrite_a``,
    else in a copy; returned with numpy pivots) or of a host matrix larger than one
    buffer (tiles on the device; a new host array: a numpy ``a`` is never written).
    Returns (lu, piv, info)."""
    if isinstance(a, TiledMatrix):
        check_square_full(a)
        if a.queue.context != queue.context:
            raise ValueError("a lives on another OpenCL context than the queue")
        work = a if overwrite_a else a.copy()
        piv, info = factor_lu_tiles(work)
        return work, piv, info
    arr = host_matrix(a, check_finite=check_finite, queue=queue)
    copies = 1 if arr.flags.c_contiguous else 2          # the factor, and the input's copy
    check_host_room(copies * arr.nbytes, f"the factor of a {arr.shape[0]} x {arr.shape[0]} "
                    f"{arr.dtype} matrix")
    tm = TiledMatrix.from_numpy(arr, tile=plan_tile(queue, arr.shape[0], arr.dtype),
                                queue=queue, check_finite=False)
    try:
        piv, info = factor_lu_tiles(tm)
        return tm.to_numpy(), piv, info
    finally:
        tm.release()


def lu_solve_beyond(lu, piv, b, *, trans: int, overwrite_b: bool, check_finite: bool,
                    queue):
    """:func:`oclla.lu_solve` with a TiledMatrix factor or a host factor larger than one
    buffer (uploaded in tiles).  ``piv``: host or device 0-based pivots."""
    from ._validate import solve_in_place
    from .lu import _device_piv
    if isinstance(lu, TiledMatrix):
        check_square_full(lu)
        if lu.queue.context != queue.context:
            raise ValueError("lu lives on another OpenCL context than the queue")
        tm, owned = lu, False
    else:
        arr = host_matrix(lu, check_finite=check_finite, queue=queue)
        tm, owned = TiledMatrix.from_numpy(arr, queue=queue, check_finite=False), True
    n, dtype = tm.shape[0], tm.dtype
    flags = int_zeros(queue, 2)
    d_piv = _device_piv(piv, n, queue, flags)

    def solve(x2):
        tm.queue.finish()
        solve_lu_tiles(tm, d_piv.data, View(x2.base_data, x2.offset // dtype.itemsize,
                                             x2.shape[1]), x2.shape[1], trans=trans,
                       queue=queue)
    try:
        x = solve_in_place(queue, b, n, dtype, solve, overwrite_b=overwrite_b,
                           check_finite=check_finite)
        if int(flags.get()[0]):
            from .lu import PIV_RANGE
            raise ValueError(PIV_RANGE.format(n=n))
        return x
    finally:
        if owned:
            tm.release()
