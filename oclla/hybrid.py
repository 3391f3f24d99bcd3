"""Hybrid Cholesky: the diagonal blocks on the host's LAPACK, the updates on the device.

Macindoe (2013) Algorithms 1 and 2, left-looking: per block column j (jb wide),
for A = L·Lᵀ (the upper case is its transpose)

1. SYRK on the device:   A_jj −= L_j,:j · L_j,:jᵀ
2. A_jj read to the host (enqueued before step 3, so it is done when 3 starts)
3. GEMM on the device:   A_j+:,j −= L_j+:,:j · L_j,:jᵀ      } overlapped: the host
4. POTRF on the host:    A_jj = L_jj·L_jjᵀ (LAPACK ``?potrf``) } factors while the device multiplies
5. L_jj written back, then TRSM on the device:  L_j+:,j = A_j+:,j · L_jj⁻ᵀ

Recorded (:func:`oclla.record`), step 4 is a ``potf2`` step whose one record is
the host's work (device ``"host"``, :func:`oclla.trace.host_work`), timed on
the device's profiling clock, so a timeline shows it beside the GEMM it overlaps.

The block widths follow a schedule: ``"static"`` (one width), or the thesis's
``"dynamic"`` one (§4.3.3), which balances the two sides as the GEMM grows
towards the middle of the matrix and shrinks after it: wide blocks at both
ends, halving towards the centre and doubling after it (:func:`block_schedule`).
Whether the overlap pays depends on how the host's LAPACK compares with the
device's own leaf kernels and on the transfer cost; ``benchmarks/hybrid.py``
measures it against :func:`oclla.cholesky`.  Where the device is the host's own
CPU (PoCL), a multi-threaded host BLAS competes with the device's threads for
the same cores: limit it to one thread (``OPENBLAS_NUM_THREADS=1``).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from scipy.linalg import lapack

from . import trace
from ._device import driver_errors, resolve_queue
from ._params import params
from ._validate import factor_in_place
from .blas import View, gemm, syrk, trsm, view_of
from .cholesky import cholesky_flops, not_positive_definite, zero_other_triangle

__all__ = ["SCHEDULES", "block_schedule", "cholesky"]

#: ``schedule`` values: one block width, or halving towards the centre and doubling after.
SCHEDULES = ("static", "dynamic")


def block_schedule(n: int, schedule: str = "static", block: int = 128) -> list[int]:
    """The widths of the block columns of an order-n hybrid factorization (sum n).

    Parameters
    ----------
    n : the order of the matrix
    schedule : "static" or "dynamic"
        ``"static"``: ``block`` wide (the last one what is left).  ``"dynamic"``:
        the first half of the matrix in widths n/4, n/8, ... (multiples of
        ``block``, at least ``block``), the same widths mirrored over the second
        half, and what is left in the middle: the thesis's "start at N/2 [the
        first half], halve towards the centre, then double until the end".
    block : the static width, or the dynamic schedule's narrowest one

    Returns
    -------
    widths : list of int, positive, summing to n

    Raises
    ------
    ValueError
        an unknown ``schedule``, or ``block`` < 1
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    if schedule == "static":
        return [min(block, n - j) for j in range(0, n, block)]
    half, total, width = [], 0, n // 4
    while total < n // 2:
        take = min(max(block, width // block * block), n // 2 - total)
        half.append(take)
        total += take
        width //= 2
    middle = [n - 2 * total] if n > 2 * total else []
    return half + middle + half[::-1]


def _host_copy(queue, block: View, jb: int, itemsize: int, host: np.ndarray, *,
               to_device: bool) -> cl.Event:
    """Enqueue the copy of the jb x jb block at ``block`` to (or from) ``host`` (no wait)."""
    pitch = block.ld * itemsize
    origin = ((block.off % block.ld) * itemsize, block.off // block.ld, 0)
    region = (jb * itemsize, jb, 1)
    args = (host, block.buf) if not to_device else (block.buf, host)
    return cl.enqueue_copy(queue, *args, buffer_origin=origin, host_origin=(0, 0, 0),
                           region=region, buffer_pitches=(pitch,),
                           host_pitches=(jb * itemsize,), is_blocking=False)


def factor_hybrid(queue, a: cl_array.Array, *, lower: bool, widths: list[int]) -> None:
    """Factor the C-contiguous n x n device array ``a`` in place, block columns of
    ``widths``; raise LinAlgError (LAPACK's info) where the host's POTRF fails."""
    n, dtype = a.shape[0], a.dtype
    v = view_of(a)
    potrf = lapack.dpotrf if dtype == np.float64 else lapack.spotrf
    host = np.empty(max(widths, default=0) ** 2, dtype)
    j = 0
    for jb in widths:
        rest = n - j - jb
        diag = v.at(j, j)
        block = host[:jb * jb].reshape(jb, jb)
        region = (j, j + jb, j, j + jb)
        if j:
            with trace.step("syrk", region, flops=float(jb * (jb + 1) * j)):
                # lower: A_jj −= L_j,:j·L_j,:jᵀ;  upper: A_jj −= U_:j,jᵀ·U_:j,j
                syrk(queue, jb, j, -1.0, v.at(j, 0) if lower else v.at(0, j), 1.0, diag,
                     dtype=dtype, lower=lower, trans=not lower)
        read = _host_copy(queue, diag, jb, dtype.itemsize, block, to_device=False)
        below = (j + jb, n, j, j + jb) if lower else (j, j + jb, j + jb, n)
        if j and rest:
            with trace.step("gemm", below, flops=2.0 * rest * jb * j):
                if lower:
                    gemm(queue, rest, jb, j, -1.0, v.at(j + jb, 0), v.at(j, 0), 1.0,
                         v.at(j + jb, j), dtype=dtype, trans_b=True)
                else:
                    gemm(queue, jb, rest, j, -1.0, v.at(0, j), v.at(0, j + jb), 1.0,
                         v.at(j, j + jb), dtype=dtype, trans_a=True)
        queue.flush()
        read.wait()
        with trace.step("potf2", region, pivot=(j, j), flops=cholesky_flops(jb), host=True), \
                trace.host_work("potrf (host LAPACK)", queue):
            # block.T is the Fortran view of the row-major block: its other triangle
            _, info = potrf(block.T, lower=int(not lower), overwrite_a=1, clean=0)
        if info:
            raise not_positive_definite(j + info)
        _host_copy(queue, diag, jb, dtype.itemsize, block, to_device=True)
        if rest:
            with trace.step("trsm", below, flops=float(jb * jb * rest)):
                if lower:       # L_j+:,j := A_j+:,j·L_jj⁻ᵀ
                    trsm(queue, jb, rest, diag, v.at(j + jb, j), dtype=dtype, left=False,
                         lower=True, trans=True)
                else:           # U_j,j+: := U_jj⁻ᵀ·A_j,j+:
                    trsm(queue, jb, rest, diag, v.at(j, j + jb), dtype=dtype, left=True,
                         lower=False, trans=True)
        j += jb
    queue.finish()       # the host blocks must outlive their copies


@driver_errors
def cholesky(a, *, lower: bool = False, schedule: str = "static", block: int | None = None,
             overwrite_a: bool = False, check_finite: bool = True, queue=None):
    """Cholesky factor with the diagonal blocks factored by the host's LAPACK.

    Macindoe's hybrid schedule (2013, Algorithms 1 and 2): per block
    column the device updates the diagonal block (SYRK), the host factors it with
    LAPACK ``?potrf`` while the device multiplies the panel (GEMM), then the device
    solves the panel (TRSM).  The arithmetic of the diagonal blocks runs on the
    host, as the thesis puts it there; everything else on the device.

    Not the default of :func:`oclla.cholesky`: on an H100 (n = 8192) it ran at
    0.75x the device-only factorization, so the thesis's overlap no longer pays
    on a modern GPU; on the PoCL CPU device (2 cores, one OpenBLAS thread) it was
    1.3-2.3x faster, because the host's LAPACK factors a diagonal block faster than
    PoCL's leaf kernel (benchmarks/hybrid.py measures both on any device).

    Parameters
    ----------
    a : (n, n) array_like of float32/float64, or a pyopencl array
        Only the triangle named by ``lower`` is read.
    lower : return L with A = L·Lᵀ instead of U with A = Uᵀ·U (scipy's default)
    schedule : "static" or "dynamic"
        The block widths (:func:`block_schedule`): one width, or the thesis's
        wide-narrow-wide schedule that balances host and device.
    block : int, optional
        The static width, or the dynamic schedule's narrowest one (default: the
        device's ``chol`` NB).
    overwrite_a : allow the result to be written into ``a`` (as :func:`oclla.cholesky`)
    check_finite : reject NaN/Inf anywhere in ``a`` (ValueError)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    c : (n, n) array, the factor with the other triangle zero; a device array
        when ``a`` is one.

    Raises
    ------
    numpy.linalg.LinAlgError
        "leading minor of order k is not positive definite" (LAPACK's info k).
    ValueError
        ``a`` not square, NaN/Inf with ``check_finite``, an unknown ``schedule``,
        ``block`` < 1
    TypeError
        a dtype other than float32/float64
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or an allocation the device
        cannot make
    """
    queue = resolve_queue(queue)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")

    def factor(work, _deferred):
        n = work.shape[0]
        nb = block or params(queue, "chol", work.dtype)["NB"]
        widths = block_schedule(n, schedule, nb)
        with trace.run("cholesky", f"hybrid-{schedule}", queue, (n, n), work.dtype, work.get,
                       lower=bool(lower), block=nb, widths=widths):
            factor_hybrid(queue, work, lower=bool(lower), widths=widths)
            with trace.step("zero", (0, n, 0, n)):
                zero_other_triangle(queue, work, lower=bool(lower))

    c, _ = factor_in_place(a, queue, factor, overwrite_a=overwrite_a,
                           check_finite=check_finite, deferrable=False)
    return c
