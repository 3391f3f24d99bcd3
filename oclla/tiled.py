"""Tiled matrices: one matrix in many device buffers, and the Cholesky factorization on them.

OpenCL caps a single buffer at the device's ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``
(19.8 GiB of an 80 GB H100 with NVIDIA's driver: a float64 matrix of order
51 000), while the device's memory holds four times that.  A
:class:`TiledMatrix` holds an m x n matrix as a grid of ``tile`` x ``tile``
tiles, one *panel* of tiles per buffer:

* ``triangle=None`` or ``"lower"``: panel p is block column p (columns
  p·tile .. p·tile + w, w ≤ tile), rows 0 .. m (or, for ``"lower"``, rows
  p·tile .. n: the tiles on and below the diagonal), row-major with leading
  dimension w;
* ``triangle="upper"``: panel p is block row p (rows p·tile .. p·tile + h),
  columns p·tile .. n (the tiles on and right of the diagonal), row-major
  with leading dimension n − p·tile.

So every tile is a :class:`oclla.blas.View` into its panel's buffer
(:meth:`TiledMatrix.view`), a panel's tiles lie one after the other, and the
whole part of a panel below (or right of) a row is one operand of the device
BLAS (:mod:`oclla.blas`): each step below is one launch per panel pair, not
per tile.

Cholesky on tiles (:func:`factor_tiles`), left-looking by panels, in the
logical lower factor L (A = L·Lᵀ; for ``"upper"`` storage U = Lᵀ is stored and
every operand is read transposed).  For each panel j, with columns
J = j0 .. j0 + jb and R = j0 .. n::

    for each earlier panel k (columns K):
        A[R, J] -= L[R, K] · L[J, K]ᵀ        one GEMM writing only the lower
                                             triangle of the diagonal tile  ("syrk" step)
    L[J, J] = potrf(A[J, J])                 :func:`oclla.cholesky.factor_blocked`
    L[R', J] = A[R', J] · L[J, J]⁻ᵀ          TRSM on the rows R' below J   ("trsm" step)

The same two steps, with the earlier panels streamed from host memory, make
the out-of-core factorization (:mod:`oclla.out_of_core`).  The device's info
flag is read two panels behind (never stalling the device): a matrix that is
not positive definite stops within two panels of its failing pivot and raises
:class:`numpy.linalg.LinAlgError` with LAPACK's order.

The public functions (:func:`oclla.cholesky`, :func:`oclla.cho_factor`,
:func:`oclla.cho_solve`) come here by themselves for a host matrix larger than
one buffer of the device (:func:`route`); they also take a
:class:`TiledMatrix` (a factor stays on the device).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyopencl as cl

from . import trace
from ._device import DeviceError, device_info, driver_errors, resolve_queue
from ._params import params
from ._programs import enqueue, get_kernel, int_arg, int_zeros, launch_queue, round_up
from ._queue_state import made
from ._validate import (IN_PLACE_HINT, NONFINITE, all_finite, check_dtype, check_fp64,
                        check_host_room, is_device_array)
from .blas import View, gemm, trsm
from .cholesky import _solve_panel, factor_blocked, not_positive_definite, zero_other_triangle

#: Widest tile (panel width) chosen by default: each panel's GEMM then has an inner
#: dimension of up to TILE (arithmetic intensity ~TILE/4 flop per byte of float64,
#: the ratio that decides whether streaming panels from host memory pays), and a
#: factorization of order n makes about (n/TILE)²/2 GEMM launches.  Narrower where
#: one buffer cannot hold n x TILE entries.
TILE = 2048

#: Share of the device's global memory a tiled factorization may fill; the rest is
#: left for the work buffers of the BLAS and the driver.
MEMORY_SHARE = 0.9

#: Panels whose info flag may still be in flight before the host waits for one.
INFO_LAG = 2

TRIANGLES = (None, "lower", "upper")


class Panel(NamedTuple):
    """One buffer of a tiled matrix: rows r0 .. r0 + h, columns c0 .. c0 + w, row-major
    (leading dimension w)."""

    buf: cl.Buffer
    r0: int
    c0: int
    h: int
    w: int

    def view(self, i: int, j: int) -> View:
        """The :class:`~oclla.blas.View` whose (0, 0) is the matrix's (i, j)."""
        return View(self.buf, (i - self.r0) * self.w + (j - self.c0), self.w)


def panel_extent(p: int, shape: tuple, tile: int, triangle) -> tuple:
    """(r0, c0, h, w) of panel p of an m x n matrix in ``tile``-wide panels."""
    m, n = shape
    if triangle == "upper":
        r0 = p * tile
        return r0, r0, min(tile, m - r0), n - r0
    c0 = p * tile
    r0 = c0 if triangle == "lower" else 0
    return r0, c0, m - r0, min(tile, n - c0)


def tiled_bytes(shape: tuple, tile: int, itemsize: int, triangle=None) -> int:
    """Bytes of the buffers of a :class:`TiledMatrix` of that shape, tile and triangle."""
    count = -(-(shape[0] if triangle == "upper" else shape[1]) // tile)
    return sum(h * w for _, _, h, w in (panel_extent(p, shape, tile, triangle)
                                        for p in range(count))) * itemsize


class TiledMatrix:
    """A matrix held as ``tile`` x ``tile`` tiles in several device buffers.

    Each buffer holds one panel of tiles, row-major: block column p (columns
    p·tile .. p·tile + tile, every row; only rows p·tile .. n for
    ``triangle="lower"``), or, for ``triangle="upper"``, block row p (columns
    p·tile .. n).  So a matrix is limited by the device's memory, not by its
    largest buffer (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``: 19.8 GiB of an 80 GB
    H100).  :func:`oclla.cholesky`, :func:`oclla.cho_factor` (lower triangle
    in "lower" or full storage, upper in "upper") and :func:`oclla.cho_solve`
    take it; :meth:`view` gives any entry as an :class:`oclla.blas.View` for
    the device BLAS.

    Parameters
    ----------
    shape : (m, n) tuple of int
    dtype : float32 or float64
    tile : int, optional
        Tile size, the width of each panel (default: :func:`choose_tile`).
    triangle : None, "lower" or "upper"
        Store every tile (block columns), only the tiles on and below the
        diagonal (block columns), or only those on and above it (block rows);
        a triangle needs m == n.
    queue : pyopencl.CommandQueue, optional
        The queue of the device that holds the buffers (default: the default
        device's, :func:`oclla.get_queue`).

    The buffers are not initialised; :meth:`from_numpy` makes a filled one.

    Attributes
    ----------
    shape, dtype, tile, triangle, queue
        As given.
    panels : list of Panel
        The buffers, each with the rows and columns it holds.
    nbytes : int
        Bytes of all the buffers.

    Raises
    ------
    ValueError
        A shape, tile or triangle out of range.
    TypeError
        A dtype other than float32/float64.
    oclla.DeviceError
        float64 without ``cl_khr_fp64``, a panel larger than one buffer of the
        device, or buffers that do not fit its memory.
    """

    def __init__(self, shape, dtype, *, tile: int | None = None, triangle=None, queue=None):
        self.queue = resolve_queue(queue)
        m, n = (int(s) for s in shape)
        if m < 0 or n < 0:
            raise ValueError(f"shape must be non-negative, got {shape}")
        if triangle not in TRIANGLES:
            raise ValueError(f"triangle must be None, 'lower' or 'upper', got {triangle!r}")
        if triangle is not None and m != n:
            raise ValueError(f"a {triangle} triangle needs a square shape, got {shape}")
        self.shape = (m, n)
        self.dtype = check_dtype(dtype)
        check_fp64(self.queue, self.dtype)
        self.triangle = triangle
        self.tile = int(tile) if tile is not None else choose_tile(
            self.queue, max(m, n), self.dtype)
        if self.tile < 1:
            raise ValueError(f"tile must be a positive integer, got {tile!r}")
        info = device_info(self.queue)
        self.nbytes = tiled_bytes(self.shape, self.tile, self.dtype.itemsize, triangle)
        if self.nbytes > info.global_mem_size:
            raise DeviceError(f"a tiled {m} x {n} {self.dtype} matrix needs "
                              f"{self.nbytes / 2**20:.1f} MiB, more than {info.name}'s "
                              f"{info.global_mem_size / 2**20:.1f} MiB of memory")
        count = -(-(m if triangle == "upper" else n) // self.tile) if m and n else 0
        self.panels = []
        for p in range(count):
            r0, c0, h, w = panel_extent(p, self.shape, self.tile, triangle)
            nbytes = max(h * w, 1) * self.dtype.itemsize
            if nbytes > info.max_alloc_size:
                raise DeviceError(f"a panel of {h} x {w} entries needs {nbytes / 2**20:.1f} "
                                  f"MiB in one buffer, more than {info.name}'s maximum "
                                  f"allocation of {info.max_alloc_size / 2**20:.1f} MiB; "
                                  f"choose a smaller tile")
            buf = cl.Buffer(self.queue.context, cl.mem_flags.READ_WRITE, nbytes)
            self.panels.append(Panel(buf, r0, c0, h, w))

    def __repr__(self) -> str:
        return (f"TiledMatrix(shape={self.shape}, dtype={self.dtype}, tile={self.tile}, "
                f"triangle={self.triangle!r}, panels={len(self.panels)})")

    def panel_of(self, i: int, j: int) -> Panel:
        """The panel that holds entry (i, j); ValueError if none does."""
        p = (i if self.triangle == "upper" else j) // self.tile
        if 0 <= p < len(self.panels):
            panel = self.panels[p]
            if panel.r0 <= i < panel.r0 + panel.h and panel.c0 <= j < panel.c0 + panel.w:
                return panel
        raise ValueError(f"entry ({i}, {j}) is not stored by {self!r}")

    def view(self, i: int, j: int) -> View:
        """The :class:`~oclla.blas.View` whose (0, 0) is entry (i, j), in its panel's
        buffer: the panel's entries right of and below it are reachable through it."""
        return self.panel_of(i, j).view(i, j)

    @classmethod
    @driver_errors
    def from_numpy(cls, a, *, tile: int | None = None, triangle=None, queue=None,
                   check_finite: bool = True) -> "TiledMatrix":
        """A tiled copy of the 2-D host array ``a`` (only the stored panels are read;
        with a triangle, the diagonal tiles whole).  ``a`` is never written.

        Raises ValueError (not 2-D, NaN/Inf with ``check_finite``), TypeError and
        DeviceError as the constructor, MemoryError where a non-C-contiguous ``a``'s copy
        would not fit the host's available memory (:func:`oclla._validate.check_host_room`).
        """
        arr = np.asarray(a)
        if arr.ndim != 2:
            raise ValueError(f"a must be 2-D, got {arr.ndim}-D with shape {arr.shape}")
        check_dtype(arr.dtype)
        if check_finite:
            check_finite_rows(arr)
        if not arr.flags.c_contiguous:
            check_host_room(arr.nbytes, f"a C-contiguous copy of the {arr.shape[0]} x "
                            f"{arr.shape[1]} matrix")
        tm = cls(arr.shape, arr.dtype, tile=tile, triangle=triangle, queue=queue)
        host = np.ascontiguousarray(arr)
        for panel in tm.panels:
            copy_panel(tm.queue, panel, host, upload=True)
        tm.queue.finish()
        return tm

    @driver_errors
    def to_numpy(self, out: np.ndarray | None = None) -> np.ndarray:
        """The matrix on the host: every stored entry written into ``out`` (a writable
        C-contiguous array of this shape and dtype), or into a new array whose entries
        outside the stored panels are zero.  Returns the array."""
        if out is None:
            check_host_room(self.shape[0] * self.shape[1] * self.dtype.itemsize,
                            f"the {self.shape[0]} x {self.shape[1]} matrix on the host",
                            "pass out=, a writable C-contiguous array of its shape and dtype "
                            "(a memory map opened 'r+' too)")
            out = np.zeros(self.shape, self.dtype)
        elif not (isinstance(out, np.ndarray) and out.shape == self.shape
                  and out.dtype == self.dtype and out.flags.c_contiguous
                  and out.flags.writeable):
            raise ValueError(f"out must be a writable C-contiguous {self.dtype} array of "
                             f"shape {self.shape}")
        for panel in self.panels:
            copy_panel(self.queue, panel, out, upload=False)
        self.queue.finish()
        return out

    def release(self) -> None:
        """Free the device buffers now (the matrix is unusable afterwards)."""
        for panel in self.panels:
            panel.buf.release()
        self.panels = []

    @driver_errors
    def copy(self) -> "TiledMatrix":
        """A new tiled matrix with the same entries (device-to-device copies)."""
        twin = TiledMatrix(self.shape, self.dtype, tile=self.tile, triangle=self.triangle,
                           queue=self.queue)
        for src, dst in zip(self.panels, twin.panels):
            cl.enqueue_copy(self.queue, dst.buf, src.buf, byte_count=src.h * src.w
                            * self.dtype.itemsize)
        return twin


def copy_panel(queue, panel: Panel, host: np.ndarray, *, upload: bool,
               wait_for=None) -> cl.Event | None:
    """Enqueue (no wait) the copy of ``panel``'s rectangle between its buffer and the
    C-contiguous host matrix ``host``: one rectangular copy (``clEnqueueWriteBufferRect``
    or ``ReadBufferRect``).  None when the rectangle is empty."""
    if panel.h == 0 or panel.w == 0:
        return None
    item = host.dtype.itemsize
    kwargs = dict(buffer_origin=(0, 0), host_origin=(panel.c0 * item, panel.r0),
                  region=(panel.w * item, panel.h), buffer_pitches=(panel.w * item,),
                  host_pitches=(host.strides[0],), is_blocking=False, wait_for=wait_for)
    if upload:
        return cl.enqueue_copy(queue, panel.buf, host, **kwargs)
    return cl.enqueue_copy(queue, host, panel.buf, **kwargs)


def copy_queue(queue) -> cl.CommandQueue:
    """A second profiling queue on ``queue``'s device for transfers (one per queue, kept
    in its state: :mod:`oclla._queue_state`)."""
    return made(queue, "copy", lambda: cl.CommandQueue(
        queue.context, queue.device, properties=cl.command_queue_properties.PROFILING_ENABLE))


def check_finite_rows(a: np.ndarray) -> None:
    """ValueError if the host array holds NaN/Inf (:func:`oclla._validate.all_finite`:
    no temporary as large as ``a``)."""
    if not all_finite(a):
        raise ValueError(NONFINITE)


def choose_tile(queue, n: int, dtype, widest: int = TILE) -> int:
    """The tile size for a matrix of order n: :data:`TILE` (or ``widest``), narrowed
    until one buffer holds a panel of n x tile entries (a multiple of 16 when that
    leaves at least 16).  DeviceError where not even one column fits."""
    info = device_info(queue)
    fits = info.max_alloc_size // max(1, n * np.dtype(dtype).itemsize)
    if fits < 1:
        raise DeviceError(f"one column of {n} entries needs more than {info.name}'s maximum "
                          f"allocation of {info.max_alloc_size} bytes")
    tile = min(widest, fits, max(n, 1))
    return tile - tile % 16 if tile >= 16 else tile


# ---- routing: one buffer, tiles on the device, or host memory ------------------------------

def exceeds_buffer(a, queue) -> bool:
    """Whether a host array is a square float32/float64 matrix larger than one buffer
    of the device (or than its memory): the public Cholesky functions then tile it."""
    if is_device_array(a) or isinstance(a, TiledMatrix):
        return False
    arr = a if isinstance(a, np.ndarray) else np.asarray(a)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.dtype.kind != "f" \
            or arr.dtype.itemsize not in (4, 8):
        return False
    info = device_info(queue)
    return arr.nbytes > min(info.max_alloc_size, info.global_mem_size)


def fits_in_core(queue, n: int, dtype, tile: int) -> bool:
    """Whether the tiles of one triangle of an order-n matrix fit the device's memory
    (:data:`MEMORY_SHARE` of it)."""
    need = tiled_bytes((n, n), tile, np.dtype(dtype).itemsize, "lower")
    return need <= MEMORY_SHARE * device_info(queue).global_mem_size


def route(a, queue) -> str | None:
    """How the public Cholesky functions treat ``a``: None (one buffer, as always),
    "tiled" (a host matrix larger than one buffer whose triangle fits the device in
    tiles) or "out_of_core" (larger than the device's memory: streamed from the host,
    :mod:`oclla.out_of_core`)."""
    if not exceeds_buffer(a, queue):
        return None
    arr = np.asarray(a)
    return ("tiled" if fits_in_core(queue, arr.shape[0], arr.dtype,
                                    choose_tile(queue, arr.shape[0], arr.dtype))
            else "out_of_core")


# ---- the device steps the in-core and out-of-core factorizations share ----------------

def operand(panel_view, lower: bool, i: int, j: int) -> tuple:
    """(view, transposed) of the logical lower factor from entry L(i, j) on: the view of
    (i, j) for lower storage, of (j, i) read transposed for upper storage."""
    return (panel_view(i, j), False) if lower else (panel_view(j, i), True)


def update_panel(queue, m: int, jb: int, kb: int, src: View, dst: View, *, lower: bool,
                 dtype, region=None) -> None:
    """A[R, J] -= L[R, K]·L[J, K]ᵀ for the m rows R from the panel's diagonal on.

    ``src`` is L(j0, k0) (lower storage: an m x kb view; upper: kb x m), ``dst``
    A(j0, j0) (m x jb; upper: jb x m).  One GEMM; in the diagonal tile only the
    stored triangle is written.  ``region`` is the trace's region of the step.
    """
    with trace.step("syrk", region or (0, 0, 0, 0), flops=2.0 * kb * (m * jb - jb * (jb - 1) / 2)):
        if lower:
            gemm(queue, m, jb, kb, -1.0, src, src, 1.0, dst, dtype=dtype, trans_b=True,
                 triangle="lower")
        else:
            gemm(queue, jb, m, kb, -1.0, src, src, 1.0, dst, dtype=dtype, trans_a=True,
                 triangle="upper")


def finish_panel(queue, diag: View, j0: int, jb: int, rest: int, *, lower: bool, dtype,
                 info, block=None, clean: bool = False) -> None:
    """Factor the updated panel whose diagonal tile (jb x jb) is at ``diag``: potrf of
    the tile (a failing pivot at order k sets ``info`` to j0 + k), then the TRSM of the
    ``rest`` rows below it (columns right of it for upper storage).  ``clean`` zeroes
    the tile's other triangle."""
    def shifted(r0, r1, c0, c1):
        return (r0 + j0, r1 + j0, c0 + j0, c1 + j0), {}

    factor_blocked(queue, diag, jb, lower=lower, dtype=dtype, info=info, base=j0,
                   block=block, region=shifted)
    if rest:
        reg = (j0 + jb, j0 + jb + rest, j0, j0 + jb) if lower else \
            (j0, j0 + jb, j0 + jb, j0 + jb + rest)
        with trace.step("trsm", reg, flops=float(jb * jb * rest)):
            _solve_panel(queue, diag, jb, rest, lower=lower, dtype=dtype)
    if clean:
        with trace.step("zero", (j0, j0 + jb, j0, j0 + jb)):
            zero_other_triangle(queue, diag, jb, lower=lower, dtype=dtype)


class InfoWatch:
    """Reads the device's info flag :data:`INFO_LAG` panels behind the enqueued work, so
    the host never waits for the panel it just enqueued; raises the LinAlgError of
    LAPACK's order as soon as a read shows one."""

    def __init__(self, queue):
        self.queue = queue
        self.flag = int_zeros(queue)
        self.pending = []

    def panel_done(self) -> None:
        """Enqueue a read of the flag after the work enqueued so far; check the oldest
        read once more than INFO_LAG are in flight."""
        host = np.zeros(1, np.int32)
        event = cl.enqueue_copy(self.queue, host, self.flag.data, is_blocking=False)
        self.pending.append((event, host))
        if len(self.pending) > INFO_LAG:
            self._check(*self.pending.pop(0))

    def finish(self) -> None:
        """Wait for all the work and raise if any pivot failed."""
        self.pending.clear()
        self._check(None, self.flag.get())

    @staticmethod
    def _check(event, host) -> None:
        if event is not None:
            event.wait()
        if int(host[0]):
            raise not_positive_definite(int(host[0]))


# ---- the factorization and the solves on a TiledMatrix ------------------------------------

def check_layout(tm: TiledMatrix, lower: bool) -> None:
    """ValueError unless ``tm`` is square and stores the triangle ``lower`` names."""
    if tm.shape[0] != tm.shape[1]:
        raise ValueError(f"a Cholesky factor needs a square matrix, got shape {tm.shape}")
    wanted = ("lower", None) if lower else ("upper",)
    if tm.triangle not in wanted:
        raise ValueError(f"lower={lower} reads the {'lower' if lower else 'upper'} triangle, "
                         f"which {tm!r} does not store in panels of "
                         f"{'block columns' if lower else 'block rows'}; make it with "
                         f"triangle={'lower' if lower else 'upper'!r}")


def factor_tiles(tm: TiledMatrix, *, lower: bool, block: int | None = None,
                 clean: bool = False, source: np.ndarray | None = None,
                 write_to: np.ndarray | None = None) -> None:
    """Factor the tiled matrix in place, left-looking by panels (module docstring).

    ``lower``: A = L·Lᵀ, L in the lower tiles (``triangle`` "lower" or None); else
    A = Uᵀ·U, U in the upper tiles (``triangle="upper"``).  ``block``: the block
    width of the diagonal tiles' potrf.  ``clean`` zeroes the other triangle of the
    diagonal tiles.  ``source``: a C-contiguous host matrix whose panels are uploaded
    into the (uninitialised) tiles as the factorization reaches them; ``write_to``:
    one into which each finished panel is downloaded; both transfers run on a
    second queue (:func:`copy_queue`), overlapped with the factorization of the next
    panel.  Raises LinAlgError "leading minor of order k is not positive definite"
    (the tiles, and ``write_to``, then partly factored).
    """
    check_layout(tm, lower)
    n, nb, dtype, panels = tm.shape[0], tm.tile, tm.dtype, tm.panels
    copyq = copy_queue(tm.queue) if source is not None or write_to is not None else None

    def lv(i, j):
        return operand(tm.view, lower, i, j)[0]

    def transfer(p: int, host, upload: bool, wait_for=None):
        event = copy_panel(copyq, panels[p], host, upload=upload, wait_for=wait_for)
        copyq.flush()
        return event

    try:
        with trace.run("cholesky", "tiled", tm.queue, (n, n), dtype, lower=lower, tile=nb), \
                launch_queue(tm.queue) as queue:
            watch = InfoWatch(queue)
            arrived = transfer(0, source, True) if source is not None and panels else None
            done = None
            for p, j0 in enumerate(range(0, n, nb)):
                jb, m = min(nb, n - j0), n - j0
                if arrived is not None:
                    cl.enqueue_barrier(queue, wait_for=[arrived])
                for k0 in range(0, j0, nb):
                    kb = min(nb, n - k0)
                    update_panel(queue, m, jb, kb, lv(j0, k0), lv(j0, j0), lower=lower,
                                 dtype=dtype, region=_update_region(n, j0, jb, lower))
                finish_panel(queue, lv(j0, j0), j0, jb, m - jb, lower=lower, dtype=dtype,
                             info=watch.flag, block=block, clean=clean)
                previous, done = done, cl.enqueue_marker(queue) if copyq else None
                if copyq:
                    queue.flush()
                if write_to is not None and p:       # while panel p computes
                    transfer(p - 1, write_to, False, wait_for=[previous])
                if source is not None and p + 1 < len(panels):
                    arrived = transfer(p + 1, source, True)
                watch.panel_done()
            if write_to is not None and panels:
                transfer(len(panels) - 1, write_to, False, wait_for=[done])
            watch.finish()
    finally:
        if copyq is not None:
            copyq.finish()


def _update_region(n: int, j0: int, jb: int, lower: bool) -> tuple:
    return (j0, n, j0, j0 + jb) if lower else (j0, j0 + jb, j0, n)


def solve_panels(queue, n: int, tile: int, panel, b: View, nrhs: int, *, lower: bool,
                 dtype) -> None:
    """B := A⁻¹·B for A = L·Lᵀ (``lower``) or Uᵀ·U held in panels of width ``tile``;
    ``panel(p)`` returns panel p (a :class:`Panel`: resident, or uploaded on demand).
    B is n x nrhs at ``b``.  Forward: per panel, TRSM with its diagonal tile and one
    GEMM for the rows below; backward the same in reverse, transposed."""
    starts = list(range(0, n, tile))
    for j0 in starts:                       # L·Y = B
        jb, rest = min(tile, n - j0), n - j0 - min(tile, n - j0)
        p = panel(j0 // tile)
        trsm(queue, jb, nrhs, p.view(j0, j0), b.at(j0, 0), dtype=dtype, left=True,
             lower=lower, trans=not lower)
        if rest:
            v, t = operand(p.view, lower, j0 + jb, j0)
            gemm(queue, rest, nrhs, jb, -1.0, v, b.at(j0, 0), 1.0, b.at(j0 + jb, 0),
                 dtype=dtype, trans_a=t)
    for j0 in reversed(starts):             # Lᵀ·X = Y
        jb, rest = min(tile, n - j0), n - j0 - min(tile, n - j0)
        p = panel(j0 // tile)
        if rest:
            v, t = operand(p.view, lower, j0 + jb, j0)
            gemm(queue, jb, nrhs, rest, -1.0, v, b.at(j0 + jb, 0), 1.0, b.at(j0, 0),
                 dtype=dtype, trans_a=not t)
        trsm(queue, jb, nrhs, p.view(j0, j0), b.at(j0, 0), dtype=dtype, left=True,
             lower=lower, trans=lower)


def solve_tiles(tm: TiledMatrix, b: View, nrhs: int, *, lower: bool, queue=None) -> None:
    """B := A⁻¹·B on the device for the tiled factor ``tm`` (:func:`factor_tiles`'s), on
    ``queue`` (default: the matrix's; another queue of its context where B lives)."""
    check_layout(tm, lower)
    n, queue = tm.shape[0], queue or tm.queue
    with trace.run("cho_solve", "tiled", queue, (n, nrhs), tm.dtype, tile=tm.tile):
        with trace.step("solve", (0, n, 0, n), flops=2.0 * n * n * nrhs):
            solve_panels(queue, n, tm.tile, lambda p: tm.panels[p], b, nrhs, lower=lower,
                         dtype=tm.dtype)


# ---- what the public functions call ----------------------------------------------------

def host_matrix(a, *, check_finite: bool, queue) -> np.ndarray:
    """A host operand of the tiled and out-of-core paths validated as :func:`oclla.cholesky`
    validates one: square, float32/float64 (fp64 on the device), finite."""
    arr = np.asarray(a)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"a must be square, got shape {arr.shape}")
    check_dtype(arr.dtype)
    check_fp64(queue, arr.dtype)
    if check_finite:
        check_finite_rows(arr)
    return arr


def factor_host(a, *, lower: bool, overwrite_a: bool, check_finite: bool, clean: bool,
                block: int | None, queue, tile: int | None = None) -> np.ndarray:
    """The Cholesky factor of a host matrix through tiles on the device (route "tiled").

    Only the triangle ``lower`` names goes to the device; the result is a new host
    array (the factor, the other triangle zero with ``clean``, else the input's), or
    ``a`` itself where ``overwrite_a`` allows (a writable C-contiguous array).  On
    failure ``a`` is untouched.
    """
    arr = host_matrix(a, check_finite=check_finite, queue=queue)
    n = arr.shape[0]
    tm = TiledMatrix((n, n), arr.dtype, tile=tile, triangle="lower" if lower else "upper",
                     queue=queue)
    if overwrite_a and writable_in_place(a):      # written only once the factor is whole
        factor_tiles(tm, lower=lower, block=block, clean=clean,
                     source=np.ascontiguousarray(arr))
        if clean:
            zero_outside_panels(a, tm.tile, lower)
        return tm.to_numpy(a)
    copies = 2 if clean and not arr.flags.c_contiguous else 1
    check_host_room(copies * arr.nbytes, f"the factor of a {n} x {n} {arr.dtype} matrix",
                    IN_PLACE_HINT)
    if clean:
        out, source = np.zeros((n, n), arr.dtype), np.ascontiguousarray(arr)
    else:       # the copy is the source too: each panel is read before it is written
        out = source = np.array(arr, order="C")
    factor_tiles(tm, lower=lower, block=block, clean=clean, source=source, write_to=out)
    return out


def writable_in_place(a) -> bool:
    """Whether a host operand may receive its factor itself (with ``overwrite_a``): a
    writable C-contiguous float32/float64 ndarray (a memory map opened "r+" too)."""
    return (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable
            and a.dtype in (np.float32, np.float64))


def zero_outside_panels(out: np.ndarray, tile: int, lower: bool) -> None:
    """Zero the entries of the host matrix beyond the triangle's panels (above the
    diagonal tiles for ``lower``, below them otherwise), a block of rows at a time."""
    n = out.shape[0]
    for i0 in range(0, n, tile):
        i1 = min(n, i0 + tile)
        if lower:
            out[i0:i1, i1:] = 0
        else:
            out[i0:i1, :i0] = 0


def factor_beyond(a, *, lower: bool, overwrite_a: bool, check_finite: bool, clean: bool,
                  block: int | None, queue):
    """What :func:`oclla.cholesky` and :func:`oclla.cho_factor` do with a TiledMatrix
    (:func:`factor_tiled`) or a host matrix larger than one buffer (:func:`route`:
    :func:`factor_host`, or :func:`oclla.out_of_core.cholesky_host`)."""
    if isinstance(a, TiledMatrix):
        if a.queue.context != queue.context:
            raise ValueError("a lives on another OpenCL context than the queue")
        return factor_tiled(a, lower=lower, overwrite_a=overwrite_a, clean=clean,
                            block=block)
    if route(a, queue) == "tiled":
        return factor_host(a, lower=lower, overwrite_a=overwrite_a, check_finite=check_finite,
                           clean=clean, block=block, queue=queue)
    from .out_of_core import cholesky_host
    return cholesky_host(a, lower=lower, overwrite_a=overwrite_a, check_finite=check_finite,
                         clean=clean, block=block, queue=queue)


def factor_tiled(tm: TiledMatrix, *, lower: bool, overwrite_a: bool, clean: bool,
                 block: int | None) -> TiledMatrix:
    """:func:`oclla.cholesky` of a TiledMatrix: factored in place with ``overwrite_a``,
    else in a copy (``tm`` is then untouched, on failure too)."""
    check_layout(tm, lower)
    work = tm if overwrite_a else tm.copy()
    factor_tiles(work, lower=lower, block=block, clean=clean)
    return work


def solve_host_factor(c, lower: bool, b, *, overwrite_b: bool, check_finite: bool, queue):
    """:func:`oclla.cho_solve` for a factor larger than one buffer or a TiledMatrix.

    A TiledMatrix is used where it is; a host factor's triangle is uploaded in tiles
    (or, beyond the device's memory, streamed panel by panel twice,
    :func:`oclla.out_of_core.solve_streamed`).  ``b`` follows cho_solve's rules.
    """
    from ._validate import solve_in_place
    from . import out_of_core
    if isinstance(c, TiledMatrix):
        check_layout(c, bool(lower))
        tm, n, dtype = c, c.shape[0], c.dtype
        if tm.queue.context != queue.context:
            raise ValueError("c lives on another OpenCL context than the queue")

        def solve(x2):
            tm.queue.finish()                   # the factor's queue done, B's queue solves
            solve_tiles(tm, View(x2.base_data, x2.offset // dtype.itemsize, x2.shape[1]),
                        x2.shape[1], lower=bool(lower), queue=queue)
        return solve_in_place(queue, b, n, dtype, solve, overwrite_b=overwrite_b,
                              check_finite=check_finite)
    arr = host_matrix(c, check_finite=check_finite, queue=queue)
    n, dtype = arr.shape[0], arr.dtype

    def solve_host(x2):
        x = View(x2.base_data, x2.offset // dtype.itemsize, x2.shape[1])
        tile = choose_tile(queue, n, dtype)
        if fits_in_core(queue, n, dtype, tile):
            tm = TiledMatrix.from_numpy(arr, tile=tile, queue=queue, check_finite=False,
                                        triangle="lower" if lower else "upper")
            solve_tiles(tm, x, x2.shape[1], lower=bool(lower), queue=queue)
        else:
            out_of_core.solve_streamed(arr, x, x2.shape[1], lower=bool(lower), queue=queue)
    return solve_in_place(queue, b, n, dtype, solve_host, overwrite_b=overwrite_b,
                          check_finite=check_finite)
