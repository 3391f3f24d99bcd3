"""Rank-k Cholesky update/downdate against refactorization, one run.

    python benchmarks/update.py --quick                      # n = 1000, k = 1, 16, float32
    python benchmarks/update.py                              # n = 1000, 2000, 4000; k = 1, 16, 64
    python benchmarks/update.py --sizes 5000,8192,16384 --sign -1 --dtypes float64
    python benchmarks/update.py --stream --sizes 65536 --ranks 16 --dtypes float64

Per (dtype, n, k): the time of ``cholesky_update`` on a factor already on the
device (the kernels alone, ``method`` as given), against refactoring A ± V·Vᵀ:
with scipy (``?syrk`` forms the triangle, ``?potrf`` factors it, host BLAS and
LAPACK), with oclla's own blocked ``cholesky`` on the device (the same syrk +
potrf there), and with CuPy (cuBLAS syrk + cuSOLVER potrf) when it sees a CUDA
device.  Best of --repeat, the contenders interleaved so that a shared
machine's load hits them alike.  GFLOP/s of the update count 3k·n² + 3k·n
(``oclla.update.update_flops``), GB/s the bytes the blocked update moves: the
triangle read and written once, V read and written once per panel; the
speedups are refactorization time / update time.  err is the update's
backward error ‖Ã − R̃ᵀR̃‖∞/(n‖Ã‖∞ε) (oclla.accuracy).

On a machine whose cores are shared with other work, a multi-threaded
OpenBLAS behind scipy spins and slows down tenfold or more; set
``OPENBLAS_NUM_THREADS=1`` there (and say so beside the numbers).
"""

import argparse
import sys
import time

import numpy as np
import pyopencl.array as cl_array
import scipy.linalg as sla
from scipy.linalg import blas, lapack

import oclla
from oclla import accuracy, update
from oclla._bench import cupy_best_of, cupy_or_none
from oclla._programs import int_zeros
from oclla.cholesky import factor_device


def problem(n: int, k: int, sign: int, dtype, seed: int = 0):
    """(A, V, Ã): A SPD (for a downdate A = B + V·Vᵀ, so that Ã = B stays SPD)."""
    rng = np.random.default_rng(seed + n + k)
    x = rng.standard_normal((n, n)).astype(dtype)
    b = x @ x.T / n + np.eye(n, dtype=dtype)
    v = (rng.standard_normal((n, k)) / np.sqrt(max(k, 1))).astype(dtype)
    a = b + v @ v.T if sign < 0 else b
    return a, v, a + sign * (v @ v.T)


def moved_bytes(n: int, k: int, itemsize: int) -> float:
    """Bytes of the blocked update: the triangle in and out, V in and out per panel."""
    panels = -(-n // update.PANEL)
    return float(itemsize) * (n * (n + 1) + 2.0 * n * k * panels)


def measure(n: int, k: int, dtype, sign: int, method: str, queue, repeat: int, cp) -> dict:
    a, v, at = problem(n, k, sign, dtype)
    c = np.ascontiguousarray(sla.cholesky(a))                    # upper, A = RᵀR
    d_c, d_v, d_a = (cl_array.to_device(queue, x) for x in (c, v, a))
    prefix = "s" if dtype == np.float32 else "d"
    syrk, potrf = getattr(blas, prefix + "syrk"), getattr(lapack, prefix + "potrf")
    af = np.asfortranarray(a)
    vt_dev = cl_array.to_device(queue, np.ascontiguousarray(v.T))
    best = dict.fromkeys(("update", "scipy", "oclla"), float("inf"))
    result = None
    for i in range(repeat + 1):                   # the first round is a warm-up
        work, vw, info = d_c.copy(), d_v.copy(), int_zeros(queue)
        queue.finish()
        t = time.perf_counter()
        update.modify_device(queue, work.data, 0, n, n, vw, lower=False, sign=sign,
                             method=method, info=info)
        queue.finish()
        elapsed = {"update": time.perf_counter() - t}
        result = work
        t = time.perf_counter()
        potrf(syrk(float(sign), af, beta=1.0, c=af, trans=0, lower=0, overwrite_c=0),
              lower=0, overwrite_a=1, clean=0)
        elapsed["scipy"] = time.perf_counter() - t
        work_a = d_a.copy()
        queue.finish()
        t = time.perf_counter()
        oclla.blas.syrk(queue, n, k, float(sign), oclla.blas.view_of(vt_dev), 1.0,
                        oclla.blas.view_of(work_a), dtype=dtype, lower=False, trans=True)
        factor_device(queue, work_a, lower=False, method="blocked")
        queue.finish()
        elapsed["oclla"] = time.perf_counter() - t
        if i:
            best = {key: min(best[key], elapsed[key]) for key in best}
    assert int(info.get()[0]) == 0, "the update failed"
    row = dict(n=n, k=k, ms=1e3 * best["update"],
               gflops=update.update_flops(n, k) / best["update"] / 1e9,
               gbs=moved_bytes(n, k, np.dtype(dtype).itemsize) / best["update"] / 1e9,
               scipy=best["scipy"] / best["update"], oclla=best["oclla"] / best["update"],
               err=accuracy.cholesky_backward_error(at, result.get(), False))
    if cp is not None:
        da, dv = cp.asarray(a), cp.asarray(v)

        syrk = getattr(getattr(cp, "cublas", None), "syrk", None)   # CuPy >= 13

        def refactor():
            out = da.copy()
            if syrk is not None:
                syrk("N", dv, out=out, alpha=float(sign), beta=1.0, lower=True)
            else:                                   # the full product: cuBLAS gemm
                out += float(sign) * (dv @ dv.T)
            return cp.linalg.cholesky(out)
        row["cupy"] = cupy_best_of(cp, refactor, repeat) / best["update"]
    return row


def measure_streamed(n: int, k: int, dtype, sign: int, queue) -> dict:
    """One streamed update of a synthetic host factor (unit diagonal, small upper part:
    a factor of a well-conditioned matrix) by a small V: time and bus traffic."""
    rng = np.random.default_rng(n + k)
    c = rng.random((n, n), dtype=dtype)
    c *= 0.1 / n
    np.fill_diagonal(c, 1.0)
    v = (0.1 * rng.standard_normal((n, k))).astype(dtype)
    update.stream_update(c[:64, :64], v[:64], sign=sign, lower=False, check_finite=False,
                         queue=queue)                                       # build kernels
    t = time.perf_counter()
    update.stream_update(c, v, sign=sign, lower=False, check_finite=False, queue=queue)
    elapsed = time.perf_counter() - t
    return dict(n=n, k=k, s=elapsed, gflops=update.update_flops(n, k) / elapsed / 1e9,
                bus=float(n) * (n + 1) * np.dtype(dtype).itemsize / elapsed / 1e9)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1000,2000,4000")
    p.add_argument("--ranks", default="1,16,64")
    p.add_argument("--dtypes", default="float32,float64")
    p.add_argument("--sign", type=int, default=1, choices=(1, -1),
                   help="+1 update (default), -1 downdate")
    p.add_argument("--method", default="blocked", choices=("blocked", "pivot"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true",
                   help="n = 1000, k = 1 and 16, float32, best of 2")
    p.add_argument("--stream", action="store_true",
                   help="stream a host factor through the device (one run per n and k; "
                        "the host needs two copies of the factor, e.g. 64 GiB at "
                        "n = 65536 in float64)")
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.ranks, args.dtypes, args.repeat = "1000", "1,16", "float32", 2
    queue = oclla.get_queue(args.device)
    if args.stream:
        print(f"cholesky_update streamed on {oclla.device_info(queue).name}; bus GB/s = "
              f"the factor's triangle up and down / time")
        for dtype in (np.dtype(s) for s in args.dtypes.split(",")):
            for n in (int(s) for s in args.sizes.split(",")):
                for k in (int(s) for s in args.ranks.split(",")):
                    r = measure_streamed(n, k, dtype, args.sign, queue)
                    print(f"{dtype.name:>7} {n:6d} {k:4d} {r['s']:9.2f} s "
                          f"{r['gflops']:8.2f} GFLOP/s {r['bus']:7.2f} bus GB/s", flush=True)
        return 0
    cp = cupy_or_none()
    print(f"cholesky_update ({'update' if args.sign > 0 else 'downdate'}, {args.method}) "
          f"on {oclla.device_info(queue).name}; speedup = refactorization time / update "
          f"time")
    cupy_head = f" {'x cupy':>7}" if cp else ""
    print(f"{'dtype':>7} {'n':>6} {'k':>4} {'ms':>9} {'GFLOP/s':>8} {'GB/s':>7} "
          f"{'x scipy':>7} {'x oclla':>7}{cupy_head} {'err':>7}")
    for dtype in (np.dtype(s) for s in args.dtypes.split(",")):
        measure(64, 2, dtype, args.sign, args.method, queue, 1, None)      # build kernels
        for n in (int(s) for s in args.sizes.split(",")):
            for k in (int(s) for s in args.ranks.split(",")):
                r = measure(n, k, dtype, args.sign, args.method, queue, args.repeat, cp)
                cupy_col = f" {r['cupy']:7.2f}" if cp else ""
                print(f"{dtype.name:>7} {n:6d} {k:4d} {r['ms']:9.2f} {r['gflops']:8.2f} "
                      f"{r['gbs']:7.2f} {r['scipy']:7.2f} {r['oclla']:7.2f}{cupy_col} "
                      f"{r['err']:7.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
