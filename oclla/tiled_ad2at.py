"""C = A·D²·Aᵀ into a tiled result, A streamed from host memory in column blocks.

Where C (m x m) is larger than one buffer of the device, so is A (m x n,
m ≤ n).  :func:`assemble_tiles` keeps C as a :class:`oclla.tiled.TiledMatrix`
(one triangle: ``"lower"`` block columns or ``"upper"`` block rows; both
triangles in full storage with ``symmetric``) and streams A through the
device ``chunk`` columns (observations) at a time::

    for each block of columns K (k0 .. k0 + kc):
        upload A[:, K] and d2[K]
        W = A[:, K]·diag(d2[K])                      (oclla.ad2at.Scaled: on GPUs Wᵀ)
        for each panel p of C (lower: columns P, rows R = p0 .. m):
            C[R, P] (+)= W[R, :]·A[P, :]ᵀ              one GEMM (on GPUs A[R, :]·Wᵀ[:, P]),
                                                     the diagonal tile's stored
                                                     triangle only

The first block writes C (beta = 0), the others accumulate; the diagonal
tiles' other triangle is zeroed at the end.  The result is
ready for :func:`oclla.cholesky` (a TiledMatrix is factored where it is).
:func:`oclla.assemble_ad2at` comes here for a host ``a`` whose A or C is
larger than one buffer (:func:`route`) and returns C as a numpy array.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import trace
from ._device import DeviceError, device_info
from ._validate import (check_dtype, check_fp64, check_host_room, check_shape, contiguous_host,
                        is_device_array, validate_weights)
from .ad2at import Scaled
from .blas import View
from .cholesky import zero_other_triangle
from .tiled import MEMORY_SHARE, TiledMatrix, check_finite_rows


def route(a, queue) -> bool:
    """Whether :func:`oclla.assemble_ad2at` should assemble the host matrix ``a`` in
    tiles: a 2-D float32/float64 host array whose A or C (m x m) is larger than one
    buffer of the device."""
    if is_device_array(a):
        return False
    arr = a if isinstance(a, np.ndarray) else np.asarray(a)
    if arr.ndim != 2 or arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):
        return False
    info = device_info(queue)
    m, n = arr.shape
    return max(m, n) * m * arr.dtype.itemsize > min(info.max_alloc_size, info.global_mem_size)


def plan_chunk(queue, m: int, n: int, dtype, c_bytes: int, chunk: int | None = None) -> int:
    """Columns of A per block: ``chunk`` or as many as one buffer holds (m x chunk) and,
    twice over (A's block and W), the device's memory beside C's tiles."""
    info = device_info(queue)
    column = max(m, 1) * np.dtype(dtype).itemsize
    room = int(MEMORY_SHARE * info.global_mem_size) - c_bytes
    fits = min(info.max_alloc_size // column, room // (2 * column + np.dtype(dtype).itemsize))
    if fits < 1:
        raise DeviceError(f"no column block of A ({m} rows) fits {info.name} beside the "
                          f"{c_bytes / 2**20:.1f} MiB of C's tiles")
    return max(1, min(chunk or fits, fits, n))


def assemble_tiles(a: np.ndarray, d2: np.ndarray, *, lower: bool = True,
                   symmetric: bool = False, queue, tile: int | None = None,
                   chunk: int | None = None) -> TiledMatrix:
    """C = A·diag(d2)·Aᵀ as a TiledMatrix on ``queue``'s device (module docstring).

    ``a``: a C-contiguous m x n host array (m ≤ n), ``d2``: n non-negative weights
    of a's dtype (validated by the caller).  ``lower`` names the triangle stored;
    ``symmetric`` stores both (full storage).  ``tile`` as TiledMatrix's,
    ``chunk`` the columns of A per upload (default: :func:`plan_chunk`).
    """
    m, n = a.shape
    dtype = a.dtype
    item = dtype.itemsize
    triangle = None if symmetric else ("lower" if lower else "upper")
    c = TiledMatrix((m, m), dtype, tile=tile, triangle=triangle, queue=queue)
    if m == 0:
        return c
    kc = plan_chunk(queue, m, n, dtype, c.nbytes, chunk)
    ctx = queue.context
    block = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, m * kc * item)
    scaled = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, m * kc * item)
    weights = cl_array.empty(queue, kc, dtype)
    tri = None if symmetric else triangle
    with trace.run("ad2at", "tiled", queue, (m, n), dtype, lower=lower, tile=c.tile,
                   chunk=kc):
        for k0 in range(0, n, kc):
            kb = min(kc, n - k0)
            A = View(block, 0, kb)
            with trace.step("upload", (0, m, k0, k0 + kb), nbytes=m * kb * item):
                cl.enqueue_copy(queue, block, a, buffer_origin=(0, 0),   # blocking: the
                                host_origin=(k0 * item, 0), region=(kb * item, m),  # in-order
                                buffer_pitches=(kb * item,),    # queue reuses the block
                                host_pitches=(a.strides[0],))   # after the GEMMs
                cl.enqueue_copy(queue, weights.data, np.ascontiguousarray(d2[k0:k0 + kb]))
            with trace.step("scale", (0, m, k0, k0 + kb), flops=float(m * kb), matrix="A"):
                w = Scaled(queue, A, m, kb, weights.data, scaled, dtype=dtype)
            beta = 0.0 if k0 == 0 else 1.0
            for p in c.panels:
                if triangle == "upper":          # block row: rows P, columns p0 .. m
                    rows, cols = (p.r0, p.r0 + p.h), (p.c0, m)
                else:                            # block column: columns P, rows r0 .. m
                    rows, cols = (p.r0, m), (p.c0, p.c0 + p.w)
                with trace.step("syrk", (*rows, *cols), flops=2.0 * p.h * p.w * kb):
                    w.product(p.h, p.w, p.r0, p.c0, p.view(p.r0, p.c0), beta=beta,
                              triangle=tri)
        if triangle is not None:                 # the diagonal tiles' other triangle
            with trace.step("zero", (0, m, 0, m)):
                for p in c.panels:
                    zero_other_triangle(queue, p.view(p.r0, p.c0), min(p.h, p.w),
                                        lower=lower, dtype=dtype)
    queue.finish()
    block.release()
    scaled.release()
    return c


def assemble_host(a, d2, *, lower: bool, symmetric: bool, check_finite: bool, queue,
                  tile: int | None = None, chunk: int | None = None) -> np.ndarray:
    """:func:`oclla.assemble_ad2at` for a host ``a`` beyond one buffer: validated as
    there, assembled in tiles (:func:`assemble_tiles`), returned as a new m x m
    numpy array (the other triangle zero unless ``symmetric``)."""
    arr = np.asarray(a)
    if arr.ndim != 2:
        raise ValueError(f"a must be 2-D, got {arr.ndim}-D with shape {arr.shape}")
    dtype = check_dtype(arr.dtype)
    check_fp64(queue, dtype)
    m, n = arr.shape
    check_shape(m, n)
    if check_finite:
        check_finite_rows(arr)
    weights = validate_weights(d2, n, dtype, queue, check_finite=check_finite)
    if is_device_array(weights):
        weights = weights.get()
    check_host_room(m * m * dtype.itemsize, f"the {m} x {m} product")
    c = assemble_tiles(contiguous_host(arr, f"a C-contiguous copy of the {m} x {n} a"), weights,
                       lower=lower, symmetric=symmetric, queue=queue, tile=tile, chunk=chunk)
    try:
        return c.to_numpy()
    finally:
        c.release()


__all__ = ["assemble_tiles", "assemble_host", "route", "plan_chunk"]
