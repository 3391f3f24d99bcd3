"""Assembly of C = A·D²·Aᵀ, one triangle only, in full or packed storage.

A is m x n with m <= n (the rows are the unknowns of a weighted least
squares problem, the columns the observations), ``d2`` the n diagonal
entries of D² (the squared weights, all >= 0).  C = Σ_k d2[k]·a_k·a_kᵀ
(a_k the k-th column of A) is symmetric positive semidefinite; only one
triangle is computed.

Storage of the result
---------------------
``packed=False``: an m x m array holding the ``lower`` (or upper) triangle,
the other triangle zero -- or both triangles with ``symmetric=True``.
``packed=True``: the 1-D RFP array of order m (:mod:`oclla.rfp`,
``?trttf``'s layout), ready for :func:`oclla.rfp.cholesky`.

Methods
-------
``method="blocked"`` (default)
    One kernel writes W = A·diag(d2) (a device temporary of A's size; on GPUs
    transposed, :class:`Scaled`), then the BLAS layer's gemm forms W·Aᵀ (A·Wᵀ)
    on the stored triangle only -- or, packed, on the three blocks of the RFP
    array (T1 and T2 triangles, S full), each an ordinary strided view of the
    packed buffer.
``method="pivot"``
    Jung & O'Leary's Algorithm 3: per column k a column-scaling kernel
    b = d2[k]·a_k and an outer-product kernel C += a_k·bᵀ whose NDRange
    enumerates exactly the m(m+1)/2 entries of the triangle (in the packed
    case through the RFP index maps).  2n trace steps, phases ``scale`` and
    ``outer_product``.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import trace
from ._device import driver_errors, resolve_queue
from ._params import params
from ._programs import enqueue, get_kernel, int_arg, round_up
from ._validate import (as_matrix, check_fits, check_method, check_shape,
                        is_device_array, read_only, validate_weights)
from .blas import View, gemm, gemm_shape, view_of
from .rfp import layout, packed_length, picture, transpose_shape

__all__ = ["assemble_ad2at", "ad2at_flops"]


def ad2at_flops(m: int, n: int) -> float:
    """Flops of one triangle of A·D²·Aᵀ: m·n scalings + m(m+1)·n for the products."""
    return float(m) * n + float(m) * (m + 1) * n


# ---- device algorithms ---------------------------------------------------------------------

def _assemble_pivot(queue, a: View, d2, c, m, n, *, lower, packed, dtype) -> None:
    wg = params(queue, "wg1d", dtype)["WG"]
    opts = dict(LOWER=int(lower), PACKED=int(packed))
    scale = get_kernel(queue, "ad2at.cl", "scale_column", dtype, **opts)
    outer = get_kernel(queue, "ad2at.cl", "outer_product_add", dtype, **opts)
    b = cl_array.empty(queue, m, dtype)
    entries = m * (m + 1) // 2
    if packed:
        lda = m + 1 - m % 2
        region, extra = (0, lda, 0, (m + 1) // 2), {"logical_region": (0, m, 0, m)}
    else:
        region, extra = (0, m, 0, m), {}
    itemsize = np.dtype(dtype).itemsize
    for k in range(n):
        with trace.step("scale", (0, m, k, k + 1), flops=float(m), nbytes=2.0 * m * itemsize,
                        matrix="A"):
            enqueue(queue, scale, (round_up(m, wg),), (wg,), a.buf, np.int64(a.off),
                    int_arg(a.ld), int_arg(m), int_arg(k), d2.data, b.data)
        with trace.step("outer_product", region, flops=2.0 * entries,
                        nbytes=4.0 * entries * itemsize, triangle_entries=entries, **extra):
            enqueue(queue, outer, (round_up(entries, wg),), (wg,), c.data, np.int64(0),
                    int_arg(m), int_arg(m), a.buf, np.int64(a.off), int_arg(a.ld),
                    int_arg(k), b.data)


class Scaled:
    """W = A·diag(d2) of the m x n matrix at ``a`` (``d2`` a device buffer of n weights),
    written once into the device buffer ``out`` (m·n reals), and the operands of any block
    of C = W·Aᵀ = A·Wᵀ.

    Where the product goes to the tiled GEMM, W is stored transposed (Wᵀ = diag(d2)·Aᵀ,
    n x m: ad2at.cl scale_transpose, tiles through local memory so that A is read and Wᵀ
    written along rows) and a block is A·Wᵀ, the blocked LU's product shape (AB): where
    each shape is its own program (PER_SHAPE), the two share one, and the float32
    assembly of 8192 x 16384 on an H200 runs 2-3 % faster.  On the direct GEMM (CPUs) W
    is stored as it is (scale_columns) and a block is W·Aᵀ, whose B that kernel packs
    anyway: the transposing kernel's tiles cost PoCL more than they save (2 cores,
    float32 2048 x 4096, 205-253 against 230-280 ms)."""

    def __init__(self, queue, a: View, m: int, n: int, d2, out, *, dtype):
        self.queue, self.a, self.n, self.dtype = queue, a, n, dtype
        self.transposed = gemm_shape(queue, n, dtype)["KERNEL"] == "tiled"
        if self.transposed:
            self.w = View(out, 0, m)
            tile, rows = transpose_shape(queue, dtype)
            kernel = get_kernel(queue, "ad2at.cl", "scale_transpose", dtype)
            enqueue(queue, kernel, (-(-n // tile) * tile, -(-m // tile) * rows), (tile, rows),
                    a.buf, np.int64(a.off), int_arg(a.ld), int_arg(m), int_arg(n), d2, out,
                    np.int64(0), int_arg(m),
                    cl.LocalMemory(tile * (tile + 1) * np.dtype(dtype).itemsize))
        else:
            self.w = View(out, 0, n)
            loc = params(queue, "local2d", dtype)
            kernel = get_kernel(queue, "ad2at.cl", "scale_columns", dtype)
            enqueue(queue, kernel, (round_up(n, loc["X"]), round_up(m, loc["Y"])),
                    (loc["X"], loc["Y"]), a.buf, np.int64(a.off), int_arg(a.ld), int_arg(m),
                    int_arg(n), d2, out)

    def product(self, rows: int, cols: int, r0: int, c0: int, out: View, *,
                beta: float = 0.0, triangle: str | None = None):
        """The rows x cols block of C = W·Aᵀ whose rows start at r0 and columns at c0
        into ``out``: out := block + beta·out (:func:`oclla.blas.gemm`; ``triangle``:
        only that triangle of ``out`` is written)."""
        if self.transposed:
            x, y, trans_b = self.a.at(r0, 0), self.w.at(0, c0), False
        else:
            x, y, trans_b = self.w.at(r0, 0), self.a.at(c0, 0), True
        return gemm(self.queue, rows, cols, self.n, 1.0, x, y, beta, out, dtype=self.dtype,
                    trans_b=trans_b, triangle=triangle)


def _assemble_blocked(queue, a: View, d2, c, m, n, *, lower, packed, dtype) -> None:
    check_fits(queue, m * n * np.dtype(dtype).itemsize, "the scaled copy of a")
    w = cl_array.empty(queue, m * n, dtype)
    with trace.step("scale", (0, m, 0, n), flops=float(m * n), matrix="A"):
        scaled = Scaled(queue, a, m, n, d2.data, w.data, dtype=dtype)

    if not packed:
        with trace.step("syrk", (0, m, 0, m), flops=float(m * (m + 1) * n)):
            scaled.product(m, m, 0, 0, view_of(c), triangle="lower" if lower else "upper")
        return
    # Packed: C11 -> T1 (its row-major view holds the upper triangle), C22 -> T2 (view
    # lower), and the off-diagonal block -> S (view = C12 for 'L', C21 for 'U').
    lay = layout(m, lower)
    n1, n2, lda = lay.n1, lay.n2, lay.lda
    base = c.offset // c.dtype.itemsize

    def box(origin, rows, cols):
        p0, q0 = origin % lda, origin // lda
        return (p0, p0 + cols, q0, q0 + rows)

    with trace.step("syrk", box(lay.t1, n1, n1), flops=float(n1 * (n1 + 1) * n)):
        scaled.product(n1, n1, 0, 0, View(c.base_data, base + lay.t1, lda),
                       triangle="upper")
    if n2 == 0:
        return
    s = View(c.base_data, base + lay.s, lda)
    if lower:
        with trace.step("gemm", box(lay.s, n1, n2), flops=2.0 * n1 * n2 * n):
            scaled.product(n1, n2, 0, n1, s)
    else:
        with trace.step("gemm", box(lay.s, n2, n1), flops=2.0 * n1 * n2 * n):
            scaled.product(n2, n1, n1, 0, s)
    with trace.step("syrk", box(lay.t2, n2, n2), flops=float(n2 * (n2 + 1) * n)):
        scaled.product(n2, n2, n1, n1, View(c.base_data, base + lay.t2, lda),
                       triangle="lower")


def assemble_device(queue, a: cl_array.Array, d2: cl_array.Array, *, packed: bool,
                    lower: bool, method: str, symmetric: bool = False) -> cl_array.Array:
    """C = A·diag(d2)·Aᵀ from device arrays (validated); returns the new device array."""
    m, n = a.shape
    dtype = a.dtype
    c = cl_array.zeros(queue, packed_length(m) if packed else (m, m), dtype)
    snap = (lambda: picture(c.get(), m)) if packed else c.get
    A = view_of(a)
    with trace.run("ad2at", method, queue, (m, n), dtype, snap, packed=packed, lower=lower):
        if method == "pivot":
            _assemble_pivot(queue, A, d2, c, m, n, lower=lower, packed=packed, dtype=dtype)
        else:
            _assemble_blocked(queue, A, d2, c, m, n, lower=lower, packed=packed, dtype=dtype)
        if symmetric:
            loc = params(queue, "local2d", dtype)
            kernel = get_kernel(queue, "ad2at.cl", "symmetrize", dtype, LOWER=int(lower))
            with trace.step("symmetrize", (0, m, 0, m)):
                enqueue(queue, kernel, (round_up(m, loc["X"]), round_up(m, loc["Y"])),
                        (loc["X"], loc["Y"]), c.data, np.int64(0), int_arg(m), int_arg(m))
    return c


@driver_errors
def assemble_ad2at(a, d2, *, packed: bool = False, lower: bool = True,
                   symmetric: bool = False, method: str = "blocked",
                   check_finite: bool = True, queue=None):
    """C = A·diag(d2)·Aᵀ on the device, one triangle only.

    Parameters
    ----------
    a : (m, n) array_like of float32/float64 with m <= n, or a pyopencl array
        (any view: offset, strides, transpose; gathered into a dense copy)
    d2 : (n,) non-negative weights, the diagonal of D² (cast to a's dtype; a
        device d2, any view, must have a's dtype)
    packed : return the RFP array of order m instead of an m x m matrix
    lower : compute the lower triangle (default) or the upper
    symmetric : full storage only: fill the other triangle too
    method : "blocked" (default) or "pivot" (the paper's Algorithm 3)
    check_finite : reject NaN/Inf in ``a`` and ``d2`` (ValueError)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    (m, m) array, or (m(m+1)/2,) RFP array; a device array when ``a`` is one.
    A host ``a`` whose A or C is larger than one buffer of the device is
    streamed through it in column blocks into a tiled C
    (:mod:`oclla.tiled_ad2at`; full storage only), returned as a numpy array.

    Raises
    ------
    ValueError : negative or NaN weights, shape mismatches, m > n (A·D²·Aᵀ would
        be singular), NaN/Inf with ``check_finite``, an unknown ``method``
    TypeError : a dtype other than float32/float64, or a device d2 of another
        dtype than a's
    oclla.DeviceError : float64 on a device without ``cl_khr_fp64``, or device
        trouble
    MemoryError : a host ``a`` beyond one buffer (assembled in tiles) whose m x m
        product would not fit the host's available memory
    """
    check_method(method)
    if symmetric and packed:
        raise ValueError("symmetric=True fills both triangles of full storage; packed "
                         "storage holds one triangle by design")
    queue = resolve_queue(queue)
    from . import tiled_ad2at
    if not packed and tiled_ad2at.route(a, queue):      # A or C beyond one buffer: tiles
        if method != "blocked":
            raise ValueError("a matrix larger than one buffer is assembled in tiles by the "
                             "blocked method only")
        return tiled_ad2at.assemble_host(a, d2, lower=bool(lower), symmetric=bool(symmetric),
                                         check_finite=check_finite, queue=queue)
    a_ = as_matrix(a, queue, name="a", square=False, check_finite=check_finite)
    m, n = a_.shape
    check_shape(m, n)
    dtype = a_.dtype
    d2_ = validate_weights(d2, n, dtype, queue, check_finite=check_finite)
    check_fits(queue, (packed_length(m) if packed else m * m) * dtype.itemsize, "C")
    device = is_device_array(a_)
    if m == 0:
        shape = 0 if packed else (0, 0)
        return cl_array.empty(queue, shape, dtype) if device else np.empty(shape, dtype)
    da, dd = (read_only(queue, x, results_to_host=not device) for x in (a_, d2_))
    c = assemble_device(queue, da, dd, packed=bool(packed), lower=bool(lower),
                        method=method, symmetric=bool(symmetric))
    return c if device else c.get()
