"""Cholesky inverse (potri) and log-determinant against scipy and CuPy, one run.

    python benchmarks/potri.py                        # n = 1024 ... 4096, both dtypes, lower
    python benchmarks/potri.py --quick                # n = 1024, 2048; one timed run each
    python benchmarks/potri.py --sizes 8192,16384 --logdet-sizes 32768 --upper   # a GPU

potri: A⁻¹ from the factor (oclla.cho_inverse's device part, data already on
the device, best of --repeat, interleaved with the references so that a
shared machine's load hits them alike); GFLOP/s count LAPACK's 2n³/3 (trtri
n³/3 + lauum n³/3).  scipy runs ``?potri`` on a host factor; CuPy (when it
sees a CUDA device) cuSOLVER's ``?potri`` where its bindings have it, else
``?potrs`` with an identity right-hand side (its column says which; that
solve costs 2n³, counted as 2n³/3 like the rest, so its GFLOP/s are
comparable as inverses per second).  ``vs scipy`` is scipy's time over
oclla's.  err is ‖A·A⁻¹ − I‖∞/(n‖A‖∞‖A⁻¹‖∞ε) on a matrix of condition number
100 (oclla.accuracy.spd_with_condition, three reflections).

log-det: 2Σ log cᵢᵢ of an n x n factor already on the device (two launches,
one result read back), µs per call; GB/s counts the n diagonal entries read
(each lies on its own cache line, so the memory system moves about
64/itemsize times more).  numpy's time is for the diagonal as a contiguous vector
(a lower bound for the host); CuPy's reads the diagonal of an n x n device array.
"""

import argparse
import sys

import numpy as np
import pyopencl.array as cl_array
from scipy.linalg import lapack

import oclla
from oclla import _validate, accuracy
from oclla._bench import best_of, cupy_best_of, cupy_or_none
from oclla.inverse import invert_device, logdet_device, potri_flops


def factor(n: int, dtype, lower: bool):
    a = accuracy.spd_with_condition(n, 100.0, reflections=3, rng=n, dtype=np.float64)
    c = np.linalg.cholesky(a)
    return a.astype(dtype), (c if lower else c.T).astype(dtype)


def cupy_inverse(cp, lower: bool):
    """``(name, f)``: f(c) inverts from the device factor c with cuSOLVER (potri, or potrs
    with an identity).  CuPy is row-major and cuSOLVER column-major: a row-major lower
    factor is a column-major upper one."""
    from cupy.cuda import device
    from cupy_backends.cuda.libs import cublas, cusolver
    handle = device.get_cusolver_handle()
    uplo = cublas.CUBLAS_FILL_MODE_UPPER if lower else cublas.CUBLAS_FILL_MODE_LOWER
    info = cp.zeros(1, cp.int32)

    def potri(c):
        p = "d" if c.dtype == np.float64 else "s"
        n = c.shape[0]
        size = getattr(cusolver, p + "potri_bufferSize")(handle, uplo, n, c.data.ptr, n)
        work = cp.empty(size, c.dtype)
        getattr(cusolver, p + "potri")(handle, uplo, n, c.data.ptr, n, work.data.ptr, size,
                                       info.data.ptr)
        return c

    def potrs(c):
        p = "d" if c.dtype == np.float64 else "s"
        n = c.shape[0]
        x = cp.eye(n, dtype=c.dtype)
        getattr(cusolver, p + "potrs")(handle, uplo, n, n, c.data.ptr, n, x.data.ptr, n,
                                       info.data.ptr)
        return x

    return ("potri", potri) if hasattr(cusolver, "spotri") else ("potrs", potrs)


def measure_potri(n: int, dtype, lower: bool, queue, repeat: int, cp) -> dict:
    a, c = factor(n, dtype, lower)
    device = cl_array.to_device(queue, c)
    potri = lapack.dpotri if dtype == np.float64 else lapack.spotri
    out = {}

    def ours():
        work = device.copy()
        invert_device(queue, work, lower=lower, full=True)
        queue.finish()
        out["inv"] = work

    def reference():
        x, info = potri(c, lower=int(lower))
        assert info == 0

    best = dict(oclla=float("inf"), scipy=float("inf"))
    for i in range(repeat + 1):                   # the first round is a warm-up
        for name, fn in (("oclla", ours), ("scipy", reference)):
            t = best_of(fn, 1, 0)
            if i:
                best[name] = min(best[name], t)
    flops = potri_flops(n)
    row = dict(n=n, dtype=np.dtype(dtype).name, oclla=flops / best["oclla"] / 1e9,
               scipy=flops / best["scipy"] / 1e9, ratio=best["scipy"] / best["oclla"],
               err=accuracy.inverse_error(a, out["inv"].get()))
    if cp is not None:
        name, fn = cupy_inverse(cp, lower)
        dc = cp.asarray(c)
        row["cupy"] = flops / cupy_best_of(cp, lambda: fn(dc.copy()), repeat) / 1e9
        row["cupy_name"] = name
    return row


def measure_logdet(n: int, dtype, queue, repeat: int, cp) -> dict:
    d = np.random.default_rng(n).uniform(0.5, 2.0, n).astype(dtype)
    flat = cl_array.zeros(queue, n * n, dtype)
    _validate.scatter(queue, cl_array.to_device(queue, d), flat[::n + 1])
    queue.finish()
    got = logdet_device(queue, flat.data, 0, n, n, dtype=dtype)
    ref = accuracy.kahan_sum(2.0 * np.log(d.astype(np.float64)))
    t = best_of(lambda: logdet_device(queue, flat.data, 0, n, n, dtype=dtype), repeat * 5)
    t_host = best_of(lambda: 2.0 * np.log(d).sum(), repeat * 5)
    row = dict(n=n, dtype=np.dtype(dtype).name, us=t * 1e6, gbs=n * d.itemsize / t / 1e9,
               host_us=t_host * 1e6, rel=abs(got - ref) / abs(ref))
    if cp is not None:
        dc = cp.zeros((n, n), dtype)
        dc.ravel()[::n + 1] = cp.asarray(d)
        row["cupy_us"] = cupy_best_of(
            cp, lambda: float(2.0 * cp.log(cp.diagonal(dc)).sum()), repeat * 5) * 1e6
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1024,2048,3072,4096")
    p.add_argument("--logdet-sizes", default="4096,8192")
    p.add_argument("--dtype", default="both", choices=("float32", "float64", "both"))
    p.add_argument("--upper", action="store_true", help="A = UᵀU (default: LLᵀ)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true",
                   help="n = 1024, 2048 and log-det n = 4096, one timed run each")
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.logdet_sizes, args.repeat = "1024,2048", "4096", 1
    queue = oclla.get_queue(args.device)
    info = oclla.device_info(queue)
    dtypes = ("float32", "float64") if args.dtype == "both" else (args.dtype,)
    dtypes = [np.dtype(d) for d in dtypes if d == "float32" or info.fp64]
    lower = not args.upper
    cp = cupy_or_none()
    print(f"potri {'lower' if lower else 'upper'} on {info.name}; GFLOP/s = 2n^3/3 / time")
    cupy_head = f" {'cupy':>14}" if cp else ""
    print(f"{'n':>6} {'dtype':>8} {'oclla':>8} {'scipy':>8} {'vs scipy':>8}{cupy_head} "
          f"{'err':>7}")
    for dtype in dtypes:
        measure_potri(160, dtype, lower, queue, 1, None)          # build the kernels
        for n in (int(s) for s in args.sizes.split(",")):
            r = measure_potri(n, dtype, lower, queue, args.repeat, cp)
            cupy_col = f" {r['cupy']:8.1f} {r['cupy_name']:>5}" if cp else ""
            print(f"{n:6d} {r['dtype']:>8} {r['oclla']:8.1f} {r['scipy']:8.1f} "
                  f"{r['ratio']:8.2f}{cupy_col} {r['err']:7.2g}", flush=True)
    print(f"\nlog-det on {info.name}: µs per call, GB/s of diagonal entries read")
    cupy_head = f" {'cupy µs':>8}" if cp else ""
    print(f"{'n':>6} {'dtype':>8} {'µs':>8} {'GB/s':>7} {'numpy µs':>8}{cupy_head} {'rel err':>8}")
    for dtype in dtypes:
        for n in (int(s) for s in args.logdet_sizes.split(",")):
            r = measure_logdet(n, dtype, queue, args.repeat, cp)
            cupy_col = f" {r['cupy_us']:8.1f}" if cp else ""
            print(f"{n:6d} {r['dtype']:>8} {r['us']:8.1f} {r['gbs']:7.3f} {r['host_us']:8.1f}"
                  f"{cupy_col} {r['rel']:8.1e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
