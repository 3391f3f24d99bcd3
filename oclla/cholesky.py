"""Cholesky factorization A = L·Lᵀ = Uᵀ·U: per-pivot (teaching) and blocked (fast).

``cholesky(a, lower=False)`` returns U (upper, A = Uᵀ·U) or L (``lower=True``,
A = L·Lᵀ) with the other triangle zeroed, as :func:`scipy.linalg.cholesky`.
``cho_factor`` returns ``(c, lower)`` where the other triangle of ``c`` is
left as it was in the input (scipy leaves "random data" there; here it is
exactly the input's), and ``cho_solve((c, lower), b)`` solves A·x = b.

Only one triangle of ``a`` is read -- the upper for ``lower=False``, the
lower for ``lower=True`` -- as LAPACK's ``?potrf``: the matrix is *assumed*
symmetric, and whatever the other triangle holds is ignored (it is checked
for NaN/Inf only by ``check_finite``, which looks at the whole array as
scipy does).

Methods
-------
``method="blocked"`` (default)
    Right-looking blocked potrf: per block column the diagonal block is
    factored (split recursively into halves, TRSM and SYRK down to leaves that
    one work-group factors in its registers: ``potf2_block``, or ``potf2_rows``
    with one work-item per row where the device's ``ROW_LEAF`` says so), then a
    TRSM for the panel below it and a SYRK on the trailing triangle, from
    :mod:`oclla.blas`.  Up to the device's SMALL_N each block column is one
    leaf, which also inverts its block, and the panel solve is one in-place
    multiplication (fewest launches, all rows in parallel).  Where the device's
    ``FUSE_LEAF`` says so, the trailing update's launch factors the next leaf
    (``syrk_leaf``), and that kernel factors the other leaves too.  Block and leaf
    sizes: the device's ``chol`` parameters.  A device-side
    ``info`` flag records the first non-positive pivot; every later kernel
    sees it and returns, so the host reads it once, at the end.
``method="pivot"``
    Jung & O'Leary's Algorithm 4/5: per pivot k a square-root kernel on
    L(k,k), a normalization kernel on the column below it and an
    outer-product kernel whose NDRange enumerates exactly the entries of the
    trailing lower triangle (no idle half square).  Each kernel is one trace
    step with phase ``sqrt``, ``normalize`` or ``outer_product``: n, n−1 and
    n−1 steps.

Beyond one buffer
    A host matrix larger than one buffer of the device is factored in tiles
    on the device, or streamed from host memory where it exceeds the device's
    memory (:mod:`oclla.tiled`, :mod:`oclla.out_of_core`: blocked, whatever
    the method); a :class:`oclla.tiled.TiledMatrix` is taken as it is.

A matrix that is not positive definite raises
:class:`numpy.linalg.LinAlgError` "leading minor of order k is not positive
definite", k being LAPACK's ``info``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyopencl.array as cl_array
from numpy.linalg import LinAlgError

from . import _scratch as scratch, trace
from ._device import driver_errors, resolve_queue
from ._params import chol_apply_rows, chol_fused_leaf, chol_row_leaf, params, remembered
from ._programs import (enqueue, get_kernel, index_width, int_arg, launch_queue, round_up,
                        wide_indices)
from ._validate import (as_matrix, check_method, checked_beside, factor_in_place,
                        is_device_array, read_only, read_status, solve_in_place, status_flags,
                        unpack_pair)
from .blas import View, syrk, tile_grid, tile_launch, trsm, view_of


def cholesky_flops(n: int) -> float:
    """LAPACK's flop count of an n x n Cholesky: n³/3 + n²/2 + n/6."""
    return n ** 3 / 3.0 + n ** 2 / 2.0 + n / 6.0


def not_positive_definite(info: int) -> LinAlgError:
    """The error for LAPACK's ``info`` > 0."""
    return LinAlgError(f"leading minor of order {info} is not positive definite")


def block_size(queue, dtype, n: int) -> int:
    """Block column width of the blocked potrf of order n: the device's ``chol``
    LEAF up to its SMALL_N (one leaf per block column, panels solved with the
    leaf's inverse: fewest launches), NB above."""
    p = params(queue, "chol", dtype)
    return p["LEAF"] if n <= p["SMALL_N"] else p["NB"]


# ---- device algorithms: enqueue only, never wait -------------------------------------

def _full_region(lower: bool):
    """Map a region of the logical lower factor to the stored triangle."""
    def region(r0, r1, c0, c1):
        return ((r0, r1, c0, c1) if lower else (c0, c1, r0, r1)), {}
    return region


def factor_pivot(queue, buf, off: int, ld: int, n: int, *, lower: bool, dtype, info,
                 packed: bool = False, region=None) -> None:
    """The per-pivot algorithm on the matrix at ``buf[off:]`` (or an RFP array).

    ``region(r0, r1, c0, c1)`` maps a region of the logical lower factor to
    the (region, extra step info) recorded in the trace; called only while
    recording.  Each step's pivot is where L(k, k) is stored.
    """
    wg = params(queue, "wg1d", dtype)["WG"]
    sqrt_k = get_kernel(queue, "cholesky.cl", "sqrt_pivot", dtype)
    norm_k = get_kernel(queue, "cholesky.cl", "normalize_column", dtype)
    outer_k = get_kernel(queue, "cholesky.cl", "outer_product", dtype)
    storage = (int_arg(lower), int_arg(packed))
    region = region or _full_region(lower)
    recording = trace.recording()
    no_region = ((0, 0, 0, 0), {})
    common = (buf, np.int64(off), int_arg(ld), int_arg(n))
    itemsize = np.dtype(dtype).itemsize
    for k in range(n):
        reg, extra = region(k, k + 1, k, k + 1) if recording else no_region
        pivot = (reg[0], reg[2])          # where L(k, k) is stored
        with trace.step("sqrt", reg, pivot=pivot, flops=1.0, nbytes=2 * itemsize, **extra):
            enqueue(queue, sqrt_k, (1,), None, *common, int_arg(k), info.data, *storage)
        t = n - k - 1
        if t == 0:
            break
        reg, extra = region(k + 1, n, k, k + 1) if recording else no_region
        with trace.step("normalize", reg, pivot=pivot, flops=float(t),
                        nbytes=(2 * t + 1) * itemsize, **extra):
            enqueue(queue, norm_k, (round_up(t, wg),), (wg,), *common, int_arg(k), info.data,
                    *storage)
        entries = t * (t + 1) // 2
        reg, extra = region(k + 1, n, k + 1, n) if recording else no_region
        with trace.step("outer_product", reg, pivot=pivot, flops=2.0 * entries,
                        nbytes=4.0 * entries * itemsize, triangle_entries=entries, **extra):
            enqueue(queue, outer_k, (round_up(entries, wg),), (wg,), *common, int_arg(k),
                    info.data, *storage)


def _solve_panel(queue, a: View, n1: int, rest: int, *, lower: bool, dtype) -> View:
    """Given the factored n1 x n1 block at ``a``, overwrite the panel beside it
    (L21 = A21·L11⁻ᵀ, or U12 = U11⁻ᵀ·A12, ``rest`` wide) by TRSM; return its view."""
    panel = a.at(n1, 0) if lower else a.at(0, n1)
    trsm(queue, n1, rest, a, panel, dtype=dtype, left=not lower, lower=lower, trans=True,
         inverse=bool(params(queue, "chol", dtype)["TRSM_INVERSE"]))
    return panel


def _update_trailing(queue, a: View, n1: int, rest: int, panel: View, *, lower: bool,
                     dtype, beyond: int | None = None) -> None:
    """A22 -= L21·L21ᵀ (or U12ᵀ·U12) on the stored triangle of order ``rest`` (SYRK); with
    ``beyond`` > rest on the trapezoid of the stored triangle's rows (columns) ``rest`` by
    ``beyond`` instead, the panel ``beyond`` long."""
    syrk(queue, rest, n1, -1.0, panel, 1.0, a.at(n1, n1), dtype=dtype, lower=lower,
         trans=not lower, width=beyond)


class _Leaf(NamedTuple):
    """The diagonal-leaf kernels of the blocked potrf, looked up once per factorization."""
    kernel: object             # potf2_block or potf2_rows; None where tile_leaf factors
                               # the leaves
    tile_leaf: object          # syrk_leaf (the device's FUSE_LEAF allows it): every leaf
                               # launched as an update of rank 0 and its leaf, or None
    inverting: bool            # the leaves also write W^T = L11^-T (apply_inverse's V)
    apply: object              # apply_inverse (with ``inverting``), or None
    order: int                 # LEAF: largest block they factor
    wg: int                    # the leaf's work-group size
    apply_wg: int              # apply_inverse's work-group size
    apply_rows: int            # rows of the panel per apply_inverse work-group
    tile_local: tuple          # tile_leaf's work-group shape
    gemm: dict                 # the device's gemm parameters (tile_leaf's tiles)

    @property
    def fused(self) -> bool:
        """Whether the trailing updates factor the next leaf (tile_leaf, inverting)."""
        return self.tile_leaf is not None and self.inverting


def _leaf(queue, dtype, lower: bool, invert: bool) -> _Leaf:
    """The leaf kernels (:func:`_make_leaf`) for the device's current ``chol`` and
    ``gemm`` parameters, remembered per queue and thread (get_kernel's kernels are the
    thread's own) and index width until the parameters are chosen anew
    (:func:`oclla._params.remembered`): their lookups cost a factorization about 40 µs."""
    return remembered(queue, ("chol leaf", np.dtype(dtype), lower, invert, wide_indices()),
                      lambda: _make_leaf(queue, dtype, lower, invert, params(queue, "chol", dtype),
                                         params(queue, "gemm", dtype)))


def _make_leaf(queue, dtype, lower: bool, invert: bool, p: dict, gemm: dict) -> _Leaf:
    """The leaf kernels of the triangle ``lower`` for ``chol`` parameters ``p`` and
    ``gemm`` parameters ``gemm``; with ``invert`` also apply_inverse, and the leaves
    write their inverses.

    ``ROW_LEAF`` picks potf2_rows (one work-item per row of the block) over
    potf2_block (the block's entries spread over WG items) where LEAF allows it.
    Where ``FUSE_LEAF`` and the gemm tiles allow it, syrk_leaf.cl's kernel factors
    every leaf instead (an update of rank 0 before its leaf: the row leaf's code is
    compiled once per triangle, not also in cholesky.cl), and with ``invert`` the
    trailing updates factor the leaves after the first (:func:`_update_and_factor_next`)."""
    rows = chol_row_leaf(p)
    tile_leaf, tile_local = None, ()
    if chol_fused_leaf(p, gemm):
        # one program for every order: the tiles' vector loads test the panel's
        # alignment at run time (gemm_tile.h)
        defines, _, tile_local = tile_launch(gemm, 0, 0)
        tile_leaf = get_kernel(queue, "syrk_leaf.cl", "syrk_leaf", dtype, LEAF=p["LEAF"],
                               LOWER=int(lower), **defines)
    apply_rows = chol_apply_rows(p)       # the panel rows of an apply_inverse work-group
    # one program for the leaf, its inverting use (w given: ldw > 0) and apply_inverse,
    # both triangles (an argument of the kernels); without the leaf where tile_leaf
    # factors the leaves
    opts = dict(WG=p["WG"], LEAF=p["LEAF"], ROW_LEAF=int(rows), APPLY_ROWS=apply_rows)
    if tile_leaf is not None:
        opts.update(LEAF_KERNEL=0)
    name, wg = ("potf2_rows", p["LEAF"]) if rows else ("potf2_block", p["WG"])
    kernel = None if tile_leaf is not None else get_kernel(queue, "cholesky.cl", name, dtype,
                                                           **opts)
    apply = get_kernel(queue, "cholesky.cl", "apply_inverse", dtype, **opts) if invert else None
    return _Leaf(kernel, tile_leaf, invert, apply, p["LEAF"], wg, p["WG"], apply_rows,
                 tile_local, gemm)


def _factor_leaf(queue, a: View, nb: int, leaf: _Leaf, *, lower: bool, info, base: int,
                 inverse=None) -> None:
    """Factor the nb x nb diagonal block at ``a`` (nb <= LEAF) in one work-group, in
    place; with ``inverse`` (a buffer of LEAF x LEAF reals) also write L⁻ᵀ of the block
    there.  A failing pivot at order k of it sets ``info`` to ``base + k`` if it is
    still 0."""
    w, ldw = (inverse, leaf.order) if inverse is not None else (a.buf, 0)
    if leaf.kernel is None:            # syrk_leaf: an empty update, then the leaf
        enqueue(queue, leaf.tile_leaf, tile_grid(leaf.gemm, nb, nb), leaf.tile_local,
                int_arg(nb), int_arg(nb), int_arg(0), a.buf, np.int64(a.off), int_arg(a.ld),
                a.buf, np.int64(a.off), int_arg(a.ld), int_arg(nb), int_arg(base), info.data,
                w, int_arg(ldw))
        return
    enqueue(queue, leaf.kernel, (leaf.wg,), (leaf.wg,), a.buf, np.int64(a.off), int_arg(a.ld),
            int_arg(nb), int_arg(base), info.data, w, int_arg(ldw), int_arg(lower))


def _inverting(queue, dtype, n: int, nb: int) -> bool:
    """Whether the blocked potrf of order n with blocks of nb factors each block column
    as one leaf that also inverts it (the panel solved by multiplication)."""
    p = params(queue, "chol", dtype)
    return min(nb, n) <= p["LEAF"] and bool(p["TRSM_INVERSE"] or n <= p["SMALL_N"])


def fuses_leaves(queue, dtype, n: int, block: int | None = None) -> bool:
    """Whether :func:`factor_blocked` of order n factors each next leaf in the launch of
    the trailing update before it (syrk_leaf.cl), so that the leaf overlaps the update."""
    nb = block or block_size(queue, dtype, n)
    return _inverting(queue, dtype, n, nb) and chol_fused_leaf(
        params(queue, "chol", dtype), params(queue, "gemm", dtype))


def sweeps_fused(queue, dtype, n: int, block: int | None = None) -> bool:
    """Whether :func:`factor_blocked` of order n (blocks of ``block``, default the
    device's) factors its leaves in the launches of the updates before them, in blocks
    of one leaf (:func:`fuses_leaves`) or of several (:func:`_two_level`): a trapezoid
    (``width``) is then best factored in that one sweep, without a separate TRSM."""
    nb = block or block_size(queue, dtype, n)
    return fuses_leaves(queue, dtype, n, nb) or bool(_two_level(queue, dtype, n, nb))


def _two_level(queue, dtype, n: int, nb: int) -> int:
    """The leaf order of :func:`factor_blocked`'s block columns where each is factored
    by leaves fused into its own updates (blocks of nb > LEAF on a device whose leaves
    fuse: :func:`fuses_leaves` of an nb x nb block, so nb up to SMALL_N), else 0.
    Against a leaf and a TRSM by substitution per block column (H200, blocks of 128,
    upper / lower, ms): float64
    n = 16384 129.3 / 131.3 -> 109.7 / 107.4, float32 20480 158.4 / 167.3 -> 137.2 /
    141.0; with blocks of 1024 87-90 and 101-102 ms at n = 16384 and 20480
    (benchmarks/results/nvidia-h200-2026-11-30-two-level.txt)."""
    p = params(queue, "chol", dtype)
    if _inverting(queue, dtype, n, nb) or min(nb, n) <= p["LEAF"]:
        return 0
    return p["LEAF"] if fuses_leaves(queue, dtype, nb, p["LEAF"]) else 0


def _update_and_factor_next(queue, a: View, jb: int, rest: int, beyond: int, panel: View,
                            leaf: _Leaf, inverse, *, lower: bool, dtype, info,
                            base: int) -> None:
    """A22 -= L21·L21ᵀ (or U12ᵀ·U12) on the stored triangle of order ``rest`` below and
    right of the factored jb x jb block at ``a`` (on the trapezoid of ``rest`` by
    ``beyond`` > rest where the panel is that long), and in the same launch
    (syrk_leaf.cl) factor the next diagonal block, A22's leading min(jb, rest) block,
    writing its L⁻ᵀ to ``inverse``; a failing pivot at order k of it sets ``info`` to
    ``base + k``."""
    nb = min(jb, rest)
    c = a.at(jb, jb)
    m, n = (beyond, rest) if lower else (rest, beyond)
    enqueue(queue, leaf.tile_leaf, tile_grid(leaf.gemm, m, n), leaf.tile_local,
            int_arg(m), int_arg(n), int_arg(jb), panel.buf, np.int64(panel.off),
            int_arg(panel.ld), c.buf, np.int64(c.off), int_arg(c.ld), int_arg(nb),
            int_arg(base), info.data, inverse, int_arg(leaf.order))


def _factor_diagonal(queue, a: View, n: int, leaf: _Leaf, *, lower: bool, dtype, info,
                     base: int) -> None:
    """Factor the n x n diagonal block at ``a`` in place (recursive potrf).

    Up to the leaf order one work-group does it in its registers; larger
    blocks split into A11 (a multiple of the leaf order), the panel A21, the
    trailing update of A22 and A22, each half recursively.  A failing pivot at
    order k of this block sets ``info`` to ``base + k`` if it is still 0.
    """
    if n <= leaf.order:
        _factor_leaf(queue, a, n, leaf, lower=lower, info=info, base=base)
        return
    n1 = max(leaf.order, (n // 2) // leaf.order * leaf.order)
    _factor_diagonal(queue, a, n1, leaf, lower=lower, dtype=dtype, info=info, base=base)
    panel = _solve_panel(queue, a, n1, n - n1, lower=lower, dtype=dtype)
    _update_trailing(queue, a, n1, n - n1, panel, lower=lower, dtype=dtype)
    _factor_diagonal(queue, a.at(n1, n1), n - n1, leaf, lower=lower, dtype=dtype, info=info,
                     base=base + n1)


def _factor_block_column(queue, diag: View, j: int, jb: int, beyond: int, leaf: _Leaf,
                         inverse, region, *, lower: bool, dtype, info, base: int):
    """:func:`factor_blocked`'s block column j (jb wide) by one leaf or a recursive potrf
    of its diagonal block (unless the update before it factored it: ``leaf.fused``), then
    its panel, ``beyond`` long, by the leaf's inverse or a TRSM; the panel's view, or
    None where there is none."""
    if j == 0 or not leaf.fused:           # else the previous update factored this block
        reg, extra = region(j, j + jb, j, j + jb)
        with trace.step("panel", reg, pivot=(reg[0], reg[2]), flops=cholesky_flops(jb),
                        **extra):
            if inverse is not None:
                _factor_leaf(queue, diag, jb, leaf, lower=lower, info=info, base=base + j,
                             inverse=inverse)
            else:
                _factor_diagonal(queue, diag, jb, leaf, lower=lower, dtype=dtype,
                                 info=info, base=base + j)
    if beyond == 0:
        return None
    reg, extra = region(*((j + jb, j + jb + beyond, j, j + jb) if lower
                          else (j, j + jb, j + jb, j + jb + beyond)))
    with trace.step("trsm", reg, flops=float(jb * jb * beyond), **extra):
        if inverse is None:
            return _solve_panel(queue, diag, jb, beyond, lower=lower, dtype=dtype)
        panel = diag.at(jb, 0) if lower else diag.at(0, jb)
        enqueue(queue, leaf.apply, (-(-beyond // leaf.apply_rows) * leaf.apply_wg,),
                (leaf.apply_wg,),
                panel.buf, np.int64(panel.off), int_arg(panel.ld), int_arg(beyond),
                int_arg(jb), inverse, int_arg(leaf.order), info.data, int_arg(lower))
        return panel


def factor_blocked(queue, a: View, n: int, *, lower: bool, dtype, info, base: int = 0,
                   block: int | None = None, region=None, width: int | None = None,
                   on_final=None) -> None:
    """Right-looking blocked potrf of the n x n matrix at ``a``, in place.

    ``lower``: A = L·Lᵀ with L in the row-major lower triangle; else A = Uᵀ·U
    with U in the upper triangle.  A failing pivot at order k (1-based,
    within this matrix) sets ``info`` to ``base + k`` if it is still 0.
    ``region(r0, r1, c0, c1)`` maps a region of ``a`` to the (region, extra
    info) recorded in the trace (default: as is).

    ``width`` > n factors a trapezoid: the first n block columns of a potrf of
    order ``width`` whose stored triangle holds A21 (``width - n`` rows below
    A11; upper: A12, columns right of it) beside A11.  A11 = L11·L11ᵀ and
    A21 := L21 = A21·L11⁻ᵀ, every trailing update confined to the trapezoid;
    A22 is neither read nor written (the packed Cholesky's first half, whose
    A22 lies elsewhere).  ``on_final(j0, j1)``, where given, is called once the
    factor's rows (``lower``: columns) j0..j1 are final, diagonal block and
    panel, before the trailing update after them is enqueued: work that needs
    only those rows may then go to another queue (the packed Cholesky's A22
    update).

    Where a diagonal block is one leaf (always below the device's SMALL_N,
    else with TRSM_INVERSE set), the leaf kernel also writes L11⁻ᵀ and the
    panel solve is one in-place multiplication (``apply_inverse``, all rows
    in parallel) instead of a substitution (TRSM); where the device's
    FUSE_LEAF allows, every leaf after the first is factored in the launch of
    the trailing update before it (one ``syrk`` trace step per block column
    then covers both: its pivot is the next block's, its info ``leaf`` that
    block's region).  Block columns wider than a leaf on such a device are
    two levels (:func:`_two_level`): each block column (its diagonal block
    and its panel, a trapezoid) is factored by leaves fused into its own
    updates as above, then the trailing triangle takes one SYRK as deep as
    the block column, where a leaf's depth makes the updates memory-bound.
    """
    nb = block or block_size(queue, dtype, n)
    leaf = _leaf(queue, dtype, lower, invert=_inverting(queue, dtype, n, nb))
    region = region or (lambda r0, r1, c0, c1: ((r0, r1, c0, c1), {}))
    inner = _two_level(queue, dtype, n, nb)
    inverse = None
    if leaf.inverting:      # from the queue's pool: an allocation costs more than a leaf
        inverse = scratch.buffer(queue, leaf.order * leaf.order * np.dtype(dtype).itemsize)
    width = n if width is None else width
    for j in range(0, n, nb):
        jb = min(nb, n - j)
        rest = n - j - jb                  # order of the trailing triangle
        beyond = width - j - jb            # length of the panel
        diag = a.at(j, j)
        if inner:                          # the block column's trapezoid in fused leaves
            factor_blocked(queue, diag, jb, lower=lower, dtype=dtype, info=info,
                           base=base + j, block=inner, width=jb + beyond,
                           region=lambda r0, r1, c0, c1, j=j: region(r0 + j, r1 + j,
                                                                     c0 + j, c1 + j))
            panel = diag.at(jb, 0) if lower else diag.at(0, jb)
        else:
            panel = _factor_block_column(queue, diag, j, jb, beyond, leaf, inverse, region,
                                         lower=lower, dtype=dtype, info=info, base=base)
        if on_final is not None:
            on_final(j, j + jb)
        if rest == 0:
            break
        reg, extra = region(*((j + jb, width, j + jb, n) if lower
                              else (j + jb, n, j + jb, width)))
        flops = float(rest * (rest + 1) * jb + 2 * rest * (beyond - rest) * jb)
        if leaf.fused:
            nxt = min(jb, rest)
            leaf_reg, _ = region(j + jb, j + jb + nxt, j + jb, j + jb + nxt)
            with trace.step("syrk", reg, pivot=(leaf_reg[0], leaf_reg[2]),
                            flops=flops + cholesky_flops(nxt), leaf=leaf_reg, **extra):
                _update_and_factor_next(queue, diag, jb, rest, beyond, panel, leaf, inverse,
                                        lower=lower, dtype=dtype, info=info,
                                        base=base + j + jb)
        else:
            with trace.step("syrk", reg, flops=flops, **extra):
                _update_trailing(queue, diag, jb, rest, panel, lower=lower, dtype=dtype,
                                 beyond=beyond)


def solve_factored(queue, c: View, n: int, b: View, nrhs: int, *, lower: bool,
                   dtype) -> None:
    """B := A⁻¹·B for A = L·Lᵀ (``lower``) or Uᵀ·U, factor at ``c``; B is n x nrhs."""
    # lower: L·y = b, Lᵀ·x = y.  upper: Uᵀ·y = b, U·x = y.
    trsm(queue, n, nrhs, c, b, dtype=dtype, left=True, lower=lower, trans=not lower)
    trsm(queue, n, nrhs, c, b, dtype=dtype, left=True, lower=lower, trans=lower)


def zero_other_triangle(queue, a, n: int | None = None, *, lower: bool, dtype=None) -> None:
    """Zero the strict upper (``lower``) or strict lower triangle of the n x n block ``a``.

    ``a`` is a C-contiguous n x n device array (``n`` and ``dtype`` taken from it) or a
    :class:`oclla.blas.View` with its order ``n`` and ``dtype``.  One program for both
    triangles (util.cl's, the triangle an argument).
    """
    if isinstance(a, View):
        buf, off, ld = a.buf, a.off, a.ld
    else:
        n, dtype = a.shape[0], a.dtype
        buf, off, ld = a.data, a.offset // a.dtype.itemsize, n
    loc = params(queue, "local2d", dtype)
    with index_width(buf.size // np.dtype(dtype).itemsize):
        kernel = get_kernel(queue, "util.cl", "zero_other_triangle", dtype)
    enqueue(queue, kernel, (round_up(n, loc["X"]), round_up(n, loc["Y"])),
            (loc["X"], loc["Y"]), buf, np.int64(off), int_arg(ld), int_arg(n),
            int_arg(lower))


def factor_device(queue, a: cl_array.Array, *, lower: bool, method: str,
                  block: int | None = None, clean: bool = False,
                  check_finite: bool = False) -> None:
    """Factor the C-contiguous n x n device array ``a`` in place; raise if not PD.

    ``clean`` zeroes the other triangle afterwards (``cholesky``'s result; also where
    the matrix is not positive definite, ``a`` then holding a partial factor).
    ``check_finite`` counts the NaN/Inf entries of ``a`` on the device beside the
    factorization and raises ValueError for them (before any other error): the
    count is read with ``info``, so the device never waits for the host in
    between (``a`` must then be a copy the caller does not see).
    """
    n = a.shape[0]
    dtype = a.dtype
    info = status_flags(queue, a, check_finite)
    # the block width only where blocks are used: the per-pivot method needs none of
    # the blocked Cholesky's parameters (nor their self-check on an untuned device)
    extra = dict(block=block or block_size(queue, dtype, n)) if method == "blocked" else {}
    with trace.run("cholesky", method, queue, (n, n), dtype, a.get, lower=lower, **extra):
        with launch_queue(queue) as loop_queue:
            if method == "pivot":
                factor_pivot(loop_queue, a.base_data, a.offset // dtype.itemsize, n, n,
                             lower=lower, dtype=dtype, info=info)
            else:
                factor_blocked(loop_queue, view_of(a), n, lower=lower, dtype=dtype, info=info,
                               block=extra["block"])
        if clean:       # before the status is read: its wait then covers this kernel too
            with trace.step("zero", (0, n, 0, n)):
                zero_other_triangle(queue, a, lower=lower)
        code = read_status(info)
        if code:
            raise not_positive_definite(code)


# ---- public API ---------------------------------------------------------------------------

def _factor(a, *, lower, method, overwrite_a, check_finite, queue, clean, block=None):
    check_method(method)
    queue = resolve_queue(queue)
    from . import tiled
    if isinstance(a, tiled.TiledMatrix) or tiled.route(a, queue):
        return tiled.factor_beyond(a, lower=bool(lower), overwrite_a=overwrite_a,
                                   check_finite=check_finite, clean=clean, block=block,
                                   queue=queue)
    factor, _ = factor_in_place(
        a, queue, lambda work, deferred: factor_device(
            queue, work, lower=bool(lower), method=method, block=block, clean=clean,
            check_finite=deferred),
        overwrite_a=overwrite_a, check_finite=check_finite)
    return factor


@driver_errors
def cholesky(a, *, lower: bool = False, method: str = "blocked", overwrite_a: bool = False,
             check_finite: bool = True, block: int | None = None, queue=None):
    """Cholesky factor of a symmetric positive definite matrix, on the OpenCL device.

    Parameters
    ----------
    a : (n, n) array_like of float32/float64, or a pyopencl array (any view:
        offset, strides, transpose).  Only the upper triangle
        (``lower=False``) or the lower triangle is read.
    lower : return L with A = L·Lᵀ instead of U with A = Uᵀ·U (scipy's default)
    method : "blocked" (default) or "pivot"
        "blocked": right-looking blocked potrf (diagonal blocks factored in
        registers, TRSM for the panel, SYRK on the trailing triangle);
        "pivot": Jung & O'Leary's per-pivot kernels (square root, normalization,
        outer product over exactly the trailing triangle), one trace step each
    overwrite_a : allow the result to be written into ``a`` (a permission, as in
        scipy): a C-contiguous device ``a`` is factored in place (left partly
        factored if the matrix is not positive definite); a device view in its
        gathered copy, the factor then scattered into the view's own entries
        (nothing else of its buffer; not at all if the matrix is not positive
        definite) and the view returned
    check_finite : reject NaN/Inf anywhere in ``a`` (ValueError)
    block : block width of the blocked method (default: from the device)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    c : (n, n) array, the factor with the other triangle zero; a device
        array when ``a`` is one.

    Raises
    ------
    numpy.linalg.LinAlgError
        "leading minor of order k is not positive definite" (LAPACK's info k).
    ValueError
        ``a`` not square, NaN/Inf with ``check_finite``, an unknown ``method``
    TypeError
        a dtype other than float32/float64 (integers are refused)
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, an allocation the device
        cannot make, or kernels that fail to build with every parameter set
    MemoryError
        A host ``a`` beyond the device's memory (factored through tiles or streamed)
        whose factor, a new host array, would not fit the host's available memory;
        ``overwrite_a`` factors a writable C-contiguous ``a`` (an "r+" memory map too)
        in place.
    """
    return _factor(a, lower=lower, method=method, overwrite_a=overwrite_a,
                   check_finite=check_finite, queue=queue, clean=True, block=block)


@driver_errors
def cho_factor(a, *, lower: bool = False, method: str = "blocked", overwrite_a: bool = False,
               check_finite: bool = True, block: int | None = None, queue=None):
    """``(c, lower)`` for :func:`cho_solve`, as :func:`scipy.linalg.cho_factor`.

    ``c`` holds the factor in the triangle named by ``lower``; its other
    triangle is exactly the input's (never read; written back unchanged
    when ``overwrite_a`` scatters into a device view).

    Parameters
    ----------
    a, lower, method, overwrite_a, check_finite, block
        As for :func:`cholesky` (``lower=False``: A = Uᵀ·U, scipy's default).
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    c : (n, n) array
        The factor in the triangle named by ``lower``; a device array when
        ``a`` is one.
    lower : bool
        The ``lower`` given, for :func:`cho_solve`.

    Raises
    ------
    numpy.linalg.LinAlgError, ValueError, TypeError, oclla.DeviceError, MemoryError
        As :func:`cholesky` raises them.
    """
    c = _factor(a, lower=lower, method=method, overwrite_a=overwrite_a,
                check_finite=check_finite, queue=queue, clean=False, block=block)
    return c, bool(lower)


@driver_errors
def cho_solve(c_and_lower, b, *, overwrite_b: bool = False, check_finite: bool = True,
              queue=None):
    """Solve A·x = b from ``cho_factor``'s ``(c, lower)``, as :func:`scipy.linalg.cho_solve`.

    ``c`` and ``b`` may be host arrays or device arrays (any view); ``b`` is
    (n,) or (n, k) and the result has b's shape and the factor's dtype (a
    device array for a device b).  Both triangular solves run on the device
    (:func:`oclla.blas.trsm`) and read only the factor's triangle.

    The same decisions as :func:`oclla.lu_solve`:

    * dtype of b: the factor's dtype is the working precision.  A host b is
      converted to it when numpy's "safe" rule says that is exact (bool,
      integers that fit, float32 for a float64 factor); otherwise -- a
      float64 b with a float32 factor, where scipy would return float64 and
      a float32 solve would silently round b -- a TypeError names
      ``b.astype(...)``.  A device b must have the factor's dtype.
    * ``overwrite_b`` is a permission, as in scipy: a numpy b is never
      written; a C-contiguous device b is solved in place; a device view in
      its gathered copy, X then scattered into the view's own entries and the
      view returned.

    Parameters
    ----------
    c_and_lower : tuple (c, lower)
        The output of :func:`cho_factor` (or ``(cholesky(a, lower=lower),
        lower)``); only the factor's triangle of ``c`` is read.
    b : (n,) or (n, k) array_like, or pyopencl.array.Array
        The right-hand side(s).
    overwrite_b : bool, default False
        Allow x to be written into ``b`` (a permission, see above).
    check_finite : bool, default True
        Reject NaN/Inf in ``c`` and ``b`` (ValueError).
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    x : array of b's shape and the factor's dtype
        A device array for a device ``b``.

    Raises
    ------
    ValueError
        Shapes that do not match, NaN/Inf with ``check_finite``, a
        ``c_and_lower`` that is not a ``(c, lower)`` pair.
    TypeError
        A ``b`` whose dtype does not convert exactly to the factor's.
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, an allocation the device
        cannot make, or kernels that fail to build with every parameter set
    MemoryError
        A host factor beyond the device's memory, not C-contiguous, whose C-contiguous
        copy would not fit the host's available memory.
    """
    c, lower = unpack_pair(c_and_lower, "c_and_lower", "cho_factor")
    queue = resolve_queue(queue)
    from . import tiled
    if isinstance(c, tiled.TiledMatrix) or tiled.exceeds_buffer(c, queue):
        return tiled.solve_host_factor(c, bool(lower), b, overwrite_b=overwrite_b,
                                       check_finite=check_finite, queue=queue)
    defer_c = checked_beside(c, check_finite, b, overwrite_b)
    c_ = as_matrix(c, queue, name="c", check_finite=check_finite and not defer_c)
    n, dtype = c_.shape[0], c_.dtype
    host_b = not is_device_array(b)

    def solve(x2):
        nrhs = x2.shape[1]
        with trace.run("cho_solve", "lower" if lower else "upper", queue, (n, nrhs), dtype):
            with trace.step("solve", (0, n, 0, n), flops=2.0 * n * n * nrhs):
                solve_factored(queue, view_of(read_only(queue, c_, results_to_host=host_b)), n,
                               view_of(x2), nrhs, lower=bool(lower), dtype=dtype)

    return solve_in_place(queue, b, n, dtype, solve, overwrite_b=overwrite_b,
                          check_finite=check_finite, unchecked=(c_,) if defer_c else ())
