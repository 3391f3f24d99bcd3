"""The per-pivot LU factorizations (``method="pivot"``): one host-loop iteration per pivot.

These are the teaching variants, read next to their kernels.  Each factors the
n x n dense device array ``a`` in place into L (unit lower, multipliers below
the diagonal) and U (on and above), with 0-based row interchanges in the
int32 device array ``piv`` and LAPACK's ``info`` (first zero pivot, 1-based) in
``info``, and reports its steps to an active recording (:mod:`oclla.trace`).

``factor_faithful`` (kernels_cl/lu_faithful.cl)
    The SYCL blog post as written: L and U separate, a full n x n NDRange
    every step and a copy of U back into A after it; no pivoting.
``factor_inplace`` (kernels_cl/lu_inplace.cl)
    In place, the NDRange shrinks with the active submatrix, the pivot
    search is a device reduction so the host never waits between pivots (one
    launch per pivot).  Each launch forms the multipliers of its column on
    the fly and the next launch stores them; a recording's snapshot after
    step k shows the matrix as elimination defines it (that pending division
    applied to the host copy).
``factor_crout`` (kernels_cl/lu_crout.cl)
    The same loop in left-looking (Crout) order (one launch per pivot):
    pivot k forms only row k of U and column k of L from the finished parts
    of L and U and the next candidate column, reading 2k(n-k) entries instead
    of rewriting the (n-k)² active submatrix; rows are interchanged once, at
    the end.
``factor_window`` (kernels_cl/lu_window.cl)
    Delayed updates: Crout order inside windows of W pivots, whose sums run
    over the window only; after each window its row interchanges and one
    rank-W GEMM on the trailing matrix.  One launch per pivot that sets no
    kernel argument (the fastest per-pivot loop on GPUs, where enqueueing
    dominates).
"""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

from . import trace
from ._device import device_info
from ._params import check, params
from ._programs import (copy, enqueue, get_kernel, int_arg, int_zeros, launch, round_up,
                        set_args)
from .blas import gemm, laswp, view_of

def factor_faithful(queue, a: cl_array.Array, n: int) -> None:
    dtype = a.dtype
    lower = cl_array.empty_like(a)
    upper = cl_array.empty_like(a)
    loc = params(queue, "local2d", dtype)
    local = (loc["X"], loc["Y"])
    full = (round_up(n, local[0]), round_up(n, local[1]))
    eliminate = get_kernel(queue, "lu_faithful.cl", "eliminate", dtype)
    nbytes = a.nbytes
    done = [-1]         # columns of L that are final; -1: L and U not set up yet

    def snapshot():
        """A before setup; then L's finished multipliers below the diagonal, U elsewhere."""
        if done[0] < 0:
            return a.get()
        out = upper.get()
        below = np.tril(np.ones((n, n), dtype=bool), -1)
        below[:, done[0]:] = False
        out[below] = lower.get()[below]
        return out

    with trace.run("lu", "faithful", queue, (n, n), dtype, snapshot, pivoting="none"):
        with trace.step("setup", (0, n, 0, n), nbytes=3 * nbytes):
            enqueue(queue, get_kernel(queue, "util.cl", "set_identity", dtype), full, local,
                    lower.data, np.int64(0), int_arg(n), int_arg(n))
            copy(queue, upper.data, a.data, label="copy A->U")
            done[0] = 0
        for col in range(n - 1):
            active = n - col - 1
            with trace.step("eliminate", (col, n, col, n), pivot=(col, col),
                            flops=2.0 * active * (active + 1) + active,
                            nbytes=4 * nbytes, ndrange_items=n * n,
                            active_items=active * (active + 1)):
                enqueue(queue, eliminate, full, local, a.data, lower.data, upper.data,
                        int_arg(n), int_arg(col))
                copy(queue, a.data, upper.data, label="copy U->A")
                done[0] = col + 1
        with trace.step("combine", (0, n, 0, n), nbytes=3 * nbytes):
            enqueue(queue, get_kernel(queue, "lu_faithful.cl", "combine", dtype), full, local,
                    lower.data, upper.data, a.data, int_arg(n))


class PivotKernels:
    """The per-column launches shared by the per-pivot LU and the blocked LU's panels.

    ``first(col, s0, s1)`` chooses pivot col and interchanges rows in columns
    [s0, s1); ``step(k, c_begin, c_end, s0, s1)`` applies pivot k to columns
    (k, c_end), scales column k-1 (if >= c_begin) and, in the same launch,
    chooses pivot k+1 the same way (kernels_cl/lu_inplace.cl); ``tail(j0, j1)``
    scales the columns left unscaled.
    """

    def __init__(self, queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool,
                 shape: dict | None = None):
        dtype = a.dtype
        p = dict(params(queue, "pivot", dtype))
        if shape and check("pivot", {**p, **shape}, device_info(queue), dtype.itemsize) is None:
            p.update(shape)
        self.wx, self.wy, self.rb = p["WX"], p["WY"], p["RB"]
        self.strip = p["WX"] * p["VW"] * p["NV"]
        wg = self.wx * self.wy
        self.queue, self.n = queue, n
        self.kfirst = get_kernel(queue, "lu_inplace.cl", "pivot_first", dtype, WG=wg,
                                 NO_PIVOT=int(no_pivot))
        self.kstep = get_kernel(queue, "lu_inplace.cl", "pivot_step", dtype, WG=wg,
                                VW=p["VW"], NV=p["NV"], WX=self.wx, WY=self.wy, RB=self.rb,
                                UNR=p["UNR"], NO_PIVOT=int(no_pivot))
        self.kscale = get_kernel(queue, "lu_inplace.cl", "scale_tail", dtype)
        blocks = max(1, -(-n // self.rb))
        self.part_val = cl_array.empty(queue, blocks, dtype)
        self.part_row = cl_array.empty(queue, blocks, np.int32)
        self.counter = int_zeros(queue)
        self.args = (a.data, int_arg(n), int_arg(n))
        self.piv, self.info = piv.data, info.data

    def tail(self, j0, j1):
        rows = self.n - j0 - 1
        if rows > 0:
            enqueue(self.queue, self.kscale, (round_up(rows, 64),), (64,), *self.args,
                   int_arg(j0), int_arg(j1))

    def first(self, col, s0, s1):
        wg = self.wx * self.wy
        enqueue(self.queue, self.kfirst, (wg,), (wg,), *self.args, int_arg(col), int_arg(s0),
               int_arg(s1), self.piv, self.info)

    def step(self, k, c_begin, c_end, s0, s1):
        width, height = c_end - k - 1, self.n - k - 1
        grid = (-(-width // self.strip) * self.wx, -(-height // self.rb) * self.wy)
        parts = (self.part_val.data, self.part_row.data)
        enqueue(self.queue, self.kstep, grid, (self.wx, self.wy), *self.args, int_arg(k),
               int_arg(c_begin), int_arg(c_end), int_arg(s0), int_arg(s1), self.piv,
               self.info, *parts, self.counter.data)


def factor_inplace(queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool) -> None:
    kernels = PivotKernels(queue, a, n, piv, info, no_pivot)
    pending = [None]            # last step k whose launch already began step k+1

    def snapshot():
        """Host copy as k+1 elimination steps define it (display only).

        Launch k leaves column k's division by its pivot to the next launch and
        already interchanges row k+1 with the next pivot row: the copy gets
        the first done and the second undone.
        """
        m = a.get()
        k = pending[0]
        if k is not None:
            if m[k, k] != 0:
                m[k + 1:, k] *= m.dtype.type(1) / m[k, k]
            p = int(piv[k + 1].get())
            m[[k + 1, p]] = m[[p, k + 1]]
        return m

    with trace.run("lu", "inplace", queue, (n, n), a.dtype, snapshot,
                   pivoting="none" if no_pivot else "partial") as run:
        for k in range(n - 1):
            active = n - k - 1
            with trace.step("eliminate", (k, n, k, n), pivot=(k, k),
                            flops=2.0 * active * active + active,
                            nbytes=a.dtype.itemsize * (2 * active * active + 3 * active)):
                if k == 0:
                    kernels.first(0, 0, n)
                kernels.step(k, 0, n, 0, n)
                if k == n - 2:
                    kernels.tail(k, n)
                pending[0] = k if k < n - 2 else None
        if run is not None:
            annotate_swaps(run, piv)


def crout_groups(n: int, k: int, p: dict, vw: int) -> int:
    """Work-groups of launch k of crout_step (the kernel derives the same split)."""
    rw, rows = p["RJ"] * vw, p["WG"] // p["CL"] * p["RR"]
    row_blocks = -(-(n - (k + 2) // rw * rw) // rw) if k + 2 < n else 0
    col_blocks = -(-(n - k - 1) // (rows - 1))
    return (row_blocks * max(1, -(-k // p["MB"]))
            + col_blocks * max(1, -(-k // p["KC"])))


def factor_crout(queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool) -> None:
    p = params(queue, "crout", a.dtype)
    wg, rows = p["WG"], p["WG"] // p["CL"] * p["RR"]
    vw = next(w for w in (4, 2, 1) if n % w == 0)
    defines = dict(WG=wg, RJ=p["RJ"], MB=p["MB"], CL=p["CL"], KC=p["KC"], RR=p["RR"],
                   UNROLL=p["UNROLL"], VW=vw, NO_PIVOT=int(no_pivot))
    first = get_kernel(queue, "lu_crout.cl", "crout_first", a.dtype, **defines)
    step = get_kernel(queue, "lu_crout.cl", "crout_step", a.dtype, **defines)
    perm = cl_array.to_device(queue, np.arange(n, dtype=np.int32))
    col_blocks = -(-n // (rows - 1))
    part = -(-n // p["MB"]) * n + col_blocks * rows * -(-n // p["KC"])
    work = dict(ut=(n * n, a.dtype), part=(part, a.dtype), part_val=(col_blocks, a.dtype),
                part_row=(col_blocks, np.int32), u_next=(1, a.dtype))
    work = {name: cl_array.empty(queue, size, dtype) for name, (size, dtype) in work.items()}
    block_count = int_zeros(queue, -(-n // (p["RJ"] * vw)) + 1 + col_blocks)
    counter = int_zeros(queue)
    done = [False]

    def snapshot():
        """Rows in their logical order; at the end, the factor itself."""
        m = a.get()
        return m if done[0] else m[perm.get()]

    with trace.run("lu", "crout", queue, (n, n), a.dtype, snapshot,
                   pivoting="none" if no_pivot else "partial") as run:
        enqueue(queue, first, (wg,), (wg,), a.data, int_arg(n), int_arg(n), piv.data)
        for k in range(n - 1):
            active = n - k - 1
            groups = crout_groups(n, k, p, vw)
            with trace.step("eliminate", (k, n, k, n), pivot=(k, k),
                            flops=4.0 * k * active + 2.0 * active + active,
                            nbytes=a.dtype.itemsize * (2 * k * active + 5 * active)):
                enqueue(queue, step, (groups * wg,), (wg,), a.data, int_arg(n), int_arg(n),
                        int_arg(k), perm.data, work["ut"].data, piv.data, info.data,
                        work["part"].data, block_count.data, work["part_val"].data,
                        work["part_row"].data, work["u_next"].data, counter.data)
                if k == n - 2:
                    laswp(queue, view_of(a), 0, n, piv.data, 0, n, dtype=a.dtype)
                    done[0] = True
        if run is not None:
            annotate_swaps(run, piv)


class WindowState:
    """Layout of the state buffer of kernels_cl/lu_window.cl (in 4-byte words): [0, n) piv,
    [n] info; from the next even word the reals u_next[2] and cand_val[2][stride]; then
    cand_row[2][stride]; then perm[2][n] as (physical row, window start) pairs."""

    def __init__(self, n: int, stride: int, dtype):
        self.n, self.dtype = n, np.dtype(dtype)
        self.info = n
        self.reals = n + 2 - n % 2
        self.cand_row = self.reals + (2 + 2 * stride) * (self.dtype.itemsize // 4)
        self.perm = self.cand_row + 2 * stride
        self.size = self.perm + 4 * n

    def initial(self) -> np.ndarray:
        """piv = 0, 1, .., info = 0, no permutation entry valid (window start -1)."""
        state = np.zeros(self.size, np.int32)
        state[:self.n] = np.arange(self.n)
        state[self.perm:].reshape(2, self.n, 2)[:, :, 1] = -1
        return state

    def u_next(self, state: np.ndarray) -> np.ndarray:
        words = self.dtype.itemsize // 4
        return state[self.reals:self.reals + 2 * words].view(self.dtype)

    def perm_of(self, state: np.ndarray) -> np.ndarray:
        return state[self.perm:].reshape(2, self.n, 2)


def factor_window(queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool) -> None:
    """Per-pivot LU with delayed updates (kernels_cl/lu_window.cl): one launch per
    pivot in Crout order inside windows of W pivots; after a window, its row
    interchanges in all columns (laswp) and its rank-W update of the trailing
    matrix (one GEMM).  The launches of a window read only the window's own
    columns of L and rows of U.

    The host loop sets no kernel argument: launch k takes k as its global
    offset.  The pivots and what launches pass on live in one state buffer
    (copied to ``piv`` and ``info`` at the end): each buffer argument costs
    enqueue time on some drivers (about 0.45 µs with NVIDIA's), paid once per
    pivot.
    """
    dtype = a.dtype
    p = params(queue, "window", dtype)
    wg, width = p["WG"], p["W"]
    defines = dict(WG=wg, WIN=width, NO_PIVOT=int(no_pivot))
    stride = max(1, -(-(n - 1) // wg))              # column blocks of launch 0, the most
    layout = WindowState(n, stride, dtype)
    state = cl_array.to_device(queue, layout.initial())
    first = get_kernel(queue, "lu_window.cl", "window_first", dtype, **defines)
    step = get_kernel(queue, "lu_window.cl", "window_step", dtype, **defines)
    set_args(step, a.data, int_arg(n), int_arg(n), state.data, int_arg(stride))
    A = view_of(a)
    last = [-1]                                      # the last pivot launched

    def snapshot():
        """Rows in their logical order, u[k, k+1] in place (display only)."""
        k = last[0]
        m = a.get()
        if k < 0 or k == n - 1:                      # before the first, after the last laswp
            return m
        host = state.get()
        k0 = k - k % width
        if k + 1 - k0 < width:                       # inside a window: rows not yet moved
            entry = layout.perm_of(host)[(k + 1) % 2]
            m = m[np.where(entry[:, 1] == k0, entry[:, 0], np.arange(n))]
        m[k, k + 1] = layout.u_next(host)[(k + 1) % 2]
        return m

    def pivot(k: int) -> None:
        """Launch k; after the last pivot of a window, its interchanges and update."""
        groups = max(1, -(-(n - k - 1) // wg) + -(-max(0, n - k - 2) // wg))
        launch(queue, step, (groups * wg,), (wg,), offset=(k,))
        last[0] = k
        k0 = k - k % width
        if k + 1 - k0 < width and k + 1 < n:
            return
        if not no_pivot:
            laswp(queue, A, 0, n, state.data, k0, k + 1, dtype=dtype)   # piv: state[:n]
        if k + 1 == n:
            copy(queue, piv.data, state.data, byte_count=4 * n, label="piv")
            copy(queue, info.data, state.data, byte_count=4, src_offset=4 * layout.info,
                 label="info")
        else:
            gemm(queue, n - k - 1, n - k - 2, k + 1 - k0, -1.0, A.at(k + 1, k0),
                 A.at(k0, k + 2), 1.0, A.at(k + 1, k + 2), dtype=dtype)

    with trace.run("lu", "window", queue, (n, n), dtype, snapshot, window=width,
                   pivoting="none" if no_pivot else "partial") as run:
        enqueue(queue, first, (wg,), (wg,), a.data, int_arg(n), int_arg(n), state.data,
                int_arg(stride))
        if run is None or n == 1:                    # no steps to record
            for k in range(n):
                pivot(k)
            return
        for k in range(n - 1):
            active, t = n - k - 1, k % width
            flops = 2.0 * t * (2 * active - 1) + 3.0 * active
            if (k + 1) % width == 0:                 # the window's update
                flops += 2.0 * (t + 1) * active * (active - 1)
            with trace.step("eliminate", (k, n, k, n), pivot=(k, k), flops=flops,
                            nbytes=dtype.itemsize * (2 * t * active + 5 * active)):
                pivot(k)
                if k == n - 2:
                    pivot(n - 1)
        annotate_swaps(run, piv)


def annotate_swaps(run, piv) -> None:
    """Recording only: note each step's row interchanges (one read at the end)."""
    host_piv = piv.get()
    for s in run.steps:
        if s.phase in ("eliminate", "panel"):
            r0, r1, c0, c1 = s.region
            last = c0 + 1 if s.phase == "eliminate" else c1
            s.info["swaps"] = [(k, int(host_piv[k])) for k in range(c0, min(last, len(host_piv)))
                               if host_piv[k] != k]
