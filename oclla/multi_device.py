"""Tiled Cholesky over several OpenCL devices of one context.

The lower triangle of an SPD matrix of order n is held in panels of ``tile``
columns (block column p: rows p·tile .. n, row-major, as a lower
:class:`oclla.tiled.TiledMatrix` stores it); panel p lives on device
``p mod D`` (1-D block-cyclic by tile columns, so every device keeps a share
of the trailing matrix to the end).  Right-looking, with one panel of
look-ahead::

    device owner(0) factors panel 0                  potrf + TRSM (finish_panel)
    for each panel k:
        every device that owns a panel j > k receives a copy of panel k
            (its copy queue; waits for the owner's event of panel k), the rows
            through panel k + 1's diagonal tile first
        on each device, for its panels j > k, the next panel first:
            A[R_j, J] -= L[R_j, K]·L[J, K]ᵀ           one GEMM (update_panel)
            if j = k + 1: factor panel j now           (look-ahead: its copies
                                                        leave while the device
                                                        updates the rest)
        (on a receiver, panel k + 1 goes: its diagonal tile's update and
        potrf once the first rows of panel k are there, then the rows below
        (GEMM, TRSM) once all are: the potrf overlaps the rest of the copy)

All the devices share one context (NVIDIA's OpenCL lists every GPU of a host
in one platform; :func:`context_queues` makes the context and a profiling
queue per device), so events order work across them.  A panel travels from
its owner to the others through page-locked host memory (:class:`Relay`: one
download, one upload per receiver, on copy queues, in row chunks of at least
:data:`CHUNK_BYTES` so that the uploads of the first rows overlap the download
of the last): each device buffer is only ever used by its own device.  The
copy queues, the page-locked slots and the receive buffers are made once with
the :class:`MultiTiles` (:class:`Exchange`), not inside the factorization:
made there (1 GiB of pinned memory at n = 65536 float32, tile 2048), they left
two H200s at 1.36x of one; made beforehand, with the chunks, 1.88x.  (With ``clEnqueueCopyBuffer`` from the
owner's buffer on the receiver's queue instead, two H200s ran at 0.23x of one
at n = 65536 float32; a driver that keeps each buffer of a multi-device context
on one device at a time would move whole panels back and forth then, which is
the likely cause; with the relay they run at 1.90x, n = 65536 float32.)  Each
device's kernels are recorded on its own lane of the trace (:func:`lanes`,
:func:`oclla.trace.device_labels`).  An SPD failure is read after the whole
factorization: :class:`numpy.linalg.LinAlgError` names LAPACK's order (the
first failing pivot over all devices).

:func:`cholesky` factors a host matrix (the factor comes back to the host);
:class:`MultiTiles` keeps the panels on the devices (:meth:`MultiTiles.factor`,
:meth:`MultiTiles.to_numpy`).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from . import _trace_hooks, trace
from ._device import DeviceError, device_info, driver_errors, resolve_queue
from ._programs import int_zeros
from ._validate import check_dtype, check_fp64
from .blas import gemm
from .cholesky import _solve_panel, not_positive_definite
from .tiled import (MEMORY_SHARE, TILE, Panel, check_finite_rows, copy_panel, finish_panel,
                    panel_extent, update_panel)

__all__ = ["context_queues", "MultiTiles", "factor_multi", "cholesky"]

#: Receive buffers per device: panel k + 1 arrives while panel k is still being read.
SLOTS = 2
#: A relayed panel moves in up to this many row chunks (the upload of chunk i
#: overlaps the download of chunk i + 1) ...
CHUNKS = 4
#: ... of at least this many bytes each (smaller copies cost more than they overlap).
CHUNK_BYTES = 16 << 20


def context_queues(devices) -> list:
    """One context over ``devices`` and a profiling queue on each.

    Parameters
    ----------
    devices : sequence of pyopencl.Device
        Devices of one platform (e.g. both GPUs NVIDIA's platform lists, or the
        sub-devices of ``device.create_sub_devices``).  A device named twice gets
        two queues (drivers refuse it twice in one context).

    Returns
    -------
    list of pyopencl.CommandQueue
        One per entry of ``devices``, in order, all of one context.

    Raises
    ------
    ValueError
        No devices.
    pyopencl.Error
        The driver refuses the context (devices of several platforms).
    """
    devices = list(devices)
    if not devices:
        raise ValueError("devices must name at least one device")
    ctx = cl.Context(list({d.int_ptr: d for d in devices}.values()))
    props = cl.command_queue_properties.PROFILING_ENABLE
    return [cl.CommandQueue(ctx, d, properties=props) for d in devices]


def lanes(queues) -> list:
    """(device, label) of each queue, for :func:`oclla.trace.device_labels`: its
    device's name and its place in ``queues``, so that each gets a timeline lane of
    its own, devices of one name and one device through two queues too."""
    return [(q.device, f"{device_info(q).name} [{d}]") for d, q in enumerate(queues)]


def _check_queues(queues) -> list:
    queues = [resolve_queue(q) for q in queues]
    if not queues:
        raise ValueError("queues must hold at least one queue")
    if any(q.context != queues[0].context for q in queues):
        raise ValueError("the queues must share one context (context_queues makes one)")
    return queues


class MultiTiles:
    """The lower triangle of an n x n matrix (or, with ``full``, the whole matrix) in
    panels of ``tile`` columns spread block-cyclically over the devices of ``queues``
    (panel p on ``queues[p % D]``; panel p holds rows p·tile .. n, or every row).

    Parameters
    ----------
    n : int
        Order.
    dtype : float32 or float64
    queues : sequence of pyopencl.CommandQueue
        Profiling queues of one context (:func:`context_queues`).
    tile : int, optional
        Panel width (default :data:`oclla.tiled.TILE`, at most n).
    full : bool, default False
        Every row of each panel (the LU's storage), not only the lower triangle.

    Attributes
    ----------
    n, dtype, tile, full, queues
        As given.
    panels : list of oclla.tiled.Panel
        The buffers (panel p owned by ``queues[owner(p)]``).
    exchange : Exchange
        The copy queues, receive buffers and page-locked relay the
        factorizations move panels with (made here, once).

    Two queues on one device are allowed (they share its memory and compute units:
    a test of the schedule, not a speed-up).

    Raises ValueError (a negative order, no queues, queues of several contexts),
    TypeError (dtype), DeviceError (float64 without fp64 on a device, a
    panel beyond one buffer, or a device's panels and receive buffers beyond
    :data:`~oclla.tiled.MEMORY_SHARE` of its memory).
    """

    def __init__(self, n: int, dtype, *, queues, tile: int | None = None,
                 full: bool = False):
        self.queues = _check_queues(queues)
        self.full = bool(full)
        if int(n) < 0:
            raise ValueError(f"n must be non-negative, got {n}")
        self.n, self.dtype = int(n), check_dtype(dtype)
        for q in self.queues:
            check_fp64(q, self.dtype)
        self.tile = int(tile) if tile else min(TILE, max(self.n, 1))
        if self.tile < 1:
            raise ValueError(f"tile must be a positive integer, got {tile!r}")
        count = -(-self.n // self.tile)
        item = self.dtype.itemsize
        per_device = [(SLOTS + self.full) * self.n * self.tile * item] * len(self.queues)
        triangle = None if self.full else "lower"
        extents = [panel_extent(p, (self.n, self.n), self.tile, triangle) for p in range(count)]
        for p, (_, _, h, w) in enumerate(extents):
            per_device[p % len(self.queues)] += h * w * item
        for q, need in zip(self.queues, per_device):
            info = device_info(q)
            if need > MEMORY_SHARE * info.global_mem_size:
                raise DeviceError(f"{need / 2**20:.1f} MiB of panels on {info.name}, more than "
                                  f"{MEMORY_SHARE:.0%} of its {info.global_mem_size / 2**20:.1f}"
                                  f" MiB; use more devices")
            if self.n * self.tile * item > info.max_alloc_size:
                raise DeviceError(f"a panel of {self.n} x {self.tile} entries is beyond one "
                                  f"buffer of {info.name}; choose a smaller tile")
        ctx = self.queues[0].context
        self.panels = [Panel(cl.Buffer(ctx, cl.mem_flags.READ_WRITE, max(h * w, 1) * item),
                             r0, c0, h, w) for r0, c0, h, w in extents]
        self.exchange = Exchange(self.queues, self.n * self.tile * item,
                                 pivots=self.tile * 4 if self.full else 0)

    def owner(self, p: int) -> int:
        """Index of the queue whose device holds panel p."""
        return p % len(self.queues)

    @classmethod
    @driver_errors
    def from_numpy(cls, a, *, queues, tile: int | None = None, check_finite: bool = True,
                   full: bool = False) -> "MultiTiles":
        """The lower triangle (or all, ``full``) of the square host array ``a`` (never
        written) in panels on the devices.  ValueError for a non-square ``a`` or NaN/Inf."""
        arr = np.asarray(a)
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise ValueError(f"a must be square, got shape {arr.shape}")
        check_dtype(arr.dtype)
        if check_finite:
            check_finite_rows(arr)
        mt = cls(arr.shape[0], arr.dtype, queues=queues, tile=tile, full=full)
        host = np.ascontiguousarray(arr)
        for p, panel in enumerate(mt.panels):
            copy_panel(mt.queues[mt.owner(p)], panel, host, upload=True)
        for q in mt.queues:
            q.finish()
        return mt

    @driver_errors
    def to_numpy(self) -> np.ndarray:
        """The stored panels in a new host array (zero above the diagonal tiles where
        only the lower triangle is stored)."""
        out = np.zeros((self.n, self.n), self.dtype)
        for p, panel in enumerate(self.panels):
            copy_panel(self.queues[self.owner(p)], panel, out, upload=False)
        for q in self.queues:
            q.finish()
        return out

    def release(self) -> None:
        """Free the device buffers and the page-locked relay now."""
        for panel in self.panels:
            panel.buf.release()
        self.panels = []
        if self.exchange is not None:
            self.exchange.release()
            self.exchange = None

    @driver_errors
    def factor(self, *, block: int | None = None) -> None:
        """A = L·Lᵀ in place over the devices (module docstring); the diagonal tiles'
        upper triangle zeroed.  LinAlgError "leading minor of order k is not positive
        definite" once every device is done (the panels then partly factored)."""
        factor_multi(self, block=block)


def _copy_queues(queues) -> list:
    props = cl.command_queue_properties.PROFILING_ENABLE
    return [cl.CommandQueue(q.context, q.device, properties=props) for q in queues]


class Relay:
    """Copies from one device's buffer into other devices' buffers through page-locked
    host memory (``slots`` mapped ``CL_MEM_ALLOC_HOST_PTR`` buffers of ``nbytes``).

    The owner's copy queue downloads into a host slot (one DMA), each receiver's copy
    queue uploads from it (one DMA each), tied by events.  So every device buffer is
    only ever used by its own device's queues: a driver that keeps a buffer of a
    multi-device context on one device at a time (NVIDIA's) never moves a whole
    panel back and forth behind the program's back.
    """

    def __init__(self, copyqs: list, nbytes: int, slots: int = SLOTS):
        self.copyqs = copyqs
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
        self.buffers, self.hosts = [], []
        for _ in range(slots):
            buf = cl.Buffer(copyqs[0].context, flags, max(nbytes, 1))
            host, event = cl.enqueue_map_buffer(copyqs[0], buf, cl.map_flags.READ
                                                | cl.map_flags.WRITE, 0, (max(nbytes, 1),),
                                                np.uint8)
            event.wait()
            self.buffers.append(buf)
            self.hosts.append(host)
        self.readers = [[] for _ in range(slots)]     # the uploads last reading each slot
        self.next = 0

    def send(self, owner: int, src: cl.Buffer, offset: int, nbytes: int, targets,
             after, row_bytes: int = 1, head: int = 0) -> tuple:
        """Copy ``nbytes`` of ``src`` from byte ``offset`` (on device ``owner``, once
        the event ``after`` is complete) to offset 0 of each target: ``targets`` is
        a list of (device index, buffer, events the upload must wait for).  The bytes
        move in pieces of whole rows of ``row_bytes`` (:func:`chunks`, the first
        ``head`` bytes on their own), each uploaded as soon as it is down.  Returns
        the last download's event, {device index: its last upload's event} (the
        copy queues are in order: all its bytes are there then) and {device index:
        [(end byte, upload event) of each piece]}."""
        slot = self.next
        self.next = (slot + 1) % len(self.hosts)
        host = self.hosts[slot]
        recorder = _trace_hooks.active()
        down, arrived, pieces = None, {}, {d: [] for d, _, _ in targets}
        for lo, hi in chunks(nbytes, row_bytes, head):
            first = lo == 0
            down = cl.enqueue_copy(self.copyqs[owner], host[lo:hi], src, src_offset=offset + lo,
                                   is_blocking=False,
                                   wait_for=[after] + self.readers[slot] if first else None)
            self.copyqs[owner].flush()
            if recorder is not None:
                recorder.add_kernel("relay down", down, None, None)
            for d, dst, wait in targets:
                waits = [down] + ([e for e in wait if e is not None] if first else [])
                arrived[d] = cl.enqueue_copy(self.copyqs[d], dst, host[lo:hi], dst_offset=lo,
                                             is_blocking=False, wait_for=waits)
                self.copyqs[d].flush()
                pieces[d].append((hi, arrived[d]))
                if recorder is not None:
                    recorder.add_kernel("relay up", arrived[d], None, None)
        self.readers[slot] = list(arrived.values())
        return down, arrived, pieces

    def close(self) -> None:
        """Wait for every copy, then unmap and free the host buffers."""
        for q in self.copyqs:
            q.finish()
        for host, buf in zip(self.hosts, self.buffers):
            host.base.release(self.copyqs[0])
            buf.release()
        self.copyqs[0].finish()
        self.hosts, self.buffers, self.readers = [], [], []


def chunks(nbytes: int, row_bytes: int = 1, head: int = 0) -> list:
    """(lo, hi) byte ranges that split ``nbytes`` into at most :data:`CHUNKS` pieces of
    whole rows of ``row_bytes`` (the last maybe shorter), each of at least
    :data:`CHUNK_BYTES` where there are several; [(0, 0)] for ``nbytes`` = 0.  With
    0 < ``head`` < ``nbytes`` (a multiple of ``row_bytes``), the first ``head`` bytes
    are a piece of their own and the rest is split so."""
    if 0 < head < nbytes:
        return [(0, head)] + [(head + lo, head + hi)
                              for lo, hi in chunks(nbytes - head, row_bytes)]
    row_bytes = max(int(row_bytes), 1)
    rows = -(-nbytes // row_bytes)
    count = max(1, min(CHUNKS, nbytes // CHUNK_BYTES, rows))
    cuts = [min(nbytes, (rows * i // count) * row_bytes) for i in range(count + 1)]
    return list(zip(cuts, cuts[1:]))


class Exchange:
    """What the factorizations over the devices of ``queues`` move panels with, made
    once per :class:`MultiTiles`: a copy queue per device (``copyqs``), ``SLOTS``
    receive buffers of ``nbytes`` per device (``recv[d][slot]``) and the page-locked
    :class:`Relay` of ``SLOTS`` x ``nbytes`` (``relay``); with ``pivots`` bytes (the
    LU), also receive buffers and a relay of that size for the pivots (``recv_piv``,
    ``relay_piv``) and a scratch buffer of ``nbytes`` per device (``scratch``).  With
    one device nothing is sent: no receive buffers, no relay."""

    def __init__(self, queues, nbytes: int, pivots: int = 0):
        ctx, many = queues[0].context, len(queues) > 1
        nbytes = max(nbytes, 1)
        self.copyqs = _copy_queues(queues)

        def buffers(size):
            return [[cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size) if many else None
                     for _ in range(SLOTS)] for _ in queues]
        self.recv = buffers(nbytes)
        self.relay = Relay(self.copyqs, nbytes) if many else None
        self.recv_piv = buffers(pivots) if pivots else None
        self.relay_piv = Relay(self.copyqs, pivots) if pivots and many else None
        self.scratch = [cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
                        for _ in queues] if pivots else None

    def release(self) -> None:
        """Wait for the copies, unmap the relays, free the buffers."""
        for relay in (self.relay, self.relay_piv):
            if relay is not None:
                relay.close()
        for group in (self.recv, self.recv_piv, [self.scratch]):
            for row in group or []:
                for buf in row or []:
                    if buf is not None:
                        buf.release()
        self.relay = self.relay_piv = self.recv = self.recv_piv = self.scratch = None


def factor_multi(mt: MultiTiles, *, block: int | None = None) -> None:
    """A = L·Lᵀ of a lower-triangle :class:`MultiTiles` in place over its devices.

    Parameters
    ----------
    mt : MultiTiles
        Lower storage (not ``full``); overwritten by L (the diagonal tiles' upper
        triangle zeroed).
    block : int, optional
        Block width of the diagonal tiles' potrf (default: the device's).

    Returns
    -------
    None

    Raises
    ------
    numpy.linalg.LinAlgError
        "leading minor of order k is not positive definite", once every device
        is done (the panels are then partly factored).
    ValueError
        ``mt`` in full storage.
    """
    if mt.full:
        raise ValueError("the Cholesky factorization reads lower-triangle panels; make the "
                         "MultiTiles without full")
    n, nb, dtype, queues = mt.n, mt.tile, mt.dtype, mt.queues
    count, devices = len(mt.panels), len(queues)
    if n == 0:
        return
    item = dtype.itemsize
    ex = mt.exchange
    flags = [int_zeros(q) for q in queues]
    last_read = [[None] * SLOTS for _ in range(devices)]
    factored = [None] * count

    def finish(p: int) -> None:
        panel, q = mt.panels[p], queues[mt.owner(p)]
        j0, jb = panel.c0, panel.w
        finish_panel(q, panel.view(j0, j0), j0, jb, n - j0 - jb, lower=True, dtype=dtype,
                     info=flags[mt.owner(p)], block=block, clean=True)
        factored[p] = cl.enqueue_marker(q)
        q.flush()

    def look_ahead(p: int, src: Panel, kb: int, head, whole) -> None:
        """Panel p = k + 1 on a receiver of panel k (``src``, kb wide): its diagonal
        tile updated and factored after the event ``head`` (panel k's rows through
        that tile are there), the rows below updated and solved after ``whole``."""
        target, q, d = mt.panels[p], queues[mt.owner(p)], mt.owner(p)
        j0, jb = target.c0, target.w
        rest, k0 = n - j0 - jb, src.c0
        cl.enqueue_barrier(q, wait_for=[head])
        update_panel(q, jb, jb, kb, src.view(j0, k0), target.view(j0, j0), lower=True,
                     dtype=dtype, region=(j0, j0 + jb, j0, j0 + jb))
        finish_panel(q, target.view(j0, j0), j0, jb, 0, lower=True, dtype=dtype,
                     info=flags[d], block=block, clean=True)
        cl.enqueue_barrier(q, wait_for=[whole])
        if rest:
            with trace.step("gemm", (j0 + jb, n, j0, j0 + jb), flops=2.0 * rest * jb * kb):
                gemm(q, rest, jb, kb, -1.0, src.view(j0 + jb, k0), src.view(j0, k0), 1.0,
                     target.view(j0 + jb, j0), dtype=dtype, trans_b=True)
            with trace.step("trsm", (j0 + jb, n, j0, j0 + jb), flops=float(jb * jb * rest)):
                _solve_panel(q, target.view(j0, j0), jb, rest, lower=True, dtype=dtype)
        factored[p] = cl.enqueue_marker(q)
        q.flush()

    with trace.device_labels(lanes(queues)), \
            trace.run("cholesky", "multi_device", queues[0], (n, n), dtype, tile=nb,
                      devices=devices):
        finish(0)
        for k in range(count - 1):
            src, home = mt.panels[k], mt.owner(k)
            k0, kb = src.c0, src.w
            slot = k % SLOTS
            users = [d for d in range(devices)
                     if any(mt.owner(j) == d for j in range(k + 1, count))]
            arrived, pieces = {}, {}
            targets = [(d, ex.recv[d][slot], [last_read[d][slot]]) for d in users
                       if d != home]
            ahead = mt.panels[k + 1]
            head = (ahead.c0 + ahead.w - k0) * kb * item    # panel k through k + 1's tile
            if targets:             # panel k's rows from k0 on, through host memory
                with trace.step("send", (k0, n, k0, k0 + kb), nbytes=(n - k0) * kb * item):
                    _, arrived, pieces = ex.relay.send(
                        home, src.buf, 0, (n - k0) * kb * item, targets, factored[k],
                        row_bytes=kb * item, head=head)
            for d in users:
                q = queues[d]
                panel, first = src, k + 1
                if d != home:
                    panel = Panel(ex.recv[d][slot], k0, k0, n - k0, kb)
                    if mt.owner(k + 1) == d:
                        look_ahead(k + 1, panel, kb,
                                   next(e for hi, e in pieces[d] if hi >= head), arrived[d])
                        first = k + 2
                    else:
                        cl.enqueue_barrier(q, wait_for=[arrived[d]])
                for j in range(first, count):
                    if mt.owner(j) != d:
                        continue
                    target = mt.panels[j]
                    j0, jb = target.c0, target.w
                    update_panel(q, n - j0, jb, kb, panel.view(j0, k0),
                                 target.view(j0, j0), lower=True, dtype=dtype,
                                 region=(j0, n, j0, j0 + jb))
                    if j == k + 1:
                        finish(j)
                if d != home:
                    last_read[d][slot] = cl.enqueue_marker(q)
                q.flush()
        for q in ex.copyqs + queues:
            q.finish()
    failed = [int(f.get()[0]) for f in flags]
    failed = [f for f in failed if f]
    if failed:
        raise not_positive_definite(min(failed))


@driver_errors
def cholesky(a, *, queues, lower: bool = True, tile: int | None = None,
             check_finite: bool = True, block: int | None = None) -> np.ndarray:
    """The Cholesky factor of an SPD host matrix computed on several devices.

    Parameters
    ----------
    a : (n, n) array_like of float32/float64
        Never written; only the triangle ``lower`` names is read.
    queues : sequence of pyopencl.CommandQueue
        Profiling queues of one context (:func:`context_queues`); the panels go
        round-robin to them.
    lower : bool, default True
        L with A = L·Lᵀ from the lower triangle, else U = Lᵀ from the upper.
    tile : int, optional
        Panel width (default :data:`oclla.tiled.TILE`, at most n).
    check_finite : bool, default True
        Reject NaN/Inf (ValueError).
    block : int, optional
        Block width of the diagonal tiles' potrf (default: the device's).

    Returns
    -------
    numpy.ndarray
        The factor in a new array, the other triangle zero.

    Raises
    ------
    numpy.linalg.LinAlgError
        "leading minor of order k is not positive definite".
    ValueError
        Not square, NaN/Inf, no queues or queues of several contexts.
    TypeError
        A dtype other than float32/float64.
    oclla.DeviceError
        float64 without ``cl_khr_fp64``, panels beyond a device's buffer or memory.
    """
    arr = np.asarray(a)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"a must be square, got shape {arr.shape}")
    mt = MultiTiles.from_numpy(arr if lower else arr.T, queues=queues, tile=tile,
                               check_finite=check_finite)
    try:
        mt.factor(block=block)
        out = mt.to_numpy()
    finally:
        mt.release()
    return out if lower else np.ascontiguousarray(out.T)
