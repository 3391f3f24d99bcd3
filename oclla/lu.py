"""LU factorization with partial pivoting: per-pivot (teaching) and blocked (fast).

``lu_factor(a)`` returns ``(lu, piv)`` exactly as :func:`scipy.linalg.lu_factor`:
``lu`` holds U on and above the diagonal and the multipliers of the unit
lower L below it; ``piv[i] = j`` (0-based) means row i was interchanged with
row j, in order, so that ``P·A = L·U``.

Methods
-------
``method="blocked"`` (default)
    Right-looking blocked LU: a recursive panel factorization on the device
    (:class:`_Panels`: leaves in one work-group's registers, one launch per
    column, or one-work-group leaves, by the device's parameters), row
    interchanges (laswp), TRSM and a GEMM trailing update from
    :mod:`oclla.blas`.  Block sizes come from the device.
``method="pivot"``
    One host-loop iteration per pivot.  ``variant="inplace"`` (default): in
    place, the NDRange shrinks with the active submatrix, the pivot search is
    a device reduction so the host never waits between pivots (one launch per
    pivot: kernels_cl/lu.cl).  Each launch forms the multipliers of its column
    on the fly and the next launch stores them; a recording's snapshot after
    step k shows the matrix as elimination defines it (that pending division
    applied to the host copy).
    ``variant="crout"``: the same loop in left-looking (Crout) order (one
    launch per pivot: kernels_cl/lu_crout.cl): pivot k forms only row k of U
    and column k of L from the finished parts of L and U and the next
    candidate column, reading 2k(n-k) entries instead of rewriting the
    (n-k)² active submatrix; rows are interchanged once, at the end.
    ``variant="window"``: delayed updates (kernels_cl/lu_window.cl): Crout
    order inside windows of W pivots, whose sums run over the window only;
    after each window its row interchanges and one rank-W GEMM on the
    trailing matrix.  One launch per pivot that sets no kernel argument (the
    fastest per-pivot loop on GPUs, where enqueueing dominates).
    ``variant="faithful"``: the SYCL blog post as written: L and U separate,
    a full n x n NDRange every step and a copy of U back into A after it; no
    pivoting.
``pivoting="none"``
    For teaching only: elimination with the diagonal as pivot is unstable and
    stops with :class:`numpy.linalg.LinAlgError` at a zero pivot.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.linalg import LinAlgError
from scipy.linalg import LinAlgWarning

from . import trace
from ._device import device_info, resolve_queue
from ._params import check, params
from ._programs import (copy, enqueue, get_kernel, index_width, int_arg, int_zeros, launch,
                        launch_queue, round_up, set_args)
from ._validate import (as_matrix, as_rhs, count_nonfinite, defers_finite_check, deliver,
                        dense, device_pivots, is_device_array, is_view, read_status,
                        read_status_with, rhs_work, status_flags, work_array)
from .blas import View, gemm, gemm_shape, laswp, trsm, view_of

METHODS = ("blocked", "pivot")
VARIANTS = {"blocked": ("blocked",), "pivot": ("inplace", "crout", "window", "faithful")}


def lu_flops(n: int) -> float:
    """LAPACK's flop count of an n x n LU: 2n³/3 − n²/2 − n/6 (≈ 2n³/3)."""
    return 2.0 * n ** 3 / 3.0 - n ** 2 / 2.0 - n / 6.0


def _resolve_options(method, variant, pivoting):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    variant = variant or VARIANTS[method][0]
    if variant not in VARIANTS[method]:
        raise ValueError(f"method={method!r} has variants {VARIANTS[method]}, got {variant!r}")
    if pivoting is None:
        pivoting = "none" if variant == "faithful" else "partial"
    if pivoting not in ("partial", "none"):
        raise ValueError(f"pivoting must be 'partial' or 'none', got {pivoting!r}")
    if variant == "faithful" and pivoting != "none":
        raise ValueError("the faithful variant follows the post and does not pivot; "
                         "pass pivoting='none' or use variant='inplace'")
    return method, variant, pivoting


# ---- the three algorithms: each factors the n x n device array `a` in place ----------

def _factor_faithful(queue, a: cl_array.Array, n: int) -> None:
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


class _PivotKernels:
    """The per-column launches shared by the per-pivot LU and the blocked LU's panels.

    ``first(col, s0, s1)`` chooses pivot col and interchanges rows in columns
    [s0, s1); ``step(k, c_begin, c_end, s0, s1)`` applies pivot k to columns
    (k, c_end), scales column k-1 (if >= c_begin) and chooses pivot k+1 the
    same way (lu.cl): in the same launch with the device's FUSED parameter,
    else in a second one; ``tail(j0, j1)`` scales the columns left unscaled.
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
        self.kfirst = get_kernel(queue, "lu.cl", "pivot_first", dtype, WG=wg,
                                 NO_PIVOT=int(no_pivot))
        self.kstep = get_kernel(queue, "lu.cl", "pivot_step", dtype, WG=wg, VW=p["VW"],
                                NV=p["NV"], WX=self.wx, WY=self.wy, RB=self.rb, UNR=p["UNR"],
                                FUSED=p["FUSED"], NO_PIVOT=int(no_pivot))
        self.kfinish = None if p["FUSED"] else get_kernel(
            queue, "lu.cl", "pivot_finish", dtype, WG=wg, NO_PIVOT=int(no_pivot))
        self.kscale = get_kernel(queue, "lu.cl", "scale_tail", dtype)
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
        if self.kfinish is not None and k + 1 < c_end:
            wg = self.wx * self.wy
            enqueue(self.queue, self.kfinish, (wg,), (wg,), *self.args, int_arg(k + 1),
                   int_arg(s0), int_arg(s1), self.piv, self.info, *parts,
                   int_arg(grid[1] // self.wy))


def _factor_inplace(queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool) -> None:
    kernels = _PivotKernels(queue, a, n, piv, info, no_pivot)
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
            _annotate_swaps(run, piv)


def _crout_groups(n: int, k: int, p: dict, vw: int) -> int:
    """Work-groups of launch k of crout_step (the kernel derives the same split)."""
    rw, rows = p["RJ"] * vw, p["WG"] // p["CL"] * p["RR"]
    row_blocks = -(-(n - (k + 2) // rw * rw) // rw) if k + 2 < n else 0
    col_blocks = -(-(n - k - 1) // (rows - 1))
    return (row_blocks * max(1, -(-k // p["MB"]))
            + col_blocks * max(1, -(-k // p["KC"])))


def _factor_crout(queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool) -> None:
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
            groups = _crout_groups(n, k, p, vw)
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
            _annotate_swaps(run, piv)


class _WindowState:
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


def _factor_window(queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool) -> None:
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
    layout = _WindowState(n, stride, dtype)
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
        _annotate_swaps(run, piv)


class _Panels:
    """Factor panels A[c0:n, c0:c0+w] of the blocked LU: pivots into piv,
    interchanges inside the panel only.

    By the device's ``lu`` parameters, in this order of preference:

    * register leaves (REG_SLOTS > 0) where the panel's m rows fit: left to
      right, LEAF_W columns held in the registers of one work-group
      (``getf2_rows``, kernels_cl/lu_rows.cl: whole rows per work-item, m <=
      rows x items with rows x LEAF_W <= REG_SLOTS and the fewest items from
      LEAF_WG up to PANEL_WG), which also
      interchanges the panel's other columns and forms U12 (or, where they
      are more than its items, ``leaf_columns`` across work-groups), then one
      GEMM (rank LEAF_W) on the panel's columns right of the leaf: two or
      three launches per leaf;
    * recursively (LAPACK ?getrf2: left half, interchanges, TRSM, GEMM, right
      half) down to blocks of PANEL_SPLIT columns (0: the whole panel), each
      factored in one launch by the work-groups that run at once, with a
      barrier across them per column (``getrf_grid``, kernels_cl/lu_grid.cl,
      PANEL_GRID), or with one multi-work-group launch per column
      (``columns``, PANEL_COLUMNS);
    * or down to one-work-group leaves up to LEAF_W wide (``getf2_leaf``),
      which also factor a whole matrix below SMALL_N in one launch.
    """

    def __init__(self, queue, A: View, n: int, piv, info, p: dict, *, dtype, no_pivot: bool,
                 columns=None):
        self.queue, self.A, self.n, self.piv, self.info = queue, A, n, piv, info
        self.p, self.dtype, self.no_pivot, self.columns = p, dtype, no_pivot, columns
        info = device_info(queue)
        self.local_mem = info.local_mem_size
        self._kernels: dict = {}             # (name, define values) -> cl.Kernel
        self.grid_groups = info.compute_units * p["GRID_PER_CU"]
        self._grid_buffers = None            # (sync, cand_val, cand_row, cand_copy, diag)
        self._perm = None                    # a register leaf's row permutation
        self.columns_wg = params(queue, "wg1d", dtype)["WG"]    # leaf_columns' work-groups

    def fits(self, m: int) -> bool:
        """Whether panels of m rows go to register leaves."""
        return self._reg_shape(m) is not None

    def _reg_shape(self, m: int) -> tuple[int, int] | None:
        """(work-group size, rows per work-item) of the register leaf (LEAF_W wide) for
        m rows, or None if they do not fit: the fewest items from LEAF_WG (0:
        PANEL_WG) up to PANEL_WG, by powers of two, whose rows (a power of two, at
        most 16) take at most REG_SLOTS registers (rows x LEAF_W), and local memory
        for a stage of at least one row."""
        most, lw = self.p["PANEL_WG"], self.p["LEAF_W"]
        wg = min(self.p["LEAF_WG"] or most, most)
        most_rows = min(16, self.p["REG_SLOTS"] // lw)
        while wg < most and wg * most_rows < m:
            wg *= 2
        rows = 1
        while rows * wg < m:
            rows *= 2
        fits = rows <= most_rows and self._stage_rows(wg) > 0
        return (wg, rows) if fits else None

    def _stage_rows(self, wg: int, tile: dict | None = None) -> int:
        """Rows a register leaf of wg items moves through local memory at once
        (kernels_cl/lu_rows.cl STAGE): the most, a power of two up to wg and
        LEAF_STAGE (0: wg) and at least wg / LEAF_W (every item moves a whole part
        of each chunk), that fit in local memory beside the leaf's other arrays; 0
        if not even the fewest do.  With the previous leaf's update in `tile`
        (PREV), the stage holds two chunks or one tile of that update, and U12."""
        lw, size = self.p["LEAF_W"], np.dtype(self.dtype).itemsize
        fixed = (wg + 3 * lw + lw * lw) * size + (wg + 5 * lw + 4) * 4
        if tile is None:
            def pool(rows):
                return rows * (lw + 1)
        else:
            fixed += 3 * lw * lw * size
            tile_pool = ((tile["TILE_M"] + lw) * (lw + 1) + 2 * lw * max(tile["TILE_N"], lw))

            def pool(rows):
                return max(2 * rows * (lw + 1), tile_pool)
        fewest = max(1, wg // lw)
        stage = max(min(self.p["LEAF_STAGE"] or wg, wg), fewest)
        while stage >= fewest and fixed + stage * 4 + pool(stage) * size > self.local_mem:
            stage //= 2
        return stage if stage >= fewest else 0

    def _kernel(self, source: str, name: str, **defines):
        """The panel kernel ``name`` for its work-group size (WG in defines, else
        PANEL_WG) and this panel's pivoting."""
        key = (name, *defines.values())
        kernel = self._kernels.get(key)
        if kernel is None:
            defines.setdefault("WG", self.p["PANEL_WG"])
            kernel = self._kernels[key] = get_kernel(
                self.queue, source, name, self.dtype, NO_PIVOT=int(self.no_pivot), **defines)
        return kernel

    def _launch(self, source: str, name: str, c0: int, w: int, *extra, **defines) -> None:
        kernel = self._kernel(source, name, **defines)
        wg = defines.get("WG", self.p["PANEL_WG"])
        enqueue(self.queue, kernel, (wg,), (wg,), self.A.buf, int_arg(self.A.ld),
                int_arg(self.n), int_arg(c0), int_arg(w), *extra, self.piv.data,
                self.info.data)

    def _register_leaves(self, c0: int, w: int) -> None:
        """The panel left to right in register leaves, each followed by the rank-lw
        update of the panel's columns right of it.  The leaf itself applies its
        interchanges to the panel's other columns and forms U12 where they are at
        most its work-items (one per item), else ``leaf_columns`` does, one per item
        of as many work-groups as they need."""
        A, n, end, lw = self.A, self.n, c0 + w, self.p["LEAF_W"]
        if self._perm is None:
            self._perm = int_zeros(self.queue, 1 + 3 * lw)
        c = c0
        while c < end:
            jb = min(lw, end - c)
            wg, rows = self._reg_shape(n - c)
            defines = dict(WG=wg, LW=lw, ROWS=rows, STAGE=self._stage_rows(wg),
                           ARGMAX_SCAN=self.p["LEAF_SCAN"])
            inline = w - jb <= wg
            self._launch("lu_rows.cl", "getf2_rows", c, jb, int_arg(c0 if inline else c),
                         int_arg(end if inline else c), self._perm.data, **defines)
            if not inline:
                self._leaf_columns(c, jb, c0, end, defines)
            if c + jb < end:
                gemm(self.queue, n - c - jb, end - c - jb, jb, -1.0, A.at(c + jb, c),
                     A.at(c, c + jb), 1.0, A.at(c + jb, c + jb), dtype=self.dtype)
            c += jb

    def _flat_leaf(self, shape: tuple[int, int], tile: dict | None = None):
        """The flat tail's leaf kernel (getf2_rows, MAP = 1) of ``shape`` (work-group
        size, rows per item: ``_reg_shape``), its work-group size and None; with
        the update's `tile`, the one that also
        applies the previous leaf's update (PREV = 1: its tile rows scaled so that
        a tile takes the leaf's items) and that tile, or None where that tile or
        its local memory does not fit the leaf, or the leaf is one column wide
        (PoCL 3.1 crashes running that kernel with LW = 1 under its default
        work-group method, loopvec)."""
        wg, rows = shape
        lw = self.p["LEAF_W"]
        defines = dict(WG=wg, LW=lw, ROWS=rows, ARGMAX_SCAN=self.p["LEAF_SCAN"], MAP=1)
        if tile is not None:
            if lw == 1:
                return None
            nx = tile["TILE_N"] // tile["WPT_N"]
            if wg % nx:
                return None
            tile = dict(tile, TILE_M=wg // nx * tile["WPT_M"])
            defines.update(PREV=1, **tile)
        stage = self._stage_rows(wg, tile)
        if not stage:
            return None
        return self._kernel("lu_rows.cl", "getf2_rows", STAGE=stage, **defines), wg, tile

    def _flat_tail(self, c0: int) -> None:
        """The trailing matrix A[c0:n, c0:n] as the last panel, its interchanges
        deferred (kernels_cl/lu_flat.cl): register leaves (MAP = 1) that permute a
        row map instead of rows and leave L11^-1, each followed by ``flat_update``
        (A22 -= L21 U12, U12 = L11^-1 A12 formed per work-group); then
        ``flat_solve`` (every leaf's U12 in place) and ``gather_rows`` (rows
        c0..n-1, all columns, in their order, through a copy).  With FLAT_AHEAD,
        each leaf but the first and the previous leaf's update are one launch
        (lu_rows.cl PREV: the leaf's work-group applies the update to its own
        columns as it loads them, the launch's other work-groups to the rest),
        where the update's tile fits the leaf's work-group."""
        queue, A, n, lw, dtype = self.queue, self.A, self.n, self.p["LEAF_W"], self.dtype
        identity = np.arange(n, dtype=np.int32)                # both maps (flat_tail.h)
        maps = cl_array.to_device(queue, np.concatenate([identity, identity]), async_=True)
        linv = cl_array.empty(queue, (n // lw + 1) * lw * lw, dtype)
        tile = _flat_tile(queue, dtype, lw)
        nx, ny = tile["TILE_N"] // tile["WPT_N"], tile["TILE_M"] // tile["WPT_M"]
        flat = dict(LW=lw, **tile)
        update = get_kernel(queue, "lu_flat.cl", "flat_update", dtype, **flat)
        buf, ld, mbuf, lbuf = A.buf, A.ld, maps.data, linv.data
        leaf_kernels: dict = {}           # (shape, with the previous update) -> _flat_leaf

        def leaf_for(c):
            """The leaf at column c: (kernel, work-group size, tile) of _flat_leaf, with
            the previous leaf's update where FLAT_AHEAD is on and its tile fits."""
            shape, prev = self._reg_shape(n - c), bool(self.p["FLAT_AHEAD"]) and c > c0
            key = (shape, prev)
            if key not in leaf_kernels:
                leaf_kernels[key] = (prev and self._flat_leaf(shape, tile)
                                     or self._flat_leaf(shape))
            return leaf_kernels[key]

        for c in range(c0, n, lw):
            jb = min(lw, n - c)
            leaf, wg, fused = leaf_for(c)
            groups = 1
            if fused is not None:         # tiles of the previous leaf's update right of it
                groups += (-(-(n - c - jb) // fused["TILE_N"])
                           * -(-(n - c) // fused["TILE_M"]))
            set_args(leaf, buf, ld, n, c, jb, mbuf, lbuf, self.piv.data, self.info.data)
            launch(queue, leaf, (groups * wg,), (wg,))
            if c + jb < n and leaf_for(c + jb)[2] is None:
                set_args(update, buf, ld, n, c, jb, c + jb, n, mbuf, lbuf)
                launch(queue, update, (-(-(n - c - jb) // tile["TILE_N"]) * nx,
                                       -(-(n - c - jb) // tile["TILE_M"]) * ny), (nx, ny))
        leaves = -(-(n - c0) // lw)
        local = self.columns_wg
        if leaves > 1:
            solve = get_kernel(queue, "lu_flat.cl", "flat_solve", dtype, **flat)
            enqueue(queue, solve, (round_up(n - c0 - lw, local), leaves - 1), (local, 1),
                    A.buf, int_arg(A.ld), int_arg(n), int_arg(c0), maps.data)
        if not self.no_pivot:
            rows_below = n - c0
            moved = cl_array.empty(queue, rows_below * A.ld, dtype)
            gather = get_kernel(queue, "lu_flat.cl", "gather_rows", dtype, **flat)
            enqueue(queue, gather, (round_up(A.ld, local), rows_below), (local, 1), A.buf,
                    int_arg(A.ld), int_arg(c0), int_arg(n), int_arg(A.ld), maps.data,
                    moved.data)
            size = np.dtype(dtype).itemsize
            copy(queue, A.buf, moved.data, byte_count=rows_below * A.ld * size,
                 dest_offset=(A.off + c0 * A.ld) * size, label="gather_rows copy")

    def _leaf_columns(self, c: int, jb: int, p0: int, p1: int, defines: dict) -> None:
        """Columns [p0, p1) of the panel outside the leaf at column c (jb wide)."""
        kernel = self._kernel("lu_rows.cl", "leaf_columns", **defines)
        local = self.columns_wg
        enqueue(self.queue, kernel, (round_up(p1 - p0 - jb, local),), (local,), self.A.buf,
                int_arg(self.A.ld), int_arg(c), int_arg(jb), int_arg(p0), int_arg(p1),
                self._perm.data)

    def _grid(self, c0: int, w: int) -> None:
        """The panel in one launch of getrf_grid (one barrier across work-groups per column)."""
        wx, wy, groups = self.p["GRID_WX"], self.p["GRID_WY"], self.grid_groups
        cpi = -(-w // wx)
        blocks = -(-(self.n - c0) // wy)
        bufs = self._grid_buffers
        if bufs is None or bufs[3].size < 2 * groups * cpi * wx:
            q, width = self.queue, cpi * wx
            bufs = self._grid_buffers = (
                int_zeros(q, 2 * self.n), cl_array.empty(q, 2 * groups, self.dtype),
                cl_array.empty(q, 2 * groups, np.int32),
                cl_array.empty(q, 2 * groups * width, self.dtype),
                cl_array.empty(q, 2 * width, self.dtype))
        need = -(-blocks // groups)                          # row blocks per work-group
        rpi = 1 if need else 0
        while rpi < need:
            rpi *= 2
        rpi = min(rpi, self.p["GRID_RPI"])
        key = ("getrf_grid", wx, wy, cpi, rpi)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = get_kernel(
                self.queue, "lu_grid.cl", "getrf_grid", self.dtype, WX=wx, WY=wy, CPI=cpi,
                RPI=rpi, NO_PIVOT=int(self.no_pivot))
        enqueue(self.queue, kernel, (groups * wx, wy), (wx, wy), self.A.buf, int_arg(self.A.ld),
                int_arg(self.n), int_arg(c0), int_arg(w), self.piv.data, self.info.data,
                bufs[0].data, int_arg(c0), *(b.data for b in bufs[1:]))

    def factor(self, c0: int, w: int, last: bool = False) -> bool:
        """Factor the panel; True where its interchanges were also applied to every
        other column of A (the ``last`` panel of the matrix in register leaves:
        ``_flat_tail``)."""
        n, p = self.n, self.p
        if self.fits(n - c0):
            if last:
                self._flat_tail(c0)
                return True
            self._register_leaves(c0, w)
            return False
        if p["PANEL_GRID"] or self.columns is not None:
            split = p["PANEL_SPLIT"]
            if split == 0 or w <= split:
                if p["PANEL_GRID"]:
                    self._grid(c0, w)
                    return False
                cols = self.columns
                cols.first(c0, c0, c0 + w)
                for k in range(c0, c0 + w - 1):
                    cols.step(k, c0, c0 + w, c0, c0 + w)
                cols.tail(max(c0, c0 + w - 2), c0 + w)
                return False
            unit = split
        else:
            if w <= p["LEAF_W"] or w == n:
                self._launch("lu.cl", "getf2_leaf", c0, w, LEAF_W=p["LEAF_W"],
                             LUNR=p["LEAF_UNR"])
                return False
            unit = p["LEAF_W"]
        self._split(c0, w, max(unit, (w // 2) // unit * unit))
        return False

    def _split(self, c0: int, w: int, w1: int) -> None:
        queue, A, n, dtype = self.queue, self.A, self.n, self.dtype
        w2 = w - w1
        self.factor(c0, w1)
        if not self.no_pivot:
            laswp(queue, A, c0 + w1, w2, self.piv.data, c0, c0 + w1, dtype=dtype)
        trsm(queue, w1, w2, A.at(c0, c0), A.at(c0, c0 + w1), dtype=dtype, left=True,
             lower=True, unit=True, inverse=False)    # small triangle: one substitution launch
        gemm(queue, n - c0 - w1, w2, w1, -1.0, A.at(c0 + w1, c0), A.at(c0, c0 + w1), 1.0,
             A.at(c0 + w1, c0 + w1), dtype=dtype)
        self.factor(c0 + w1, w2)
        if not self.no_pivot:
            laswp(queue, A, c0, w1, self.piv.data, c0 + w1, c0 + w, dtype=dtype)


def _flat_tile(queue, dtype, k: int) -> dict:
    """flat_update's tile: the device's GEMM shape for inner dimension k where it is
    tiled; else 16 x 16 by 2 x 2 items."""
    shape = gemm_shape(queue, k, dtype)
    if shape["KERNEL"] == "tiled":
        return {key: shape[key] for key in ("TILE_M", "TILE_N", "WPT_M", "WPT_N")}
    return dict(TILE_M=16, TILE_N=16, WPT_M=2, WPT_N=2)


_side_queues: dict = {}


def _side_queue(queue):
    """A second queue on the same device (look-ahead), profiling where ``queue`` does,
    or None if unavailable."""
    if queue not in _side_queues:
        profiling = queue.properties & cl.command_queue_properties.PROFILING_ENABLE
        try:
            _side_queues[queue] = cl.CommandQueue(queue.context, queue.device,
                                                  properties=profiling)
        except cl.Error:
            _side_queues[queue] = None
    return _side_queues[queue]


def _factor_blocked(queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool,
                    block: int | None = None) -> None:
    """Right-looking blocked LU, panel by panel.

    With look-ahead (the device's LOOKAHEAD parameter and a second queue),
    the update of the next panel's columns and the next panel itself run on
    ``queue`` while the rest of the trailing update (and the interchanges
    left of the panel) run on the second queue; events order the two.
    Below the device's SMALL_N the whole matrix is one panel factored by the
    leaf kernel alone (one launch).  Once the trailing matrix's order is at most
    FLAT_N and its rows fit the register leaves, it is one panel: leaf after leaf, each
    followed by one rank-LEAF_W GEMM on the whole trailing matrix (fewer,
    larger launches than panels of NB columns with their TRSM and interchanges).
    """
    dtype = a.dtype
    p = params(queue, "lu", dtype)
    small = block is None and n <= p["SMALL_N"]
    nb = n if small else (block or p["NB"])   # small: one panel, one leaf launch
    side = _side_queue(queue) if p["LOOKAHEAD"] and n > 2 * nb else None
    A = view_of(a)
    panels = _Panels(queue, A, n, piv, info, dict(p, REG_SLOTS=0, PANEL_GRID=0) if small else p, dtype=dtype,
                     no_pivot=no_pivot)

    def snapshot():
        if side is not None:
            side.finish()
        return a.get()

    def factor_panel(j, jb):
        with trace.step("panel", (j, n, j, j + jb), pivot=(j, j),
                        flops=(n - j) * jb * jb - jb ** 3 / 3.0):
            return panels.factor(j, jb, last=j + jb == n)

    def width(j):
        """The panel at column j: the rest of the matrix once it is at most FLAT_N
        columns and its rows go to register leaves, else NB columns."""
        rest = n - j
        flat = rest <= p["FLAT_N"] and block is None and not small and panels.fits(rest)
        return rest if flat else min(nb, rest)

    if p["PANEL_COLUMNS"] and not small and width(0) < n:    # panels before the flat tail
        panels.columns = _PivotKernels(queue, a, n, piv, info, no_pivot,
                                       shape=dict(RB=p["PANEL_RB"], WY=p["PANEL_WY"]))

    with trace.run("lu", "blocked", queue, (n, n), dtype, snapshot, block=nb, leaf=p["LEAF_W"],
                   lookahead=int(side is not None),
                   pivoting="none" if no_pivot else "partial") as run:
        side_done = None                  # the second queue's work of the last iteration
        j, jb = 0, width(0)
        rows_done = factor_panel(j, jb)   # the panel's interchanges already in every column
        while True:
            j1, rest = j + jb, n - j - jb
            next_jb = width(j1)
            # columns [j1, j1+near) are updated on `queue`, the rest on `far`
            far = side if side is not None and rest > next_jb else queue
            near = next_jb if far is not queue else rest
            if far is not queue:
                panel_done = cl.enqueue_marker(queue)
                cl.enqueue_barrier(far, wait_for=[panel_done])
            if side_done is not None:
                cl.enqueue_barrier(queue, wait_for=[side_done])
                side_done = None
            if not no_pivot and j + rest > 0 and not rows_done:
                with trace.step("laswp", (j, n, 0, n)):
                    if far is queue:
                        laswp(queue, A, 0, j + rest, piv.data, j, j1, dtype=dtype,
                              gap=(j, jb))
                    else:
                        laswp(queue, A, j1, near, piv.data, j, j1, dtype=dtype)
                        laswp(far, A, 0, j + rest - near, piv.data, j, j1, dtype=dtype,
                              gap=(j, jb + near))
            if rest <= 0:
                break
            with trace.step("trsm", (j, j1, j1, n), flops=float(jb * jb * rest)):
                trsm(queue, jb, near, A.at(j, j), A.at(j, j1), dtype=dtype, left=True,
                     lower=True, unit=True)
                if far is not queue:
                    trsm(far, jb, rest - near, A.at(j, j), A.at(j, j1 + near), dtype=dtype,
                         left=True, lower=True, unit=True)
            with trace.step("gemm", (j1, n, j1, n), flops=2.0 * rest * rest * jb):
                gemm(queue, rest, near, jb, -1.0, A.at(j1, j), A.at(j, j1), 1.0,
                     A.at(j1, j1), dtype=dtype)
                if far is not queue:
                    gemm(far, rest, rest - near, jb, -1.0, A.at(j1, j), A.at(j, j1 + near),
                         1.0, A.at(j1, j1 + near), dtype=dtype)
                    side_done = cl.enqueue_marker(far)
            rows_done = factor_panel(j1, next_jb)
            j, jb = j1, next_jb
        if side_done is not None:
            cl.enqueue_barrier(queue, wait_for=[side_done])
        if run is not None:
            _annotate_swaps(run, piv)


def _annotate_swaps(run, piv) -> None:
    """Recording only: note each step's row interchanges (one read at the end)."""
    host_piv = piv.get()
    for s in run.steps:
        if s.phase in ("eliminate", "panel"):
            r0, r1, c0, c1 = s.region
            last = c0 + 1 if s.phase == "eliminate" else c1
            s.info["swaps"] = [(k, int(host_piv[k])) for k in range(c0, min(last, len(host_piv)))
                               if host_piv[k] != k]


# ---- public API ---------------------------------------------------------------------------

def _factor_device(queue, a: cl_array.Array, method, variant, pivoting, block=None,
                   check_finite: bool = False):
    """Factor the device array ``a`` in place; return (piv device array, info).

    ``check_finite`` counts the NaN/Inf entries of ``a`` on the device beside the
    factorization and raises ValueError for them once it is done (the count is
    read with info: no wait before the factorization; ``a`` must be a copy the
    caller does not see).
    """
    n = a.shape[0]
    piv = cl_array.to_device(queue, np.arange(n, dtype=np.int32), async_=True)
    info = status_flags(queue, a, check_finite)
    no_pivot = pivoting == "none"
    with launch_queue(queue) as loop_queue, index_width(a.size):
        if variant == "faithful":
            _factor_faithful(loop_queue, a, n)
        elif variant == "crout":
            _factor_crout(loop_queue, a, n, piv, info, no_pivot)
        elif variant == "window":
            _factor_window(loop_queue, a, n, piv, info, no_pivot)
        elif method == "pivot":
            _factor_inplace(loop_queue, a, n, piv, info, no_pivot)
        else:
            _factor_blocked(loop_queue, a, n, piv, info, no_pivot, block)
    return piv, _info(queue, a, n, info, variant)


def _info(queue, a, n, info_dev, variant) -> int:
    """LAPACK's info: 1-based index of the first zero diagonal entry of U, else 0
    (ValueError if the input was found to hold NaN/Inf)."""
    if n == 0:
        return 0
    if variant == "faithful":
        read_status(info_dev)
        diag = a.get().diagonal()
        zeros = np.flatnonzero(diag == 0)
        return int(zeros[0]) + 1 if zeros.size else 0
    last = np.empty(1, a.dtype)              # read with the flags: one wait for both
    cl.enqueue_copy(queue, last, a.base_data, is_blocking=False,
                    src_offset=a.offset + ((n - 1) * n + n - 1) * a.dtype.itemsize)
    info = read_status(info_dev)
    if info:
        return info
    return n if last[0] == 0 else 0


def _report_info(info: int, n: int, pivoting: str) -> None:
    if not info:
        return
    if pivoting == "none" and info < n:
        error = LinAlgError(f"zero pivot in column {info - 1} without pivoting: elimination "
                            f"cannot continue (use pivoting='partial')")
        trace.fail_last_run(error)
        raise error
    warnings.warn(f"Diagonal number {info} is exactly zero. Singular matrix.",
                  LinAlgWarning, stacklevel=3)


def lu_factor(a, *, method: str = "blocked", variant: str | None = None,
              pivoting: str | None = None, overwrite_a: bool = False,
              check_finite: bool = True, block: int | None = None, queue=None):
    """LU factorization P·A = L·U of a square matrix, on the OpenCL device.

    Parameters
    ----------
    a : (n, n) array_like of float32/float64, or a pyopencl array (any view:
        offset, strides, transpose; a view is gathered into a dense work array)
    method : "blocked" (default) or "pivot"; see the module docstring
    variant : for ``method="pivot"``: "inplace" (default), "crout", "window" or "faithful"
    pivoting : "partial" (default; "none" for the faithful variant) or "none"
    overwrite_a : allow the result to be written into ``a`` (a permission, as in
        scipy).  A C-contiguous device ``a`` is factored in place; a device view
        is factored in its gathered copy and the result scattered into the
        view's own entries (nothing else of its buffer is written), and the
        view is returned.
    check_finite : reject NaN/Inf in ``a`` (ValueError)
    block : panel width of the blocked method (default: from the device)

    Returns
    -------
    lu : (n, n) array, U on and above the diagonal, L's multipliers below
    piv : (n,) int32, 0-based row interchanges
        Device arrays when ``a`` is a device array.

    An exactly singular matrix gives a :class:`scipy.linalg.LinAlgWarning`
    naming the zero diagonal entry, as scipy does.
    """
    method, variant, pivoting = _resolve_options(method, variant, pivoting)
    queue = resolve_queue(queue)
    deferred = defers_finite_check(a, check_finite, overwrite_a)
    a_ = as_matrix(a, queue, check_finite=check_finite and not deferred)
    n = a_.shape[0]
    device = is_device_array(a_)
    if n == 0:
        if device:
            return (a_ if overwrite_a else a_.copy()), cl_array.empty(queue, 0, np.int32)
        return np.empty((0, 0), a_.dtype), np.empty(0, np.int32)
    work = work_array(queue, a_, overwrite_a, original=a)
    piv, info = _factor_device(queue, work, method, variant, pivoting, block,
                               check_finite=deferred)
    _report_info(info, n, pivoting)
    return deliver(work, a, a_, overwrite_a), (piv if device else piv.get())


PIV_RANGE = "piv entries must lie in [0, {n}) (0-based, as scipy)"


def _device_piv(piv, n: int, queue, flags):
    """piv as a dense int32 device array the solve can apply.

    A host piv is checked here (ValueError).  A device piv (any view) is
    checked on the device as it is copied (``device_pivots``): out-of-range
    entries become no-op interchanges and are counted into ``flags[0]``, which
    the caller reads with the solution -- no round trip before the solve.
    """
    if is_device_array(piv):
        if piv.shape != (n,) or piv.dtype != np.int32:
            raise ValueError(f"piv must be an int32 device array of shape ({n},)")
        return device_pivots(queue, piv, flags)
    piv = np.asarray(piv)
    if piv.shape != (n,):
        raise ValueError(f"piv must have shape ({n},), got {piv.shape}")
    if piv.dtype.kind not in "iu":
        raise TypeError(f"piv must hold integers, got dtype {piv.dtype}")
    if n and (piv.min() < 0 or piv.max() >= n):
        raise ValueError(PIV_RANGE.format(n=n))
    return cl_array.to_device(queue, piv.astype(np.int32))


def _enqueue_solve(queue, d_lu, d_piv, x2, trans: int) -> None:
    """X := op(A)⁻¹·X on the device from the dense factor ``d_lu`` and pivots ``d_piv``."""
    n, nrhs = x2.shape
    dtype = d_lu.dtype
    L, B = view_of(d_lu), view_of(x2)
    with trace.run("lu_solve", f"trans={trans}", queue, (n, nrhs), dtype):
        with trace.step("solve", (0, n, 0, n), flops=2.0 * n * n * nrhs):
            if trans == 0:
                laswp(queue, B, 0, nrhs, d_piv.data, 0, n, dtype=dtype)
                trsm(queue, n, nrhs, L, B, dtype=dtype, lower=True, unit=True)
                trsm(queue, n, nrhs, L, B, dtype=dtype, lower=False)
            else:
                trsm(queue, n, nrhs, L, B, dtype=dtype, lower=False, trans=True)
                trsm(queue, n, nrhs, L, B, dtype=dtype, lower=True, trans=True, unit=True)
                laswp(queue, B, 0, nrhs, d_piv.data, 0, n, dtype=dtype, forward=False)


def lu_solve(lu_and_piv, b, *, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True, queue=None):
    """Solve A·x = b (trans=0) or Aᵀ·x = b (trans=1 or 2) from ``lu_factor``'s output.

    ``lu`` and ``piv`` may be host arrays or device arrays (any view), ``b`` is
    (n,) or (n, k), host or device (any view); the interchanges, both
    triangular solves and their GEMM updates run on the device.  The result
    has b's shape and the factor's dtype, a device array for a device b.

    Decisions where oclla differs from or sharpens scipy:

    * dtype of b: the factor's dtype is the working precision (the reason
      integer matrices are refused: oclla does not guess it).  A host b is
      converted to it when numpy's "safe" rule says the conversion is exact
      (bool, integers that fit, float32 for a float64 factor); anything else
      is a TypeError naming ``b.astype(...)``.  In particular a float64 b
      with a float32 factor is refused: scipy would return float64, while a
      float32 solve silently rounds b and returns float32 -- neither is what
      the caller asked for, so the caller chooses.  A device b must have the
      factor's dtype.
    * ``overwrite_b`` is a permission, as in scipy: a numpy b is never
      written; a C-contiguous device b is solved in place; a device view is
      solved in its gathered copy and X scattered into the view's own
      entries (nothing else of its buffer), and the view is returned.
    * A device ``piv`` is checked on the device beside the solve (an entry
      outside [0, n), e.g. 1-based pivots, raises the ValueError a numpy piv
      gets): the flag is read in the same wait as the solution, or, for a
      device b, in one read at the end.  The solve itself never addresses a
      row outside the matrix; after that ValueError a C-contiguous device b
      given with ``overwrite_b`` holds garbage (a view of b is never written
      then).
    * ``check_finite`` counts NaN/Inf in a device ``lu`` and b on the device,
      read with the same flags, except when b itself is overwritten (a
      C-contiguous device b with ``overwrite_b``): then they are checked
      before the solve.
    """
    if trans not in (0, 1, 2):
        raise ValueError(f"trans must be 0, 1 or 2, got {trans!r}")
    try:
        lu_, piv = lu_and_piv
    except (TypeError, ValueError):
        raise TypeError("lu_and_piv must be the (lu, piv) pair returned by lu_factor") from None
    queue = resolve_queue(queue)
    # NaN/Inf in device operands is counted beside the solve and read with X, unless
    # X goes into b itself: then before it, so that bad input never overwrites b
    in_place = overwrite_b and is_device_array(b) and not is_view(b)
    defer_lu, defer_b = (check_finite and not in_place and is_device_array(x)
                         for x in (lu_, b))
    lu_ = as_matrix(lu_, queue, name="lu", check_finite=check_finite and not defer_lu)
    n = lu_.shape[0]
    dtype = lu_.dtype
    b_ = as_rhs(b, queue, n, dtype, check_finite=check_finite and not defer_b)
    if n == 0 or b_.size == 0:
        return b_.copy() if is_device_array(b_) else np.empty(b_.shape, dtype)
    d_lu = lu_ if is_device_array(lu_) else cl_array.to_device(queue, lu_)
    flags = int_zeros(queue, 2)                      # [bad piv entries, NaN/Inf entries]
    d_piv = _device_piv(piv, n, queue, flags)
    x2, result = rhs_work(queue, b_, n, overwrite_b, original=b)
    for operand, deferred in ((d_lu, defer_lu), (x2, defer_b)):
        if deferred:
            count_nonfinite(queue, operand, flags, slot=1)
    _enqueue_solve(queue, d_lu, d_piv, x2, trans)
    if not (is_device_array(piv) or defer_lu or defer_b):
        return result()
    bad_piv, x = read_status_with(flags, result, host_result=not is_device_array(b_))
    if bad_piv:
        raise ValueError(PIV_RANGE.format(n=n))
    return x


def lu(a, *, permute_l: bool = False, method: str = "blocked", variant: str | None = None,
       pivoting: str | None = None, overwrite_a: bool = False, check_finite: bool = True,
       queue=None):
    """P, L, U with A = P·L·U (or PL, U with ``permute_l``), as :func:`scipy.linalg.lu`.

    The factorization runs on the device (:func:`lu_factor`); splitting the
    packed result into L and U and forming P are host bookkeeping.
    """
    if is_device_array(a):
        a = dense(resolve_queue(queue), a).get()
    lu_, piv = lu_factor(a, method=method, variant=variant, pivoting=pivoting,
                         overwrite_a=overwrite_a, check_finite=check_finite, queue=queue)
    n = lu_.shape[0]
    dtype = lu_.dtype
    l = np.tril(lu_, -1) + np.eye(n, dtype=dtype)
    u = np.triu(lu_)
    perm = np.arange(n)
    for i, j in enumerate(piv):
        perm[i], perm[j] = perm[j], perm[i]
    if permute_l:
        pl = np.empty_like(l)
        pl[perm] = l
        return pl, u
    p = np.zeros((n, n), dtype=dtype)
    p[perm, np.arange(n)] = 1
    return p, l, u
