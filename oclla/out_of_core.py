"""Out-of-core Cholesky: a host matrix larger than the device's memory, streamed through it.

The matrix stays in host memory (a numpy array, or a memory-mapped ``.npy``
opened with ``numpy.load(path, mmap_mode="r+")``); the device holds four
panels of ``tile`` columns (rows for the upper factor) of order n: O(n·tile)
device memory, whatever n.  Left-looking by panels, as the out-of-core
literature and seed 000's O(n) device memory do, with the two steps of
:mod:`oclla.tiled` (``update_panel``, ``finish_panel``).  For panel j
(columns J = j0 .. j0 + jb, rows R = j0 .. n)::

    upload A[R, J]                                  (prefetched during panel j − 1)
    A[R, J] -= L[R, K]·L[J, K]ᵀ for K = panel j − 1  (still on the device)
    for each earlier panel k < j − 1:
        upload L[R, K] from the host factor          (two buffers, alternating)
        A[R, J] -= L[R, K]·L[J, K]ᵀ                  (one GEMM)
    potrf of the diagonal tile, TRSM below it       (:func:`oclla.tiled.finish_panel`)
    download L[R, J] into the host factor            (during panel j + 1's first GEMM)

Transfers run on a second (profiling) queue of the same device, each tied to
the compute queue by events: an upload waits only for the GEMM that last read
its buffer, a GEMM only for its upload, so the device computes with one
buffer while the other fills.  Each transfer is enqueued after the computation
it should overlap.  They pass through page-locked staging buffers
(:class:`oclla._staging.Staging`: ``CL_MEM_ALLOC_HOST_PTR``, mapped once,
double-buffered), so each is a DMA at the bus's full speed that never blocks
the host thread, while host threads copy the next panel between the caller's
matrix and a free staging buffer; ``pinned=False`` copies straight from the
caller's (pageable) memory instead, which a driver may do synchronously at a
fraction of the bus's speed (NVIDIA: about 8 GB/s, host thread blocked).

Every entry of L crosses the bus about (n/tile)/2 times; each GEMM does
2·tile flops per entry it streams, so the transfers hide behind the
computation where 2·tile/itemsize flops per byte exceed the device's GFLOP/s
over the bus's GB/s: a tile of a few thousand on a GPU behind PCIe
(:data:`TILE`).

:func:`factor_streamed` returns :class:`Stats`: the achieved bus bandwidth and
how much of the transfer time the computation hid (from the events'
profiling times).  :func:`cholesky_host` is what :func:`oclla.cholesky` and
:func:`oclla.cho_factor` call for a matrix beyond the device's memory
(:func:`oclla.tiled.route`); :func:`solve_streamed` what :func:`oclla.cho_solve`
calls for such a factor (each panel uploaded twice, forward and backward).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from . import _trace_hooks, trace
from ._device import DeviceError, device_info
from ._staging import Staging
from ._validate import IN_PLACE_HINT, check_host_room, contiguous_host
from .blas import View
from .cholesky import cholesky_flops
from .tiled import (MEMORY_SHARE, InfoWatch, Panel, copy_panel, copy_queue, finish_panel,
                    host_matrix, operand, solve_panels, update_panel, writable_in_place,
                    zero_outside_panels)

#: Widest panel by default: GEMMs of inner dimension TILE, 2·TILE flops per entry
#: streamed.  The bytes streamed fall as 1/TILE (about n³/(6·TILE) entries), the
#: exposed first upload and the potrf of the diagonal tiles grow with it: 8192 moves
#: about 120 GB for float32 n = 100 000 (80 streamed, the triangle up and down)
#: against 13 s of an H100's SGEMM at 25 TFLOP/s, which a bus of 10 GB/s hides.
TILE = 8192

#: Device buffers of one panel each that the factorization keeps: the panel being
#: factored, the one before it, two for the earlier panels streamed back.
BUFFERS = 4

def plan_tile(queue, n: int, dtype, tile: int | None = None) -> int:
    """The panel width for order n: ``tile`` or :data:`TILE`, narrowed until one buffer
    holds a panel (n x tile) and :data:`BUFFERS` of them fit :data:`MEMORY_SHARE` of
    the device's memory; a multiple of 16 where that leaves 16 or more."""
    info = device_info(queue)
    column = max(1, n) * np.dtype(dtype).itemsize
    fits = min(info.max_alloc_size // column,
               int(MEMORY_SHARE * info.global_mem_size) // (BUFFERS * column))
    if fits < 1:
        raise DeviceError(f"{BUFFERS} columns of {n} entries do not fit {info.name} "
                          f"(maximum allocation {info.max_alloc_size} bytes, memory "
                          f"{info.global_mem_size} bytes)")
    chosen = min(tile or TILE, fits, max(n, 1))
    return chosen - chosen % 16 if chosen >= 16 and tile is None else chosen


@dataclass
class Stats:
    """What one streamed factorization did, from the OpenCL events' profiling times.

    Attributes
    ----------
    n, tile : int
        Order and panel width.
    seconds : float
        Wall time of the factorization (host clock, transfers included).
    flops : float
        LAPACK's count n³/3 + n²/2 + n/6.
    bytes_up, bytes_down : int
        Bytes copied to and from the device.
    transfer_s, compute_s : float
        Device time spent transferring (the copy queue's commands) and computing
        (the compute queue's steps between its waits).
    overlap_s : float
        Time during which both ran at once.  compute_s and overlap_s are NaN
        where the driver gives markers no profiling times.
    pinned : bool
        Whether the transfers went through page-locked staging buffers.
    host_copy_s : float
        Seconds the host thread spent copying uploads into the staging buffers.
    """

    n: int
    tile: int
    seconds: float = 0.0
    flops: float = 0.0
    bytes_up: int = 0
    bytes_down: int = 0
    transfer_s: float = 0.0
    compute_s: float = 0.0
    overlap_s: float = 0.0
    pinned: bool = True
    host_copy_s: float = 0.0

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9 if self.seconds else 0.0

    @property
    def bandwidth_gbs(self) -> float:
        """Bytes moved per second of transfer (both directions), GB/s."""
        moved = self.bytes_up + self.bytes_down
        return moved / self.transfer_s / 1e9 if self.transfer_s else 0.0

    @property
    def hidden(self) -> float:
        """Share of the transfer time that overlapped computation (0 .. 1)."""
        return self.overlap_s / self.transfer_s if self.transfer_s else 0.0

    def measured(self, began: float, staging, moved: dict, transfers: list,
                 computing: list) -> "Stats":
        """Fill in the times and bytes of a finished streamed run: ``began`` its
        ``time.perf_counter()`` start, ``staging`` its page-locked buffers (or None),
        ``moved`` bytes by direction (True: up), ``transfers`` the copies' events,
        ``computing`` (first, last) event pairs of the device's work per panel.
        The compute and overlap times are NaN on a driver without profiling times
        for markers."""
        self.seconds = time.perf_counter() - began
        self.host_copy_s = staging.host_copy_s if staging is not None else 0.0
        self.bytes_up, self.bytes_down = moved[True], moved[False]
        copies = _merge(_intervals(transfers))
        self.transfer_s = _union_length(copies) * 1e-9
        try:
            work = _merge([(s.profile.end, e.profile.end) for s, e in computing
                           if e.profile.end > s.profile.end])
        except cl.Error:            # a driver without profiling times for markers
            self.compute_s = self.overlap_s = float("nan")
            return self
        self.compute_s = _union_length(work) * 1e-9
        self.overlap_s = _overlap(copies, work) * 1e-9
        return self


def _intervals(pairs) -> list:
    """(start, end) in ns of profiled (first event, last event) pairs, sorted."""
    spans = []
    for first, last in pairs:
        start, end = first.profile.start, last.profile.end
        if end > start:
            spans.append((start, end))
    return sorted(spans)


def _union_length(spans: list) -> int:
    total, reach = 0, None
    for start, end in spans:
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def _overlap(a: list, b: list) -> int:
    """Length of the intersection of two sorted lists of disjoint intervals."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _merge(spans: list) -> list:
    merged = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def factor_streamed(src: np.ndarray, dest: np.ndarray, *, lower: bool, queue,
                    tile: int | None = None, block: int | None = None,
                    clean: bool = False, pinned: bool = True) -> Stats:
    """Factor the host matrix ``src`` panel by panel into the host array ``dest``.

    ``src`` and ``dest`` are C-contiguous n x n arrays of one dtype, possibly the
    same array.  Only the triangle ``lower`` names is read from ``src`` and only
    the panels of that triangle are written to ``dest`` (with ``clean`` the
    diagonal tiles' other triangle zeroed; the rest of ``dest`` is left as it
    was).  Raises LinAlgError "leading minor of order k is not positive
    definite" within two panels of the failing pivot (``dest`` then holds the
    panels downloaded so far).  ``pinned``: transfers through page-locked staging
    buffers (three panels of host memory), else straight from ``src``/``dest``.
    Returns the :class:`Stats`.
    """
    n, dtype = src.shape[0], src.dtype
    item = dtype.itemsize
    w = plan_tile(queue, n, dtype, tile)
    stats = Stats(n, w, flops=cholesky_flops(n), pinned=pinned)
    if n == 0:
        return stats
    copyq = copy_queue(queue)
    ctx = queue.context
    size = n * w * item
    panels = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size) for _ in range(2)]
    streams = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size) for _ in range(2)]
    watch = InfoWatch(queue)
    staging = Staging(copyq, n * w, dtype) if pinned else None
    transfers, computing = [], []          # (first event, last event) pairs
    moved = {True: 0, False: 0}

    def piece(buf, k0: int, j0: int) -> Panel:
        """Panel k (from k0) of the factor, its rows from j0 on (columns, upper)."""
        kb = min(w, n - k0)
        return Panel(buf, j0, k0, n - j0, kb) if lower else Panel(buf, k0, j0, kb, n - j0)

    def transfer(p: Panel, host, upload: bool, wait_for=None) -> cl.Event:
        name = "upload" if upload else "download"
        with trace.step(name, (p.r0, p.r0 + p.h, p.c0, p.c0 + p.w), nbytes=p.h * p.w * item):
            if staging is None:
                event = copy_panel(copyq, p, host, upload=upload, wait_for=wait_for)
            else:
                move = staging.upload if upload else staging.download
                event = move(p.buf, host, p.r0, p.c0, p.h, p.w, wait_for=wait_for)
            if (recorder := _trace_hooks.active()) is not None:
                recorder.add_kernel(name, event, None, None)
        copyq.flush()
        transfers.append((event, event))
        moved[upload] += p.h * p.w * item
        return event

    def lview(p: Panel, i: int, j: int) -> View:
        return operand(p.view, lower, i, j)[0]

    def compute_after(event) -> cl.Event:
        """A marker that completes when the compute queue reaches this point, after
        ``event`` (the marker's end opens a span of computation)."""
        cl.enqueue_barrier(queue, wait_for=[event])
        return cl.enqueue_marker(queue)

    starts = list(range(0, n, w))
    began = time.perf_counter()
    free = [None, None]
    slot = 0
    try:
        with trace.run("cholesky", "out_of_core", queue, (n, n), dtype, lower=lower, tile=w):
            arrived = transfer(piece(panels[0], 0, 0), src, True)
            for j, j0 in enumerate(starts):
                jb, m = min(w, n - j0), n - j0
                own = piece(panels[j % 2], j0, j0)
                span = compute_after(arrived)
                region = (j0, n, j0, j0 + jb) if lower else (j0, j0 + jb, j0, n)
                if j:
                    k0 = starts[j - 1]
                    update_panel(queue, m, jb, min(w, n - k0),
                                 lview(piece(panels[(j - 1) % 2], k0, k0), j0, k0),
                                 lview(own, j0, j0), lower=lower, dtype=dtype, region=region)
                previous_read = cl.enqueue_marker(queue)
                queue.flush()
                if j:       # panel j − 1 goes down while the device computes with it
                    transfer(piece(panels[(j - 1) % 2], starts[j - 1], starts[j - 1]), dest,
                             False, wait_for=[done])
                for k0 in starts[:max(0, j - 1)]:
                    stream = piece(streams[slot], k0, j0)
                    ready = transfer(stream, dest, True,
                                     wait_for=[free[slot]] if free[slot] else None)
                    computing.append((span, cl.enqueue_marker(queue)))
                    span = compute_after(ready)
                    update_panel(queue, m, jb, min(w, n - k0), lview(stream, j0, k0),
                                 lview(own, j0, j0), lower=lower, dtype=dtype, region=region)
                    free[slot] = cl.enqueue_marker(queue)
                    queue.flush()
                    slot ^= 1
                finish_panel(queue, lview(own, j0, j0), j0, jb, m - jb, lower=lower,
                             dtype=dtype, info=watch.flag, block=block, clean=clean)
                done = cl.enqueue_marker(queue)
                computing.append((span, done))
                queue.flush()
                if j + 1 < len(starts):     # prefetch into the buffer of panel j − 1
                    arrived = transfer(piece(panels[(j + 1) % 2], starts[j + 1],
                                             starts[j + 1]), src, True,
                                       wait_for=[previous_read])
                watch.panel_done()
            transfer(piece(panels[(len(starts) - 1) % 2], starts[-1], starts[-1]), dest,
                     False, wait_for=[done])
            copyq.finish()
            watch.finish()
    finally:
        if staging is not None:
            staging.close()
        copyq.finish()
        queue.finish()
    return stats.measured(began, staging, moved, transfers, computing)


def cholesky_host(a, *, lower: bool, overwrite_a: bool, check_finite: bool, clean: bool,
                  block: int | None, queue, tile: int | None = None) -> np.ndarray:
    """The Cholesky factor of a host matrix beyond the device's memory (route
    "out_of_core" of :func:`oclla.tiled.route`).

    With ``overwrite_a`` and a writable C-contiguous ``a`` (a memory map opened
    "r+" too) the factor is written into ``a`` itself, panel by panel, and ``a``
    returned (on failure ``a`` then holds the panels finished so far: keep a
    copy to recover).  Otherwise ``a`` is only read and a new array returned:
    the factor with the other triangle zero (``clean``) or the input's.
    """
    arr = host_matrix(a, check_finite=check_finite, queue=queue)
    n = arr.shape[0]
    if overwrite_a and writable_in_place(a):
        src = dest = a
    else:
        copies = 2 if clean and not arr.flags.c_contiguous else 1
        check_host_room(copies * arr.nbytes, f"the factor of a {n} x {n} {arr.dtype} "
                        "matrix", IN_PLACE_HINT)
        if clean:
            src, dest = np.ascontiguousarray(arr), np.zeros((n, n), arr.dtype)
        else:
            src = dest = np.array(arr, order="C")
    stats = factor_streamed(src, dest, lower=lower, queue=queue, tile=tile, block=block,
                            clean=clean)
    if clean and dest is a:
        zero_outside_panels(dest, stats.tile, lower)
    return dest


def solve_streamed(c: np.ndarray, b: View, nrhs: int, *, lower: bool, queue,
                   tile: int | None = None, pinned: bool = True) -> None:
    """B := A⁻¹·B for the host factor ``c`` (A = L·Lᵀ, or Uᵀ·U), B n x nrhs on the
    device at ``b``: each panel of the factor is uploaded for the forward and again
    for the backward substitution (two buffers, alternating), on the copy queue
    through page-locked staging buffers (``pinned``; else straight from ``c`` on the
    compute queue): panel p + 1 travels while panel p computes."""
    n, dtype = c.shape[0], c.dtype
    w = plan_tile(queue, n, dtype, tile)
    host = contiguous_host(c, f"a C-contiguous copy of the {n} x {n} factor")
    size = n * w * dtype.itemsize
    bufs = [cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size) for _ in range(2)]
    copyq = copy_queue(queue)
    staging = Staging(copyq, n * w, dtype) if pinned else None
    free = [None, None]           # the compute queue's marker after the last use of a buffer
    last = [None]

    def panel(p: int) -> Panel:
        k0 = p * w
        kb = min(w, n - k0)
        slot = p % 2
        piece = Panel(bufs[slot], k0, k0, n - k0, kb) if lower else \
            Panel(bufs[slot], k0, k0, kb, n - k0)
        if last[0] is not None:   # everything enqueued so far used the previous panel
            free[last[0]] = cl.enqueue_marker(queue)
        last[0] = slot
        if staging is None:
            copy_panel(queue, piece, host, upload=True)
        else:
            arrived = staging.upload(piece.buf, host, piece.r0, piece.c0, piece.h, piece.w,
                                     wait_for=[free[slot]] if free[slot] else None)
            copyq.flush()
            cl.enqueue_barrier(queue, wait_for=[arrived])
        return piece

    try:
        with trace.run("cho_solve", "out_of_core", queue, (n, nrhs), dtype, tile=w):
            with trace.step("solve", (0, n, 0, n), flops=2.0 * n * n * nrhs):
                solve_panels(queue, n, w, panel, b, nrhs, lower=lower, dtype=dtype)
    finally:
        if staging is not None:
            staging.close()
        queue.finish()
