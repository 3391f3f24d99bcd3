"""Self-checks of the kernel families: build with the parameters in force, run a tiny case,
compare with numpy.

One check per parameter family of :mod:`oclla._params`.  Each runs the
library's own code paths (so it builds exactly the kernels those paths build
with the family's parameters) on seeded inputs whose sizes straddle the
family's block sizes, and measures the result the LAPACK way
(:mod:`oclla.accuracy`: backward error below the threshold).  Every operand
fits one buffer of the device (:func:`order_limit`): a matrix the device cannot
hold in one buffer is tiled or refused by the library, never given to the
kernels whole, so the checks test the orders the kernels can meet.  They serve
twice: :func:`oclla._params.params` runs a family's check before it first
uses parameters derived from the device's limits (falling back to safer ones
if it fails), and ``oclla devices --check`` runs all of them.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyopencl.array as cl_array

from . import _trace_hooks, accuracy
from ._params import params, trial

#: The largest order a check factors: the checks stay tiny on any device.
LARGEST = 300


def order_limit(queue, dtype) -> int:
    """The largest order (at most :data:`LARGEST`) of a square ``dtype`` matrix that fits
    one buffer of the device (its maximum allocation and its memory, as
    :func:`oclla.device_info` reports them: a profile's limits included).  Every
    dimension of a check's operands is at most this, so no operand is refused by
    the library's size checks or sent to its tiled routes."""
    from ._device import device_info
    info = device_info(queue)
    room = min(info.max_alloc_size, info.global_mem_size) // np.dtype(dtype).itemsize
    return min(LARGEST, math.isqrt(max(room, 0)))


class CheckFailed(RuntimeError):
    """A family computed a wrong result (the message says which case and how wrong)."""


def _matrix(rng, m, n, dtype):
    return rng.standard_normal((m, n)).astype(dtype)


def _spd(rng, n, dtype):
    x = rng.standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


def _expect(error: float, what: str) -> None:
    if not accuracy.passes(error):
        raise CheckFailed(f"{what}: error {error:.3g} (units of nε; passes below "
                          f"{accuracy.THRESHOLD:g})")


def _straddling(limit: int, *blocks: int) -> list:
    """Orders on both sides of each block size, at most ``limit`` (:func:`order_limit`)."""
    sizes = {1, 17}
    for b in blocks:
        if 0 < b < limit:
            sizes.update({b, b + 3})
    return sorted(s for s in sizes if s <= limit)


def _lu_case(queue, dtype, sizes, **options) -> None:
    from .lu import lu_factor, lu_solve
    rng = np.random.default_rng(7)
    limit = order_limit(queue, dtype)
    for n in (n for n in sizes if n <= limit):
        a = _matrix(rng, n, n, dtype)
        lu, piv = lu_factor(a, queue=queue, **options)
        _expect(accuracy.lu_backward_error(a, lu, piv), f"LU {options or ''} n={n}")
        if n > 1:
            b = _matrix(rng, n, 2, dtype)
            x = lu_solve((lu, piv), b, queue=queue)
            _expect(accuracy.solve_backward_error(a, x, b), f"LU solve n={n}")


def _check_gemm(queue, dtype) -> None:
    from .ad2at import assemble_ad2at
    from .blas import matmul
    p = params(queue, "gemm", dtype)
    rng = np.random.default_rng(11)
    tm, tn, tk = (p.get(key, 8) for key in ("TILE_M", "TILE_N", "TILE_K"))
    limit = order_limit(queue, dtype)
    shapes = [(5, 3, 7), (2 * tm + 1, tn + 3, 3 * tk + 1), (37, 45, 29)]
    for m, n, k in (tuple(min(d, limit) for d in shape) for shape in shapes):
        for trans_a, trans_b in ((False, False), (True, False), (False, True)):
            a = _matrix(rng, k, m, dtype) if trans_a else _matrix(rng, m, k, dtype)
            b = _matrix(rng, n, k, dtype) if trans_b else _matrix(rng, k, n, dtype)
            c = matmul(a, b, trans_a=trans_a, trans_b=trans_b, queue=queue)
            _expect(accuracy.product_error(c, a.T if trans_a else a, b.T if trans_b else b),
                    f"GEMM {m}x{n}x{k} trans=({trans_a}, {trans_b})")
    m, n = min(23, limit), min(41, limit)
    a = _matrix(rng, m, n, dtype)
    d2 = rng.uniform(0.5, 2.0, n).astype(dtype)
    c = assemble_ad2at(a, d2, symmetric=True, queue=queue)
    _expect(accuracy.product_error(c, a * d2, a.T), f"AD²Aᵀ {m}x{n}")


def _check_gemm_thin(queue, dtype) -> None:
    from .blas import matmul
    max_k = params(queue, "gemm_thin", dtype)["MAX_K"]
    rng = np.random.default_rng(13)
    limit = order_limit(queue, dtype)
    m, n = min(70, limit), min(66, limit)
    for k in sorted({1, min(max_k, limit)}) if max_k else ():
        a, b = _matrix(rng, m, k, dtype), _matrix(rng, k, n, dtype)
        _expect(accuracy.product_error(matmul(a, b, queue=queue), a, b), f"thin GEMM k={k}")


def _check_small_kernels(queue, dtype) -> None:
    """wg1d and local2d: packing, the per-pivot Cholesky and the faithful LU use them."""
    from . import rfp
    from .cholesky import cholesky
    rng = np.random.default_rng(17)
    for n in (n for n in (1, 18, 37) if n <= order_limit(queue, dtype)):
        a = _spd(rng, n, dtype)
        for lower in (True, False):
            arf = rfp.pack(a, lower=lower, queue=queue)
            back = rfp.unpack(arf, n, lower=lower, queue=queue)
            want = np.tril(a) if lower else np.triu(a)
            if not np.array_equal(back, want):
                raise CheckFailed(f"RFP pack/unpack round trip n={n} lower={lower}")
            c = cholesky(a, lower=lower, method="pivot", queue=queue)
            _expect(accuracy.cholesky_backward_error(a, c, lower),
                    f"per-pivot Cholesky n={n} lower={lower}")
    _lu_case(queue, dtype, (1, 9, 23), method="pivot", variant="faithful",
             pivoting="none")


def _check_trsm(queue, dtype) -> None:
    from .blas import trsm, view_of
    p = params(queue, "trsm", dtype)
    nb = p["TRSM_NB"]
    rng = np.random.default_rng(19)
    few = p["FEW_RHS"]                     # both left routes: FEW_ROUTE and the GEMMs
    for m, nrhs in itertools.product(_straddling(order_limit(queue, dtype), nb, 2 * nb),
                                     sorted({max(few, 1), few + 1, 5})):
        t = np.tril(_matrix(rng, m, m, dtype)) + 4 * np.eye(m, dtype=dtype)
        for left in (True, False):
            for lower in (True, False):
                tri = t if lower else t.T.copy()
                b = _matrix(rng, m, nrhs, dtype) if left else _matrix(rng, nrhs, m, dtype)
                dt, db = cl_array.to_device(queue, tri), cl_array.to_device(queue, b)
                trsm(queue, m, nrhs, view_of(dt), view_of(db), dtype=dtype, left=left,
                     lower=lower)
                x = db.get()
                error = (accuracy.solve_backward_error(tri, x, b) if left     # T X = B
                         else accuracy.solve_backward_error(tri.T, x.T, b.T))  # X T = B
                _expect(error, f"TRSM m={m} nrhs={nrhs} left={left} lower={lower}")


def _check_laswp(queue, dtype) -> None:
    from .blas import laswp, view_of
    rng = np.random.default_rng(23)
    n, cols = (min(d, order_limit(queue, dtype)) for d in (37, 29))
    a = _matrix(rng, n, cols, dtype)
    piv = np.array([rng.integers(i, n) for i in range(n)], np.int32)
    da = cl_array.to_device(queue, a)
    dpiv = cl_array.to_device(queue, piv)
    laswp(queue, view_of(da), 0, cols, dpiv.data, 0, n, dtype=dtype)
    want = a.copy()
    for i, j in enumerate(piv):
        want[[i, j]] = want[[j, i]]
    if not np.array_equal(da.get(), want):
        raise CheckFailed(f"LASWP of {n} interchanges on a {n} x {cols} matrix")


def _check_lu(queue, dtype) -> None:
    p = params(queue, "lu", dtype)
    limit = order_limit(queue, dtype)
    sizes = _straddling(limit, p["NB"],
                        p["SMALL_N"] + p["NB"] if p["SMALL_N"] else 2 * p["NB"])
    _lu_case(queue, dtype, sizes, method="blocked")
    if p["SMALL_N"] > 1:
        with trial(queue, "lu", dtype, {**p, "SMALL_N": 0}):
            _lu_case(queue, dtype, _straddling(limit, p["NB"]), method="blocked")


def _check_chol(queue, dtype) -> None:
    from . import rfp
    from .cholesky import cho_solve, cholesky
    p = params(queue, "chol", dtype)
    variants = [p] + ([{**p, "SMALL_N": 0}] if p["SMALL_N"] else [])
    rng = np.random.default_rng(29)
    for variant in variants:
        with trial(queue, "chol", dtype, variant):
            for n in _straddling(order_limit(queue, dtype), variant["LEAF"], variant["NB"]):
                a = _spd(rng, n, dtype)
                for lower in (True, False):
                    c = cholesky(a, lower=lower, queue=queue)
                    _expect(accuracy.cholesky_backward_error(a, c, lower),
                            f"Cholesky n={n} lower={lower} SMALL_N={variant['SMALL_N']}")
                b = _matrix(rng, n, 2, dtype)
                x = cho_solve((c, False), b, queue=queue)
                _expect(accuracy.solve_backward_error(a, x, b), f"Cholesky solve n={n}")
                arf = rfp.cholesky(rfp.pack(a, queue=queue), n, queue=queue)
                _expect(accuracy.cholesky_backward_error(a, rfp.unpack(arf, n, queue=queue),
                                                         True), f"packed Cholesky n={n}")


def _check_update(queue, dtype) -> None:
    """The blocked rank-k update and downdate, orders and ranks straddling PANEL and KB."""
    import scipy.linalg as sla

    from .update import cholesky_update
    rng = np.random.default_rng(31)
    limit = order_limit(queue, dtype)
    for n in _straddling(limit, params(queue, "update", dtype)["PANEL"]):
        b = _spd(rng, n, dtype)
        for k in sorted({1, min(17, limit)}):
            v = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(dtype)
            a = (b + v @ v.T).astype(dtype)
            for sign, start, target in ((1, b, a), (-1, a, b)):
                for lower in (False, True):
                    c = sla.cholesky(start.astype(np.float64), lower=lower).astype(dtype)
                    r = cholesky_update(c, v, sign=sign, lower=lower, queue=queue)
                    _expect(accuracy.cholesky_backward_error(target, r, lower),
                            f"update n={n} k={k} sign={sign} lower={lower}")


def _check_variant(variant: str):
    def run(queue, dtype) -> None:
        _lu_case(queue, dtype, (1, 2, 17, 37, 70), method="pivot", variant=variant)
    return run


CHECKS = {
    "gemm": _check_gemm,
    "gemm_thin": _check_gemm_thin,
    "wg1d": _check_small_kernels,
    "local2d": _check_small_kernels,
    "trsm": _check_trsm,
    "laswp": _check_laswp,
    "lu": _check_lu,
    "chol": _check_chol,
    "pivot": _check_variant("inplace"),
    "crout": _check_variant("crout"),
    "window": _check_variant("window"),
    "update": _check_update,
}


def run_check(queue, family: str, dtype) -> None:
    """Run ``family``'s check on ``queue`` with the parameters in force; raise
    :class:`CheckFailed` (wrong result) or the library's own error (build, launch)."""
    CHECKS[family](queue, np.dtype(dtype))


def _check_public_api(queue, dtype) -> None:
    """Every public routine once on a tiny input (the families' checks cover the rest)."""
    from . import rfp
    from .cholesky import cho_factor, cho_solve
    from .lu import lu
    from .wls import wls_solve
    rng = np.random.default_rng(31)
    a = _matrix(rng, 12, 12, dtype)
    p, l, u = lu(a, queue=queue)
    _expect(accuracy.plu_backward_error(a, p, l, u), "lu(a)")
    s = _spd(rng, 12, dtype)
    b = _matrix(rng, 12, 3, dtype)
    x = cho_solve(cho_factor(s, queue=queue), b, queue=queue)
    _expect(accuracy.solve_backward_error(s, x, b), "cho_factor + cho_solve")
    arf = rfp.cholesky(rfp.pack(s, queue=queue), 12, queue=queue)
    x = rfp.cho_solve((arf, True), b, queue=queue)
    _expect(accuracy.solve_backward_error(s, x, b), "packed cho_solve")
    m, d2, g = _matrix(rng, 6, 20, dtype), rng.uniform(0.5, 2.0, 20), rng.standard_normal(20)
    x = wls_solve(m, d2, g, queue=queue).x
    m64 = m.astype(np.float64)
    want = np.linalg.solve((m64 * d2) @ m64.T, (m64 * d2) @ g)
    if not np.linalg.norm(x - want) <= 1e-6 * np.linalg.norm(want):
        raise CheckFailed("wls_solve: refined solution differs from the normal equations' "
                          f"by {np.linalg.norm(x - want) / np.linalg.norm(want):.3g} (relative)")


def check_device(queue, dtypes=None) -> list:
    """Every family's check on ``queue``'s device, for each dtype it supports: rows of
    ``(family, dtype name, status, detail)``, status "ok", "fell back" or "failed".

    The parameters are those :func:`oclla._params.params` chooses (running the
    fallback ladder where no verdict is remembered); each family's check is then
    run again with them, so a remembered verdict is confirmed on this run.
    """
    from . import _params
    from ._device import DeviceError, device_info
    info = device_info(queue)
    if dtypes is None:
        dtypes = ["float32"] + (["float64"] if info.fp64 else [])
    rows = []
    for dtype in dtypes:
        for family in CHECKS:
            try:
                chosen = _params.params(queue, family, dtype)
            except DeviceError as exc:
                rows.append((family, dtype, "failed", str(exc).splitlines()[0]))
                continue
            problem = _params.try_parameters(queue, family, dtype, chosen)
            first = (_params.ladder(queue, family, dtype) or [chosen])[0]
            if problem is not None:
                rows.append((family, dtype, "failed", problem.splitlines()[0]))
            elif chosen == first or _params.is_stored(queue, family, dtype):
                rows.append((family, dtype, "ok", ""))
            else:
                rows.append((family, dtype, "fell back", _params.changed_values(first, chosen)))
        try:
            with _trace_hooks.suspended():
                _check_public_api(queue, np.dtype(dtype))
            rows.append(("public API", dtype, "ok", ""))
        except (CheckFailed, DeviceError, ArithmeticError, np.linalg.LinAlgError) as exc:
            rows.append(("public API", dtype, "failed", str(exc).splitlines()[0]))
    return rows
