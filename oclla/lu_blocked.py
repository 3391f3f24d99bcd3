"""The blocked LU (``method="blocked"``): right-looking, panel by panel, on the device.

``factor_blocked`` factors the n x n dense device array ``a`` in place (L's
multipliers below the diagonal, U on and above, 0-based interchanges in
``piv``, LAPACK's ``info``): a panel of NB columns (:class:`Panels`), its row
interchanges in the other columns (laswp), the TRSM of the block row and the
GEMM of the trailing matrix (:mod:`oclla.blas`), with look-ahead on a second
queue where the device's parameters ask for it.  The panel strategies, their
kernels and the parameters that choose them are listed in :class:`Panels`.
"""

from __future__ import annotations

import functools

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import trace
from ._device import device_info
from ._knobs import GRID_RPIS, LOCAL_RESERVE
from ._params import params
from ._programs import (copy, enqueue, flushed_marker, get_kernel, int_arg, int_zeros, launch,
                        round_up, set_args, side_queue)
from ._scratch import buffer as scratch_buffer, zeroed_ints
from .blas import (RECURSE_BLOCKS, View, gemm, gemm_shape, indices_for, invert_blocks, laswp,
                   trsm, view_of)
from .lu_pivot import PivotKernels, annotate_swaps

#: 64-bit words of a candidate's slot in getrf_grid's shared words (kernels_cl/lu_grid.cl
#: SLOT_WORDS): 128 bytes, so that each work-group's candidate, which every other polls,
#: has a cache line of its own (H200, float32 4096 / 8192: 1-3 % faster than packed,
#: benchmarks/results/nvidia-h200-2026-12-01-grid-words.txt).
GRID_SLOT_WORDS = 16


def grid_shared_ints(groups: int, width: int, dtype) -> int:
    """int32 entries of getrf_grid's shared words for ``groups`` work-groups and panels
    up to ``width`` (CPI*WX) columns of ``dtype``: [2][groups] candidate slots of
    GRID_SLOT_WORDS 64-bit words, [2] copies of the diagonal row and [2][groups] copies
    of a candidate row, each real of a copy in itemsize / 4 words (kernels_cl/lu_grid.cl)."""
    copy = width * (np.dtype(dtype).itemsize // 4)               # a row copy's 64-bit words
    return 2 * (2 * groups * (GRID_SLOT_WORDS + copy) + 2 * copy)

class Panels:
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
    * else by the PANEL strategy, recursively (LAPACK ?getrf2: left half,
      interchanges, TRSM, GEMM, right half): "grid", down to blocks of
      PANEL_SPLIT columns (0: the whole panel), each factored in one launch by
      the work-groups that run at once, which hand each other every column's
      candidates and rows as tagged words (``getrf_grid``,
      kernels_cl/lu_grid.cl); "columns", down to the same blocks, each with one
      multi-work-group launch per column (``columns``, a
      :class:`oclla.lu_pivot.PivotKernels`, given where the matrix has more
      than one panel); "leaf" (or "columns" without ``columns``), down to
      one-work-group leaves up to LEAF_W wide (``getf2_leaf``,
      kernels_cl/lu_leaf.cl), which also factor a whole matrix below SMALL_N
      in one launch.
    """

    def __init__(self, queue, A: View, n: int, piv, info, p: dict, *, dtype, no_pivot: bool,
                 columns=None):
        self.queue, self.A, self.n, self.piv, self.info = queue, A, n, piv, info
        self.p, self.dtype, self.no_pivot, self.columns = p, dtype, no_pivot, columns
        info = device_info(queue)
        self.local_mem = info.local_mem_size - LOCAL_RESERVE     # what the arrays may take
        self._kernels: dict = {}             # (name, define values) -> cl.Kernel
        self.grid_groups = info.compute_units * p["GRID_PER_CU"]
        self._grid_buffers = None            # (joins, shared words) of getrf_grid
        self._grid_tag = 1                   # the next grid column's tag (kernels_cl/tagged.h)
        self._perm = None                    # a register leaf's row permutation
        self._stages: dict = {}              # (work-group size, local memory) -> _stage
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
        most, most_rows = self.p["PANEL_WG"], self._most_rows()
        wg = min(self.p["LEAF_WG"] or most, most)
        while wg < most and wg * most_rows < m:
            wg *= 2
        rows = 1
        while rows * wg < m:
            rows *= 2
        fits = rows <= most_rows and self._stage(wg) > 0
        return (wg, rows) if fits else None

    def _stage(self, wg: int) -> int:
        """:meth:`_stage_rows` of wg items (no tile), found once per local memory size."""
        key = (wg, self.local_mem)
        if key not in self._stages:
            self._stages[key] = self._stage_rows(wg)
        return self._stages[key]

    def _most_rows(self) -> int:
        """Rows per work-item a register leaf's program holds (its ROWS): REG_SLOTS /
        LEAF_W, at most 16.  A leaf of m rows uses the first ceil(m / WG) of them (the
        kernel finds how many at run time), so the program depends on WG alone."""
        return min(16, self.p["REG_SLOTS"] // self.p["LEAF_W"])

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
            wg, _ = self._reg_shape(n - c)
            defines = dict(WG=wg, LW=lw, ROWS=self._most_rows(), STAGE=self._stage(wg),
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

    def _flat_leaf(self, wg: int, tile: dict | None = None):
        """The flat tail's leaf kernel (getf2_rows, MAP = 1) of wg work-items
        (``_reg_shape``), its work-group size and None; with the update's `tile`,
        the one that can also apply the previous leaf's update (PREV = 1, launched
        with prev = 1: its tile rows scaled so that a tile takes the leaf's items;
        with prev = 0 it is the plain leaf) and that tile, or None where that tile
        or its local memory does not fit the leaf, or the leaf is one column wide
        (PoCL 3.1 crashes running that kernel with LW = 1 under its default
        work-group method, loopvec)."""
        lw = self.p["LEAF_W"]
        defines = dict(WG=wg, LW=lw, ROWS=self._most_rows(), ARGMAX_SCAN=self.p["LEAF_SCAN"],
                       MAP=1)
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
        tile = flat_tile(queue, dtype, lw)
        nx, ny = tile["TILE_N"] // tile["WPT_N"], tile["TILE_M"] // tile["WPT_M"]
        update = None                     # flat_update, built where a leaf cannot fuse it
        buf, ld, mbuf, lbuf = A.buf, A.ld, maps.data, linv.data
        leaf_kernels: dict = {}           # work-group size -> _flat_leaf

        def leaf_for(c):
            """The leaf at column c: (kernel, work-group size, tile) of _flat_leaf, the
            kernel able to apply the previous leaf's update where FLAT_AHEAD is on and
            its tile fits (the first leaf, c0, has none to apply: prev = 0)."""
            wg = self._reg_shape(n - c)[0]
            if wg not in leaf_kernels:
                leaf_kernels[wg] = (self.p["FLAT_AHEAD"] and self._flat_leaf(wg, tile)
                                    or self._flat_leaf(wg))
            return leaf_kernels[wg]

        for c in range(c0, n, lw):
            jb = min(lw, n - c)
            leaf, wg, fused = leaf_for(c)
            prev = int(fused is not None and c > c0)
            groups = 1
            if prev:                      # tiles of the previous leaf's update right of it
                groups += (-(-(n - c - jb) // fused["TILE_N"])
                           * -(-(n - c) // fused["TILE_M"]))
            set_args(leaf, buf, ld, n, c, jb, mbuf, lbuf, prev, self.piv.data,
                     self.info.data)
            launch(queue, leaf, (groups * wg,), (wg,))
            if c + jb < n and leaf_for(c + jb)[2] is None:
                if update is None:
                    update = get_kernel(queue, "lu_flat.cl", "flat_update", dtype, UPDATE=1,
                                        LW=lw, **tile)
                set_args(update, buf, ld, n, c, jb, c + jb, n, mbuf, lbuf)
                launch(queue, update, (-(-(n - c - jb) // tile["TILE_N"]) * nx,
                                       -(-(n - c - jb) // tile["TILE_M"]) * ny), (nx, ny))
        leaves = -(-(n - c0) // lw)
        local = self.columns_wg
        if leaves > 1:
            solve = get_kernel(queue, "lu_flat.cl", "flat_solve", dtype, LW=lw)
            enqueue(queue, solve, (round_up(n - c0 - lw, local), leaves - 1), (local, 1),
                    A.buf, int_arg(A.ld), int_arg(n), int_arg(c0), maps.data)
        if not self.no_pivot:
            rows_below = n - c0
            moved = cl_array.empty(queue, rows_below * A.ld, dtype)
            gather = get_kernel(queue, "lu_flat.cl", "gather_rows", dtype, LW=lw)
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
        """The panel in one launch of getrf_grid (work-groups that wait for each other's
        candidates and pivot rows, column by column, as tagged words).

        One program for every order up to the one whose panels the work-groups hold in
        GRID_RPI register rows per item: built for the widest panel of the
        factorization (NB, or PANEL_SPLIT where that is narrower) and those rows; the
        rows this panel asks for (the fewest that hold its row blocks, at most the
        program's) are an argument.  A taller panel takes the program with twice (four
        times) the rows (:meth:`_grid_rows`).  The words live in buffers of the queue's
        pool zeroed once per factorization by fill commands in the queue's order (no host
        copy, no wait), and each column's tag is new to them (``_grid_tag``)."""
        wx, wy = self.p["GRID_WX"], self.p["GRID_WY"]
        split, nb = self.p["PANEL_SPLIT"], self.p["NB"]
        cpi = -(-max(w, min(split, nb) if split else nb) // wx)
        blocks = -(-(self.n - c0) // wy)
        most = self._grid_rows(blocks)
        groups = self._grid_groups(blocks, most)
        shared = grid_shared_ints(groups, cpi * wx, self.dtype)
        bufs = self._grid_buffers
        if bufs is None or bufs[1].size < shared:
            bufs = self._grid_buffers = (zeroed_ints(self.queue, self.n),
                                         zeroed_ints(self.queue, shared))
        rpi = -(-blocks // groups)                           # row blocks per work-group
        key = ("getrf_grid", wx, wy, cpi, most)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = get_kernel(
                self.queue, "lu_grid.cl", "getrf_grid", self.dtype, WX=wx, WY=wy, CPI=cpi,
                RPI=most, SLOT_WORDS=GRID_SLOT_WORDS, GRID_GROUPS=self.grid_groups,
                NO_PIVOT=int(self.no_pivot))
        enqueue(self.queue, kernel, (groups * wx, wy), (wx, wy), self.A.buf, int_arg(self.A.ld),
                int_arg(self.n), int_arg(c0), int_arg(w), self.piv.data, self.info.data,
                bufs[0].data, int_arg(c0), bufs[1].data, int_arg(self._grid_tag), int_arg(rpi))
        self._grid_tag += w

    def _grid_rows(self, blocks: int) -> int:
        """Register rows per item of a grid panel of ``blocks`` row blocks: GRID_RPI, or
        twice as many for a panel of more than GRID_TALL rows, four times past twice
        GRID_TALL and so on (so that, with GRID_FEWEST, a panel taller than GRID_TALL
        takes about as many work-groups as one of GRID_TALL rows and leaves the other
        compute units to the trailing update beside it); that, or (where it leaves rows
        in memory on every work-group that can run at once) twice as many, or four
        times where twice still leaves some, at most the knob's largest choice.  The
        latter, H200 (GRID_RPI 8, against it throughout): sgetrf 10240 / 12288 / 16384
        72.4 / 106.3 / 197.8 -> 69.5 / 99.0 / 183.9 ms, dgetrf 12288 / 16384 138.7 /
        271.6 -> 137.1 / 262.3 (10240 94.2 -> 95.5); 8192, whose panels 8 hold, level
        (benchmarks/results/nvidia-h200-2026-11-30-grid-rows-2.txt)."""
        rpi, tall = self.p["GRID_RPI"], self.p["GRID_TALL"]
        while rpi and tall and blocks * self.p["GRID_WY"] > tall and rpi < max(GRID_RPIS):
            rpi, tall = rpi * 2, tall * 2
        for _ in range(2):
            if not rpi or rpi >= max(GRID_RPIS) or blocks <= self.grid_groups * rpi:
                break
            rpi *= 2
        return rpi

    def _grid_groups(self, blocks: int, rpi: int) -> int:
        """Work-groups of a grid panel of ``blocks`` row blocks: compute units x
        GRID_PER_CU, or with GRID_FEWEST = g > 0 the fewest whose ``rpi`` register rows
        hold the blocks, at least g and at most that many."""
        fewest = self.p["GRID_FEWEST"]
        if not fewest or not rpi:
            return self.grid_groups
        return min(self.grid_groups, max(fewest, -(-blocks // rpi)))

    def factor(self, c0: int, w: int, last: bool = False, part: bool = False) -> bool:
        """Factor the panel; True where its interchanges were also applied to every
        other column of A (the ``last`` panel of the matrix in register leaves:
        ``_flat_tail``).  A ``part`` of a split panel keeps the panel's strategy: register
        leaves only for a whole panel whose rows fit them (else the few orders whose
        second part just fits would build a register leaf program for it alone)."""
        n, p = self.n, self.p
        if self.fits(n - c0) and not part:
            if last:
                self._flat_tail(c0)
                return True
            self._register_leaves(c0, w)
            return False
        strategy = p["PANEL"] if p["PANEL"] != "columns" or self.columns else "leaf"
        if strategy != "leaf":
            split = p["PANEL_SPLIT"]
            if split == 0 or w <= split:
                if strategy == "grid":
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
                self._launch("lu_leaf.cl", "getf2_leaf", c0, w, LEAF_W=p["LEAF_W"],
                             LUNR=p["LEAF_UNR"])
                return False
            unit = p["LEAF_W"]
        self._split(c0, w, max(unit, (w // 2) // unit * unit))
        return False

    def _split(self, c0: int, w: int, w1: int) -> None:
        queue, A, n, dtype = self.queue, self.A, self.n, self.dtype
        w2 = w - w1
        self.factor(c0, w1, part=True)
        if not self.no_pivot:
            laswp(queue, A, c0 + w1, w2, self.piv.data, c0, c0 + w1, dtype=dtype)
        trsm(queue, w1, w2, A.at(c0, c0), A.at(c0, c0 + w1), dtype=dtype, left=True,
             lower=True, unit=True, inverse=False)    # small triangle: one substitution launch
        gemm(queue, n - c0 - w1, w2, w1, -1.0, A.at(c0 + w1, c0), A.at(c0, c0 + w1), 1.0,
             A.at(c0 + w1, c0 + w1), dtype=dtype)
        self.factor(c0 + w1, w2, part=True)
        if not self.no_pivot:
            laswp(queue, A, c0, w1, self.piv.data, c0 + w1, c0 + w, dtype=dtype)


def _pieces(width: int, cols: int, unit: int) -> list:
    """(first column, width) of consecutive blocks of ``width`` columns, as few as have at
    most about ``cols`` columns each (0: one block), each a multiple of ``unit`` (the panel
    width) but the last."""
    if cols <= 0 or width <= cols:
        return [(0, width)]
    share = -(-width // -(-width // cols))           # width / ceil(width / cols), rounded up
    step = -(-share // unit) * unit
    return [(c, min(step, width - c)) for c in range(0, width, step)]


def flat_tile(queue, dtype, k: int) -> dict:
    """flat_update's tile: the device's GEMM shape for inner dimension k where it is
    tiled; else 16 x 16 by 2 x 2 items."""
    shape = gemm_shape(queue, k, dtype)
    if shape["KERNEL"] == "tiled":
        return {key: shape[key] for key in ("TILE_M", "TILE_N", "WPT_M", "WPT_N")}
    return dict(TILE_M=16, TILE_N=16, WPT_M=2, WPT_N=2)


def factor_blocked(queue, a: cl_array.Array, n: int, piv, info, no_pivot: bool,
                    block: int | None = None) -> None:
    """Right-looking blocked LU, panel by panel.

    With look-ahead (the device's LOOKAHEAD parameter and a second queue),
    the update of the next panel's columns and the next panel itself run on
    ``queue`` while the rest of the trailing update (and the interchanges
    left of the panel) run on the second queue; events order the two.  That far
    update is one GEMM, or with FAR_COLS several of consecutive column blocks:
    where one GEMM's work-groups fill every compute unit (float64 tiles on an H200),
    the next panel's kernels start only as its last work-groups are handed out, and
    between the blocks they find room.  With INVERT_ONCE, where the device solves
    triangles by the inverses of their diagonal blocks, the second queue inverts the
    panel's (its L11) first, for both queues' solves, while the first interchanges the
    next panel's columns: the next panel waits for the longer of the two, not for both.
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
    side = side_queue(queue) if p["LOOKAHEAD"] and n > 2 * nb else None
    A = view_of(a)
    panels = Panels(queue, A, n, piv, info, dict(p, REG_SLOTS=0, PANEL="leaf") if small else p,
                    dtype=dtype, no_pivot=no_pivot)
    solves = params(queue, "trsm", dtype)
    tnb = solves["TRSM_NB"]
    inverses = None                       # L11's diagonal blocks inverted, for both queues
    if (side is not None and p["INVERT_ONCE"] and solves["INVERSE"]
            and nb <= RECURSE_BLOCKS * tnb):
        inverses = scratch_buffer(queue, -(-nb // tnb) * tnb * tnb * np.dtype(dtype).itemsize)

    def snapshot():
        if side is not None:
            side.finish()
        return a.get()

    @functools.cache
    def width(j):
        """The panel at column j: the rest of the matrix once it is at most FLAT_N
        columns and its rows go to register leaves, else NB columns (asked twice per
        panel: by the loop, and for the far queue of the panel before)."""
        rest = n - j
        flat = rest <= p["FLAT_N"] and block is None and not small and panels.fits(rest)
        return rest if flat else min(nb, rest)

    def factor_panel(j, jb):
        """Factor the panel at column j; (whether its interchanges are in every column
        already, the queue of the trailing update right of the next panel, the event
        after which ``inverses`` holds the panel's L11 inverted, or None).  That other
        queue waits here for the panel."""
        with trace.step("panel", (j, n, j, j + jb), pivot=(j, j),
                        flops=(n - j) * jb * jb - jb ** 3 / 3.0):
            rows_done = panels.factor(j, jb, last=j + jb == n)
            rest = n - j - jb
            far = side if side is not None and rest > width(j + jb) else queue
            inverted = None
            if far is not queue:
                cl.enqueue_barrier(far, wait_for=[flushed_marker(queue)])
                if inverses is not None:
                    with indices_for(dtype, A):
                        invert_blocks(far, jb, tnb, A.at(j, j), inverses, dtype=dtype,
                                      lower=True, unit=True)
                    inverted = flushed_marker(far)
            return rows_done, far, inverted

    if p["PANEL"] == "columns" and not small and width(0) < n:   # panels before the flat tail
        panels.columns = PivotKernels(queue, a, n, piv, info, no_pivot,
                                      shape=dict(RB=p["PANEL_RB"], WY=p["PANEL_WY"]))

    with trace.run("lu", "blocked", queue, (n, n), dtype, snapshot, block=nb, leaf=p["LEAF_W"],
                   lookahead=int(side is not None),
                   pivoting="none" if no_pivot else "partial") as run:
        side_done = None                  # the second queue's work of the last iteration
        j, jb = 0, width(0)
        rows_done, far, inverted = factor_panel(j, jb)
        while True:
            j1, rest = j + jb, n - j - jb
            next_jb = width(j1)
            # columns [j1, j1+near) are updated on `queue`, the rest on `far`
            near = next_jb if far is not queue else rest
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
                shared = None
                if inverted is not None:
                    cl.enqueue_barrier(queue, wait_for=[inverted])
                    shared = inverses
                trsm(queue, jb, near, A.at(j, j), A.at(j, j1), dtype=dtype, left=True,
                     lower=True, unit=True, inverses=shared)
                if far is not queue:
                    trsm(far, jb, rest - near, A.at(j, j), A.at(j, j1 + near), dtype=dtype,
                         left=True, lower=True, unit=True, inverses=shared)
            with trace.step("gemm", (j1, n, j1, n), flops=2.0 * rest * rest * jb):
                gemm(queue, rest, near, jb, -1.0, A.at(j1, j), A.at(j, j1), 1.0,
                     A.at(j1, j1), dtype=dtype)
                if far is not queue:
                    for c, cw in _pieces(rest - near, p["FAR_COLS"], jb):
                        gemm(far, rest, cw, jb, -1.0, A.at(j1, j), A.at(j, j1 + near + c),
                             1.0, A.at(j1, j1 + near + c), dtype=dtype)
                    side_done = flushed_marker(far)
            rows_done, far, inverted = factor_panel(j1, next_jb)
            j, jb = j1, next_jb
        if side_done is not None:
            cl.enqueue_barrier(queue, wait_for=[side_done])
        if run is not None:
            annotate_swaps(run, piv)
