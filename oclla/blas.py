"""The device BLAS-3 layer shared by the blocked factorizations.

All routines work on row-major device buffers addressed by a :class:`View`
(buffer, element offset, leading dimension) and only enqueue kernels: they
never wait for the device.  Dimensions follow BLAS:

* :func:`gemm`   C = alpha·op(A)·op(B) + beta·C            (M x N, inner K)
* :func:`syrk`   C = alpha·A·Aᵀ + beta·C, one triangle only  (N x N, inner K; or
  that triangle and the rectangle beside it, N x WIDTH)
* :func:`trsm`   op(T)·X = B or X·op(T) = B, X overwrites B
* :func:`laswp`  row interchanges from a device pivot vector

:func:`matmul` is a convenience wrapper for host or device arrays.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from ._device import device_info, resolve_queue
from ._knobs import FEW_ROUTES, LOCAL_RESERVE, complete_gemm, rows_width
from ._params import check, params, remembered, thin_gemm
from ._programs import (enqueue, get_kernel, index_width, int_arg, launch, real_arg, round_up,
                        set_args, wide_index, wide_indices)
from ._scratch import buffer as scratch_buffer, zeroed_ints
from ._validate import as_matrix, gather_entries, read_only


class View(NamedTuple):
    """A row-major matrix inside a device buffer: element (r, c) is buf[off + r*ld + c]."""

    buf: cl.Buffer
    off: int
    ld: int

    def at(self, r: int, c: int) -> "View":
        """The view whose (0, 0) is this view's (r, c)."""
        return View(self.buf, self.off + r * self.ld + c, self.ld)


def indices_for(dtype, *views: View):
    """The block within which kernels on ``views`` are looked up: their element indices
    in 32 bits where every view's buffer holds fewer than 2³¹ elements, else in 64
    (:func:`oclla._programs.index_width`).  Every routine here decides by its own
    operands, so the factorizations and solves share one program per kernel, and a
    64-bit twin is built only for a buffer that needs it."""
    return index_width(_elements(dtype, views))


def _elements(dtype, views) -> int:
    """Elements of the largest buffer among ``views``."""
    return max(v.buf.size for v in views) // np.dtype(dtype).itemsize


def _kernel_for(queue, key: tuple, dtype, views: tuple, make):
    """``make()`` (a kernel, or a tuple holding one) for operands ``views``, looked up in
    their :func:`indices_for` block and remembered by the host thread under ``key`` and
    the index width (:func:`oclla._params.remembered`)."""
    elements = _elements(dtype, views)

    def made():
        with index_width(elements):
            return make()
    return remembered(queue, (dtype, wide_index(elements)) + key, made)


def view_of(array: cl_array.Array) -> View:
    """View of a C-contiguous 2-D device array."""
    return View(array.base_data, array.offset // array.dtype.itemsize, array.shape[1])


def _vector_width(widest: int, contiguous_extent: int, per_item: int) -> int:
    """Widest global load (4, 2 or 1 elements) the tiled kernel may use for an operand:
    at most ``widest`` and a divisor of the slab's contiguous extent and of each item's
    share.  Whether an operand's offset and leading dimension allow it is tested by the
    kernel itself (gemm_tile.h), so the program does not depend on them."""
    for w in (4, 2, 1):
        if w <= widest and contiguous_extent % w == 0 and per_item % w == 0:
            return w
    return 1


def _load_widths(p: dict) -> tuple[int, int]:
    """The widths (VEC_A, VEC_B) of the tiled kernel's global loads of A and B with the
    tiled gemm parameters ``p`` (:func:`_vector_width` of each operand's slab)."""
    tm, tn, tk, wm, wn = p["TILE_M"], p["TILE_N"], p["TILE_K"], p["WPT_M"], p["WPT_N"]
    threads = (tm // wm) * (tn // wn)
    return (_vector_width(p["VEC"], math.gcd(tm, tk), tm * tk // threads),
            _vector_width(p["VEC"], math.gcd(tk, tn), tn * tk // threads))


def tile_launch(p: dict, m: int, n: int, transposes: tuple | None = None
                ) -> tuple[dict, tuple, tuple]:
    """``(defines, global size, local size)`` of a launch of gemm_tile (gemm_tile.h) over
    an m x n C with the tiled gemm parameters ``p``.  The defines depend on ``p`` alone:
    never on the sizes, on where the operands lie or on the triangle of C written
    (arguments of the kernels), nor on the transposes, except that with ``p``'s
    PER_SHAPE gemm.cl's launches (``transposes``: (trans_a, trans_b)) build them in
    (TRANS_A, TRANS_B); so the global loads' widths divide the slab's extent along both
    dimensions, which either transpose makes contiguous."""
    tm, tn, tk, wm, wn = p["TILE_M"], p["TILE_N"], p["TILE_K"], p["WPT_M"], p["WPT_N"]
    vec_a, vec_b = _load_widths(p)
    p = complete_gemm(p)
    defines = dict(TILE_M=tm, TILE_N=tn, TILE_K=tk, WPT_M=wm, WPT_N=wn, VEC_A=vec_a,
                   VEC_B=vec_b, VEC_LOCAL=p["VEC_LOCAL"], INTERLEAVE=p["INTERLEAVE"])
    if p["PER_SHAPE"] and transposes is not None:
        defines.update(TRANS_A=int(transposes[0]), TRANS_B=int(transposes[1]))
    return defines, tile_grid(p, m, n), (tn // wn, tm // wm)


def tile_grid(p: dict, m: int, n: int) -> tuple:
    """The global size of a gemm_tile launch over an m x n C (parameters ``p``)."""
    return (round_up(n, p["TILE_N"]) // p["WPT_N"], round_up(m, p["TILE_M"]) // p["WPT_M"])


class _Tiled(NamedTuple):
    """A tiled gemm's parameters, its kernel (for them and the transposes) and work-group."""

    p: dict
    kernel: cl.Kernel
    local: tuple


def _tiled(queue, p: dict, dtype, trans_a: bool, trans_b: bool) -> _Tiled:
    """The :class:`_Tiled` of parameters ``p``: its kernel from :func:`tile_launch`'s
    defines (in the caller's :func:`indices_for` block)."""
    defines, _, local = tile_launch(p, 1, 1, (trans_a, trans_b))
    kernel = get_kernel(queue, "gemm.cl", "gemm_tiled", dtype, DIRECT=0, **defines)
    return _Tiled(p, kernel, local)


def _gemm_tiled(queue, t: _Tiled, m, n, k, alpha, a, b, beta, c, dtype, trans_a, trans_b,
                tri):
    return enqueue(queue, t.kernel, tile_grid(t.p, m, n), t.local, int_arg(m), int_arg(n),
                  int_arg(k), real_arg(alpha, dtype), a.buf, np.int64(a.off), int_arg(a.ld),
                  int_arg(trans_a), b.buf, np.int64(b.off), int_arg(b.ld), int_arg(trans_b),
                  real_arg(beta, dtype), c.buf, np.int64(c.off), int_arg(c.ld),
                  int_arg(tri))


#: Inner dimension from which gemm_direct packs op(B) (pack_b) even when it is not
#: transposed: a deep product streams each K x RN panel once per row block, and rows
#: ldb apart cost a page per k (n = 2048 on PoCL, 2 cores: 2-2.5x); shallow updates
#: (the factorizations' k = NB) gain less than the copy costs.
PACK_MIN_K = 256
#: Bytes of the inner dimension (k reals) from which gemm_direct transposes a transposed A
#: first (pack_a) and multiplies as if it were not: TRANS_A = 1 reads per k a row of A,
#: lda apart from the next k's, a page per k.  PoCL, 2 cores, the lower triangle of AᵀA,
#: n x n by k: float64 n = 3000, k = 384 / 512 50.6 / 66.1 -> 43.9 / 56.1 ms, n = k = 2000
#: 225 -> 107-111 ms; float32 k = 1280 / 2000 (n = 2000) 38.9 / 71.6 -> 34.3 / 53.5 ms,
#: n = k = 3000 524 -> 196 ms; below (float32 k <= 1024, float64 k = 256) level or up to
#: 15 % slower: the transpose costs more than the pages.
PACK_A_MIN_BYTES = 4096
#: ... and from this many strips of C's columns (VW·NV each) on: the transpose's cost
#: grows with m·k, what it saves with m·n·k.  AᵀB at m = k = 2000: float32 n = 64 / 128
#: 4.6 / 23.8 -> 8.8 / 13.4 ms (16 columns a strip), float64 n = 16 / 64 6.1 / 21.8 ->
#: 8.1 / 13.9 ms (8), one column 3.7-7.8 -> 8.4-46 ms.
PACK_A_MIN_STRIPS = 8


def strip_group(queue, width: int):
    """The work-group of a launch over (width, rows, strips) items: one strip row of
    ``width`` items where the device allows that many, whatever the rows and strips (a
    runtime that compiles a kernel per work-group shape, PoCL, then compiles it once),
    else the runtime's choice."""
    return (width, 1, 1) if width <= device_info(queue).max_work_group_size else None


def _gemm_direct(queue, p, m, n, k, alpha, a, b, beta, c, dtype, trans_a, trans_b, tri):
    rm, rn, lx = p["RM"], p["VW"] * p["NV"], p["LX"]
    strips = -(-n // rn)
    item = np.dtype(dtype).itemsize
    pack_a = trans_a and k * item >= PACK_A_MIN_BYTES and strips >= PACK_A_MIN_STRIPS
    defines = dict(DIRECT=1, TRANS_A=int(trans_a and not pack_a), RM=rm, VW=p["VW"],
                   NV=p["NV"])
    strip = 0
    if pack_a:
        # op(A) = Aᵀ as a contiguous m x k matrix, read as an A that is not transposed
        # (by the program of products that are not: no other program for the transpose)
        packed_a = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, m * k * item)
        pack = get_kernel(queue, "gemm.cl", "pack_a", dtype, **defines)
        enqueue(queue, pack, (rm, k, -(-m // rm)), strip_group(queue, rm), int_arg(m),
                int_arg(k), a.buf, np.int64(a.off), int_arg(a.ld), packed_a)
        a = View(packed_a, 0, k)
    if k > 0 and (trans_b or k >= PACK_MIN_K):
        # op(B) in contiguous K x RN panels, one per work-item column of C
        packed = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, k * strips * rn * item)
        pack = get_kernel(queue, "gemm.cl", "pack_b", dtype, **defines)
        enqueue(queue, pack, (rn, k, strips), strip_group(queue, rn), int_arg(n), int_arg(k),
                b.buf, np.int64(b.off), int_arg(b.ld), int_arg(trans_b), packed)
        b, strip = View(packed, 0, rn), k * rn
    kernel = get_kernel(queue, "gemm.cl", "gemm_direct", dtype, **defines)
    gsize = (round_up(-(-m // rm), lx), strips)
    return enqueue(queue, kernel, gsize, (lx, 1), int_arg(m), int_arg(n), int_arg(k),
                   real_arg(alpha, dtype), a.buf, np.int64(a.off), int_arg(a.ld),
                   b.buf, np.int64(b.off), int_arg(b.ld), np.int64(strip),
                   real_arg(beta, dtype), c.buf, np.int64(c.off), int_arg(c.ld), int_arg(tri))


def gemm(queue, m: int, n: int, k: int, alpha: float, a: View, b: View, beta: float,
         c: View, *, dtype, trans_a: bool = False, trans_b: bool = False,
         triangle: str | None = None, tile: dict | None = None,
         thin: bool = True) -> cl.Event | None:
    """C[m x n] = alpha·op(A)·op(B) + beta·C; ``triangle`` "lower"/"upper" writes only that part.

    op(A) is m x k (A itself k x m when ``trans_a``), op(B) is k x n.  With
    ``beta == 0`` C is not read.  The device's ``gemm`` parameters, or (with
    ``thin``) its ``gemm_thin`` ones where 0 < k <= their MAX_K; ``tile``
    overrides both (a dict as :func:`oclla._params.params` returns: the tuner and
    the tests use it).
    """
    if m <= 0 or n <= 0:
        return None
    if tile is not None:
        return _gemm_with(queue, _gemm_set(queue, k, dtype, tile, thin), m, n, k, alpha, a,
                          b, beta, c, dtype, trans_a, trans_b, triangle)
    p, tiled = _kernel_for(queue, ("gemm", thin and _takes_thin(queue, k, dtype), trans_a,
                                   trans_b), dtype, (a, b, c),
                           lambda: _gemm_plan(queue, _gemm_set(queue, k, dtype, None, thin),
                                              dtype, trans_a, trans_b))
    if tiled is None:
        return _gemm_with(queue, p, m, n, k, alpha, a, b, beta, c, dtype, trans_a, trans_b,
                          triangle)
    return _gemm_tiled(queue, tiled, m, n, max(k, 0), alpha if k > 0 else 0.0, a, b, beta,
                       c, dtype, trans_a, trans_b, _TRIANGLES[triangle])


_TRIANGLES = {None: 0, "lower": 1, "upper": 2}     # gemm's triangle as the kernels' tri


def _gemm_plan(queue, p: dict, dtype, trans_a: bool, trans_b: bool) -> tuple:
    """(``p``, its :class:`_Tiled`, or None for the direct kernel)."""
    return p, (None if p["KERNEL"] == "direct" else _tiled(queue, p, dtype, trans_a, trans_b))


def _gemm_set(queue, k: int, dtype, tile: dict | None, thin: bool = True) -> dict:
    """The gemm parameters a product of inner dimension k takes: ``tile`` (checked
    against the device: ValueError), else :func:`gemm_shape`'s (``thin``) or the
    device's ``gemm`` set."""
    if tile is None:
        return complete_gemm(gemm_shape(queue, k, dtype) if thin
                             else params(queue, "gemm", dtype))
    tile = complete_gemm(tile)
    problem = check("gemm", tile, device_info(queue), np.dtype(dtype).itemsize)
    if problem is not None:
        raise ValueError(f"gemm parameters {tile}: {problem}")
    return tile


def _gemm_with(queue, p: dict, m, n, k, alpha, a, b, beta, c, dtype, trans_a, trans_b,
               triangle):
    """:func:`gemm` (m, n > 0) with the parameters ``p`` of :func:`_gemm_set`."""
    k = max(k, 0)
    with indices_for(dtype, a, b, c):
        shape = p if p["KERNEL"] == "direct" else _tiled(queue, p, dtype, trans_a, trans_b)
        run = _gemm_direct if p["KERNEL"] == "direct" else _gemm_tiled
        return run(queue, shape, m, n, k, alpha if k > 0 else 0.0, a, b, beta, c, dtype,
                   trans_a, trans_b, _TRIANGLES[triangle])


def gemm_shape(queue, k: int, dtype) -> dict:
    """The gemm parameters for inner dimension k: ``gemm_thin`` up to its MAX_K."""
    if _takes_thin(queue, k, dtype):
        return thin_gemm(params(queue, "gemm_thin", dtype))
    return params(queue, "gemm", dtype)


def _takes_thin(queue, k: int, dtype) -> bool:
    """Whether a product of inner dimension k takes the ``gemm_thin`` set (0 < k <= its
    MAX_K, remembered by the host thread as the kernels are: gemm asks on every call)."""
    most = remembered(queue, (dtype, "gemm_thin MAX_K"),
                      lambda: params(queue, "gemm_thin", dtype)["MAX_K"])
    return 0 < k <= most


def syrk(queue, n: int, k: int, alpha: float, a: View, beta: float, c: View, *, dtype,
         lower: bool = True, trans: bool = False, tile: dict | None = None,
         width: int | None = None):
    """C = alpha·A·Aᵀ + beta·C (A is n x k) or alpha·AᵀA + beta·C (``trans``, A is k x n).

    Only the ``lower`` (or upper) triangle of C is computed and written.  With ``width``
    > n, C is a trapezoid: its stored triangle of order n and the rectangle beside it,
    width - n more rows below it (``lower``) or columns right of it, A then width rows
    (columns with ``trans``) long: C (width x n) = alpha·A·A[:n]ᵀ + beta·C, or C
    (n x width) = alpha·A[:, :n]ᵀ·A + beta·C (the blocked Cholesky's trailing update
    where its panel reaches past the trailing triangle).  Where the gemm set that takes
    the product (:func:`gemm_shape`, or ``tile``) has a TN_COPY_K, AᵀA is taken as
    A'·A of a scratch copy A' = Aᵀ (width x k), A itself copied too where its leading
    dimension would deny the product its vector loads (an RFP array's, always odd).
    That is the product shape (AB) of the blocked LU's updates and of AD²Aᵀ, so that a
    process running those and this builds one GEMM program where each shape has its
    own (PER_SHAPE).  Deeper than TN_COPY_K, it is the sum of such products over slabs
    of equal depth, at most TN_COPY_K rows of A each, copied in turn and multiplied by
    the same gemm set (C read and written once a slab: H200, float64 n = k = 8192 31.1
    -> 29.0 ms; the packed Cholesky of order 16384, whose T2 update this is, 110.3 ->
    104.9 ms).  ValueError for a ``width`` below n.
    """
    width = n if width is None else width
    if width < n:
        raise ValueError(f"syrk's width must be at least n = {n}, got {width}")
    if n <= 0:
        return None
    rows, cols = (width, n) if lower else (n, width)
    p = _gemm_set(queue, k, dtype, tile)
    triangle = "lower" if lower else "upper"
    most = p["TN_COPY_K"] if trans and p["KERNEL"] == "tiled" else 0
    if 0 < most and k > 0:
        depth = -(-k // -(-k // most))          # ceil(k / slabs), slabs = ceil(k / most)
        dense = a.ld % _load_widths(p)[1] != 0      # A's rows not aligned for B's loads
        event = None
        for k0 in range(0, k, depth):
            kb = min(depth, k - k0)
            slab = a.at(k0, 0)
            copy = _transposed_copy(queue, slab, kb, width, dtype)
            if dense:
                slab = _dense_copy(queue, slab, kb, width, dtype)
            event = _gemm_with(queue, p, rows, cols, kb, alpha, copy, slab,
                               beta if k0 == 0 else 1.0, c, dtype, False, False, triangle)
        return event
    return _gemm_with(queue, p, rows, cols, k, alpha, a, a, beta, c, dtype, trans, not trans,
                      triangle)


def _dense_copy(queue, a: View, rows: int, cols: int, dtype) -> View:
    """A dense copy (leading dimension cols) of the rows x cols matrix at ``a``, in a
    scratch buffer of ``queue``'s: the operand of a product whose own leading dimension
    is not a multiple of the global loads' width (an RFP array's odd one), which would
    take the kernel's scalar loads; one kernel, no wait."""
    out = scratch_buffer(queue, rows * cols * np.dtype(dtype).itemsize)
    gather_entries(queue, a.buf, a.off, a.ld, 1, cols, rows * cols, out, dtype)
    return View(out, 0, cols)


def _transposed_copy(queue, a: View, rows: int, cols: int, dtype) -> View:
    """A dense cols x rows copy of the transpose of the rows x cols matrix at ``a``, in a
    scratch buffer of ``queue``'s (entry (i, j) gathered from a's (j, i)); one kernel, no
    wait."""
    out = scratch_buffer(queue, rows * cols * np.dtype(dtype).itemsize)
    gather_entries(queue, a.buf, a.off, 1, a.ld, rows, rows * cols, out, dtype)
    return View(out, 0, rows)


def trsm_kernel(queue, name: str, dtype, nb: int | None = None):
    """A kernel of trsm.cl, for every side, triangle, transpose and diagonal (the
    kernels' arguments): trsm_block from a program of its own per block order ``nb``
    (default: the device's TRSM_NB) and the device's REGISTER; the others from one
    program per ``nb`` and the device's FEW_RHS (its :func:`rows_width`, the few-column
    kernels' work-group width), FEW_ROUTE (the program holds that route's kernel
    alone: trsm_rows, trsm_chain or trsm_columns) and DOUBLING (trtri_blocks' way)."""
    return remembered(queue, ("trsm", name, dtype, nb, wide_indices()),
                      lambda: _trsm_kernel(queue, name, dtype, nb))


def _trsm_kernel(queue, name: str, dtype, nb: int | None):
    p = params(queue, "trsm", dtype)
    nb = nb or p["TRSM_NB"]
    if name == "trsm_block":
        return get_kernel(queue, "trsm.cl", name, dtype, TRSM_NB=nb, TRSM_REG=p["REGISTER"],
                          BLOCK_SOLVE=1)
    return get_kernel(queue, "trsm.cl", name, dtype, TRSM_NB=nb,
                      ROWS_WIDTH=rows_width(p, device_info(queue)),
                      FEW=FEW_ROUTES.index(p["FEW_ROUTE"]), DOUBLING=p["DOUBLING"])


def _trsm_block(queue, kb, nrhs, t: View, b: View, *, dtype, left, lower, trans, unit, nb):
    kernel = trsm_kernel(queue, "trsm_block", dtype, nb)
    wg = 64 if nrhs >= 64 else 16
    wg = min(wg, params(queue, "wg1d", dtype)["WG"])
    enqueue(queue, kernel, (round_up(nrhs, wg),), (wg,), int_arg(kb), int_arg(nrhs),
            t.buf, np.int64(t.off), int_arg(t.ld), b.buf, np.int64(b.off), int_arg(b.ld),
            int_arg(left), int_arg(lower), int_arg(trans), int_arg(unit))


def copy_block(queue, rows, cols, src: View, dst: View, dtype):
    """dst (rows x cols) = src (rows x cols) on the device, views with their own leading
    dimensions."""
    kernel, local = _kernel_for(queue, ("copy_block",), dtype, (src, dst),
                                lambda: (trsm_kernel(queue, "copy_block", dtype),
                                         _local2d(queue, dtype)))
    return enqueue(queue, kernel, (round_up(cols, local[0]), round_up(rows, local[1])), local,
                  int_arg(rows), int_arg(cols), src.buf, np.int64(src.off), int_arg(src.ld),
                  dst.buf, np.int64(dst.off), int_arg(dst.ld))


def _local2d(queue, dtype) -> tuple:
    """The device's 2-D work-group (local2d: X x Y)."""
    side = params(queue, "local2d", dtype)
    return side["X"], side["Y"]


def invert_blocks(queue, m: int, nb: int, t: View, inv, *, dtype, lower: bool,
                  unit: bool) -> None:
    """The inverse of each nb x nb diagonal block of the m x m triangle at ``t`` (lower
    or upper, unit diagonal or not; the last block may be smaller) into ``inv``, a
    buffer of at least m·nb reals: block i in its rows i·nb.., leading dimension nb,
    zeros outside the block's triangle (``trtri_blocks``, one work-group per block).
    ``t`` is only read."""
    enqueue(queue, trsm_kernel(queue, "trtri_blocks", dtype, nb), (-(-m // nb) * nb,), (nb,),
            int_arg(m), int_arg(nb), t.buf, np.int64(t.off), int_arg(t.ld), inv, int_arg(nb),
            int_arg(lower), int_arg(unit))


def _trsm_inverse(queue, m, nrhs, t, b, nb, *, dtype, left, lower, trans, unit, forward,
                  inverses=None):
    """Invert the diagonal blocks (one launch; none where ``inverses`` holds them), then
    per block: B_k = op(inv)·B_k by GEMM into a workspace and back, and the GEMM update
    of the rest of B.  The inverses and the workspace are the queue's scratch
    (:mod:`oclla._scratch`: on NVIDIA a buffer's allocation and release cost tens of
    microseconds each)."""
    itemsize = np.dtype(dtype).itemsize
    tmp = scratch_buffer(queue, nb * nrhs * itemsize)
    inv = inverses
    if inv is None:
        inv = scratch_buffer(queue, -(-m // nb) * nb * nb * itemsize)
        invert_blocks(queue, m, nb, t, inv, dtype=dtype, lower=lower, unit=unit)
    starts = list(range(0, m, nb))
    if not forward:
        starts.reverse()
    for k0 in starts:
        kb = min(nb, m - k0)
        w = View(inv, k0 * nb, nb)
        if left:
            work = View(tmp, 0, nrhs)
            gemm(queue, kb, nrhs, kb, 1.0, w, b.at(k0, 0), 0.0, work, dtype=dtype,
                 trans_a=trans, thin=False)
            copy_block(queue, kb, nrhs, work, b.at(k0, 0), dtype)
        else:
            work = View(tmp, 0, kb)
            gemm(queue, nrhs, kb, kb, 1.0, b.at(0, k0), w, 0.0, work, dtype=dtype,
                 trans_b=trans, thin=False)
            copy_block(queue, nrhs, kb, work, b.at(0, k0), dtype)
        _trsm_update(queue, m, nrhs, t, b, k0, kb, dtype=dtype, left=left, trans=trans,
                     forward=forward)


def _trsm_rows(queue, m, nrhs, t, b, *, dtype, lower, trans, unit, inverse, chain,
               inverses=None):
    """op(T)·X = B, B m x nrhs (nrhs <= FEW_RHS), by trsm_rows: with ``inverse`` the
    diagonal blocks of TRSM_NB inverted by one launch first (unless ``inverses`` holds
    them); then one launch per block in the order of the solve, which solves it (by its
    inverse, or by substitution) and updates every block still to solve by it, in chunks
    of :func:`rows_width` columns (a work-group each).  With ``chain`` instead one launch
    of trsm_chain, whose work-groups each solve a block once the blocks before it are
    stored."""
    p = params(queue, "trsm", dtype)
    nb = p["TRSM_NB"]
    blocks = -(-m // nb)
    inv = t.buf                                    # unread where the blocks are substituted
    if inverses is not None:
        inv = inverses
    elif inverse:
        inv = scratch_buffer(queue, blocks * nb * nb * np.dtype(dtype).itemsize)
        invert_blocks(queue, m, nb, t, inv, dtype=dtype, lower=lower, unit=unit)
    args = (int_arg(m), int_arg(nrhs), t.buf, np.int64(t.off), int_arg(t.ld), inv, b.buf,
            np.int64(b.off), int_arg(b.ld), int_arg(trans), int_arg(lower != trans),
            int_arg(unit), int_arg(not inverse))
    cw = rows_width(p, device_info(queue))        # a chunk's items past B stage T too
    columns = round_up(nrhs, cw)
    if chain:
        state = zeroed_ints(queue, 1 + blocks * (columns // cw))
        enqueue(queue, trsm_kernel(queue, "trsm_chain", dtype), (blocks * nb, columns),
                (nb, cw), *args, state.data)
        return
    kernel = trsm_kernel(queue, "trsm_rows", dtype)
    set_args(kernel, *args)
    for step in range(blocks):                     # the step is the launch's offset
        launch(queue, kernel, ((blocks - step) * nb, columns), (nb, cw), offset=(0, step))


def _trsm_columns(queue, m, nrhs, t, b, *, dtype, lower, trans, unit):
    """op(T)·X = B, B m x nrhs, by trsm_columns: one launch, a work-item per column, each
    solved in a contiguous copy (the queue's scratch, m·nrhs entries) unless B is one
    contiguous column."""
    work = b.buf if b.ld == 1 else scratch_buffer(queue, m * nrhs * np.dtype(dtype).itemsize)
    enqueue(queue, trsm_kernel(queue, "trsm_columns", dtype), (nrhs,), (1,), int_arg(m),
            int_arg(nrhs), t.buf, np.int64(t.off), int_arg(t.ld), b.buf, np.int64(b.off),
            int_arg(b.ld), work, int_arg(trans), int_arg(lower != trans), int_arg(unit))


def _trsm_update(queue, m, nrhs, t, b, k0, kb, *, dtype, left, trans, forward):
    """Subtract the solved block k0..k0+kb of X from the part of B still to solve."""
    rest = range(k0 + kb, m) if forward else range(0, k0)
    if not len(rest):
        return

    def tsub(i0, j0):
        """op(T)[i0:, j0:] as a gemm operand (view, transposed?)."""
        return (t.at(j0, i0), True) if trans else (t.at(i0, j0), False)

    if left:
        r0 = rest.start
        opt, tr = tsub(r0, k0)
        gemm(queue, len(rest), nrhs, kb, -1.0, opt, b.at(k0, 0), 1.0, b.at(r0, 0),
             dtype=dtype, trans_a=tr, thin=False)
    else:
        c0 = rest.start
        opt, tr = tsub(k0, c0)
        gemm(queue, nrhs, len(rest), kb, -1.0, b.at(0, k0), opt, 1.0, b.at(0, c0),
             dtype=dtype, trans_b=tr, thin=False)


RECURSE_BLOCKS = 4      # trsm: triangles of more diagonal blocks than this are halved


def trsm(queue, m: int, nrhs: int, t: View, b: View, *, dtype, left: bool = True,
         lower: bool = True, trans: bool = False, unit: bool = False,
         block: int | None = None, inverse: bool | None = None, inverses=None) -> None:
    """Solve op(T)·X = B (``left``, B is m x nrhs) or X·op(T) = B (B is nrhs x m).

    T is m x m triangular (``lower`` or upper, ``unit`` diagonal or not);
    op(T) = Tᵀ when ``trans``.  X overwrites B.  A triangle larger than
    RECURSE_BLOCKS blocks is split in halves (recursively; the update between
    them is one large GEMM).  Below, T is taken in diagonal
    blocks of ``block`` (default and maximum: the device's TRSM_NB); with
    ``inverse`` (default: the device's INVERSE parameter), the blocks are
    inverted by one kernel and applied by GEMM, else each is solved by a
    substitution kernel; the rest of B is updated by GEMM between blocks.  Every GEMM
    takes the device's ``gemm`` shape, the last block's too where it is at most
    ``gemm_thin``'s MAX_K wide: the programs a solve builds do not depend on m modulo
    the block.  A left-side solve of more than one block with at most the device's
    FEW_RHS right-hand sides (``block`` left to the device) takes its FEW_ROUTE
    instead: ``trsm_rows``, one launch per block, its diagonal blocks inverted or
    substituted as ``inverse`` says (``trsm_chain``: all blocks in one launch), or
    ``trsm_columns``, one launch, substitution.

    ``inverses``: a buffer holding the inverses of T's diagonal blocks of TRSM_NB as
    :func:`invert_blocks` leaves them (made by the caller, on any queue that this one
    waits for), so that solves of several B by one triangle invert its blocks once;
    the solve then takes a route by the inverses (the GEMMs in place of
    ``trsm_columns``), and T may have at most RECURSE_BLOCKS blocks (ValueError).
    """
    if m <= 0 or nrhs <= 0:
        return
    with indices_for(dtype, t, b):
        p = params(queue, "trsm", dtype)
        if inverses is not None:
            if block is not None or m > RECURSE_BLOCKS * p["TRSM_NB"]:
                raise ValueError(f"trsm: inverses of the diagonal blocks are for a triangle "
                                 f"of at most {RECURSE_BLOCKS} blocks of TRSM_NB = "
                                 f"{p['TRSM_NB']} (m = {m}, block = {block})")
            inverse = True
        few = left and block is None and nrhs <= p["FEW_RHS"] and m > p["TRSM_NB"]
        if few and p["FEW_ROUTE"] == "columns":
            if inverses is None:
                _trsm_columns(queue, m, nrhs, t, b, dtype=dtype, lower=lower, trans=trans,
                              unit=unit)
                return
            few = False                  # substitution only: the inverses' GEMMs instead
        if few:
            _trsm_rows(queue, m, nrhs, t, b, dtype=dtype, lower=lower, trans=trans,
                       unit=unit, inverse=p["INVERSE"] if inverse is None else inverse,
                       chain=p["FEW_ROUTE"] == "chain", inverses=inverses)
            return
        _trsm(queue, m, nrhs, t, b, dtype=dtype, left=left, lower=lower, trans=trans,
              unit=unit, block=block, inverse=inverse, inverses=inverses)


def _trsm(queue, m, nrhs, t, b, *, dtype, left, lower, trans, unit, block, inverse,
          inverses=None):
    p = params(queue, "trsm", dtype)
    nb = min(block or p["TRSM_NB"], p["TRSM_NB"])
    forward = (lower != trans) if left else (lower == trans)
    if m > RECURSE_BLOCKS * nb:
        # two halves, the first solved recursively, then one GEMM with k = m/2
        # (instead of m/nb GEMMs with k = nb), then the second half
        half = -(-(m // 2) // nb) * nb
        parts = ((0, half), (half, m - half)) if forward else ((m - half, half), (0, m - half))
        for k0, kb in parts:
            trsm(queue, kb, nrhs, t.at(k0, k0), b.at(k0, 0) if left else b.at(0, k0),
                 dtype=dtype, left=left, lower=lower, trans=trans, unit=unit, block=block,
                 inverse=inverse)
            _trsm_update(queue, m, nrhs, t, b, k0, kb, dtype=dtype, left=left, trans=trans,
                         forward=forward)
        return
    if p["INVERSE"] if inverse is None else inverse:
        _trsm_inverse(queue, m, nrhs, t, b, nb, dtype=dtype, left=left, lower=lower,
                      trans=trans, unit=unit, forward=forward, inverses=inverses)
        return
    starts = list(range(0, m, nb))
    if not forward:
        starts.reverse()
    for k0 in starts:
        kb = min(nb, m - k0)
        diag = t.at(k0, k0)
        target = b.at(k0, 0) if left else b.at(0, k0)
        _trsm_block(queue, kb, nrhs, diag, target, dtype=dtype, left=left, lower=lower,
                    trans=trans, unit=unit, nb=nb)
        _trsm_update(queue, m, nrhs, t, b, k0, kb, dtype=dtype, left=left, trans=trans,
                     forward=forward)


def laswp(queue, a: View, c0: int, ncols: int, piv: cl.Buffer, k1: int, k2: int, *,
          dtype, forward: bool = True, gap: tuple | None = None) -> cl.Event | None:
    """Swap rows i and piv[i] of columns [c0, c0+ncols) for i in [k1, k2) (or reversed).

    Row indices in ``piv`` are relative to ``a`` (which starts at row 0).
    ``gap=(at, width)`` skips ``width`` columns after the first ``at`` selected
    ones (the selection still counts ``ncols`` columns), so the columns on
    both sides of a panel take one launch.
    """
    gap_at, gap_width = gap if gap else (ncols, 0)
    if ncols <= 0 or k2 <= k1:
        return None
    kernel, vw, wg = _kernel_for(queue, ("laswp", forward), dtype, (a,),
                                 lambda: _laswp_kernel(queue, dtype, forward))
    items = -(-gap_at // vw) + -(-(ncols - gap_at) // vw)
    return enqueue(queue, kernel, (round_up(items, wg),), (wg,), a.buf, np.int64(a.off),
                  int_arg(a.ld), int_arg(c0), int_arg(ncols), int_arg(gap_at),
                  int_arg(gap_width), piv, int_arg(k1), int_arg(k2))


def _laswp_kernel(queue, dtype, forward: bool) -> tuple:
    """(laswp kernel, its vector width VW, its work-group WG) of the device's laswp set."""
    p = params(queue, "laswp", dtype)
    return (get_kernel(queue, "laswp.cl", "laswp", dtype, FORWARD=int(forward), VW=p["VW"],
                       CHUNK=p["CHUNK"]), p["VW"], p["WG"])


def permute_rows(queue, a: View, n: int, ncols: int, piv: cl.Buffer, *, dtype,
                 forward: bool = True) -> None:
    """Rows [0, n) of columns [0, ncols) of ``a``, in place, as :func:`laswp` over all n
    pivots leaves them (``piv``: n int32 row indices, each in [0, n)).  For at most the
    laswp family's FEW_COLS columns, where n <= 65536 row indices of 16 bits fit in local
    memory, one launch of one work-group (``permute_rows``, laswp.cl): the pivots composed
    into one permutation in local memory, then each entry moved once through a scratch
    copy (laswp walks the pivots CHUNK at a time, a round trip to memory each: H200, one
    column, n = 1024 143-159 -> 39-40 us, n = 4096 556-674 -> 140-142 us).  Otherwise
    laswp itself."""
    if n <= 0 or ncols <= 0:
        return
    p = params(queue, "laswp", dtype)
    wg = params(queue, "wg1d", dtype)["WG"]
    perm_bytes = 2 * round_up(n, 2)               # n 16-bit row indices
    if (ncols > p["FEW_COLS"] or n > 65536
            or perm_bytes + 4 * wg + LOCAL_RESERVE > device_info(queue).local_mem_size):
        laswp(queue, a, 0, ncols, piv, 0, n, dtype=dtype, forward=forward)
        return
    work = scratch_buffer(queue, n * ncols * np.dtype(dtype).itemsize)
    with indices_for(dtype, a):                 # laswp's program: no build of its own
        kernel = get_kernel(queue, "laswp.cl", "permute_rows", dtype, FORWARD=int(forward),
                            VW=p["VW"], CHUNK=p["CHUNK"])
    enqueue(queue, kernel, (wg,), (wg,), a.buf, np.int64(a.off), int_arg(a.ld),
            int_arg(ncols), int_arg(n), piv, work, cl.LocalMemory(perm_bytes),
            cl.LocalMemory(4 * wg))


def matmul(a, b, *, trans_a: bool = False, trans_b: bool = False, queue=None,
           check_finite: bool = True):
    """op(A)·op(B) on the device for host arrays (numpy result) or device arrays."""
    queue = resolve_queue(queue)
    a_ = as_matrix(a, queue, name="a", square=False, check_finite=check_finite)
    b_ = as_matrix(b, queue, name="b", square=False, check_finite=check_finite)
    if a_.dtype != b_.dtype:
        raise TypeError(f"a and b must have the same dtype, got {a_.dtype} and {b_.dtype}")
    m, k = a_.shape[::-1] if trans_a else a_.shape
    k2, n = b_.shape[::-1] if trans_b else b_.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: op(a) is {m} x {k}, op(b) is {k2} x {n}")
    host = not isinstance(a_, cl_array.Array)
    da, db = (read_only(queue, x, results_to_host=host) for x in (a_, b_))
    dc = cl_array.empty(queue, (m, n), a_.dtype)
    if m and n:
        gemm(queue, m, n, k, 1.0, view_of(da), view_of(db), 0.0, view_of(dc),
             dtype=a_.dtype, trans_a=trans_a, trans_b=trans_b)
    return dc.get() if host else dc
