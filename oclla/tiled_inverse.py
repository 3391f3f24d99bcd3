"""Inverse and log-determinant of an SPD matrix from its Cholesky factor held in tiles.

The tiled counterpart of :mod:`oclla.inverse` for a factor L (A = L·Lᵀ) in a
lower :class:`oclla.tiled.TiledMatrix` (``triangle="lower"`` or full storage;
block columns of ``tile`` columns, tile (i, k) in panel k).  With T tiles per
side, tiles X_ik of X = L⁻¹ and 0-based tile indices:

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
place; a step spans one tile or one panel, never two buffers.  The strict upper
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


def check_lower(tm: TiledMatrix) -> None:
    """ValueError unless ``tm`` is square and holds the lower triangle in block columns."""
    check_layout(tm, True)


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


def trtri_tiles(queue, tm: TiledMatrix, work: cl.Buffer, nb: int) -> None:
    """X = L⁻¹ in place of the lower tiled triangle (module docstring), diagonal tiles'
    other triangle zero; enqueue only."""
    dtype, n, tiles = tm.dtype, tm.shape[0], _tiles(tm)
    for j in reversed(range(len(tiles))):
        j0, jb = tiles[j]
        below = tiles[j + 1:]
        rest = n - j0 - jb
        if rest:
            with trace.step("trmm", (j0 + jb, n, j0, j0 + jb),
                            flops=float(rest * rest * jb)):
                for k0, kb in reversed(below):
                    under = n - k0 - kb
                    if under:        # L_(>k)j −= X_(>k)k · L_kj, with L_kj not yet updated
                        gemm(queue, under, jb, kb, -1.0, tm.view(k0 + kb, k0),
                             tm.view(k0, j0), 1.0, tm.view(k0 + kb, j0), dtype=dtype)
                    trmm(queue, kb, jb, -1.0, tm.view(k0, k0), tm.view(k0, j0), work,
                         dtype=dtype, nb=nb, lower=True)
            with trace.step("trsm", (j0 + jb, n, j0, j0 + jb), flops=float(jb * jb * rest)):
                trsm(queue, jb, rest, tm.view(j0, j0), tm.view(j0 + jb, j0), dtype=dtype,
                     left=False, lower=True)
        trtri_blocked(queue, tm.view(j0, j0), jb, work, lower=True, unit=False,
                      dtype=dtype, nb=nb, origin=(j0, j0))


def lauum_tiles(queue, tm: TiledMatrix, work: cl.Buffer, nb: int) -> None:
    """The lower triangle of Xᵀ·X in place of the lower tiled triangle X (module
    docstring); enqueue only."""
    dtype, n, tiles = tm.dtype, tm.shape[0], _tiles(tm)
    for i, (i0, ib) in enumerate(tiles):
        rest = n - i0 - ib
        left = tiles[:i]
        if left:
            with trace.step("trmm", (i0, i0 + ib, 0, i0), flops=float(ib * ib * i0)):
                for k0, kb in left:
                    trmm(queue, ib, kb, 1.0, tm.view(i0, i0), tm.view(i0, k0), work,
                         dtype=dtype, nb=nb, lower=True, trans=True)
        lauum_blocked(queue, tm.view(i0, i0), ib, work, lower=True, dtype=dtype, nb=nb,
                      origin=(i0, i0))
        if not rest:
            continue
        down = tm.view(i0 + ib, i0)                      # X_Di, rest x ib
        if left:
            with trace.step("gemm", (i0, i0 + ib, 0, i0), flops=2.0 * ib * i0 * rest):
                for k0, kb in left:
                    gemm(queue, ib, kb, rest, 1.0, down, tm.view(i0 + ib, k0), 1.0,
                         tm.view(i0, k0), dtype=dtype, trans_a=True)
        with trace.step("syrk", (i0, i0 + ib, i0, i0 + ib), flops=float(ib * (ib + 1) * rest)):
            syrk(queue, ib, rest, 1.0, down, 1.0, tm.view(i0, i0), dtype=dtype, lower=True,
                 trans=True)


def invert_tiles(tm: TiledMatrix, *, product: bool = True) -> None:
    """L⁻¹ (``product=False``) or A⁻¹'s lower triangle (A = L·Lᵀ) in place of the lower
    tiled factor ``tm``; the strict upper triangle of its diagonal tiles becomes zero
    (tiles above them, in full storage, are neither read nor written).

    Raises LinAlgError "singular matrix: diagonal entry k is zero" (LAPACK's info k)
    before anything is written; ValueError for a matrix that does not hold the lower
    triangle in block columns.
    """
    check_lower(tm)
    n, dtype, queue = tm.shape[0], tm.dtype, tm.queue
    if n == 0:
        return
    nb = params(queue, "trsm", dtype)["TRSM_NB"]
    work = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE,
                     min(tm.tile, n) * trmm_leaf(queue, nb) * dtype.itemsize)
    name = "cho_inverse" if product else "trtri"
    with trace.run(name, "tiled", queue, (n, n), dtype, lower=True, tile=tm.tile, block=nb):
        with trace.step("check", (0, n, 0, n)):
            info = diagonal_zero(tm)
        if info:
            raise singular(info)
        with launch_queue(queue) as q:
            with trace.step("zero", (0, n, 0, n)):
                for k0, kb in _tiles(tm):
                    zero_other_triangle(q, tm.view(k0, k0), kb, lower=True, dtype=dtype)
            trtri_tiles(q, tm, work, nb)
            if product:
                lauum_tiles(q, tm, work, nb)
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

def _upload_lower(arr: np.ndarray, lower: bool, queue) -> TiledMatrix:
    """The lower triangle of a host factor or matrix (the upper one transposed for
    ``lower=False``) in a new lower TiledMatrix; DeviceError where its tiles do not fit
    the device's memory."""
    n, dtype = arr.shape[0], arr.dtype
    tile = choose_tile(queue, n, dtype)
    if not fits_in_core(queue, n, dtype, tile):
        raise DeviceError(f"the {n} x {n} {dtype} triangle does not fit the device's memory "
                          f"in tiles; the inverse needs it resident")
    source = arr if lower else arr.T
    return TiledMatrix.from_numpy(source, tile=tile, triangle="lower", queue=queue,
                                  check_finite=False)


def _to_host(tm: TiledMatrix, *, lower: bool, full: bool) -> np.ndarray:
    """A⁻¹ from the lower tiles: full (mirrored a block of rows at a time), or only the
    triangle ``lower`` names, the other one zero."""
    out = tm.to_numpy()                       # the lower triangle, zeros above the tiles
    tm.release()
    n = out.shape[0]
    if full:
        for i0, ib in [(i0, min(tm.tile, n - i0)) for i0 in range(0, n, tm.tile)]:
            i1 = i0 + ib
            block = out[i0:i1, i0:i1]
            block += np.tril(block, -1).T
            out[i0:i1, i1:] = out[i1:, i0:i1].T
        return out
    return out if lower else np.ascontiguousarray(out.T)


def _tiled_operand(c, lower: bool, queue) -> TiledMatrix:
    if c.queue.context != queue.context:
        raise ValueError("c lives on another OpenCL context than the queue")
    if not lower:
        raise ValueError("the tiled inverse takes the lower factor: a TiledMatrix with "
                         "triangle='lower' (or None) and lower=True")
    check_lower(c)
    return c


def cho_inverse_beyond(c, lower: bool, *, full: bool, overwrite_c: bool, check_finite: bool,
                       queue):
    """:func:`oclla.cho_inverse` of a TiledMatrix (lower factor: A⁻¹'s lower triangle in
    a TiledMatrix, ``c`` itself with ``overwrite_c``, else a copy) or of a host factor
    larger than one buffer (a new host array; ``c`` is never written)."""
    if isinstance(c, TiledMatrix):
        tm = _tiled_operand(c, lower, queue)
        work = tm if overwrite_c else tm.copy()
        invert_tiles(work)
        return work
    arr = host_matrix(c, check_finite=check_finite, queue=queue)
    tm = _upload_lower(arr, lower, queue)
    try:
        invert_tiles(tm)
    except BaseException:
        tm.release()
        raise
    return _to_host(tm, lower=lower, full=full)


def inv_spd_beyond(a, lower: bool, *, overwrite_a: bool, check_finite: bool, queue):
    """:func:`oclla.inv_spd` of a TiledMatrix (lower triangle read: A⁻¹'s lower triangle
    in a TiledMatrix, ``a`` itself with ``overwrite_a``) or of a host matrix larger than
    one buffer (the full inverse in a new host array; ``a`` is never written)."""
    if isinstance(a, TiledMatrix):
        tm = _tiled_operand(a, lower, queue)
        work = tm if overwrite_a else tm.copy()
        factor_tiles(work, lower=True)
        invert_tiles(work)
        return work
    arr = host_matrix(a, check_finite=check_finite, queue=queue)
    tm = _upload_lower(arr, lower, queue)
    try:
        factor_tiles(tm, lower=True)
        invert_tiles(tm)
    except BaseException:
        tm.release()
        raise
    return _to_host(tm, lower=lower, full=True)
