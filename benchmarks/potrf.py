"""Blocked Cholesky in full and RFP (packed) storage against scipy and CuPy, one run.

    python benchmarks/potrf.py                      # n = 1024, 2048, float32, lower
    python benchmarks/potrf.py --sizes 1000,2049 --dtype float64 --upper

GFLOP/s count n³/3.  Device timings are of the factorization alone, data
already on the device (best of --repeat, the three methods interleaved so
that a shared machine's load hits them alike); scipy factors a host array with
LAPACK ``?potrf``; CuPy (when it sees a CUDA device) with cuSOLVER.  The
packed/full column is the ratio of the wall times (the issue asks for at
most 1.1).  Backward errors are ‖A − LLᵀ‖∞/(n‖A‖∞ε) (oclla.accuracy).
"""

import argparse
import sys
import time

import numpy as np
import pyopencl.array as cl_array
import scipy.linalg as sla

import oclla
from oclla import accuracy, rfp
from oclla._bench import cupy_best_of, cupy_or_none
from oclla.cholesky import factor_device
from oclla.rfp import factor_packed


def spd(n: int, dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + n)
    x = rng.standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


def measure(n: int, dtype, lower: bool, queue, repeat: int, cp) -> dict:
    """Full, packed and scipy timings interleaved (a shared machine's load hits all alike)."""
    a = spd(n, dtype)
    flops = n ** 3 / 3.0
    full = cl_array.to_device(queue, a)
    packed = cl_array.to_device(queue, rfp.pack(a, lower=lower, queue=queue))
    runs = {"full": (full, lambda w: factor_device(queue, w, lower=lower, method="blocked")),
            "packed": (packed, lambda w: factor_packed(queue, w, n, lower=lower,
                                                       method="blocked"))}
    best = dict.fromkeys(("full", "packed", "scipy"), float("inf"))
    result = {}
    for i in range(repeat + 1):            # the first round is a warm-up
        for name, (src, factor) in runs.items():
            work = src.copy()
            queue.finish()
            t = time.perf_counter()
            factor(work)
            queue.finish()
            if i:
                best[name] = min(best[name], time.perf_counter() - t)
            result[name] = work
        t = time.perf_counter()
        sla.cholesky(a, lower=lower, check_finite=False)
        if i:
            best["scipy"] = min(best["scipy"], time.perf_counter() - t)
    row = dict(n=n, full=flops / best["full"] / 1e9, packed=flops / best["packed"] / 1e9,
               ratio=best["packed"] / best["full"], scipy=flops / best["scipy"] / 1e9,
               err_full=accuracy.cholesky_backward_error(a, result["full"].get(), lower),
               err_packed=accuracy.cholesky_backward_error(
                   a, rfp.unpack(result["packed"].get(), n, lower=lower), lower))
    if cp is not None:
        da = cp.asarray(a)
        row["cupy"] = flops / cupy_best_of(cp, lambda: cp.linalg.cholesky(da), repeat) / 1e9
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1024,2048")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--upper", action="store_true", help="factor A = UᵀU (default: LLᵀ)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    queue = oclla.get_queue(args.device)
    dtype = np.dtype(args.dtype)
    lower = not args.upper
    cp = cupy_or_none()
    measure(160, dtype, lower, queue, 1, None)          # build the kernels
    print(f"potrf {'lower' if lower else 'upper'} {dtype.name} on "
          f"{oclla.device_info(queue).name}; GFLOP/s = n^3/3 / time")
    cupy_head = f" {'cupy':>8}" if cp else ""
    print(f"{'n':>6} {'full':>8} {'packed':>8} {'pk/full':>8} {'scipy':>8}{cupy_head} "
          f"{'err full':>9} {'err pk':>9}")
    for n in (int(s) for s in args.sizes.split(",")):
        r = measure(n, dtype, lower, queue, args.repeat, cp)
        cupy_col = f" {r['cupy']:8.1f}" if cp else ""
        print(f"{n:6d} {r['full']:8.1f} {r['packed']:8.1f} {r['ratio']:8.2f} {r['scipy']:8.1f}"
              f"{cupy_col} {r['err_full']:9.3f} {r['err_packed']:9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
