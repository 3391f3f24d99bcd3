"""Weighted least squares by the normal equations with mixed-precision refinement.

``wls_solve(a, d2, b)`` minimises ‖D·(b − Aᵀ·x)‖₂ for A of m x n (m <= n),
D² = diag(d2), by solving the normal equations  C·x = g,  C = A·D²·Aᵀ,
g = A·D²·b  -- Jung & O'Leary's Algorithm 1:

1. on the device, in float32: assemble C (one triangle, :mod:`oclla.ad2at`),
   factor C = L·Lᵀ (:mod:`oclla.cholesky`, or :mod:`oclla.rfp` with
   ``packed=True``) and solve L·Lᵀ·x0 = single(g) by two triangular solves;
2. iterative refinement: r = g − A·D²·Aᵀ·x with A, D, b in float64 on the
   host (the paper puts this on the CPU), solve L·Lᵀ·dx = single(r) on the
   device, x += double(dx), until the stopping test below or ``max_iter``
   steps.

The stopping test is invariant to scaling the weights (d2 → s·d2 scales C, g
and r by s and leaves x and dx alone).  The paper's ‖r‖₂/‖x‖₂ <= tol is not:
it never holds for large s and holds at once for small s.  Refinement stops

* converged, when the correction is small: ‖dx‖₂ <= tol·‖x + dx‖₂ (the
  relative error of x is about ‖dx‖/‖x‖, and that of x + dx smaller still);
* when a correction is not below RHO times the one before (refinement no
  longer contracts): converged too if the residual is at the level float64
  rounding alone explains (x is as accurate as float64 residuals can tell:
  no step can improve it, whatever tol asks for); else the float32 factor
  is too inaccurate (κ(C)·ε₃₂ too large), and assembly and factorization are
  redone in float64 when the device has fp64, refinement going on from the
  iterate with the smallest residual, or refinement gives up.

RHO = 1/2 is the threshold of Demmel, Hida, Kahan, Li, Mukherjee and Riedy,
"Error bounds from extra-precise iterative refinement", ACM TOMS 32 (2006).

If the float32 Cholesky breaks down (C is too ill-conditioned for single
precision), assembly and factorization are redone in float64 on the device
when it has fp64 -- the result says so in ``fallback`` -- and otherwise a
:class:`numpy.linalg.LinAlgError` explains why.  A refinement that does not
converge ends with a :class:`scipy.linalg.LinAlgWarning` and returns the
iterate with the smallest residual (the newest, while residuals still fell).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pyopencl.array as cl_array
from numpy.linalg import LinAlgError

from . import trace
from ._device import device_info, driver_errors, resolve_queue
from ._validate import (NONFINITE, all_finite, check_method, check_shape, dense,
                        is_device_array, validate_weights)
from .ad2at import assemble_device
from .blas import view_of
from .cholesky import factor_device, solve_factored
from .rfp import factor_packed, layout, solve_packed

__all__ = ["WLSResult", "wls_solve"]

RHO = 0.5           # a correction not below RHO times the one before: refinement has stalled


@dataclass
class WLSResult:
    """What :func:`wls_solve` found and what it cost.

    Attributes
    ----------
    x : (m,) float64 solution after refinement
    x0 : (m,) float64 copy of the first solution from the device factor
    iterations : refinement steps taken
    residuals : ‖r^k‖₂ / ‖x^(k+1)‖₂ after each step (the paper's stopping
        quantity; it scales with d2, so oclla stops on ``corrections``)
    residual_norms : ‖r^k‖₂ after each step
    converged : whether refinement met its stopping test: the last correction
        ‖dx‖₂/‖x‖₂ is <= tol, or the corrections stopped shrinking (one not
        below half the one before) with the residual at float64 rounding level
    dtype : dtype of the device factorization (float32, or float64 after fallback)
    fallback : why float64 was used, or None
    timings : seconds: "assembly" (transfer of A, d2 and the kernels),
        "factorization", "solve" (x0, including the transfer of g),
        "refinement", "total"
    corrections : ‖dx^k‖₂ / ‖x^(k+1)‖₂ after each step (the stopping quantity)
    """

    x: np.ndarray
    x0: np.ndarray
    iterations: int
    residuals: list = field(default_factory=list)
    residual_norms: list = field(default_factory=list)
    converged: bool = False
    dtype: np.dtype = np.dtype(np.float32)
    fallback: str | None = None
    timings: dict = field(default_factory=dict)
    corrections: list = field(default_factory=list)


def _host64(x, name: str, queue) -> np.ndarray:
    """``x`` as a float64 host array (a device array, any view, is read back)."""
    arr = dense(queue, x).get() if is_device_array(x) else np.asarray(x)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} has dtype {arr.dtype}; wls_solve needs real numbers")
    return np.asarray(arr, dtype=np.float64)


def _relative(num: float, den: float) -> float:
    """num / den for norms, 0 for 0 / 0 and inf for x / 0."""
    return num / den if den > 0 else (0.0 if num == 0 else np.inf)


def _rounding_level(a64, d64, b64, x) -> float:
    """The largest ‖g − A·D²·Aᵀ·x‖₂ that float64 rounding alone explains.

    Formed as this module forms it, g = A·(d2·b) and the residual of the exact
    solution are off by at most γ·|A|·(d2·(|A|ᵀ·|x| + |b|)) entry by entry,
    γ = (m + n + 2)·ε₆₄ (Higham, *Accuracy and Stability of Numerical
    Algorithms*, 2nd ed., §3.5): a residual below this norm says nothing more
    about x.  It scales with d2 as the residual does.
    """
    m, n = a64.shape
    abs_a = np.abs(a64)
    bound = abs_a @ (d64 * (abs_a.T @ np.abs(x) + np.abs(b64)))
    return (m + n + 2) * np.finfo(np.float64).eps * float(np.linalg.norm(bound))


class _DeviceFactor:
    """The device Cholesky factor of C in one dtype, and solves with it."""

    def __init__(self, queue, a64, d64, dtype, *, packed, method, timings):
        self.queue, self.dtype, self.packed = queue, np.dtype(dtype), packed
        m = a64.shape[0]
        self.m = m
        t = time.perf_counter()
        da = cl_array.to_device(queue, a64.astype(self.dtype))
        dd = cl_array.to_device(queue, d64.astype(self.dtype))
        self.c = assemble_device(queue, da, dd, packed=packed, lower=True, method=method)
        queue.finish()
        del da, dd
        timings["assembly"] = timings.get("assembly", 0.0) + time.perf_counter() - t
        t = time.perf_counter()
        try:
            if packed:
                factor_packed(queue, self.c, m, lower=True, method=method)
            else:
                factor_device(queue, self.c, lower=True, method=method)
            queue.finish()
        finally:
            timings["factorization"] = (timings.get("factorization", 0.0)
                                        + time.perf_counter() - t)

    def solve(self, g64: np.ndarray) -> np.ndarray:
        """(L·Lᵀ)⁻¹·g in the factor's dtype, returned as float64."""
        queue, m = self.queue, self.m
        rhs = cl_array.to_device(queue, g64.astype(self.dtype).reshape(m, 1))
        with trace.run("rfp_cho_solve" if self.packed else "cho_solve", "lower", queue,
                       (m, 1), self.dtype):
            with trace.step("solve", (0, m, 0, m), flops=2.0 * m * m):
                if self.packed:
                    solve_packed(queue, self.c.base_data,
                                 self.c.offset // self.dtype.itemsize, layout(m, True),
                                 view_of(rhs), 1, dtype=self.dtype)
                else:
                    solve_factored(queue, view_of(self.c), m, view_of(rhs), 1, lower=True,
                                   dtype=self.dtype)
        return rhs.get().reshape(m).astype(np.float64)


@driver_errors
def wls_solve(a, d2, b, *, refine: bool = True, tol: float = 1e-8, max_iter: int = 100,
              packed: bool = False, method: str = "blocked", check_finite: bool = True,
              queue=None) -> WLSResult:
    """Solve min_x ‖D·(b − Aᵀ·x)‖₂, D² = diag(d2), by Algorithm 1 of Jung & O'Leary.

    Parameters
    ----------
    a : (m, n) array_like, m <= n (rows: unknowns, columns: observations)
    d2 : (n,) non-negative weights, the diagonal of D²
    b : (n,) observations
        Each may be a pyopencl array (any view); the refinement needs them
        on the host in float64, so device arrays are read back.
    refine : run the float64 iterative refinement (else return x0)
    tol : stop when the correction ‖dx‖₂/‖x‖₂ <= tol, or when a correction is not
        below half the one before (converged if the residual is then at float64
        rounding level; otherwise float64 takes over, or refinement gives up).
        Unlike the paper's ‖r‖/‖x‖ test, this one does not change when the
        weights are scaled.
    max_iter : at most this many refinement steps
    packed : assemble and factor in RFP storage (half the device memory)
    method : "blocked" (default) or "pivot" for assembly and factorization
    check_finite : reject NaN/Inf in ``a``, ``d2`` and ``b`` (ValueError)
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`).

    Returns
    -------
    :class:`WLSResult`

    Raises
    ------
    ValueError : shapes, m > n, negative/NaN weights, NaN/Inf data, bad tol/max_iter
    numpy.linalg.LinAlgError : C not positive definite even in float64, or
        float32 breakdown on a device without fp64
    oclla.DeviceError : device trouble (allocation too large, kernels that fail
        to build with every parameter set)
    """
    check_method(method)
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) \
            or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    queue = resolve_queue(queue)
    a64 = _host64(a, "a", queue)
    if a64.ndim != 2:
        raise ValueError(f"a must be 2-D, got shape {a64.shape}")
    m, n = a64.shape
    check_shape(m, n)
    d64 = validate_weights(_host64(d2, "d2", queue), n, np.float64, queue,
                           check_finite=check_finite)
    b64 = _host64(b, "b", queue)
    if b64.shape != (n,):
        raise ValueError(f"b must have shape ({n},), one entry per column of a, "
                         f"got {b64.shape}")
    if check_finite and not (all_finite(a64) and all_finite(b64)):
        raise ValueError(NONFINITE)
    if m == 0:
        empty = np.empty(0)
        return WLSResult(empty, empty.copy(), 0, converged=True,
                         timings=dict(assembly=0.0, factorization=0.0, solve=0.0,
                                      refinement=0.0, total=0.0))

    timings: dict = {}
    fallback = None
    try:
        factor = _DeviceFactor(queue, a64, d64, np.float32, packed=packed, method=method,
                               timings=timings)
    except LinAlgError as exc:
        if not device_info(queue).fp64:
            raise LinAlgError(
                f"the float32 Cholesky factorization of A·D²·Aᵀ broke down ({exc}): the "
                f"matrix is too ill-conditioned for single precision, and "
                f"{device_info(queue).name} has no fp64 to redo it in double") from exc
        fallback = (f"float32 Cholesky broke down ({exc}); assembled and factored "
                    f"again in float64")
        factor = _DeviceFactor(queue, a64, d64, np.float64, packed=packed, method=method,
                               timings=timings)

    t = time.perf_counter()
    g = a64 @ (d64 * b64)
    x = factor.solve(g)
    timings["solve"] = time.perf_counter() - t
    x0 = x.copy()

    t = time.perf_counter()
    ratios, norms, corrections = [], [], []
    converged = stalled = False
    if refine:
        best = (np.inf, x)                  # smallest residual norm seen, and its x
        last = np.inf                       # ‖dx‖ of the step before
        for _ in range(max_iter):
            r = g - a64 @ (d64 * (a64.T @ x))
            rnorm = float(np.linalg.norm(r))
            if rnorm < best[0]:
                best = (rnorm, x)
            dx = factor.solve(r)
            x_new = x + dx
            dxnorm, xnorm = float(np.linalg.norm(dx)), float(np.linalg.norm(x_new))
            norms.append(rnorm)
            ratios.append(_relative(rnorm, xnorm))
            corrections.append(_relative(dxnorm, xnorm))
            if corrections[-1] <= tol:
                x, converged = x_new, True
                break
            if dxnorm <= RHO * last:        # the corrections still shrink (never with NaN)
                x, last = x_new, dxnorm
                continue
            if rnorm <= _rounding_level(a64, d64, b64, x):
                converged = True            # x is as accurate as float64 residuals can tell
                break
            if factor.dtype == np.float32 and device_info(queue).fp64:
                # float32 refinement diverges or stalls: the factor is too inaccurate
                fallback = (f"refinement with the float32 factor stopped improving after "
                            f"{len(corrections)} steps; assembled and factored again in "
                            f"float64")
                factor = _DeviceFactor(queue, a64, d64, np.float64, packed=packed,
                                       method=method, timings=timings)
                x, last = best[1], np.inf
                continue
            stalled = True
            break
        if not converged and best[0] < norms[-1]:
            x = best[1]
        if not converged:
            why = "the corrections stopped shrinking" if stalled else f"{max_iter} steps"
            from scipy.linalg import LinAlgWarning
            warnings.warn(f"iterative refinement did not reach ‖dx‖/‖x‖ <= {tol} ({why}; "
                          f"last {corrections[-1]:.3e})", LinAlgWarning, stacklevel=2)
    timings["refinement"] = time.perf_counter() - t
    timings["total"] = sum(timings[k] for k in ("assembly", "factorization", "solve",
                                                "refinement"))
    return WLSResult(x, x0, len(ratios), ratios, norms, converged, factor.dtype, fallback,
                     timings, corrections)
