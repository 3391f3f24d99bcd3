"""Inverse and log-determinant of an SPD matrix from its Cholesky factor (LAPACK ``?potri``).

With A = Uᵀ·U (upper factor, scipy's default) or A = L·Lᵀ (lower),

    A⁻¹ = U⁻¹·U⁻ᵀ   or   A⁻¹ = L⁻ᵀ·L⁻¹,        log det A = 2 Σᵢ log|cᵢᵢ|.

The inverse is computed as LAPACK's ``?potri`` does, in place: the triangular
inverse X = U⁻¹ (or L⁻¹, ``?trtri``), then the triangle of X·Xᵀ (or Xᵀ·X,
``?lauum``), which is A⁻¹'s; ``full=True`` mirrors it into the other triangle.
The log-determinant is a sum on the device (two-stage reduction, compensated),
never the product of the diagonal, which overflows long before the sum of its
logarithms does.

Methods
-------
``method="blocked"`` (default)
    Recursive halving on the shared BLAS-3 layer: every nb x nb diagonal
    block (nb: the device's ``trsm`` TRSM_NB) is inverted by one launch of
    ``trtri_blocks`` (trsm.cl), then the off-diagonal blocks are combined
    bottom-up, X21 = −X22·T21·X11 by two triangular multiplications (TRMM);
    ``lauum`` splits the same way, R11 = X11ᵀX11 + X21ᵀX21 (SYRK) and
    R21 = X22ᵀ·X21 (TRMM), with ``lauum_block`` (inverse.cl) on the leaves.
    TRMM is itself recursive: one GEMM per split, and on its leaves (the
    diagonal blocks, or up to TRMM_LEAF on GPUs) a GEMM with the square
    block, whose other triangle is zero, into a workspace.
``method="steps"``
    LAPACK's block loops, one trace step per operation, as Macindoe (2013)
    Algorithms 4-7 draw them: ``?trtri`` per block column a TRMM with the
    inverse found so far, a TRSM with the diagonal block and that block's
    inversion (phases ``trmm``, ``trsm``, ``trti2``); ``?lauum`` per block a
    TRMM, the block's own product, a GEMM and a SYRK (``trmm``, ``lauu2``,
    ``gemm``, ``syrk``).

Both variants zero the other triangle first, so a result's other triangle is
0 unless ``full`` fills it.  A zero on the factor's diagonal raises
:class:`numpy.linalg.LinAlgError` "singular matrix: diagonal entry k is zero"
(LAPACK's info k) before anything is written.

Beyond one buffer
    :func:`cho_inverse` and :func:`inv_spd` take a
    :class:`oclla.tiled.TiledMatrix` (the result: A⁻¹'s triangle in a
    TiledMatrix) and tile a host matrix larger than one buffer of the device
    (the result: a host array), :mod:`oclla.tiled_inverse`; :func:`cho_logdet`
    takes a TiledMatrix too.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.linalg import LinAlgError

from . import _trace_hooks, trace
from ._device import device_info, driver_errors, resolve_queue
from ._params import params
from ._programs import enqueue, get_kernel, int_arg, launch_queue, round_up
from ._scratch import buffer as scratch_buffer
from ._validate import (as_matrix, check_method, factor_in_place, read_status, status_flags,
                        unpack_pair)
from .blas import View, copy_block, gemm, invert_blocks, syrk, trsm, view_of
from .cholesky import factor_device, zero_other_triangle

#: ``method`` values: the recursive BLAS-3 variant and LAPACK's block loops, step by step.
INVERSE_METHODS = ("blocked", "steps")

#: Most work-groups of the log-determinant's first stage (each then loops over the rest
#: of the diagonal): enough to fill a large GPU, few enough for one group to sum them.
LOGDET_MAX_GROUPS = 1024

#: TRMM, per device kind: triangles up to this order (or the diagonal block order, if
#: larger) are multiplied as squares by one GEMM, their zero triangle included: twice the
#: flops on those blocks, far fewer launches than splitting down to the diagonal blocks.
#: On PoCL (2 cores) the diagonal block order was fastest (n = 1024: 0.32 s against 0.47 s
#: with 256); the GPU value is chosen against launch overheads, not yet measured.
TRMM_LEAF = {"GPU": 256}


def trtri_flops(n: int) -> float:
    """LAPACK's flop count of an n x n triangular inverse: n³/3 + 2n/3."""
    return n ** 3 / 3.0 + 2.0 * n / 3.0


def lauum_flops(n: int) -> float:
    """LAPACK's flop count of ``?lauum`` (Uᵀ·U of a triangle): n³/3 + n²/2 + n/6."""
    return n ** 3 / 3.0 + n ** 2 / 2.0 + n / 6.0


def potri_flops(n: int) -> float:
    """Flops of the inverse from the factor (``?potri`` = ``?trtri`` + ``?lauum``): ≈ 2n³/3."""
    return trtri_flops(n) + lauum_flops(n)


def singular(info: int) -> LinAlgError:
    """The error for a zero diagonal entry of a triangle (LAPACK's ``info`` > 0)."""
    return LinAlgError(f"singular matrix: diagonal entry {info} is zero")


def _split(m: int, nb: int) -> int:
    """The first half of a recursive split of order m: a multiple of nb near m/2."""
    return max(nb, (m // 2) // nb * nb)


# ---- device algorithms: enqueue only, never wait -------------------------------------------

def trmm_leaf(queue, nb: int) -> int:
    """Largest triangle :func:`trmm` multiplies as a square: nb or the device's TRMM_LEAF."""
    return max(nb, TRMM_LEAF.get(device_info(queue).kind, 0))


def trmm(queue, m: int, nrhs: int, alpha: float, t: View, b: View, work: cl.Buffer, *,
         dtype, nb: int, left: bool = True, lower: bool = True, trans: bool = False) -> None:
    """B := alpha·op(T)·B (``left``, B is m x nrhs) or alpha·B·op(T) (B is nrhs x m).

    T is m x m triangular (``lower`` or upper) and its *other triangle must hold
    zeros*: a triangle of order up to :func:`trmm_leaf` is multiplied as a
    square by GEMM into ``work`` (at least that order times nrhs elements) and
    copied back.  Larger triangles split in two at a multiple of nb: with
    op(T) = [A 0; C D] (op(T) lower), B := [A·B1; C·B1 + D·B2] from the bottom
    up, each half recursively and C·B1 by one GEMM (the other cases alike).
    """
    if m <= 0 or nrhs <= 0:
        return
    if m <= trmm_leaf(queue, nb):
        if left:
            w = View(work, 0, nrhs)
            gemm(queue, m, nrhs, m, alpha, t, b, 0.0, w, dtype=dtype, trans_a=trans)
            copy_block(queue, m, nrhs, w, b, dtype)
        else:
            w = View(work, 0, m)
            gemm(queue, nrhs, m, m, alpha, b, t, 0.0, w, dtype=dtype, trans_b=trans)
            copy_block(queue, nrhs, m, w, b, dtype)
        return
    n1 = _split(m, nb)
    n2 = m - n1
    c = t.at(n1, 0) if lower else t.at(0, n1)      # op(T)'s off-diagonal block is C or Cᵀ
    b2 = b.at(n1, 0) if left else b.at(0, n1)

    def half(tt, bb, mm):
        trmm(queue, mm, nrhs, alpha, tt, bb, work, dtype=dtype, nb=nb, left=left, lower=lower,
             trans=trans)

    t22 = t.at(n1, n1)
    if left and lower != trans:       # [B1; B2] := [A·B1; C·B1 + D·B2]
        half(t22, b2, n2)
        gemm(queue, n2, nrhs, n1, alpha, c, b, 1.0, b2, dtype=dtype, trans_a=trans)
        half(t, b, n1)
    elif left:                        # [B1; B2] := [A·B1 + C·B2; D·B2]
        half(t, b, n1)
        gemm(queue, n1, nrhs, n2, alpha, c, b2, 1.0, b, dtype=dtype, trans_a=trans)
        half(t22, b2, n2)
    elif lower != trans:              # [B1 B2] := [B1·A + B2·C, B2·D]
        half(t, b, n1)
        gemm(queue, nrhs, n1, n2, alpha, b2, c, 1.0, b, dtype=dtype, trans_b=trans)
        half(t22, b2, n2)
    else:                             # [B1 B2] := [B1·A, B1·C + B2·D]
        half(t22, b2, n2)
        gemm(queue, nrhs, n2, n1, alpha, b, c, 1.0, b2, dtype=dtype, trans_b=trans)
        half(t, b, n1)


def check_diagonal(queue, a: cl_array.Array, flags: cl_array.Array) -> None:
    """Enqueue the search for the first zero on the diagonal of the C-contiguous square
    device array ``a``; :func:`diagonal_info` turns ``flags[0]`` into LAPACK's info."""
    n = a.shape[0]
    wg = params(queue, "wg1d", a.dtype)["WG"]
    kernel = get_kernel(queue, "inverse.cl", "check_diagonal", a.dtype)
    enqueue(queue, kernel, (round_up(n, wg),), (wg,), int_arg(n), a.data,
            np.int64(a.offset // a.dtype.itemsize), int_arg(n), flags.data)


def diagonal_info(n: int, flag: int) -> int:
    """LAPACK's info (1-based order of the first zero diagonal entry, 0 if none) from
    the flag :func:`check_diagonal` left: n − i for the first zero at index i."""
    return n + 1 - flag if flag else 0


def invert_diagonal_blocks(queue, a: View, n: int, nb: int, *, lower: bool, unit: bool,
                           dtype) -> None:
    """Replace each nb x nb diagonal block of the n x n triangle at ``a`` (the last may
    be smaller) by its inverse, zeros in its other triangle: ``trtri_blocks`` (one
    work-group per block) into a workspace, then ``put_diagonal_blocks`` back."""
    w = scratch_buffer(queue, n * nb * np.dtype(dtype).itemsize)
    invert_blocks(queue, n, nb, a, w, dtype=dtype, lower=lower, unit=unit)
    loc = params(queue, "local2d", dtype)
    put = get_kernel(queue, "inverse.cl", "put_diagonal_blocks", dtype)
    enqueue(queue, put, (round_up(nb, loc["X"]), round_up(n, loc["Y"])), (loc["X"], loc["Y"]),
            int_arg(n), int_arg(nb), w, int_arg(nb), a.buf, np.int64(a.off), int_arg(a.ld))


def _lauum_leaf(queue, a: View, n: int, nb: int, *, lower: bool, dtype) -> None:
    """The triangle of Xᵀ·X (``lower``) or X·Xᵀ of the n x n triangle X at ``a``, n <= nb."""
    wg = params(queue, "wg1d", dtype)["WG"]
    kernel = get_kernel(queue, "inverse.cl", "lauum_block", dtype, LOWER=int(lower),
                        TRSM_NB=nb)
    enqueue(queue, kernel, (wg,), (wg,), int_arg(n), a.buf, np.int64(a.off), int_arg(a.ld))


def _block(r0, r1, c0, c1, lower: bool):
    """A region of the logical lower triangle, in the stored triangle's coordinates."""
    return (r0, r1, c0, c1) if lower else (c0, c1, r0, r1)


def _shift(region, origin):
    """A trace region (r0, r1, c0, c1) of a block moved to where the block starts."""
    r, c = origin
    return (region[0] + r, region[1] + r, region[2] + c, region[3] + c)


def trtri_blocked(queue, a: View, n: int, work: cl.Buffer, *, lower: bool, unit: bool,
                  dtype, nb: int, origin=(0, 0)) -> None:
    """X = T⁻¹ in place for the n x n triangle at ``a`` (other triangle zero): all diagonal
    blocks inverted by one launch, then the halves combined bottom-up by TRMMs.
    ``origin``: where ``a`` starts in the traced matrix (a tile of a tiled one)."""
    flops = sum(trtri_flops(min(nb, n - k)) for k in range(0, n, nb))
    with trace.step("trti2", _shift((0, n, 0, n), origin), flops=flops):
        invert_diagonal_blocks(queue, a, n, nb, lower=lower, unit=unit, dtype=dtype)

    def combine(k0: int, m: int) -> None:
        if m <= nb:
            return
        n1 = _split(m, nb)
        n2 = m - n1
        combine(k0, n1)
        combine(k0 + n1, n2)
        x11, x22 = a.at(k0, k0), a.at(k0 + n1, k0 + n1)
        off = _block(k0 + n1, k0 + m, k0, k0 + n1, lower)
        with trace.step("trmm", _shift(off, origin), flops=float(n1 * n2 * (n1 + n2))):
            t = a.at(off[0], off[2])
            # lower: T21 := −X22·T21·X11;  upper: T12 := −X11·T12·X22
            first, second = (x22, x11) if lower else (x11, x22)
            m1, m2 = (n2, n1) if lower else (n1, n2)
            trmm(queue, m1, m2, -1.0, first, t, work, dtype=dtype, nb=nb, lower=lower)
            trmm(queue, m2, m1, 1.0, second, t, work, dtype=dtype, nb=nb, lower=lower,
                 left=False)

    combine(0, n)


def trtri_steps(queue, a: View, n: int, work: cl.Buffer, *, lower: bool, unit: bool,
                dtype, nb: int) -> None:
    """X = T⁻¹ in place, LAPACK ``?trtri``'s block loop (Macindoe's Algorithms 4 and 5).

    Upper, block columns left to right: T12 := −X11·T12 (TRMM), T12 := T12·T22⁻¹
    (TRSM), T22 := T22⁻¹.  Lower, right to left: T21 := −X22·T21, T21 := T21·T11⁻¹,
    T11 := T11⁻¹.  (LAPACK puts the minus sign on the TRSM.)  Each operation is one
    trace step.
    """
    starts = list(range(0, n, nb))
    for j in (starts if not lower else reversed(starts)):
        jb = min(nb, n - j)
        rest = j if not lower else n - j - jb     # order of the inverse found so far
        if rest:
            done = a.at(0, 0) if not lower else a.at(j + jb, j + jb)
            panel = a.at(0, j) if not lower else a.at(j + jb, j)
            reg = (j + jb, n, j, j + jb) if lower else (0, j, j, j + jb)
            with trace.step("trmm", reg, flops=float(rest * rest * jb)):
                trmm(queue, rest, jb, -1.0, done, panel, work, dtype=dtype, nb=nb,
                     lower=lower)
            with trace.step("trsm", reg, flops=float(jb * jb * rest)):
                trsm(queue, jb, rest, a.at(j, j), panel, dtype=dtype, left=False,
                     lower=lower, unit=unit)
        with trace.step("trti2", (j, j + jb, j, j + jb), pivot=(j, j), flops=trtri_flops(jb)):
            invert_diagonal_blocks(queue, a.at(j, j), jb, nb, lower=lower, unit=unit,
                                   dtype=dtype)


def lauum_blocked(queue, a: View, n: int, work: cl.Buffer, *, lower: bool, dtype,
                  nb: int, origin=(0, 0)) -> None:
    """The triangle of Xᵀ·X (``lower``) or X·Xᵀ in place of the triangle X at ``a``.

    Lower, X = [X11 0; X21 X22]: R11 = lauum(X11) + X21ᵀ·X21 (SYRK),
    R21 = X22ᵀ·X21 (TRMM), R22 = lauum(X22), in that order (each reads what the
    next overwrites); upper alike with R12 = X12·X22ᵀ.  Leaves: ``lauum_block``.
    ``origin``: where ``a`` starts in the traced matrix (a tile of a tiled one).
    """
    def rec(k0: int, m: int) -> None:
        if m <= nb:
            with trace.step("lauu2", _shift((k0, k0 + m, k0, k0 + m), origin),
                            pivot=(k0 + origin[0], k0 + origin[1]), flops=lauum_flops(m)):
                _lauum_leaf(queue, a.at(k0, k0), m, nb, lower=lower, dtype=dtype)
            return
        n1 = _split(m, nb)
        n2 = m - n1
        rec(k0, n1)
        off = _block(k0 + n1, k0 + m, k0, k0 + n1, lower)
        x = a.at(off[0], off[2])
        with trace.step("syrk", _shift((k0, k0 + n1, k0, k0 + n1), origin),
                        flops=float(n1 * (n1 + 1) * n2)):
            syrk(queue, n1, n2, 1.0, x, 1.0, a.at(k0, k0), dtype=dtype, lower=lower,
                 trans=lower)
        with trace.step("trmm", _shift(off, origin), flops=float(n2 * n2 * n1)):
            trmm(queue, n2, n1, 1.0, a.at(k0 + n1, k0 + n1), x, work, dtype=dtype, nb=nb,
                 lower=lower, trans=True, left=lower)
        rec(k0 + n1, n2)

    rec(0, n)


def lauum_steps(queue, a: View, n: int, work: cl.Buffer, *, lower: bool, dtype,
                nb: int) -> None:
    """LAPACK ``?lauum``'s block loop (Macindoe's Algorithms 6 and 7), one step per operation.

    Per diagonal block i (ib wide), lower: A(i, :i) := X_iiᵀ·A(i, :i) (TRMM),
    X_ii := X_iiᵀ·X_ii, A(i, :i) += A(i+, i)ᵀ·A(i+, :i) (GEMM),
    A(i, i) += A(i+, i)ᵀ·A(i+, i) (SYRK); upper the transposes.
    """
    for i in range(0, n, nb):
        ib = min(nb, n - i)
        rest = n - i - ib
        xii = a.at(i, i)
        row = _block(i, i + ib, 0, i, lower)       # the block row left of X_ii (lower)
        if i:
            with trace.step("trmm", row, flops=float(ib * ib * i)):
                trmm(queue, ib, i, 1.0, xii, a.at(row[0], row[2]), work, dtype=dtype, nb=nb,
                     lower=lower, trans=True, left=lower)
        with trace.step("lauu2", (i, i + ib, i, i + ib), pivot=(i, i), flops=lauum_flops(ib)):
            _lauum_leaf(queue, xii, ib, nb, lower=lower, dtype=dtype)
        if not rest:
            continue
        below = a.at(i + ib, i) if lower else a.at(i, i + ib)     # X(i+:, i) or X(i, i+:)
        if i:
            with trace.step("gemm", row, flops=2.0 * ib * i * rest):
                if lower:
                    gemm(queue, ib, i, rest, 1.0, below, a.at(i + ib, 0), 1.0, a.at(i, 0),
                         dtype=dtype, trans_a=True)
                else:
                    gemm(queue, i, ib, rest, 1.0, a.at(0, i + ib), below, 1.0, a.at(0, i),
                         dtype=dtype, trans_b=True)
        with trace.step("syrk", (i, i + ib, i, i + ib), flops=float(ib * (ib + 1) * rest)):
            syrk(queue, ib, rest, 1.0, below, 1.0, xii, dtype=dtype, lower=lower, trans=lower)


_TRTRI = {"blocked": trtri_blocked, "steps": trtri_steps}
_LAUUM = {"blocked": lauum_blocked, "steps": lauum_steps}


def _symmetrize(queue, a: cl_array.Array, *, lower: bool) -> None:
    """Mirror the stored triangle of the square device array ``a`` into the other."""
    n = a.shape[0]
    loc = params(queue, "local2d", a.dtype)
    kernel = get_kernel(queue, "ad2at.cl", "symmetrize", a.dtype, LOWER=int(lower))
    enqueue(queue, kernel, (round_up(n, loc["X"]), round_up(n, loc["Y"])),
            (loc["X"], loc["Y"]), a.data, np.int64(a.offset // a.dtype.itemsize), int_arg(n),
            int_arg(n))


def invert_device(queue, a: cl_array.Array, *, lower: bool, method: str = "blocked",
                  unit: bool = False, product: bool = True, full: bool = False,
                  check_finite: bool = False) -> None:
    """T⁻¹ (``product=False``: ``?trtri``) or A⁻¹ from A's factor (``?potri``) in place
    of the C-contiguous n x n device array ``a``; raise LinAlgError for a zero diagonal
    entry (before writing anything).

    ``check_finite`` counts the NaN/Inf entries of ``a`` beside the diagonal check
    (``a`` must then be a private copy); ``full`` mirrors A⁻¹'s triangle.
    """
    n, dtype = a.shape[0], a.dtype
    with _trace_hooks.suspended():      # input checks: not part of the recorded run
        flags = status_flags(queue, a, check_finite)
        if not unit:
            check_diagonal(queue, a, flags)
        info = diagonal_info(n, read_status(flags))
    if info:
        raise singular(info)
    nb = params(queue, "trsm", dtype)["TRSM_NB"]
    work = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE,
                     n * trmm_leaf(queue, nb) * dtype.itemsize)
    name = "cho_inverse" if product else "trtri"
    with trace.run(name, method, queue, (n, n), dtype, a.get, lower=lower, block=nb,
                   unit=unit, full=full):
        with launch_queue(queue) as q:
            with trace.step("zero", _block(0, n, 0, n, not lower)):
                zero_other_triangle(q, a, lower=lower)
            _TRTRI[method](q, view_of(a), n, work, lower=lower, unit=unit, dtype=dtype, nb=nb)
            if product:
                _LAUUM[method](q, view_of(a), n, work, lower=lower, dtype=dtype, nb=nb)
            if full:
                with trace.step("symmetrize", (0, n, 0, n)):
                    _symmetrize(q, a, lower=lower)


def logdet_device(queue, buf: cl.Buffer, off: int, n: int, ld: int, *, dtype,
                  packed: bool = False, lower: bool = True, wide: bool | None = None) -> float:
    """log det A = 2 Σ log|cᵢᵢ| of the factor of order n at ``buf[off:]`` (waits for it).

    Full storage reads cᵢᵢ at off + i·(ld + 1) (ld = 0: a vector of the diagonal);
    ``packed`` reads an RFP array (``lower`` its layout).  ``wide`` accumulates in
    float64 (default: where the device has fp64), else in the factor's dtype; both
    compensated (inverse.cl).  A zero diagonal entry gives −inf.
    """
    wide = device_info(queue).fp64 if wide is None else bool(wide)
    wg = params(queue, "wg1d", dtype)["WG"]
    groups = max(1, min(-(-n // wg), LOGDET_MAX_GROUPS))
    acc = np.float64 if wide else dtype
    partial = cl_array.empty(queue, 2 * groups, acc)
    out = cl_array.empty(queue, 2, acc)
    opts = dict(WG=wg, ACC64=int(wide), PACKED=int(packed), LOWER=int(lower))
    first = get_kernel(queue, "inverse.cl", "logdet_partial", dtype, **opts)
    final = get_kernel(queue, "inverse.cl", "logdet_final", dtype, **opts)
    with trace.run("cho_logdet", "packed" if packed else "full", queue, (n, n), dtype,
                   wide=wide):
        with trace.step("reduce", (0, n, 0, n), flops=float(n),
                        nbytes=float(n * np.dtype(dtype).itemsize), groups=groups):
            enqueue(queue, first, (groups * wg,), (wg,), int_arg(n), buf, np.int64(off),
                    int_arg(ld), partial.data)
            enqueue(queue, final, (wg,), (wg,), int_arg(groups), partial.data, out.data)
        s, e = out.get()
    return 2.0 * (float(s) + float(e))


# ---- public API ----------------------------------------------------------------------------

@driver_errors
def trtri(t, *, lower: bool = False, unit_diagonal: bool = False, overwrite_t: bool = False,
          check_finite: bool = True, method: str = "blocked", queue=None):
    """Inverse of a triangular matrix, on the OpenCL device (``scipy.linalg.lapack.?trtri``).

    Parameters
    ----------
    t : (n, n) array_like of float32/float64, or a pyopencl array (any view).
        Only the triangle named by ``lower`` is read (with ``unit_diagonal``
        not its diagonal either).
    lower : T is lower triangular (else upper, the default as in LAPACK)
    unit_diagonal : take T's diagonal as ones
    overwrite_t : allow the result to be written into ``t`` (a permission, as in
        :func:`oclla.cholesky`)
    check_finite : reject NaN/Inf anywhere in ``t`` (ValueError)
    method : "blocked" (default) or "steps"
        "blocked": recursive halving on the shared BLAS-3 layer (diagonal blocks
        inverted in one launch, off-diagonal blocks by triangular
        multiplications); "steps": LAPACK's block loop, one trace step per
        operation (for the viewer)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    X = T⁻¹, (n, n), in the same triangle; the other triangle is zero (LAPACK
    leaves it as it was) and with ``unit_diagonal`` the diagonal holds the
    ones.  A device array when ``t`` is one.

    Raises
    ------
    numpy.linalg.LinAlgError
        "singular matrix: diagonal entry k is zero" (LAPACK's info k).
    ValueError
        ``t`` not square, NaN/Inf with ``check_finite``, an unknown ``method``
    TypeError
        a dtype other than float32/float64
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    check_method(method, INVERSE_METHODS)
    queue = resolve_queue(queue)
    x, _ = factor_in_place(
        t, queue, lambda work, deferred: invert_device(
            queue, work, lower=bool(lower), method=method, unit=bool(unit_diagonal),
            product=False, check_finite=deferred),
        overwrite_a=overwrite_t, check_finite=check_finite)
    return x


@driver_errors
def cho_inverse(c_and_lower, *, full: bool = True, overwrite_c: bool = False,
                check_finite: bool = True, method: str = "blocked", queue=None):
    """A⁻¹ from the Cholesky factor of A (LAPACK ``?potri``), on the OpenCL device.

    Parameters
    ----------
    c_and_lower : ``(c, lower)`` as :func:`oclla.cho_factor` returns it (or
        ``(oclla.cholesky(a, lower=lower), lower)``); only the factor's
        triangle of ``c`` is read.  Host or device (any view).
    full : fill both triangles of the symmetric A⁻¹ (default); ``False`` returns
        only the factor's triangle, the other one zero (``?potri``'s result)
    overwrite_c, check_finite, method : as :func:`trtri`
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    (n, n) array A⁻¹ = U⁻¹U⁻ᵀ (upper factor) or L⁻ᵀL⁻¹; a device array when
    ``c`` is one.  A :class:`oclla.tiled.TiledMatrix` ``c`` (the triangle
    ``lower`` names, in lower/full or upper storage) gives a TiledMatrix holding
    A⁻¹'s triangle (``c`` itself with ``overwrite_c``; ``full`` applies to
    arrays); a host ``c`` larger
    than one buffer of the device is inverted in tiles (:mod:`oclla.tiled_inverse`).

    Raises
    ------
    numpy.linalg.LinAlgError
        "singular matrix: diagonal entry k is zero" for a zero on the factor's
        diagonal (before anything is written)
    ValueError, TypeError
        as :func:`trtri`, and a ``c_and_lower`` that is not a ``(c, lower)`` pair
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    c, lower = unpack_pair(c_and_lower, "c_and_lower", "cho_factor")
    check_method(method, INVERSE_METHODS)
    queue = resolve_queue(queue)
    from . import tiled
    if isinstance(c, tiled.TiledMatrix) or tiled.exceeds_buffer(c, queue):
        from .tiled_inverse import cho_inverse_beyond
        return cho_inverse_beyond(c, bool(lower), full=full, overwrite_c=overwrite_c,
                                  check_finite=check_finite, queue=queue)
    inv, _ = factor_in_place(
        c, queue, lambda work, deferred: invert_device(
            queue, work, lower=bool(lower), method=method, full=full, check_finite=deferred),
        overwrite_a=overwrite_c, check_finite=check_finite)
    return inv


@driver_errors
def cho_logdet(c_and_lower, *, check_finite: bool = True, queue=None) -> float:
    """log det A = 2 Σ log|cᵢᵢ| from the Cholesky factor of A, summed on the device.

    The sum is accumulated in float64 where the device supports it, else in
    float32, with compensation in both cases, and stays finite where det A
    itself over- or underflows.

    Parameters
    ----------
    c_and_lower : ``(c, lower)`` as for :func:`cho_inverse` (only c's diagonal
        is used; a host c sends only its diagonal to the device, a
        :class:`oclla.tiled.TiledMatrix` is summed per diagonal tile)
    check_finite : reject NaN/Inf in ``c`` (ValueError)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    float
        log det A; −inf for a zero on the diagonal (singular A).

    Raises
    ------
    ValueError, TypeError
        a ``c`` that is not square or not float32/float64, NaN/Inf with
        ``check_finite``, a ``c_and_lower`` that is not a pair
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    c, _ = unpack_pair(c_and_lower, "c_and_lower", "cho_factor")
    queue = resolve_queue(queue)
    from . import tiled
    if isinstance(c, tiled.TiledMatrix):
        from .tiled_inverse import logdet_tiles
        return logdet_tiles(c)
    if tiled.exceeds_buffer(c, queue):          # only the diagonal goes to the device
        c_ = tiled.host_matrix(c, check_finite=check_finite, queue=queue)
    else:
        c_ = as_matrix(c, queue, name="c", check_finite=check_finite)
    n, dtype = c_.shape[0], c_.dtype
    if n == 0:
        return 0.0
    if isinstance(c_, cl_array.Array):
        return logdet_device(queue, c_.base_data, c_.offset // dtype.itemsize, n, n,
                             dtype=dtype)
    diagonal = cl_array.to_device(queue, np.ascontiguousarray(np.diagonal(c_)))
    return logdet_device(queue, diagonal.data, 0, n, 0, dtype=dtype)


@driver_errors
def inv_spd(a, *, lower: bool = False, overwrite_a: bool = False, check_finite: bool = True,
            queue=None):
    """A⁻¹ of a symmetric positive definite A: blocked Cholesky, then :func:`cho_inverse`.

    Parameters
    ----------
    a : (n, n) array_like of float32/float64, or a pyopencl array (any view);
        only the triangle named by ``lower`` is read
    lower : read the lower triangle (default: the upper, as scipy)
    overwrite_a : allow the result to be written into ``a`` (a permission)
    check_finite : reject NaN/Inf in ``a`` (ValueError)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    (n, n) array
        The full symmetric inverse (a device array for a device ``a``).  A
        :class:`oclla.tiled.TiledMatrix` ``a`` (the triangle ``lower`` names)
        gives a TiledMatrix holding the inverse's triangle (``a`` itself with
        ``overwrite_a``); a host ``a`` larger than one buffer of the device is
        factored and inverted in tiles (:mod:`oclla.tiled_inverse`).

    Raises
    ------
    numpy.linalg.LinAlgError
        "leading minor of order k is not positive definite", as
        :func:`oclla.cholesky`
    ValueError, TypeError
        as :func:`oclla.cholesky`
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble
    """
    queue = resolve_queue(queue)
    from . import tiled
    if isinstance(a, tiled.TiledMatrix) or tiled.exceeds_buffer(a, queue):
        from .tiled_inverse import inv_spd_beyond
        return inv_spd_beyond(a, bool(lower), overwrite_a=overwrite_a,
                              check_finite=check_finite, queue=queue)

    def invert(work, deferred):
        factor_device(queue, work, lower=bool(lower), method="blocked", check_finite=deferred)
        invert_device(queue, work, lower=bool(lower), full=True)

    inv, _ = factor_in_place(a, queue, invert, overwrite_a=overwrite_a,
                             check_finite=check_finite)
    return inv
