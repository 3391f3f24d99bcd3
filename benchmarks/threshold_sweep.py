"""Backward errors of the factorizations and solves at orders that straddle a device's
thresholds, each repeated: a wrong result that comes now and then is found here.

    python benchmarks/threshold_sweep.py                     # the H100/H200 thresholds
    python benchmarks/threshold_sweep.py --routines lu --sizes 8447,10243 --repeat 10

For each order, dtype and routine (``lu``: lu_factor and lu_solve of 1 and 3 right-hand
sides; ``chol``: cholesky and cho_solve, both triangles; ``rfp``: rfp.cholesky and
rfp.cho_solve, both layouts) it prints LAPACK's backward errors of the factor and the
solve in units of n·‖A‖·ε (oclla.accuracy's measures; above 30 is wrong) and a digest of
the factor: the same input gives the same factor bit for bit, so repeats that differ
point at a race.  Inputs: uniform in [-1, 1] (LU) and B·Bᵀ/n + I/100 (Cholesky), seeded
by the order.  The residuals are formed in float64 by CuPy where it is installed (a GPU
forms those of n = 16384 in a fraction of a second), else by numpy.  The default orders
straddle the H100/H200 entries' FLAT_N (2048), SMALL_N (5120, 7168), the Cholesky's NB
(1024) and the grid panel's row classes (work-groups x 64 rows: n = 8448); exit status 1
when any case is wrong.  The default device, or OCLLA_DEVICE.
"""

import argparse
import hashlib
import sys
import time

import numpy as np

import oclla
from oclla import accuracy, rfp

try:
    import cupy as xp
except ImportError:
    xp = np

SIZES = {"lu": (1, 3, 129, 2047, 2049, 4095, 4097, 6145, 8191, 8193, 8447, 8449, 10243,
                12289, 16383),
         "chol": (1, 65, 1023, 1025, 5119, 5121, 7167, 7169, 8193, 10241, 14337, 16383),
         "rfp": (1, 2, 3, 1025, 2049, 4097, 10241, 14335, 14337, 16383)}


def to_host(a):
    return a.get() if hasattr(a, "get") and xp is not np else np.asarray(a)


def inf_norm(m) -> float:
    m = m.reshape(m.shape[0], -1)
    return float(xp.abs(m).sum(axis=1).max()) if m.size else 0.0


def ratio(residual: float, scale: float) -> float:
    return 0.0 if residual == 0.0 else residual / scale


def solve_error(a64, x, b, dtype) -> float:
    x, b = xp.asarray(x, xp.float64), xp.asarray(b, xp.float64)
    x2, b2 = x.reshape(x.shape[0], -1), b.reshape(b.shape[0], -1)
    n = a64.shape[0]
    return ratio(inf_norm(b2 - a64 @ x2), inf_norm(a64) * inf_norm(x2) * n * accuracy.eps(dtype))


def factor_error(a64, left, right, dtype) -> float:
    n = a64.shape[0]
    return ratio(inf_norm(a64 - left @ right), n * inf_norm(a64) * accuracy.eps(dtype))


def general(n, dtype):
    return xp.random.RandomState(n).uniform(-1, 1, (n, n)).astype(dtype)


def spd(n, dtype):
    b = xp.random.RandomState(n + 1).standard_normal((n, n))
    return (b @ b.T / n + 0.01 * xp.eye(n)).astype(dtype)


def run_lu(n, dtype):
    a = general(n, dtype)
    lu, piv = oclla.lu_factor(to_host(a))
    a64 = a.astype(xp.float64)
    l = xp.tril(xp.asarray(lu, xp.float64), -1) + xp.eye(n)
    u = xp.triu(xp.asarray(lu, xp.float64))
    perm = xp.asarray(accuracy.permutation_from_piv(piv, n))
    b = np.random.default_rng(n).standard_normal((n, 3)).astype(dtype)
    solve = max(solve_error(a64, oclla.lu_solve((lu, piv), b), b, dtype),
                solve_error(a64, oclla.lu_solve((lu, piv), b[:, 0]), b[:, 0], dtype))
    return factor_error(a64[perm], l, u, dtype), solve, lu


def run_chol(n, dtype, lower):
    a = spd(n, dtype)
    c = oclla.cholesky(to_host(a), lower=lower)
    a64 = a.astype(xp.float64)
    c64 = xp.asarray(c, xp.float64)
    l = xp.tril(c64) if lower else xp.triu(c64).T
    b = np.random.default_rng(n).standard_normal((n, 2)).astype(dtype)
    return (factor_error(a64, l, l.T, dtype),
            solve_error(a64, oclla.cho_solve((c, lower), b), b, dtype), c)


def run_rfp(n, dtype, lower):
    a = spd(n, dtype)
    packed = rfp.cholesky(rfp.pack(to_host(a), lower=lower), n, lower=lower)
    c64 = xp.asarray(rfp.unpack(packed, n, lower=lower), xp.float64)
    a64 = a.astype(xp.float64)
    l = xp.tril(c64) if lower else xp.triu(c64).T
    b = np.random.default_rng(n).standard_normal(n).astype(dtype)
    return (factor_error(a64, l, l.T, dtype),
            solve_error(a64, rfp.cho_solve((packed, lower), b), b, dtype), packed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--routines", default="lu,chol,rfp")
    ap.add_argument("--dtype", default="float32,float64")
    ap.add_argument("--sizes", help="orders for every routine (default: each routine's own)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    wrong = 0
    for routine in args.routines.split(","):
        sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes else SIZES[routine])
        for dtype in (np.dtype(d).type for d in args.dtype.split(",")):
            for n in sizes:
                for variant in ((None,) if routine == "lu" else (True, False)):
                    for _ in range(args.repeat):
                        t = time.perf_counter()
                        if routine == "lu":
                            err, solve, factor = run_lu(n, dtype)
                        else:
                            err, solve, factor = (run_chol if routine == "chol" else run_rfp)(
                                n, dtype, variant)
                        ok = accuracy.passes(err) and accuracy.passes(solve)
                        wrong += not ok
                        name = routine + ("" if variant is None else " L" if variant else " U")
                        digest = hashlib.sha1(np.ascontiguousarray(factor).tobytes()).hexdigest()
                        print(f"{'ok   ' if ok else 'WRONG'} {name} {np.dtype(dtype).name} "
                              f"n={n}: factor {err:.3f} solve {solve:.3f} sha {digest[:10]} "
                              f"({time.perf_counter() - t:.1f} s)", flush=True)
    print(f"{wrong} wrong")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
