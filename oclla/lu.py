"""LU factorization with partial pivoting: the public API (``lu_factor``, ``lu_solve``, ``lu``).

``lu_factor(a)`` returns ``(lu, piv)`` exactly as :func:`scipy.linalg.lu_factor`:
``lu`` holds U on and above the diagonal and the multipliers of the unit
lower L below it; ``piv[i] = j`` (0-based) means row i was interchanged with
row j, in order, so that ``P·A = L·U``.  ``lu_solve`` and ``lu`` as scipy's.

Methods (where each one lives)
------------------------------
``method="blocked"`` (default): :mod:`oclla.lu_blocked`
    Right-looking blocked LU: panels factored on the device, row interchanges
    (laswp), TRSM and a GEMM trailing update from :mod:`oclla.blas`.  Block
    sizes and the panel strategy come from the device.
``method="pivot"``: :mod:`oclla.lu_pivot`, the teaching variants
    One host-loop iteration per pivot: ``variant="inplace"`` (default,
    kernels_cl/lu_inplace.cl), ``"crout"`` (left-looking, lu_crout.cl),
    ``"window"`` (delayed updates, lu_window.cl) and ``"faithful"`` (the SYCL
    blog post as written, lu_faithful.cl; no pivoting).
``pivoting="none"``
    For teaching only: elimination with the diagonal as pivot is unstable and
    stops with :class:`numpy.linalg.LinAlgError` at a zero pivot.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.linalg import LinAlgError

from . import trace
from .accuracy import permutation_from_piv, split_lu
from ._device import driver_errors, resolve_queue
from ._programs import index_width, int_zeros, launch_queue
from ._validate import (as_matrix, as_rhs, check_method, checked_beside, count_nonfinite,
                        dense, device_pivots, factor_in_place, is_device_array,
                        read_only, read_status, read_status_with, rhs_work, status_flags,
                        unpack_pair)
from .blas import permute_rows, trsm, view_of
from .lu_blocked import factor_blocked
from .lu_pivot import factor_crout, factor_faithful, factor_inplace, factor_window

VARIANTS = {"blocked": ("blocked",), "pivot": ("inplace", "crout", "window", "faithful")}


def lu_flops(n: int) -> float:
    """LAPACK's flop count of an n x n LU: 2n³/3 − n²/2 − n/6 (≈ 2n³/3)."""
    return 2.0 * n ** 3 / 3.0 - n ** 2 / 2.0 - n / 6.0


def _resolve_options(method, variant, pivoting):
    check_method(method)
    variant = variant or VARIANTS[method][0]
    if variant not in VARIANTS[method]:
        raise ValueError(f"method={method!r} has variants {VARIANTS[method]}, got {variant!r}")
    if pivoting is None:
        pivoting = "none" if variant == "faithful" else "partial"
    if pivoting not in ("partial", "none"):
        raise ValueError(f"pivoting must be 'partial' or 'none', got {pivoting!r}")
    if variant == "faithful" and pivoting != "none":
        raise ValueError("the faithful variant follows the post and does not pivot; "
                         "pass pivoting='none' or use variant='inplace'")
    return method, variant, pivoting


def _factor_device(queue, a: cl_array.Array, method, variant, pivoting, block=None,
                   check_finite: bool = False):
    """Factor the device array ``a`` in place; return (piv device array, info).

    ``check_finite`` counts the NaN/Inf entries of ``a`` on the device beside the
    factorization and raises ValueError for them once it is done (the count is
    read with info: no wait before the factorization; ``a`` must be a copy the
    caller does not see).
    """
    n = a.shape[0]
    piv = cl_array.to_device(queue, np.arange(n, dtype=np.int32), async_=True)
    info = status_flags(queue, a, check_finite)
    no_pivot = pivoting == "none"
    with launch_queue(queue) as loop_queue, index_width(a.size):
        if variant == "faithful":
            factor_faithful(loop_queue, a, n)
        elif variant == "crout":
            factor_crout(loop_queue, a, n, piv, info, no_pivot)
        elif variant == "window":
            factor_window(loop_queue, a, n, piv, info, no_pivot)
        elif method == "pivot":
            factor_inplace(loop_queue, a, n, piv, info, no_pivot)
        else:
            factor_blocked(loop_queue, a, n, piv, info, no_pivot, block)
    return piv, _info(queue, a, n, info, variant)


def _info(queue, a, n, info_dev, variant) -> int:
    """LAPACK's info: 1-based index of the first zero diagonal entry of U, else 0
    (ValueError if the input was found to hold NaN/Inf)."""
    if n == 0:
        return 0
    if variant == "faithful":
        read_status(info_dev)
        diag = a.get().diagonal()
        zeros = np.flatnonzero(diag == 0)
        return int(zeros[0]) + 1 if zeros.size else 0
    last = np.empty(1, a.dtype)              # read with the flags: one wait for both
    cl.enqueue_copy(queue, last, a.base_data, is_blocking=False,
                    src_offset=a.offset + ((n - 1) * n + n - 1) * a.dtype.itemsize)
    info = read_status(info_dev)
    if info:
        return info
    return n if last[0] == 0 else 0


def _report_info(info: int, n: int, pivoting: str) -> None:
    if not info:
        return
    if pivoting == "none" and info < n:
        error = LinAlgError(f"zero pivot in column {info - 1} without pivoting: elimination "
                            f"cannot continue (use pivoting='partial')")
        trace.fail_last_run(error)
        raise error
    from scipy.linalg import LinAlgWarning     # here: scipy.linalg takes ~0.4 s to import
    warnings.warn(f"Diagonal number {info} is exactly zero. Singular matrix.",
                  LinAlgWarning, stacklevel=5)     # the caller of lu_factor


@driver_errors
def lu_factor(a, *, method: str = "blocked", variant: str | None = None,
              pivoting: str | None = None, overwrite_a: bool = False,
              check_finite: bool = True, block: int | None = None, queue=None):
    """LU factorization P·A = L·U of a square matrix, on the OpenCL device.

    The result has :func:`scipy.linalg.lu_factor`'s layout: ``lu`` holds U on
    and above the diagonal and the multipliers of the unit lower triangular L
    below it; ``piv[i] = j`` (0-based) means that row i was interchanged with
    row j, in the order i = 0, 1, ..., n − 1.  With partial pivoting each
    multiplier satisfies |l_ij| ≤ 1.  Costs 2n³/3 flops (:func:`lu_flops`).

    Parameters
    ----------
    a : (n, n) array_like of float32 or float64, pyopencl.array.Array, or TiledMatrix
        The matrix.  A device array may be any view (offset, strides,
        transpose); a view is gathered into a dense work array.  A host matrix
        larger than one buffer of the device, or an
        :class:`oclla.tiled.TiledMatrix` in full storage, is factored in tiles
        (:mod:`oclla.tiled_lu`; the blocked method with partial pivoting): the
        result is then a numpy array, or a TiledMatrix with numpy pivots.  A
        host matrix whose tiles do not fit the device's memory streams through
        it by block columns (:mod:`oclla.out_of_core_lu`; with ``overwrite_a``
        a writable C-contiguous array or "r+" memory map is factored in place).
    method : {"blocked", "pivot"}, default "blocked"
        ``"blocked"``: the right-looking blocked LU (panels factored on the
        device, row interchanges, TRSM and a GEMM update of the trailing
        matrix; block sizes from the device).  ``"pivot"``: one host-loop
        iteration per pivot, the teaching variants.
    variant : {"inplace", "crout", "window", "faithful"}, optional
        For ``method="pivot"``: ``"inplace"`` (default; right-looking: pivot k
        updates the whole active submatrix), ``"crout"`` (left-looking: pivot
        k forms row k of U and column k of L from the finished factors),
        ``"window"`` (Crout order inside windows of pivots, one GEMM update
        per window) or ``"faithful"`` (the SYCL blog post's algorithm as
        written: no pivoting, a U→A copy each step).  ``"blocked"`` is the
        only variant of ``method="blocked"``.
    pivoting : {"partial", "none"}, optional
        Default ``"partial"`` (``"none"`` for the faithful variant, which
        pivots never).  ``"none"`` is for teaching: elimination with the
        diagonal as pivot is unstable and stops at a zero pivot.
    overwrite_a : bool, default False
        Allow the result to be written into ``a`` (a permission, as in
        scipy).  A numpy ``a`` is never written, except by the out-of-core
        route (above).  A C-contiguous device ``a``
        is factored in place; a device view is factored in its gathered copy
        and the result scattered into the view's own entries (nothing else of
        its buffer is written), and the view is returned.
    check_finite : bool, default True
        Reject NaN or Inf in ``a`` (ValueError).  For a device ``a`` the
        entries are counted on the device beside the factorization.
    block : int, optional
        Panel width of the blocked method (default: from the device's
        parameters).
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of
        the default device, :func:`oclla.get_queue`).

    Returns
    -------
    lu : (n, n) ndarray or pyopencl.array.Array
        U on and above the diagonal, L's multipliers below it; the dtype of
        ``a``.  A device array when ``a`` is one.
    piv : (n,) ndarray or pyopencl.array.Array of int32
        The 0-based row interchanges.

    Raises
    ------
    ValueError
        ``a`` is not square, holds NaN/Inf (with ``check_finite``), or an
        option is unknown (``method``, ``variant``, ``pivoting``, a faithful
        variant with partial pivoting).
    TypeError
        ``a`` is not float32/float64 (integers are refused: oclla does not
        guess the working precision).
    numpy.linalg.LinAlgError
        With ``pivoting="none"``, a zero pivot before the last column.
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, an allocation the device
        cannot make, or kernels that fail to build with every parameter set.
    MemoryError
        A host ``a`` beyond the device's memory (factored through tiles or streamed)
        whose factor, a new host array, would not fit the host's available memory;
        ``overwrite_a`` factors a writable C-contiguous ``a`` (an "r+" memory map too)
        in place.

    Warns
    -----
    scipy.linalg.LinAlgWarning
        An exactly singular U: the warning names the zero diagonal entry (as
        scipy does); the factors are returned.

    See Also
    --------
    lu_solve : solve with the factors.
    lu : P, L and U as separate matrices.

    Examples
    --------
    >>> a = np.random.default_rng(0).standard_normal((100, 100)).astype(np.float32)
    >>> lu, piv = oclla.lu_factor(a)
    >>> oclla.accuracy.lu_backward_error(a, lu, piv) < 30
    True
    """
    method, variant, pivoting = _resolve_options(method, variant, pivoting)
    queue = resolve_queue(queue)
    from . import out_of_core_lu, tiled, tiled_lu
    streamed = out_of_core_lu.route(a, queue)
    if isinstance(a, tiled.TiledMatrix) or streamed or tiled_lu.route(a, queue):
        if (method, pivoting) != ("blocked", "partial"):
            raise ValueError("a matrix larger than one buffer is factored in tiles by the "
                             "blocked LU with partial pivoting only")
        beyond = out_of_core_lu.lu_host if streamed else tiled_lu.lu_factor_beyond
        lu_, piv, info = beyond(a, overwrite_a=overwrite_a, check_finite=check_finite,
                                queue=queue)
        _report_info(info, lu_.shape[0], pivoting)
        return lu_, piv

    def factor(work, deferred):
        piv, info = _factor_device(queue, work, method, variant, pivoting, block,
                                   check_finite=deferred)
        _report_info(info, work.shape[0], pivoting)      # before anything is delivered
        return piv

    lu_, piv = factor_in_place(a, queue, factor, overwrite_a=overwrite_a,
                               check_finite=check_finite)
    if piv is None:                                      # n = 0
        return lu_, (cl_array.empty(queue, 0, np.int32) if is_device_array(lu_)
                     else np.empty(0, np.int32))
    return lu_, (piv if is_device_array(lu_) else piv.get())


PIV_RANGE = "piv entries must lie in [0, {n}) (0-based, as scipy)"


def _device_piv(piv, n: int, queue, flags):
    """piv as a dense int32 device array the solve can apply.

    A host piv is checked here (ValueError).  A device piv (any view) is
    checked on the device as it is copied (``device_pivots``): out-of-range
    entries become no-op interchanges and are counted into ``flags[0]``, which
    the caller reads with the solution -- no round trip before the solve.
    """
    if is_device_array(piv):
        if piv.shape != (n,) or piv.dtype != np.int32:
            raise ValueError(f"piv must be an int32 device array of shape ({n},)")
        return device_pivots(queue, piv, flags)
    piv = np.asarray(piv)
    if piv.shape != (n,):
        raise ValueError(f"piv must have shape ({n},), got {piv.shape}")
    if piv.dtype.kind not in "iu":
        raise TypeError(f"piv must hold integers, got dtype {piv.dtype}")
    if n and (piv.min() < 0 or piv.max() >= n):
        raise ValueError(PIV_RANGE.format(n=n))
    return cl_array.to_device(queue, piv.astype(np.int32))


def _enqueue_solve(queue, d_lu, d_piv, x2, trans: int) -> None:
    """X := op(A)⁻¹·X on the device from the dense factor ``d_lu`` and pivots ``d_piv``.

    Both triangles are solved block by block by substitution (``inverse=False``,
    whatever the trsm family's INVERSE knob says), with GEMM updates between the
    blocks, as LAPACK's xGETRS: backward stable for any conditioning of L and U.
    An inverted diagonal block multiplies the right-hand side with an error of
    order κ(T_kk)·ε: with U a Kahan matrix of order 63 (κ ≈ 6e10) and a unit L
    of multipliers in [-1, 1], the inverting route's backward error was 4e4 nε
    in float64 (scipy: 5e-3), 4.4 nε with L still inverted.  On PoCL (2 cores,
    n = 1024-2048, 1 or 64 right-hand sides) the substitution costs what the
    inverse's GEMMs cost.
    """
    n, nrhs = x2.shape
    dtype = d_lu.dtype
    L, B = view_of(d_lu), view_of(x2)
    with trace.run("lu_solve", f"trans={trans}", queue, (n, nrhs), dtype):
        with trace.step("solve", (0, n, 0, n), flops=2.0 * n * n * nrhs):
            if trans == 0:
                permute_rows(queue, B, n, nrhs, d_piv.data, dtype=dtype)
                trsm(queue, n, nrhs, L, B, dtype=dtype, lower=True, unit=True,
                     inverse=False)
                trsm(queue, n, nrhs, L, B, dtype=dtype, lower=False, inverse=False)
            else:
                trsm(queue, n, nrhs, L, B, dtype=dtype, lower=False, trans=True,
                     inverse=False)
                trsm(queue, n, nrhs, L, B, dtype=dtype, lower=True, trans=True, unit=True,
                     inverse=False)
                permute_rows(queue, B, n, nrhs, d_piv.data, dtype=dtype, forward=False)


@driver_errors
def lu_solve(lu_and_piv, b, *, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True, queue=None):
    """Solve A·x = b (trans=0) or Aᵀ·x = b (trans=1 or 2) from ``lu_factor``'s output.

    The row interchanges, both triangular solves and their GEMM updates run
    on the device (2n²k flops for k right-hand sides).  The diagonal blocks of
    L and U are solved by substitution, never multiplied by inverted blocks,
    so the backward error stays within a few nε however ill-conditioned U is.

    Parameters
    ----------
    lu_and_piv : tuple (lu, piv)
        The output of :func:`lu_factor`: host or device arrays (any view).  A
        host factor beyond the device's memory is streamed through it block
        column by block column (:func:`oclla.out_of_core_lu.solve_streamed`).
    b : (n,) or (n, k) array_like, or pyopencl.array.Array
        The right-hand side(s).  The factor's dtype is the working precision:
        a host ``b`` is converted to it only where numpy's "safe" rule says
        the conversion is exact (bool, integers that fit, float32 for a
        float64 factor); a float64 ``b`` with a float32 factor is refused
        (scipy would return float64, a float32 solve would round ``b``: the
        caller chooses with ``b.astype(...)``).  A device ``b`` must have the
        factor's dtype.
    trans : {0, 1, 2}, default 0
        0 solves A·x = b; 1 and 2 solve Aᵀ·x = b (real matrices).
    overwrite_b : bool, default False
        A permission, as in scipy: a numpy ``b`` is never written; a
        C-contiguous device ``b`` is solved in place; a device view is solved
        in its gathered copy and x scattered into the view's own entries
        (nothing else of its buffer), and the view is returned.
    check_finite : bool, default True
        Reject NaN/Inf in ``lu`` and ``b`` (ValueError).  Device operands are
        counted on the device beside the solve and read with the solution,
        except when ``b`` itself is overwritten: then before the solve.
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of
        the default device, :func:`oclla.get_queue`).

    Returns
    -------
    x : ndarray or pyopencl.array.Array
        The solution, of ``b``'s shape and the factor's dtype; a device array
        for a device ``b``.

    Raises
    ------
    ValueError
        Shapes that do not match, ``trans`` not 0, 1 or 2, NaN/Inf with
        ``check_finite``, or a ``piv`` entry outside [0, n) (e.g. 1-based
        pivots; a device ``piv`` is checked on the device, and the solve
        never addresses a row outside the matrix, but after this error a
        C-contiguous device ``b`` given with ``overwrite_b`` holds garbage).
    TypeError
        A ``b`` whose dtype does not convert exactly to the factor's, or a
        ``piv`` that does not hold integers.
    oclla.DeviceError
        float64 on a device without ``cl_khr_fp64``, or device trouble.
    MemoryError
        A host factor beyond the device's memory, not C-contiguous, whose C-contiguous
        copy would not fit the host's available memory.

    See Also
    --------
    lu_factor : the factorization.
    """
    if trans not in (0, 1, 2):
        raise ValueError(f"trans must be 0, 1 or 2, got {trans!r}")
    lu_, piv = unpack_pair(lu_and_piv, "lu_and_piv", "lu_factor")
    queue = resolve_queue(queue)
    from . import out_of_core_lu, tiled, tiled_lu
    if out_of_core_lu.route(lu_, queue):
        return out_of_core_lu.lu_solve_host(lu_, piv, b, trans=trans, overwrite_b=overwrite_b,
                                            check_finite=check_finite, queue=queue)
    if isinstance(lu_, tiled.TiledMatrix) or tiled.exceeds_buffer(lu_, queue):
        return tiled_lu.lu_solve_beyond(lu_, piv, b, trans=trans, overwrite_b=overwrite_b,
                                        check_finite=check_finite, queue=queue)
    # NaN/Inf in device operands is counted beside the solve and read with X, unless
    # X goes into b itself: then before it, so that bad input never overwrites b
    defer_lu, defer_b = (checked_beside(x, check_finite, b, overwrite_b) for x in (lu_, b))
    lu_ = as_matrix(lu_, queue, name="lu", check_finite=check_finite and not defer_lu)
    n = lu_.shape[0]
    dtype = lu_.dtype
    b_ = as_rhs(b, queue, n, dtype, check_finite=check_finite and not defer_b)
    if n == 0 or b_.size == 0:
        return b_.copy() if is_device_array(b_) else np.empty(b_.shape, dtype)
    d_lu = read_only(queue, lu_, results_to_host=not is_device_array(b_))
    flags = int_zeros(queue, 2)                      # [bad piv entries, NaN/Inf entries]
    d_piv = _device_piv(piv, n, queue, flags)
    x2, result = rhs_work(queue, b_, n, overwrite_b, original=b)
    for operand, deferred in ((d_lu, defer_lu), (x2, defer_b)):
        if deferred:
            count_nonfinite(queue, operand, flags, slot=1)
    _enqueue_solve(queue, d_lu, d_piv, x2, trans)
    if not (is_device_array(piv) or defer_lu or defer_b):
        return result()
    bad_piv, x = read_status_with(flags, result, host_result=not is_device_array(b_))
    if bad_piv:
        raise ValueError(PIV_RANGE.format(n=n))
    return x


@driver_errors
def lu(a, *, permute_l: bool = False, method: str = "blocked", variant: str | None = None,
       pivoting: str | None = None, overwrite_a: bool = False, check_finite: bool = True,
       block: int | None = None, queue=None):
    """P, L, U with A = P·L·U (or PL, U with ``permute_l``), as :func:`scipy.linalg.lu`.

    The factorization runs on the device (:func:`lu_factor`, same options);
    splitting the packed result into L and U and forming P are host
    bookkeeping (no arithmetic).

    Parameters
    ----------
    a : (n, n) array_like of float32 or float64, or pyopencl.array.Array
        The matrix (a device array may be any view).
    permute_l : bool, default False
        Return (P·L, U) instead of (P, L, U).
    method, variant, pivoting, overwrite_a, check_finite, block
        As for :func:`lu_factor`.
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of
        the default device, :func:`oclla.get_queue`).

    Returns
    -------
    p : (n, n) ndarray or pyopencl.array.Array
        The permutation matrix (not returned with ``permute_l``).
    l : (n, n) ndarray or pyopencl.array.Array
        Unit lower triangular L (P·L with ``permute_l``).
    u : (n, n) ndarray or pyopencl.array.Array
        Upper triangular U.  All device arrays on ``queue`` for a device
        ``a``, as every oclla function returns them.

    Raises
    ------
    ValueError, TypeError, numpy.linalg.LinAlgError, oclla.DeviceError, MemoryError
        As :func:`lu_factor` raises them.
    """
    queue = resolve_queue(queue)
    device = is_device_array(a)
    if device:
        a = dense(queue, a).get()
    lu_, piv = lu_factor(a, method=method, variant=variant, pivoting=pivoting,
                         overwrite_a=overwrite_a, check_finite=check_finite, block=block,
                         queue=queue)
    n = lu_.shape[0]
    l, u = (f.astype(lu_.dtype) for f in split_lu(lu_))    # exact: lu_'s own values
    perm = permutation_from_piv(piv, n)
    if permute_l:
        pl = np.empty_like(l)
        pl[perm] = l
        factors = (pl, u)
    else:
        p = np.zeros((n, n), dtype=lu_.dtype)
        p[perm, np.arange(n)] = 1
        factors = (p, l, u)
    return tuple(cl_array.to_device(queue, f) for f in factors) if device else factors
