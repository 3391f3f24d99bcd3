"""Rectangular full packed (RFP) storage and Cholesky on it, LAPACK's TRANSR='N'.

A symmetric matrix of order n keeps one triangle in a 1-D array of
n(n+1)/2 reals, bit-identical to :func:`scipy.linalg.lapack.dtrttf`'s output
(read as a column-major LDA x NC array ``ARF``, LDA = n + (n even),
NC = (n+1)//2; ``kernels_cl/rfp.h`` draws it).  In the lower layout the
trailing triangle is rotated into the otherwise unused top right (in the
upper layout the leading one into the bottom left), so the packed array is
three ordinary strided matrices, the blocks ``?pftrf`` works on:

====  ==================  ===  ==================
UPLO  T1 (order n1, 'L')  S    T2 (order n2, 'U')
====  ==================  ===  ==================
'L'   L11                 L21  L22ᵀ
'U'   U11ᵀ                U12  U22
====  ==================  ===  ==================

(n1 = n − n//2, n2 = n//2 for 'L'; n1 = n//2, n2 = n − n//2 for 'U'.)

Functions
---------
:func:`pack`, :func:`unpack`
    Full <-> packed, one kernel each on the device (as ``?trttf``/``?tfttr``;
    ``unpack`` zeroes the other triangle).
:func:`cholesky`
    The packed factor, identical in layout to ``?pftrf`` and accepted by
    ``?pftrs``.  ``method="blocked"`` follows ``?pftrf``: a blocked potrf of
    T1, a TRSM for S, a SYRK into T2 and a blocked potrf of T2, all through
    :mod:`oclla.blas` on views of the packed buffer; in the 'L'
    layout, on devices whose updates factor the next leaf in the same launch,
    the potrf of T1 and the TRSM are one sweep by block rows over T1 and S
    together (the first half of a full factorization's sweep), and the SYRK
    into T2 runs on a second queue beside it, in parts, as block rows of S
    become final; the 'U' layout takes that sweep too, through a transposed
    copy in the 'L' layout (a second packed array for the call).  On those
    devices T2 is factored as an upper triangle in scratch (n2² reals for
    the call), so that the packed factor builds the upper leaf program alone.
    ``method="pivot"`` runs the paper's per-pivot kernels (square root,
    normalization, exact-triangle outer product) directly on the packed
    buffer: each kernel maps the logical (i, j) through ``rfp.h``'s two
    affine index maps, the OpenCL form of the paper's "two triangles".
:func:`cho_solve`
    Solves A·x = b from the packed factor (``?pftrs``'s structure).

Trace: packed runs record snapshots as the LDA x NC picture
(``picture(arf, n)``, the paper's Fig. 3) and step regions in that
picture's coordinates; per-pivot steps also carry ``info["logical_region"]``
(in the n x n matrix) and ``info["regions"]``, the boxes of the two parts.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import _scratch, _trace_hooks, trace
from ._device import device_info, driver_errors, resolve_queue
from ._knobs import fits_wg, pow2_at_most
from ._params import chol_fused_leaf, params
from ._programs import (enqueue, flushed_marker, get_kernel, index_width, int_arg, int_zeros,
                        launch_queue, round_up, side_queue, side_queue_made)
from ._validate import (as_matrix, check_method, checked_beside, checked_values,
                        factor_in_place, is_device_array, read_only, solve_in_place, to_device,
                        unpack_pair)
from .blas import View, gemm, indices_for, syrk, trsm, view_of
from .cholesky import (block_size, factor_blocked, factor_pivot, sweeps_fused,
                       not_positive_definite)

__all__ = ["Layout", "layout", "packed_length", "pack", "unpack", "cholesky",
           "cho_solve", "picture", "cholesky_update", "cho_inverse", "cho_logdet"]


class Layout(NamedTuple):
    """Where the three blocks of an RFP array of order n live (Fortran offsets).

    Block X of ``lda`` starts at element ``X``; as a row-major
    :class:`oclla.blas.View` ``View(buf, X, lda)`` it is the transpose of the
    Fortran block.  T1 has order ``n1``, T2 order ``n2``, S is n2 x n1
    ('L') or n1 x n2 ('U').

    Attributes
    ----------
    n : int
        The order of the matrix.
    lower : bool
        Which triangle is packed ('L' when True, 'U' otherwise).
    lda : int
        The Fortran leading dimension of the packed array: n + 1 for even n,
        n for odd n.
    n1, n2 : int
        The orders of the triangles T1 and T2 (n1 + n2 = n).
    t1, s, t2 : int
        Element offsets of the blocks T1, S and T2 in the packed array.
    """

    n: int
    lower: bool
    lda: int
    n1: int
    n2: int
    t1: int
    s: int
    t2: int


def packed_length(n: int) -> int:
    """Number of reals in the RFP array of an n x n triangle: n(n+1)/2.

    Parameters
    ----------
    n : int
        The order (n >= 0).

    Returns
    -------
    int
        n(n+1)/2.

    Raises
    ------
    TypeError
        A non-integer ``n`` (from the arithmetic).
    """
    return n * (n + 1) // 2


def layout(n: int, lower: bool = True) -> Layout:
    """The RFP block layout of order n (as ``?pftrf`` splits it, TRANSR='N').

    Parameters
    ----------
    n : int
        The order (n >= 0).
    lower : bool, default True
        The 'L' layout (else 'U').

    Returns
    -------
    Layout
        The blocks' orders and offsets (see :class:`Layout`).

    Raises
    ------
    TypeError
        A non-integer ``n`` (from the arithmetic).
    """
    even = n % 2 == 0
    lda = n + 1 if even else n
    if lower:
        n2 = n // 2
        n1 = n - n2
        t1, s, t2 = (1, n1 + 1, 0) if even else (0, n1, n)
    else:
        n1 = n // 2
        n2 = n - n1
        t1, s, t2 = (n1 + 1, 0, n1) if even else (n2, 0, n1)
    return Layout(n, bool(lower), lda, n1, n2, t1, s, t2)


def _offsets(r, c, n: int, lower: bool):
    """Packed offsets of the stored entries (r, c) (numpy arrays), as rfp.h."""
    r, c = np.asarray(r), np.asarray(c)
    e = 1 - n % 2
    lda = n + e
    if lower:
        n1 = n // 2 if e else n - n // 2
        return np.where(c < n1, (r + e) + c * lda, (c - n1) + (r - n1 + 1 - e) * lda)
    n1, n2 = n // 2, n - n // 2
    return np.where(c >= n1, r + (c - n1) * lda, (n2 + e + c) + r * lda)


def picture(arf, n: int) -> np.ndarray:
    """The packed array as its LDA x NC Fortran matrix (LAPACK's and the paper's picture).

    Parameters
    ----------
    arf : (n(n+1)/2,) array_like
        A packed array on the host.
    n : int
        Its order.

    Returns
    -------
    (lda, (n + 1) // 2) ndarray
        A view of ``arf``: column j holds Fortran column j of the packed
        matrix (lda = n + 1 for even n, n for odd n).

    Raises
    ------
    ValueError
        ``arf`` does not have n(n+1)/2 entries.
    """
    lda = n + 1 - n % 2
    return np.asarray(arf).reshape((n + 1) // 2, lda).T


# ---- validation ----------------------------------------------------------------------------

def _check_order(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an integer, not {type(n).__name__}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return int(n)


def _as_packed(arf, n: int, queue, *, check_finite: bool, name: str = "arf"):
    """Validate a packed array of order n: 1-D, n(n+1)/2 long, float32/64."""
    arr = arf if is_device_array(arf) else np.asarray(arf)
    if is_device_array(arr) and arr.context != queue.context:
        raise ValueError(f"{name} lives on another OpenCL context than the queue")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (a packed array), got shape {arr.shape}")
    need = packed_length(n)
    if arr.shape[0] != need:
        raise ValueError(f"{name} has length {arr.shape[0]}; an RFP matrix of order {n} "
                         f"needs n(n+1)/2 = {need}")
    return checked_values(arr, queue, name=name, check_finite=check_finite)


# ---- pack / unpack -------------------------------------------------------------------------

@driver_errors
def pack(a, *, lower: bool = True, check_finite: bool = True, queue=None):
    """The RFP array of the lower (or upper) triangle of the n x n matrix ``a``.

    Identical to ``scipy.linalg.lapack.?trttf(a, uplo='L' or 'U')[0]``.  Only
    that triangle is read; the copy runs on the device.

    Parameters
    ----------
    a : (n, n) array_like of float32/float64, or a pyopencl array (any view)
    lower : pack the lower triangle (default) or the upper
    check_finite : reject NaN/Inf in that triangle (ValueError)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    (n(n+1)/2,) array
        A new device array when ``a`` is one (a device view is gathered
        first), else a numpy array.

    Raises
    ------
    ValueError
        ``a`` not square, NaN/Inf with ``check_finite``
    TypeError
        a dtype other than float32/float64
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    queue = resolve_queue(queue)
    a_ = as_matrix(a, queue, check_finite=check_finite)
    n = a_.shape[0]
    dtype = a_.dtype
    if n == 0:
        return cl_array.empty(queue, 0, dtype) if is_device_array(a_) else np.empty(0, dtype)
    da = read_only(queue, a_, results_to_host=True)    # a host a: a host result
    arf = cl_array.empty(queue, packed_length(n), dtype)
    wg = params(queue, "wg1d", dtype)["WG"]
    with index_width(max(da.base_data.size, arf.base_data.size) // dtype.itemsize):
        kernel = get_kernel(queue, "rfp.cl", "pack", dtype)
    with trace.run("rfp_pack", "lower" if lower else "upper", queue, (n, n), dtype):
        with trace.step("pack", (0, n, 0, n), nbytes=2.0 * arf.nbytes):
            enqueue(queue, kernel, (round_up(arf.size, wg),), (wg,), da.data,
                    np.int64(da.offset // dtype.itemsize), int_arg(n), int_arg(n), arf.data,
                    np.int64(0), int_arg(lower))
    return arf if is_device_array(a_) else arf.get()


@driver_errors
def unpack(arf, n: int, *, lower: bool = True, check_finite: bool = True, queue=None):
    """The n x n matrix whose lower (or upper) triangle ``arf`` packs; the rest is 0.

    Identical to ``scipy.linalg.lapack.?tfttr(n, arf, uplo=...)[0]``; the
    copy runs on the device.

    Parameters
    ----------
    arf : (n(n+1)/2,) array_like of float32/float64, or a pyopencl array (any
        1-D view)
    n : the order
    lower : ``arf`` packs the lower triangle (default) or the upper
    check_finite : reject NaN/Inf in ``arf`` (ValueError)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    (n, n) array
        The triangle, the other one zero; a device array for a device ``arf``.

    Raises
    ------
    ValueError
        ``arf`` not 1-D or not n(n+1)/2 long, n < 0, NaN/Inf with
        ``check_finite``
    TypeError
        a non-integer ``n``, a dtype other than float32/float64
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    n = _check_order(n)
    queue = resolve_queue(queue)
    arf_ = _as_packed(arf, n, queue, check_finite=check_finite)
    dtype = arf_.dtype
    if n == 0:
        return cl_array.empty(queue, (0, 0), dtype) if is_device_array(arf_) \
            else np.empty((0, 0), dtype)
    darf = read_only(queue, arf_, results_to_host=True)    # a host arf: a host result
    a = cl_array.empty(queue, (n, n), dtype)
    loc = params(queue, "local2d", dtype)
    with index_width(max(darf.base_data.size, a.base_data.size) // dtype.itemsize):
        kernel = get_kernel(queue, "rfp.cl", "unpack", dtype)
    with trace.run("rfp_unpack", "lower" if lower else "upper", queue, (n, n), dtype):
        with trace.step("unpack", (0, n, 0, n), nbytes=2.0 * a.nbytes):
            enqueue(queue, kernel, (round_up(n, loc["X"]), round_up(n, loc["Y"])),
                    (loc["X"], loc["Y"]), darf.data,
                    np.int64(darf.offset // dtype.itemsize), int_arg(n), a.data, np.int64(0),
                    int_arg(n), int_arg(lower))
    return a if is_device_array(arf_) else a.get()


# ---- Cholesky ------------------------------------------------------------------------------

def _blocks(buf, off: int, lay: Layout):
    """Row-major views of T1, S, T2 of the packed array at ``buf[off:]``.

    Each view is the transpose of the Fortran block.
    """
    return tuple(View(buf, off + x, lay.lda) for x in (lay.t1, lay.s, lay.t2))


def _picture_region(origin: int, lda: int):
    """Map a region of the row-major view at Fortran offset ``origin`` to the picture."""
    p0, q0 = origin % lda, origin // lda

    def region(r0, r1, c0, c1):
        return (p0 + c0, p0 + c1, q0 + r0, q0 + r1), {}
    return region


def _t2_box(lay: Layout) -> tuple:
    """T2's box in the picture (the region of its SYRK steps)."""
    return _picture_region(lay.t2, lay.lda)(0, lay.n2, 0, lay.n2)[0]


def _logical_regions(n: int, lower: bool):
    """Map a region of the logical lower factor to picture boxes (two parts)."""
    lda = n + 1 - n % 2
    split = layout(n, lower).n1

    def region(r0, r1, c0, c1):
        i, j = np.meshgrid(np.arange(r0, r1), np.arange(c0, c1), indexing="ij")
        keep = i >= j
        i, j = i[keep], j[keep]
        r, c = (i, j) if lower else (j, i)
        off = _offsets(r, c, n, lower)
        p, q = off % lda, off // lda
        first = (c < split) if lower else (c >= split)
        boxes = [(int(p[m].min()), int(p[m].max()) + 1, int(q[m].min()), int(q[m].max()) + 1)
                 for m in (first, ~first) if m.any()]
        whole = (int(p.min()), int(p.max()) + 1, int(q.min()), int(q.max()) + 1)
        return whole, {"logical_region": (r0, r1, c0, c1), "regions": boxes}
    return region


def _pftrf_blocked(queue, buf, off: int, lay: Layout, *, dtype, info, block) -> None:
    """LAPACK ?pftrf on the packed buffer: potrf(T1), TRSM on S, SYRK into T2, potrf(T2).

    The Fortran calls become row-major calls on the transposed views: each
    triangle's UPLO flips, TRSM's side flips, SYRK's trans flips.  In the 'L'
    layout S lies right of T1 in the same rows of that view ([T1 S] is the upper
    trapezoid of the first n1 rows of an upper factor of order n).  Where the
    device factors each next leaf in the trailing update's launch
    (:func:`oclla.cholesky.sweeps_fused`: in blocks of one leaf or, above SMALL_N,
    of several), potrf(T1) and the TRSM are one blocked sweep over that trapezoid
    (:func:`factor_blocked`'s ``width``): each block row's panel solve reaches
    across S, and its trailing update covers T1 and S together, so T1's leaves
    overlap S's updates as they do in a full factorization; T2 -= SᵀS runs on a
    second queue beside the sweep, in parts as block rows of S become final, at
    least the device's RFP_T2_DEPTH rows a SYRK (a full factorization makes those
    updates inside the sweep's launches).  Without that overlap the one large
    TRSM is the faster (its products are deeper).  The 'U' layout, whose S lies
    apart from T1 in every view, takes that sweep through the 'L' layout
    (:func:`_pftrf_transposed`) where it is fused and no recording is made.
    """
    if _through_lower(queue, lay, dtype=dtype, block=block):
        _pftrf_transposed(queue, buf, off, lay, dtype=dtype, info=info, block=block)
        return
    n1, n2, lda = lay.n1, lay.n2, lay.lda
    t1, s, t2 = _blocks(buf, off, lay)
    if lay.lower and n2 > 0 and sweeps_fused(queue, dtype, n1, block):
        assert lay.s == lay.t1 + n1          # S continues T1's rows
        _sweep_t1_s(queue, t1, s, t2, lay, dtype=dtype, info=info, block=block)
    else:
        factor_blocked(queue, t1, n1, lower=False, dtype=dtype, info=info, block=block,
                       region=_picture_region(lay.t1, lda))
        if n2 == 0:
            return
        rows, cols = (n2, n1) if lay.lower else (n1, n2)      # S as a Fortran block
        p0, q0 = lay.s % lda, lay.s // lda
        inverse = bool(params(queue, "chol", dtype)["RFP_TRSM_INVERSE"])
        with trace.step("trsm", (p0, p0 + rows, q0, q0 + cols), flops=float(n1 * n1 * n2)):
            if lay.lower:     # Fortran TRSM('R', 'L', 'T'): S := S·T1⁻ᵀ
                trsm(queue, n1, n2, t1, s, dtype=dtype, left=True, lower=False, trans=True,
                     inverse=inverse)
            else:             # Fortran TRSM('L', 'L', 'N'): S := T1⁻¹·S
                trsm(queue, n1, n2, t1, s, dtype=dtype, left=False, lower=False, trans=False,
                     inverse=inverse)
        with trace.step("syrk", _t2_box(lay), flops=float(n2 * (n2 + 1) * n1)):
            # Fortran SYRK('U', 'N'): T2 -= S·Sᵀ  ('L')  /  SYRK('U', 'T'): T2 -= Sᵀ·S  ('U')
            syrk(queue, n2, n1, -1.0, s, 1.0, t2, dtype=dtype, lower=True, trans=lay.lower)
    _factor_t2(queue, t2, lay, dtype=dtype, info=info, block=block)


def _sweep_t1_s(queue, t1: View, s: View, t2: View, lay: Layout, *, dtype, info,
                block) -> None:
    """The 'L' layout's potrf(T1) and TRSM where the device fuses the sweep (``lay.lower``,
    n2 > 0): one blocked sweep by block rows over [T1 S] (row-major views; S continues
    T1's rows), with T2 -= SᵀS on a second queue in parts as S's block rows become final
    (:class:`_T2Update`).  T2 may lie in another buffer than T1 and S
    (:func:`_pftrf_transposed`)."""
    update = _T2Update(queue, s, t2, lay, dtype=dtype)
    factor_blocked(queue, t1, lay.n1, lower=False, dtype=dtype, info=info, block=block,
                   region=_picture_region(lay.t1, lay.lda), width=lay.n,
                   on_final=update.rows_final)
    update.finish()


def _factor_t2(queue, t2: View, lay: Layout, *, dtype, info, block) -> None:
    """The blocked potrf of T2 (order n2, the row-major lower triangle of ``t2``:
    A22 = L22·L22ᵀ), in place; a failing pivot at order k of it sets ``info`` to
    n1 + k.

    Where syrk_leaf.cl factors the leaves (:func:`oclla._params.chol_fused_leaf`),
    whose triangle is a build option, T2 goes through scratch as an upper triangle
    (U22 = L22ᵀ, rfp.cl ``transpose_triangle`` there and back), so that the packed
    Cholesky builds only the upper program, the one T1 and the full Cholesky's
    default factor build: one program fewer, about 1 s of NVIDIA's compiler per
    dtype (H200: 0.76-0.79 s; float64's six routines of the cold-start table 15 programs
    in 5.0-5.5 s, where they were 16 in 5.9-7.2 s).  The call then takes n2² reals of
    device memory more; the copies (4·n2² reals moved) and the upper factor, 1-3 % slower
    than the lower one, cost the 'L' layout's factor against T2 in place, float32 n =
    4096 / 8192 / 16384: 3.74 / 11.91 / 56.74 ms against 3.68 / 11.78 / 56.46; float64
    level (4.77 / 17.04 / 91.20 against 4.77 / 17.06 / 91.40;
    benchmarks/results/nvidia-h200-2026-12-01-packed-t2.txt).  A recording factors T2 in
    place: its steps are boxes of the packed array."""
    n2 = lay.n2
    if (_trace_hooks.active() is not None or n2 == 0
            or not chol_fused_leaf(params(queue, "chol", dtype), params(queue, "gemm", dtype))):
        factor_blocked(queue, t2, n2, lower=True, dtype=dtype, info=info, base=lay.n1,
                       block=block, region=_picture_region(lay.t2, lay.lda))
        return
    upper = View(_scratch.buffer(queue, n2 * n2 * np.dtype(dtype).itemsize), 0, n2)
    _transpose_triangle(queue, t2, upper, n2, lower=True, dtype=dtype)
    factor_blocked(queue, upper, n2, lower=False, dtype=dtype, info=info, base=lay.n1,
                   block=block)
    _transpose_triangle(queue, upper, t2, n2, lower=False, dtype=dtype)


def _through_lower(queue, lay: Layout, *, dtype, block) -> bool:
    """Whether the blocked ?pftrf of the 'U' layout ``lay`` goes through the 'L' layout
    (:func:`_pftrf_transposed`): where the 'L' layout's T1 and S are one fused sweep
    (:func:`oclla.cholesky.sweeps_fused`), and not in a recording, whose steps are
    boxes of the packed array the caller holds."""
    if lay.lower or lay.n < 2 or _trace_hooks.active() is not None:
        return False
    return sweeps_fused(queue, dtype, layout(lay.n, True).n1, block)


#: rfp.cl ``transpose``'s work-groups: tiles of up to TRANSPOSE_TILE x TRANSPOSE_TILE
#: entries (local memory for TRANSPOSE_TILE x (TRANSPOSE_TILE + 1) reals), that many
#: items a row and up to TRANSPOSE_ROWS rows of them.
TRANSPOSE_TILE, TRANSPOSE_ROWS = 32, 8


def transpose_shape(queue, dtype) -> tuple[int, int]:
    """(tile, rows) of a transposing kernel's work-groups on this device (rfp.cl's and
    ad2at.cl's scale_transpose): tiles of up to TRANSPOSE_TILE x TRANSPOSE_TILE entries in
    at most half its local memory, tile x rows items a work-group."""
    info, item = device_info(queue), np.dtype(dtype).itemsize
    tile = pow2_at_most(min(TRANSPOSE_TILE, info.max_work_group_size,
                            info.max_work_item_sizes[0]))
    while tile > 1 and tile * (tile + 1) * item > info.local_mem_size // 2:
        tile //= 2
    rows = TRANSPOSE_ROWS
    while rows > 1 and not fits_wg(info, tile, rows):
        rows //= 2
    return tile, rows


def _transpose_packed(queue, src, src_off: int, dst, dst_off: int, n: int, *, lower: bool,
                      dtype, t2_too: bool = True) -> None:
    """dst := the RFP array at ``src[src_off:]`` (layout ``lower``) in the other layout,
    transposed (rfp.cl ``transpose``): the same symmetric matrix, or the factor U = Lᵀ
    of the factor L, and back.  ``t2_too=False`` (even n only, :func:`_t2_shared`)
    leaves T2 out: neither read nor written."""
    assert t2_too or _t2_shared(n)
    tile, rows = transpose_shape(queue, dtype)
    item = np.dtype(dtype).itemsize
    lda, nc = n + 1 - n % 2, (n + 1) // 2
    with index_width(max(src.size, dst.size) // item):
        kernel = get_kernel(queue, "rfp.cl", "transpose", dtype)
    enqueue(queue, kernel, (round_up(lda, tile), -(-nc // tile) * rows), (tile, rows), src,
            np.int64(src_off), int_arg(n), dst, np.int64(dst_off), int_arg(lower),
            int_arg(t2_too), cl.LocalMemory(tile * (tile + 1) * item))


def _transpose_triangle(queue, src: View, dst: View, n: int, *, lower: bool, dtype) -> None:
    """The other triangle of the n x n matrix at ``dst`` := the triangle ``lower`` of the
    one at ``src``, transposed (rfp.cl ``transpose_triangle``); nothing else of either
    is touched."""
    tile, rows = transpose_shape(queue, dtype)
    groups = -(-n // tile)
    with indices_for(dtype, src, dst):
        kernel = get_kernel(queue, "rfp.cl", "transpose_triangle", dtype)
    enqueue(queue, kernel, (groups * tile, groups * rows), (tile, rows), src.buf,
            np.int64(src.off), int_arg(src.ld), dst.buf, np.int64(dst.off), int_arg(dst.ld),
            int_arg(n), int_arg(lower),
            cl.LocalMemory(tile * (tile + 1) * np.dtype(dtype).itemsize))


def _t2_shared(n: int) -> bool:
    """Whether T2 is the same strided matrix in both layouts of order n, at their own
    offsets: for even n, where both hold the trailing block of order n/2 (row-major
    views of leading dimension n + 1 whose lower triangle is A22's, later L22's); for
    odd n the layouts split the matrix at different orders."""
    return n % 2 == 0


def _pftrf_transposed(queue, buf, off: int, lay: Layout, *, dtype, info, block) -> None:
    """The 'U' layout's blocked ?pftrf through the 'L' layout: A (U11ᵀ, U12, U22 of the
    packed array at ``buf[off:]``) copied into scratch as the 'L' layout's L11, L21 =
    U12ᵀ, L22ᵀ, factored there by the fused sweep over T1 and S, and the factor L
    copied back as U = Lᵀ (partial where a pivot fails: LAPACK's order is the same in
    both layouts).  For even n T2 is the same matrix in both layouts
    (:func:`_t2_shared`): it stays in the caller's array, updated and factored there,
    and the copies move T1 and S alone (three quarters of the array; rfp.cl's tiles
    wholly in T2 idle).  The call takes a second packed array of device memory.  H200,
    'U' packed / full upper factor, n = 4096 / 8192 / 16384: float64 1.70 / 1.36 / 1.15
    -> 1.04-1.06 / 1.00 / 1.03, float32 1.61 / 1.34 / 1.18 -> 1.04 / 0.99-1.01 / 1.05
    with T2 copied too (benchmarks/results/nvidia-h200-2026-12-01-packed-upper.txt; the
    'L' layout 1.00-1.04 in the same runs); each copy's kernel at n = 16384 0.745 ->
    0.586 ms (float64), 0.556 -> 0.439 ms (float32) with T2 left in place, float64
    16384 'U' 92.1-92.2 -> 91.4-91.9 ms, float32 level
    (nvidia-h200-2026-12-01-rfp-t2-apart.txt)."""
    n, work_lay = lay.n, layout(lay.n, True)
    t2_too = not _t2_shared(n)
    work = _scratch.buffer(queue, packed_length(n) * np.dtype(dtype).itemsize)
    _transpose_packed(queue, buf, off, work, 0, n, lower=False, dtype=dtype, t2_too=t2_too)
    t1, s, t2 = _blocks(work, 0, work_lay)
    if not t2_too:
        t2 = View(buf, off + lay.t2, lay.lda)
    _sweep_t1_s(queue, t1, s, t2, work_lay, dtype=dtype, info=info, block=block)
    _factor_t2(queue, t2, work_lay, dtype=dtype, info=info, block=block)
    _transpose_packed(queue, work, 0, buf, off, n, lower=True, dtype=dtype, t2_too=t2_too)


class _T2Update:
    """The 'L' layout's T2 -= SᵀS (Fortran SYRK('U', 'N'): T2 -= S·Sᵀ) in parts, each as
    soon as the sweep over [T1 S] has made its block rows of S final, on a second queue
    beside the sweep (on ``queue`` itself where the device refuses one); :meth:`finish`
    updates with the rows left and orders ``queue`` after every part."""

    def __init__(self, queue, s: View, t2: View, lay: Layout, *, dtype):
        self.queue, self.s, self.t2, self.lay, self.dtype = queue, s, t2, lay, dtype
        self.side = side_queue(queue) or queue
        self.depth = params(queue, "chol", dtype)["RFP_T2_DEPTH"]
        self.done = 0                     # rows of S already in T2

    def rows_final(self, j0: int, j1: int) -> None:
        """Rows j0..j1 of S are final (the sweep's block row j0): update with every final
        row not yet applied once they are at least RFP_T2_DEPTH (0: all of S at once),
        and where fewer than that many rows would be left after them, with those too at
        the end: no part thinner than RFP_T2_DEPTH but the only one, since each part
        reads and writes all of T2 (n = 2049 in parts of 256 ended with a rank-1 update
        of T2, which also took a GEMM program of its own, the thin products')."""
        depth, n1 = self.depth or self.lay.n1, self.lay.n1
        if j1 == n1 or j1 - self.done >= depth and n1 - j1 >= depth:
            self._update(j1)

    def finish(self) -> None:
        if self.done < self.lay.n1:
            self._update(self.lay.n1)
        if self.side is not self.queue:
            cl.enqueue_barrier(self.queue, wait_for=[flushed_marker(self.side)])

    def _update(self, j1: int) -> None:
        lay, j0, k = self.lay, self.done, j1 - self.done
        if self.side is not self.queue:
            cl.enqueue_barrier(self.side, wait_for=[flushed_marker(self.queue)])
        with trace.step("syrk", _t2_box(lay), flops=float(lay.n2 * (lay.n2 + 1) * k)):
            syrk(self.side, lay.n2, k, -1.0, self.s.at(j0, 0), 1.0, self.t2, dtype=self.dtype,
                 lower=True, trans=True)
        self.done = j1


def _snapshot(queue, arf: cl_array.Array, n: int) -> np.ndarray:
    """The picture of the packed array once the side queue's T2 updates are done too
    (a recording's factorization runs on ``queue`` itself; a run that never made the
    side queue, per-pivot or on one queue, does not make it here)."""
    side = side_queue_made(queue)
    if side is not None:
        side.finish()
    return picture(arf.get(), n)


def factor_packed(queue, arf: cl_array.Array, n: int, *, lower: bool, method: str,
                  block: int | None = None) -> None:
    """Factor the device RFP array in place; raise LinAlgError if not positive definite."""
    dtype = arf.dtype
    info = int_zeros(queue)
    lay = layout(n, lower)
    # the block width only where blocks are used: the per-pivot method needs none of
    # the blocked Cholesky's parameters (nor their self-check on an untuned device)
    extra = dict(block=block or block_size(queue, dtype, n)) if method == "blocked" else {}
    with trace.run("rfp_cholesky", method, queue, (n, n), dtype,
                   lambda: _snapshot(queue, arf, n), lower=lower, packed=True, **extra):
        with launch_queue(queue) as loop_queue:
            if method == "pivot":
                factor_pivot(loop_queue, arf.base_data, arf.offset // dtype.itemsize, lay.lda,
                             n, lower=lower, dtype=dtype, info=info, packed=True,
                             region=_logical_regions(n, lower))
            else:
                _pftrf_blocked(loop_queue, arf.base_data, arf.offset // dtype.itemsize, lay,
                               dtype=dtype, info=info, block=extra["block"])
        code = int(info.get()[0])
        if code:
            raise not_positive_definite(code)


@driver_errors
def cholesky(arf, n: int, *, lower: bool = True, method: str = "blocked",
             overwrite_a: bool = False, check_finite: bool = True, block: int | None = None,
             queue=None):
    """Cholesky factor of a packed symmetric positive definite matrix of order n.

    Parameters
    ----------
    arf : (n(n+1)/2,) RFP array (``pack`` / ``?trttf`` layout), host or device
        (any 1-D view: offset, step)
    n : the order
    lower : the layout of ``arf`` ('L' or 'U'); the factor keeps it
    method : "blocked" (default, ``?pftrf``'s structure) or "pivot" (per pivot)
    overwrite_a : allow the result to be written into ``arf`` (a permission): a
        contiguous device ``arf`` is factored in place, a device view in its
        gathered copy, then scattered into the view's own entries
    check_finite : reject NaN/Inf in ``arf`` (ValueError)
    block : block width of the blocked method (default: the device's)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Notes
    -----
    On devices whose blocked Cholesky factors each next leaf in the launch of
    the update before it (GPUs), the 'U' layout is factored in the 'L' layout
    of a transposed copy and copied back: device memory for a second packed
    array during the call (outside a recording, which keeps the 'U' layout's
    own route).

    Returns
    -------
    The packed factor, identical in layout to ``scipy.linalg.lapack.?pftrf``
    (usable by LAPACK's packed solve ``?pftrs`` and :func:`cho_solve`); a
    device array for a device input.

    Raises
    ------
    numpy.linalg.LinAlgError
        "leading minor of order k is not positive definite"
    ValueError
        ``arf`` not 1-D or not n(n+1)/2 long, NaN/Inf with ``check_finite``,
        an unknown ``method``
    TypeError
        a non-integer ``n``, a dtype other than float32/float64
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    check_method(method)
    n = _check_order(n)
    queue = resolve_queue(queue)
    factor, _ = factor_in_place(
        arf, queue, lambda work, deferred: factor_packed(queue, work, n, lower=bool(lower),
                                                         method=method, block=block),
        overwrite_a=overwrite_a, check_finite=check_finite, deferrable=False,
        validate=lambda x, q, check_finite: _as_packed(x, n, q, check_finite=check_finite))
    return factor


def solve_packed(queue, buf, off: int, lay: Layout, b: View, nrhs: int, *, dtype) -> None:
    """B := A⁻¹·B from the packed factor (``?pftrs``): A = M·Mᵀ, M = [T1 0; M21 T2ᵀ].

    M21 = S ('L') or Sᵀ ('U').  Forward: y1 = T1⁻¹b1, b2 -= M21·y1, y2 = T2⁻ᵀb2;
    back: x2 = T2⁻¹y2, y1 -= M21ᵀ·x2, x1 = T1⁻ᵀy1.  The row-major view of T1
    is upper, that of T2 lower.
    """
    n1, n2 = lay.n1, lay.n2
    t1, s, t2 = _blocks(buf, off, lay)
    b1, b2 = b, b.at(n1, 0)
    s_trans = lay.lower          # the view of S is M21ᵀ for 'L', M21 for 'U'
    trsm(queue, n1, nrhs, t1, b1, dtype=dtype, lower=False, trans=True)
    if n2:
        gemm(queue, n2, nrhs, n1, -1.0, s, b1, 1.0, b2, dtype=dtype, trans_a=s_trans)
        trsm(queue, n2, nrhs, t2, b2, dtype=dtype, lower=True, trans=False)
        trsm(queue, n2, nrhs, t2, b2, dtype=dtype, lower=True, trans=True)
        gemm(queue, n1, nrhs, n2, -1.0, s, b2, 1.0, b1, dtype=dtype, trans_a=not s_trans)
    trsm(queue, n1, nrhs, t1, b1, dtype=dtype, lower=False, trans=False)


@driver_errors
def cho_solve(c_and_lower, b, *, overwrite_b: bool = False, check_finite: bool = True,
              queue=None):
    """Solve A·x = b from ``(arf, lower)``, ``arf`` the packed factor of :func:`cholesky`.

    The order n is b's number of rows; ``arf`` must have n(n+1)/2 entries.
    Same result as ``scipy.linalg.lapack.?pftrs(n, arf, b, uplo=...)``; b is
    (n,) or (n, k), host or device (any view), with the dtype rules and the
    ``overwrite_b`` permission of :func:`oclla.cho_solve`.

    Parameters
    ----------
    c_and_lower : ``(arf, lower)``: the packed factor and its layout
    b : (n,) or (n, k) right-hand side(s), host or device (any view)
    overwrite_b : allow the solution to be written into ``b`` (a permission)
    check_finite : reject NaN/Inf in ``arf`` and ``b`` (ValueError)
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
        ``arf``'s length not n(n+1)/2 for n = b's rows, NaN/Inf with
        ``check_finite``, a ``c_and_lower`` that is not a pair
    TypeError
        a ``b`` whose dtype does not convert exactly to the factor's
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    arf, lower = unpack_pair(c_and_lower, "c_and_lower", "(rfp.cholesky(...), lower)")
    queue = resolve_queue(queue)
    b_arr = b if is_device_array(b) else np.asarray(b)
    if b_arr.ndim not in (1, 2):
        raise ValueError(f"b must be 1-D or 2-D, got shape {b_arr.shape}")
    n = b_arr.shape[0]
    deferred = checked_beside(arf, check_finite, b, overwrite_b)
    arf_ = _as_packed(arf, n, queue, check_finite=check_finite and not deferred)
    dtype = arf_.dtype

    def solve(x2):
        nrhs = x2.shape[1]
        darf = read_only(queue, arf_, results_to_host=not is_device_array(b))
        with trace.run("rfp_cho_solve", "lower" if lower else "upper", queue, (n, nrhs), dtype):
            with trace.step("solve", (0, n, 0, n), flops=2.0 * n * n * nrhs):
                solve_packed(queue, darf.base_data, darf.offset // dtype.itemsize,
                             layout(n, bool(lower)), view_of(x2), nrhs, dtype=dtype)

    return solve_in_place(queue, b, n, dtype, solve, overwrite_b=overwrite_b,
                          check_finite=check_finite, unchecked=(arf_,) if deferred else ())


@driver_errors
def cholesky_update(arf, n: int, v, *, sign: int = 1, lower: bool = True,
                    overwrite_c: bool = False, check_finite: bool = True,
                    method: str = "blocked", queue=None):
    """The packed factor of A + sign·V·Vᵀ from the packed factor ``arf`` of A.

    :func:`oclla.cholesky_update` on an RFP factor (as :func:`cholesky` and
    ``?pftrf`` return it, layout ``lower``): the same rotations run directly
    on the packed array through ``rfp.h``'s index maps, so the result has the
    same layout and is usable by :func:`cho_solve` and ``?pftrs``.  ``v`` is
    (n,) or (n, k); ``sign``, ``overwrite_c``, ``check_finite``, ``method``,
    the dtype rules and the errors are those of :func:`oclla.cholesky_update`
    (with ``overwrite_c`` a failed downdate leaves a contiguous device
    ``arf`` partly rotated).  Packed runs are recorded in the picture's
    coordinates, as :func:`cholesky`'s.

    Parameters
    ----------
    arf : (n(n+1)/2,) array_like or pyopencl array (any 1-D view)
        The packed factor of A in the RFP layout ``lower`` names.
    n : int
        The order of A.
    v : (n,) or (n, k) array_like or pyopencl array (any view)
        The columns of V (never written).
    sign : +1 (update, the default) or -1 (downdate)
    lower : the layout of ``arf`` ('L' or 'U'); the result keeps it
    overwrite_c : allow the result to be written into ``arf`` (a permission)
    check_finite : reject NaN/Inf in ``arf`` or ``v`` (ValueError)
    method : "blocked" (default) or "pivot" (per row, recorded step by step)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    (n(n+1)/2,) array
        The modified packed factor; a device array for a device ``arf``.

    Raises
    ------
    numpy.linalg.LinAlgError
        "downdated matrix is not positive definite: leading minor of order j",
        or a zero diagonal entry in the factor.
    ValueError, TypeError
        A length that is not n(n+1)/2, shapes, dtypes, NaN/Inf, ``sign`` or
        ``method`` out of range.
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble.
    """
    from .update import modify
    n = _check_order(n)
    return modify(arf, v, validate=lambda a, q, check_finite: _as_packed(
        a, n, q, check_finite=check_finite), order=lambda _: n, sign=sign, lower=lower,
        overwrite_c=overwrite_c, check_finite=check_finite, method=method, queue=queue,
        name="rfp_cholesky_update", packed=True,
        region=lambda order: _logical_regions(order, bool(lower)),
        snapshot=lambda work: picture(work.get(), n))


# ---- inverse and log-determinant from the packed factor ------------------------------------



def order_of(length: int) -> int:
    """The order n of an RFP array of ``length`` = n(n+1)/2 entries (ValueError if none)."""
    n = int(np.sqrt(2.0 * length))          # n² <= 2·length < (n+1)²; the loops fix rounding
    while n > 0 and packed_length(n) > length:
        n -= 1
    while packed_length(n + 1) <= length:
        n += 1
    if packed_length(n) != length:
        raise ValueError(f"a packed array of length {length} is no triangle: n(n+1)/2 is "
                         f"{packed_length(n)} for n = {n} and {packed_length(n + 1)} for "
                         f"n = {n + 1}")
    return n


def _packed_factor(c_and_lower, queue, check_finite: bool):
    """``(arf, n, lower)`` from a packed factor pair, n from the array's length."""
    arf, lower = unpack_pair(c_and_lower, "c_and_lower", "(rfp.cholesky(...), lower)")
    arr = arf if is_device_array(arf) else np.asarray(arf)
    if arr.ndim != 1:
        raise ValueError(f"arf must be 1-D (a packed array), got shape {arr.shape}")
    n = order_of(arr.shape[0])
    return _as_packed(arf, n, queue, check_finite=check_finite), n, bool(lower)


@driver_errors
def cho_inverse(c_and_lower, *, check_finite: bool = True, method: str = "blocked",
                queue=None):
    """A⁻¹ from ``(arf, lower)``, ``arf`` the packed factor of :func:`cholesky`.

    n comes from the length n(n+1)/2 of ``arf`` (host or device, any 1-D view).
    The result is A⁻¹'s triangle packed in the same layout, identical to
    ``scipy.linalg.lapack.?pftri(n, arf, uplo=...)``'s; a device array for a
    device ``arf``.  The factor is unpacked on the device, inverted by
    :func:`oclla.cho_inverse` (``method`` as there) and packed again.

    Parameters
    ----------
    c_and_lower : ``(arf, lower)``: the packed factor and its layout
    check_finite : reject NaN/Inf in ``arf`` (ValueError)
    method : "blocked" (default) or "steps", as :func:`oclla.trtri`
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    (n(n+1)/2,) array
        A⁻¹'s triangle in the factor's packed layout.

    Raises
    ------
    numpy.linalg.LinAlgError
        "singular matrix: diagonal entry k is zero"
    ValueError
        a length that is no n(n+1)/2, NaN/Inf with ``check_finite``, a
        ``c_and_lower`` that is not a pair
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    from .inverse import cho_inverse as full_inverse
    queue = resolve_queue(queue)
    arf_, n, lower = _packed_factor(c_and_lower, queue, check_finite)
    if n == 0:
        return arf_.copy()
    full = unpack(to_device(queue, arf_), n, lower=lower, check_finite=False, queue=queue)
    inverse = full_inverse((full, lower), full=False, overwrite_c=True, check_finite=False,
                           method=method, queue=queue)
    packed = pack(inverse, lower=lower, check_finite=False, queue=queue)
    return packed if is_device_array(arf_) else packed.get()


@driver_errors
def cho_logdet(c_and_lower, *, check_finite: bool = True, queue=None) -> float:
    """log det A = 2 Σ log|cᵢᵢ| from ``(arf, lower)``, the packed factor of A.

    As :func:`oclla.cho_logdet`: summed on the device (a device ``arf`` read in
    place through ``rfp.h``'s index maps; a host one sends only its diagonal),
    compensated.  n comes from the length of ``arf``.

    Parameters
    ----------
    c_and_lower : ``(arf, lower)``: the packed factor and its layout
    check_finite : reject NaN/Inf in ``arf`` (ValueError)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    float
        log det A; −inf for a zero on the diagonal.

    Raises
    ------
    ValueError
        a length that is no n(n+1)/2, NaN/Inf with ``check_finite``, a
        ``c_and_lower`` that is not a pair
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    from .inverse import logdet_device
    queue = resolve_queue(queue)
    arf_, n, lower = _packed_factor(c_and_lower, queue, check_finite)
    dtype = arf_.dtype
    if n == 0:
        return 0.0
    if is_device_array(arf_):
        return logdet_device(queue, arf_.base_data, arf_.offset // dtype.itemsize, n, n,
                             dtype=dtype, packed=True, lower=lower)
    diagonal = arf_[_offsets(np.arange(n), np.arange(n), n, lower)]
    return logdet_device(queue, cl_array.to_device(queue, diagonal).data, 0, n, 0,
                         dtype=dtype)
