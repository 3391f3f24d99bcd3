"""Out-of-core LU with partial pivoting: a host matrix larger than the device's memory.

The matrix stays in host memory (a numpy array, or a memory-mapped ``.npy``
opened with ``numpy.load(path, mmap_mode="r+")``); the device holds four
buffers of one block column of ``tile`` columns (n x tile entries each):
O(n·tile) device memory, whatever n.  Left-looking by block columns, into
LAPACK's (and :func:`scipy.linalg.lu_factor`'s) layout, P·A = L·U.  For block
column j (columns J = j0 .. j0 + jb)::

    upload (P_<j · A)[:, J]                  the earlier panels' interchanges applied
                                             by a gather of its rows on the host
    for each earlier block column k (columns K = k0 .. k0 + kb), in order:
        L[k0:n, K] streamed from the host factor (two buffers, alternating;
        block column j − 1 is still on the device)
        U[K, J] = L[K, K]⁻¹·A[K, J]                               (TRSM, unit lower)
        A[k0 + kb:n, J] -= L[k0 + kb:n, K]·U[K, J]                (GEMM)
    P_j·A[j0:n, J] = L[j0:n, J]·U[J, J]      :func:`oclla.tiled_lu.factor_panel`
    download the block column into the host factor
    rows j0 .. n of the block columns 0 .. j0 on the host interchanged by P_j,
    each just before block column j + 1 streams it (the last panel's: at the end)

Each block column's buffer holds its rows j0 .. n first (the panel, at offset 0
as :func:`~oclla.tiled_lu.factor_panel` wants it) and its rows 0 .. j0 (U's
block rows above the panel) after them.  The row interchanges on the host (the
gather of block column j's rows before its upload, the interchange of the
finished block columns' rows after each panel, one block column at a time,
while the device computes with the block column streamed before) are data
movement, not arithmetic; every flop runs in the device's kernels.  The
pivots come to the host after each panel (the gathers need them), so block
column j + 1 is uploaded only once panel j is factored: that upload is not
overlapped.

Transfers run on a second (profiling) queue of the device, tied to the compute
queue by events, as in :mod:`oclla.out_of_core`: uploads pass through its
page-locked staging buffers (:class:`oclla._staging.Staging`; ``pinned=False``:
straight from pageable memory), a streamed block column's upload waits only
for the computation that last read its buffer.  Downloads are rectangular
copies straight into the host matrix (pageable memory), waited for before the
host interchanges the rows they wrote.

Every entry of L crosses the bus about (n/tile)/2 times, as in the Cholesky;
each GEMM does 2·tile flops per entry streamed.  An exactly zero pivot does
not stop the factorization: LAPACK's ``info`` (the 1-based column of the first
zero diagonal entry of U) comes back with the pivots.  :func:`lu_host` is what
:func:`oclla.lu_factor` calls for a matrix whose tiles do not fit the device
(:func:`route`), :func:`lu_solve_host` what :func:`oclla.lu_solve` calls for such
a factor (:func:`solve_streamed`: each block column uploaded twice).
"""

from __future__ import annotations

import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import _trace_hooks, trace
from ._device import DeviceError
from ._programs import int_zeros
from ._staging import Staging
from ._validate import IN_PLACE_HINT, check_host_room, contiguous_host
from .blas import View, gemm, laswp, trsm
from .lu import lu_flops
from .out_of_core import Stats, plan_tile
from .tiled import copy_queue, exceeds_buffer, host_matrix, writable_in_place
from .tiled_lu import factor_panel, first_failure
from .tiled_lu import plan_tile as tiles_plan


def route(a, queue) -> str | None:
    """"out_of_core" for a host square matrix whose tiled LU does not fit the device's
    memory (:func:`oclla.tiled_lu.plan_tile` finds no tile), else None; DeviceError
    where not even :data:`oclla.out_of_core.BUFFERS` of its columns fit (before
    anything is copied)."""
    if not exceeds_buffer(a, queue):
        return None
    arr = np.asarray(a)
    try:
        tiles_plan(queue, arr.shape[0], arr.dtype)
    except DeviceError:
        plan_tile(queue, arr.shape[0], arr.dtype)
        return "out_of_core"
    return None


def _interchanges(piv: np.ndarray, m: int) -> np.ndarray:
    """The order of m rows after LAPACK's sequential interchanges ``piv`` (0-based,
    within the m rows): rows[i] is the row that ends in row i."""
    rows = np.arange(m)
    for i, p in enumerate(piv):          # symbolic: one swap of two indices per pivot
        rows[i], rows[p] = rows[p], rows[i]
    return rows


def _read(copyq, buf, offset_rows: int, host: np.ndarray, r0: int, c0: int, h: int, w: int,
          wait_for) -> cl.Event | None:
    """Enqueue the copy of rows offset_rows .. + h of ``buf`` (leading dimension w) into
    host[r0:r0 + h, c0:c0 + w]."""
    if h == 0 or w == 0:
        return None
    item = host.dtype.itemsize
    return cl.enqueue_copy(copyq, host, buf, buffer_origin=(0, offset_rows),
                           host_origin=(c0 * item, r0), region=(w * item, h),
                           buffer_pitches=(w * item,), host_pitches=(host.strides[0],),
                           is_blocking=False, wait_for=wait_for)


def factor_streamed(dest: np.ndarray, *, queue, tile: int | None = None,
                    pinned: bool = True) -> tuple:
    """P·A = L·U of the C-contiguous n x n host matrix ``dest``, in place (module
    docstring): ``dest`` becomes LU's factor in scipy's layout.  Returns (piv, info,
    stats): the 0-based interchanges (int32, length n), LAPACK's info and the
    :class:`oclla.out_of_core.Stats` of the run (flops 2n³/3)."""
    n, dtype = dest.shape[0], dest.dtype
    item = dtype.itemsize
    w = plan_tile(queue, n, dtype, tile)
    stats = Stats(n, w, flops=lu_flops(n), pinned=pinned)
    piv = np.arange(n, dtype=np.int32)
    if n == 0:
        return piv, 0, stats
    copyq = copy_queue(queue)
    ctx = queue.context
    size = n * w * item
    columns = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size) for _ in range(2)]
    streams = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size) for _ in range(2)]
    staging = Staging(copyq, n * w, dtype) if pinned else None
    transfers, computing = [], []
    moved = {True: 0, False: 0}
    rows = np.arange(n)                  # rows[i]: the input row now in row i
    starts = list(range(0, n, w))
    flags = []

    def upload(buf, host, r0, c0, h, cw, wait_for=None) -> cl.Event:
        with trace.step("upload", (r0, r0 + h, c0, c0 + cw), nbytes=h * cw * item):
            if staging is None:
                event = cl.enqueue_copy(copyq, buf, np.ascontiguousarray(
                    host[r0:r0 + h, c0:c0 + cw]), is_blocking=False, wait_for=wait_for)
            else:
                event = staging.upload(buf, host, r0, c0, h, cw, wait_for=wait_for)
            if (recorder := _trace_hooks.active()) is not None:
                recorder.add_kernel("upload", event, None, None)
        copyq.flush()
        transfers.append((event, event))
        moved[True] += h * cw * item
        return event

    def download(buf, offset_rows, r0, c0, h, cw, wait_for) -> cl.Event | None:
        with trace.step("download", (r0, r0 + h, c0, c0 + cw), nbytes=h * cw * item):
            event = _read(copyq, buf, offset_rows, dest, r0, c0, h, cw, wait_for)
            if event is not None and (recorder := _trace_hooks.active()) is not None:
                recorder.add_kernel("download", event, None, None)
        if event is not None:
            copyq.flush()
            transfers.append((event, event))
            moved[False] += h * cw * item
        return event

    def compute_after(event) -> cl.Event:
        cl.enqueue_barrier(queue, wait_for=[event])
        return cl.enqueue_marker(queue)

    def eliminate(col: View, j0: int, jb: int, src: View, k0: int, kb: int) -> None:
        """Block column J (buffer ``col``, rows j0.. first) minus block column K's part:
        ``src`` is L[k0:n, K] (leading dimension kb)."""
        top = (n - j0) * jb                  # offset of row 0 of J's buffer
        ukj = View(col.buf, top + k0 * jb, jb)
        with trace.step("trsm", (k0, k0 + kb, j0, j0 + jb), flops=float(kb * kb * jb)):
            trsm(queue, kb, jb, src, ukj, dtype=dtype, left=True, lower=True, unit=True)
        above = j0 - k0 - kb                 # rows k0 + kb .. j0 of J: U's block rows
        with trace.step("gemm", (k0 + kb, n, j0, j0 + jb),
                        flops=2.0 * (n - k0 - kb) * jb * kb):
            if above:
                gemm(queue, above, jb, kb, -1.0, src.at(kb, 0),
                     ukj, 1.0, View(col.buf, top + (k0 + kb) * jb, jb), dtype=dtype)
            gemm(queue, n - j0, jb, kb, -1.0,
                 src.at(j0 - k0, 0), ukj, 1.0,
                 View(col.buf, 0, jb), dtype=dtype)

    began = time.perf_counter()
    free = [None, None]                      # marker after the last read of a stream buffer
    used = [None, None]                      # marker after the last read of a column buffer
    landed = []                              # each block column's download
    swap, below = None, n                    # the latest panel's interchanges, its j0

    def interchange(k0: int, kb: int) -> None:
        """Rows below ``below`` of block column K (on the host) interchanged by the
        latest panel's pivots: a gather of rows, data movement."""
        landed[k0 // w].wait()
        with trace.step("laswp", (below, n, k0, k0 + kb)):
            dest[below:, k0:k0 + kb] = dest[below:, k0:k0 + kb][swap]

    slot = 0
    try:
        with trace.run("lu", "out_of_core", queue, (n, n), dtype, tile=w):
            for j, j0 in enumerate(starts):
                jb, m = min(w, n - j0), n - j0
                s = j % 2
                col = View(columns[s], 0, jb)
                order = np.concatenate([rows[j0:], rows[:j0]])   # panel rows first
                block = dest[order, j0:j0 + jb]                  # a gather: data movement
                arrived = upload(columns[s], block, 0, 0, n, jb,
                                 wait_for=[used[s]] if used[s] else None)
                span = compute_after(arrived)
                for k0 in starts[:max(0, j - 1)]:
                    kb = min(w, n - k0)
                    interchange(k0, kb)          # while the device computes with k − 1
                    ready = upload(streams[slot], dest, k0, k0, n - k0, kb,
                                   wait_for=[free[slot]] if free[slot] else None)
                    computing.append((span, cl.enqueue_marker(queue)))
                    span = compute_after(ready)
                    eliminate(col, j0, jb, View(streams[slot], 0, kb), k0, kb)
                    free[slot] = cl.enqueue_marker(queue)
                    queue.flush()
                    slot ^= 1
                if j:                            # block column j − 1, still on the device
                    k0 = starts[j - 1]
                    eliminate(col, j0, jb, View(columns[1 - s], 0, w), k0, w)
                    used[1 - s] = cl.enqueue_marker(queue)
                local = cl_array.to_device(queue, np.arange(jb, dtype=np.int32), async_=True)
                flag = int_zeros(queue)
                with trace.step("panel", (j0, n, j0, j0 + jb), pivot=(j0, j0),
                                flops=m * jb * jb - jb ** 3 / 3.0):
                    factor_panel(queue, columns[s], m, jb, local, flag, dtype)
                done = cl.enqueue_marker(queue)
                computing.append((span, done))
                queue.flush()
                flags.append(flag)
                download(columns[s], m, 0, j0, j0, jb, [done])          # U above the panel
                landed.append(download(columns[s], 0, j0, j0, m, jb, [done]))  # the panel
                p = local.get()
                piv[j0:j0 + jb] = j0 + p
                swap, below = _interchanges(p.astype(np.intp), m), j0
                rows[j0:] = rows[j0:][swap]
            for k0 in starts[:-1]:               # the last panel's interchanges
                interchange(k0, min(w, n - k0))
            copyq.finish()
    finally:
        if staging is not None:
            staging.close()
        copyq.finish()
        queue.finish()
    info = first_failure(starts, flags) or (n if dest[n - 1, n - 1] == 0 else 0)
    return piv, info, stats.measured(began, staging, moved, transfers, computing)


def lu_host(a, *, overwrite_a: bool, check_finite: bool, queue,
            tile: int | None = None) -> tuple:
    """(lu, piv, info) of a host matrix beyond the device's memory (route "out_of_core").

    With ``overwrite_a`` and a writable C-contiguous ``a`` (a memory map opened "r+"
    too) the factor is written into ``a`` itself, block column by block column, and
    ``a`` returned (should the device fail midway, ``a`` then holds a partial factor:
    keep a copy to recover); otherwise ``a`` is only read and the factor is a new
    array."""
    arr = host_matrix(a, check_finite=check_finite, queue=queue)
    if overwrite_a and writable_in_place(a):
        dest = a
    else:
        n = arr.shape[0]
        check_host_room(arr.nbytes, f"the factor of a {n} x {n} {arr.dtype} matrix",
                        IN_PLACE_HINT)
        dest = np.array(arr, order="C")
    piv, info, _ = factor_streamed(dest, queue=queue, tile=tile)
    return dest, piv, info


def solve_streamed(lu: np.ndarray, piv, b: View, nrhs: int, *, trans: int = 0, queue,
                   tile: int | None = None, pinned: bool = True) -> None:
    """B := A⁻¹·B (``trans`` 0) or A⁻ᵀ·B (1 or 2) for the host LU factor ``lu``
    (P·A = L·U, scipy's layout, C-contiguous) and the device pivots ``piv`` (an int32
    buffer of n 0-based interchanges); B is n x nrhs at ``b`` on ``queue``.

    Block column by block column, as :func:`oclla.tiled_lu.solve_lu_tiles`: for L
    (unit lower) the rows j0 .. n of block column J are uploaded, for U its rows
    0 .. j0 + jb, each into one of two device buffers (alternating, an upload waiting
    for the computation that last read its buffer), on the copy queue through
    page-locked staging buffers (``pinned``; else straight from ``lu``): the factor
    crosses the bus twice, block column p + 1 travels while block column p computes."""
    n, dtype = lu.shape[0], lu.dtype
    w = plan_tile(queue, n, dtype, tile)
    bufs = [cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, n * w * dtype.itemsize)
            for _ in range(2)]
    copyq = copy_queue(queue)
    staging = Staging(copyq, n * w, dtype) if pinned else None
    free = [None, None]
    turn = [0]
    starts = list(range(0, n, w))

    def column(j0: int, r0: int, r1: int):
        """Rows r0 .. r1 of block column J on the device: view(i, j) of entry (i, j)."""
        jb, s = min(w, n - j0), turn[0]
        turn[0] ^= 1
        wait = [free[s]] if free[s] else None
        if staging is None:
            arrived = cl.enqueue_copy(copyq, bufs[s], np.ascontiguousarray(
                lu[r0:r1, j0:j0 + jb]), is_blocking=False, wait_for=wait)
        else:
            arrived = staging.upload(bufs[s], lu, r0, j0, r1 - r0, jb, wait_for=wait)
        copyq.flush()
        cl.enqueue_barrier(queue, wait_for=[arrived])
        return jb, s, lambda i, j: View(bufs[s], (i - r0) * jb + (j - j0), jb)

    def done(s: int) -> None:
        free[s] = cl.enqueue_marker(queue)
        queue.flush()

    try:
        with trace.run("lu_solve", f"out_of_core trans={trans}", queue, (n, nrhs), dtype,
                       tile=w):
            with trace.step("solve", (0, n, 0, n), flops=2.0 * n * n * nrhs):
                if trans == 0:
                    laswp(queue, b, 0, nrhs, piv, 0, n, dtype=dtype)
                    for j0 in starts:                          # L·Y = P·B
                        jb, s, view = column(j0, j0, n)
                        trsm(queue, jb, nrhs, view(j0, j0), b.at(j0, 0), dtype=dtype,
                             lower=True, unit=True)
                        if n > j0 + jb:
                            gemm(queue, n - j0 - jb, nrhs, jb, -1.0, view(j0 + jb, j0),
                                 b.at(j0, 0), 1.0, b.at(j0 + jb, 0), dtype=dtype)
                        done(s)
                    for j0 in reversed(starts):                # U·X = Y
                        jb, s, view = column(j0, 0, j0 + min(w, n - j0))
                        trsm(queue, jb, nrhs, view(j0, j0), b.at(j0, 0), dtype=dtype,
                             lower=False)
                        if j0:
                            gemm(queue, j0, nrhs, jb, -1.0, view(0, j0), b.at(j0, 0), 1.0,
                                 b, dtype=dtype)
                        done(s)
                else:
                    for j0 in starts:                          # Uᵀ·Y = B
                        jb, s, view = column(j0, 0, j0 + min(w, n - j0))
                        if j0:
                            gemm(queue, jb, nrhs, j0, -1.0, view(0, j0), b, 1.0,
                                 b.at(j0, 0), dtype=dtype, trans_a=True)
                        trsm(queue, jb, nrhs, view(j0, j0), b.at(j0, 0), dtype=dtype,
                             lower=False, trans=True)
                        done(s)
                    for j0 in reversed(starts):                # Lᵀ·Z = Y
                        jb, s, view = column(j0, j0, n)
                        if n > j0 + jb:
                            gemm(queue, jb, nrhs, n - j0 - jb, -1.0, view(j0 + jb, j0),
                                 b.at(j0 + jb, 0), 1.0, b.at(j0, 0), dtype=dtype,
                                 trans_a=True)
                        trsm(queue, jb, nrhs, view(j0, j0), b.at(j0, 0), dtype=dtype,
                             lower=True, trans=True, unit=True)
                        done(s)
                    laswp(queue, b, 0, nrhs, piv, 0, n, dtype=dtype, forward=False)
    finally:
        if staging is not None:
            staging.close()
        copyq.finish()
        queue.finish()


def lu_solve_host(lu, piv, b, *, trans: int, overwrite_b: bool, check_finite: bool, queue):
    """:func:`oclla.lu_solve` with a host factor beyond the device's memory (route
    "out_of_core"): :func:`solve_streamed`.  ``piv``: host or device 0-based pivots."""
    from ._validate import solve_in_place
    from .lu import PIV_RANGE, _device_piv
    arr = host_matrix(lu, check_finite=check_finite, queue=queue)
    arr = contiguous_host(arr, f"a C-contiguous copy of the {arr.shape[0]} x {arr.shape[0]} "
                          "factor")
    n, dtype = arr.shape[0], arr.dtype
    flags = int_zeros(queue, 2)
    d_piv = _device_piv(piv, n, queue, flags)

    def solve(x2):
        solve_streamed(arr, d_piv.data, View(x2.base_data, x2.offset // dtype.itemsize,
                                             x2.shape[1]), x2.shape[1], trans=trans,
                       queue=queue)
    x = solve_in_place(queue, b, n, dtype, solve, overwrite_b=overwrite_b,
                       check_finite=check_finite)
    if int(flags.get()[0]):
        raise ValueError(PIV_RANGE.format(n=n))
    return x
