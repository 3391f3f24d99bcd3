"""Inverse and log-determinant of an SPD matrix from its Cholesky factor held in tiles.

The tiled counterpart of :mod:`oclla.inverse` for a factor L (A = L·Lᵀ) in a
:class:`oclla.tiled.TiledMatrix`: ``triangle="lower"`` or full storage holds L
in block columns (tile (i, k) in panel k), ``triangle="upper"`` holds U = Lᵀ in
block rows, where every step below runs transposed (:class:`Lower`).  With T
tiles per side, tiles X_ik of X = L⁻¹ and 0-based tile indices:

TRTRI (LAPACK ``dtrtri``'s lower block loop, block columns right to left)::

    for j = T-1 .. 0, with R the tiles below j (X_RR = L_RR⁻¹ already found):
        L_Rj := −X_RR · L_Rj       for k in R from the last: L_(>k)j −= X_(>k)k·L_kj
                                   (one GEMM: the rows below k are one operand of
                                   panel k), then L_kj := −X_kk·L_kj (TRMM)
        L_Rj := L_Rj · L_jj⁻¹      one TRSM on the rows below the diagonal tile
        X_jj := L_jj⁻¹             :func:`oclla.inverse.trtri_blocked` on the tile

LAUUM (``dlauum``'s lower block loop: the lower triangle of A⁻¹ = Xᵀ·X)::

    for i = 0 .. T-1, with D the tiles below i:
        X_ik := X_iiᵀ·X_ik                 for every k < i   (TRMM)
        X_ii := X_iiᵀ·X_ii (its lower triangle)   :func:`oclla.inverse.lauum_blocked`
        X_ik += X_Diᵀ·X_Dk                 for every k < i   (GEMM)
        X_ii += X_Diᵀ·X_Di                 (SYRK, lower triangle)

Each step reads only tiles that the later ones overwrite, so everything is in
place; a step spans one tile or one panel, never two buffers.  The other
triangle of every diagonal tile is zeroed first and stays zero.

The log-determinant is 2 Σ log L_ii: :func:`oclla.inverse.logdet_device` on the
diagonal of each diagonal tile (a compensated sum on the device), the T numbers
summed on the host.

:func:`oclla.cho_inverse` and :func:`oclla.inv_spd` come here for a
:class:`~oclla.tiled.TiledMatrix` or a host matrix larger than one buffer of
the device (:func:`oclla.tiled.exceeds_buffer`); :func:`oclla.cho_logdet` for a
TiledMatrix (a host factor sends only its diagonal to the device anyway).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from . import trace
from ._device import DeviceError
from ._params import params
from ._programs import enqueue, get_kernel, int_arg, int_zeros, launch_queue, round_up
from .blas import gemm, syrk, trsm
from .cholesky import zero_other_triangle
from .inverse import (diagonal_info, lauum_blocked, logdet_device, singular, trmm,
                      trmm_leaf, trtri_blocked)
from .tiled import (TiledMatrix, check_layout, choose_tile, factor_tiles, fits_in_core,
                    host_matrix)


def _tiles(tm: TiledMatrix):
    """(start, width) of each tile row/column of the square tiled matrix."""
    n, t = tm.shape[0], tm.tile
    return [(k0, min(t, n - k0)) for k0 in range(0, n, t)]


def stores_lower(tm: TiledMatrix) -> bool:
    """Whether ``tm`` holds L (block columns) rather than U = Lᵀ (block rows);
    ValueError unless it is square."""
    lower = tm.triangle != "upper"
    check_layout(tm, lower)
    return lower


def diagonal_zero(tm: TiledMatrix) -> int:
    """LAPACK's info of the tiled triangle: the 1-based order of its first zero diagonal
    entry, 0 if none (one ``check_diagonal`` launch per diagonal tile, one wait)."""
    queue, dtype = tm.queue, tm.dtype
    wg = params(queue, "wg1d", dtype)["WG"]
    kernel = get_kernel(queue, "inverse.cl", "check_diagonal", dtype)
    flags = []
    for k0, kb in _tiles(tm):
        d = tm.view(k0, k0)
        flag = int_zeros(queue)
        enqueue(queue, kernel, (round_up(kb, wg),), (wg,), int_arg(kb), d.buf,
                np.int64(d.off), int_arg(d.ld), flag.data)
        flags.append(flag)
    host = np.zeros(len(flags), np.int32)
    events = [cl.enqueue_copy(queue, host[p:p + 1], f.data, is_blocking=False)
              for p, f in enumerate(flags)]
    if events:
        cl.wait_for_events(events)
    for (k0, kb), flag in zip(_tiles(tm), host):
        if flag:
            return k0 + diagonal_info(kb, int(flag))
    return 0


class Lower:
    """The logical lower factor L of a tiled matrix and the device BLAS on its tiles.

    Lower storage (``triangle`` "lower" or None) holds L itself; upper storage holds
    U = Lᵀ in block rows, where L's tile (i, k) is U's tile (k, i) read transposed.
    Each operation below is stated on L and runs on U as its transpose
    ((A·B)ᵀ = Bᵀ·Aᵀ: the operands swap, a left-side TRMM/TRSM becomes a right-side one
    with the upper triangle).
    """

    def __init__(self, tm: TiledMatrix, queue, work: cl.Buffer, nb: int):
        self.tm, self.queue, self.work, self.nb = tm, queue, work, nb
        self.upper = tm.triangle == "upper"
        self.dtype = tm.dtype

    def at(self, i: int, j: int):
        """The view of L from entry (i, j) on (of U from (j, i) on)."""
        return self.tm.view(j, i) if self.upper else self.tm.view(i, j)

    def region(self, r0, r1, c0, c1) -> tuple:
        """A trace region of L where it is stored."""
        return (c0, c1, r0, r1) if self.upper else (r0, r1, c0, c1)

    def gemm(self, m, n, k, alpha, a, b, beta, c, *, trans_a=False, trans_b=False):
        """C (m x n) := alpha·op(A)·op(B) + beta·C."""
        if self.upper:
            gemm(self.queue, n, m, k, alpha, b, a, beta, c, dtype=self.dtype,
                 trans_a=trans_b, trans_b=trans_a)
        else:
            gemm(self.queue, m, n, k, alpha, a, b, beta, c, dtype=self.dtype,
                 trans_a=trans_a, trans_b=trans_b)

    def trmm(self, m, nrhs, alpha, t, b, *, trans=False):
        """B (m x nrhs) := alpha·op(T)·B for a diagonal tile T (other triangle zero)."""
        trmm(self.queue, m, nrhs, alpha, t, b, self.work, dtype=self.dtype, nb=self.nb,
             lower=not self.upper, trans=trans, left=not self.upper)

    def trsm_right(self, m, nrhs, t, b):
        """B (nrhs x m) := B·T⁻¹ for a diagonal tile T."""
        trsm(self.queue, m, nrhs, t, b, dtype=self.dtype, left=self.upper,
             lower=not self.upper)

    def syrk_t(self, n, k, alpha, a, beta, c):
        """The stored triangle of C (n x n) := alpha·Aᵀ·A + beta·C, A k x n."""
        syrk(self.queue, n, k, alpha, a, beta, c, dtype=self.dtype, lower=not self.upper,
             trans=not self.upper)


def trtri_tiles(op: Lower) -> None:
    """X = L⁻¹ in place of the tiled factor (module docstring), the diagonal tiles'
    other triangle zero; enqueue only."""
    n, tiles = op.tm.shape[0], _tiles(op.tm)
    for j in reversed(range(len(tiles))):
        j0, jb = tiles[j]
        rest = n - j0 - jb
        if rest:
            with trace.step("trmm", op.region(j0 + jb, n, j0, j0 + jb),
                            flops=float(rest * rest * jb)):
                for k0, kb in reversed(tiles[j + 1:]):
                    under = n - k0 - kb
                    if under:        # L_(>k)j −= X_(>k)k · L_kj, with L_kj not yet updated
                        op.gemm(under, jb, kb, -1.0, op.at(k0 + kb, k0), op.at(k0, j0), 1.0,
                                op.at(k0 + kb, j0))
                    op.trmm(kb, jb, -1.0, op.at(k0, k0), op.at(k0, j0))
            with trace.step("trsm", op.region(j0 + jb, n, j0, j0 + jb),
                            flops=float(jb * jb * rest)):
                op.trsm_right(jb, rest, op.at(j0, j0), op.at(j0 + jb, j0))
        trtri_blocked(op.queue, op.at(j0, j0), jb, op.work, lower=not op.upper, unit=False,
                      dtype=op.dtype, nb=op.nb, origin=(j0, j0))


def lauum_tiles(op: Lower) -> None:
    """The triangle of Xᵀ·X in place of the tiled triangle X = L⁻¹ (module docstring);
    enqueue only."""
    n, tiles = op.tm.shape[0], _tiles(op.tm)
    for i, (i0, ib) in enumerate(tiles):
        rest = n - i0 - ib
        left = tiles[:i]
        if left:
            with trace.step("trmm", op.region(i0, i0 + ib, 0, i0), flops=float(ib * ib * i0)):
                for k0, kb in left:
                    op.trmm(ib, kb, 1.0, op.at(i0, i0), op.at(i0, k0), trans=True)
        lauum_blocked(op.queue, op.at(i0, i0), ib, op.work, lower=not op.upper,
                      dtype=op.dtype, nb=op.nb, origin=(i0, i0))
        if not rest:
            continue
        down = op.at(i0 + ib, i0)                        # X_Di, rest x ib
        if left:
            with trace.step("gemm", op.region(i0, i0 + ib, 0, i0),
                            flops=2.0 * ib * i0 * rest):
                for k0, kb in left:
                    op.gemm(ib, kb, rest, 1.0, down, op.at(i0 + ib, k0), 1.0, op.at(i0, k0),
                            trans_a=True)
        with trace.step("syrk", (i0, i0 + ib, i0, i0 + ib), flops=float(ib * (ib + 1) * rest)):
            op.syrk_t(ib, rest, 1.0, down, 1.0, op.at(i0, i0))


def invert_tiles(tm: TiledMatrix, *, product: bool = True) -> None:
    """L⁻¹ (``product=False``) or A⁻¹'s stored triangle (A = L·Lᵀ) in place of the tiled
    factor ``tm`` (L in lower or full storage, U = Lᵀ in upper storage, whose result is
    then U⁻¹ or the upper triangle); the other triangle of its diagonal tiles becomes
    zero (the tiles above them, in full storage, are neither read nor written).

    Raises LinAlgError "singular matrix: diagonal entry k is zero" (LAPACK's info k)
    before anything is written; ValueError for a matrix that is not square.
    """
    lower = stores_lower(tm)
    n, dtype, queue = tm.shape[0], tm.dtype, tm.queue
    if n == 0:
        return
    nb = params(queue, "trsm", dtype)["TRSM_NB"]
    work = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE,
                     min(tm.tile, n) * trmm_leaf(queue, nb) * dtype.itemsize)
    name = "cho_inverse" if product else "trtri"
    with trace.run(name, "tiled", queue, (n, n), dtype, lower=lower, tile=tm.tile, block=nb):
        with trace.step("check", (0, n, 0, n)):
            info = diagonal_zero(tm)
        if info:
            raise singular(info)
        with launch_queue(queue) as q:
            with trace.step("zero", (0, n, 0, n)):
                for k0, kb in _tiles(tm):
                    zero_other_triangle(q, tm.view(k0, k0), kb, lower=lower, dtype=dtype)
            op = Lower(tm, q, work, nb)
            trtri_tiles(op)
            if product:
                lauum_tiles(op)
    queue.finish()


def logdet_tiles(tm: TiledMatrix) -> float:
    """log det A = 2 Σ log|L_ii| of a tiled factor (either triangle: only the diagonal
    tiles' diagonals are read), one device sum per diagonal tile, added on the host."""
    if tm.shape[0] != tm.shape[1]:
        raise ValueError(f"a Cholesky factor needs a square matrix, got shape {tm.shape}")
    total = 0.0
    for k0, kb in _tiles(tm):
        d = tm.view(k0, k0)
        total += logdet_device(tm.queue, d.buf, d.off, kb, d.ld, dtype=tm.dtype)
    return total


# ---- what the public functions call --------------------------------------------------------

def _upload(arr: np.ndarray, lower: bool, queue) -> TiledMatrix:
    """The triangle ``lower`` names of a host factor or matrix in a new TiledMatrix of
    that triangle; DeviceError where its tiles do not fit the device's memory."""
    n, dtype = arr.shape[0], arr.dtype
    tile = choose_tile(queue, n, dtype)
    if not fits_in_core(queue, n, dtype, tile):
        raise DeviceError(f"the {n} x {n} {dtype} triangle does not fit the device's memory "
                          f"in tiles; the inverse needs it resident")
    return TiledMatrix.from_numpy(arr, tile=tile, triangle="lower" if lower else "upper",
                                  queue=queue, check_finite=False)


def _to_host(tm: TiledMatrix, *, full: bool) -> np.ndarray:
    """A⁻¹ from the tiles of its stored triangle: only that triangle (the other one
    zero), or ``full``, mirrored a block of rows at a time."""
    out = tm.to_numpy()                       # zeros beyond the stored tiles
    lower = tm.triangle != "upper"
    tm.release()
    n = out.shape[0]
    for i0 in range(0, n, tm.tile) if full else ():
        i1 = min(n, i0 + tm.tile)
        block = out[i0:i1, i0:i1]
        if lower:
            block += np.tril(block, -1).T
            out[i0:i1, i1:] = out[i1:, i0:i1].T
        else:
            block += np.triu(block, 1).T
            out[i1:, i0:i1] = out[i0:i1, i1:].T
    return out


def _tiled_operand(c, lower: bool, queue) -> TiledMatrix:
    if c.queue.context != queue.context:
        raise ValueError("c lives on another OpenCL context than the queue")
    check_layout(c, lower)
    return c


def cho_inverse_beyond(c, lower: bool, *, full: bool, overwrite_c: bool, check_finite: bool,
                       queue):
    """:func:`oclla.cho_inverse` of a TiledMatrix (its factor's triangle, as ``lower``
    names it, replaced by A⁻¹'s: ``c`` itself with ``overwrite_c``, else a copy) or of a
    host factor larger than one buffer (a new host array; ``c`` is never written)."""
    if isinstance(c, TiledMatrix):
        tm = _tiled_operand(c, lower, queue)
        work = tm if overwrite_c else tm.copy()
        invert_tiles(work)
        return work
    arr = host_matrix(c, check_finite=check_finite, queue=queue)
    tm = _upload(arr, lower, queue)
    try:
        invert_tiles(tm)
    except BaseException:
        tm.release()
        raise
    return _to_host(tm, full=full)


def inv_spd_beyond(a, lower: bool, *, overwrite_a: bool, check_finite: bool, queue):
    """:func:`oclla.inv_spd` of a TiledMatrix (the triangle ``lower`` names replaced by
    A⁻¹'s: ``a`` itself with ``overwrite_a``, else a copy) or of a host matrix larger
    than one buffer (the full inverse in a new host array; ``a`` is never written)."""
    if isinstance(a, TiledMatrix):
        tm = _tiled_operand(a, lower, queue)
        work = tm if overwrite_a else tm.copy()
        factor_tiles(work, lower=lower)
        invert_tiles(work)
        return work
    arr = host_matrix(a, check_finite=check_finite, queue=queue)
    tm = _upload(arr, lower, queue)
    try:
        factor_tiles(tm, lower=lower)
        invert_tiles(tm)
    except BaseException:
        tm.release()
        raise
    return _to_host(tm, full=True)
