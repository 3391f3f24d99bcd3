"""``oclla bench potri`` and ``oclla bench logdet``: Cholesky inverse and log-determinant
against scipy and cuSOLVER, one run.

    oclla bench potri                                  # n = 1024 ... 4096, both dtypes, lower
    oclla bench potri --reference cuda --sizes 2048,8192,16384 --upper
    oclla bench logdet --reference cuda --sizes 32768

potri: A⁻¹ from the factor (oclla.cho_inverse's device part, data already on
the device, best of --repeat, interleaved with the references so that a
shared machine's load hits them alike); GFLOP/s count LAPACK's 2n³/3 (trtri
n³/3 + lauum n³/3).  scipy runs ``?potri`` on a host factor (``--reference
cpu``); CuPy (``--reference cuda``, or ``auto`` where CuPy sees a CUDA
device) cuSOLVER's ``?potri`` where its bindings have it, else ``?potrs``
with an identity right-hand side (its column says which; that solve costs
2n³, counted as 2n³/3 like the rest, so its GFLOP/s are comparable as
inverses per second).  ``vs`` is the reference's time over oclla's; ``%peak``
oclla's GFLOP/s over the device's vector peak where :data:`oclla.bench.PEAKS`
knows it.  err is ‖A·A⁻¹ − I‖∞/(n‖A‖∞‖A⁻¹‖∞ε) on a matrix of condition number
100 (oclla.accuracy.spd_with_condition, three reflections).

log-det: 2Σ log cᵢᵢ of an n x n factor already on the device (two launches,
one result read back), µs per call; GB/s counts the n diagonal entries read
(each lies on its own cache line, so the memory system moves about
64/itemsize times more, and a call is bound by its launches, not by
bandwidth).  numpy's time is for the diagonal as a contiguous vector (a lower
bound for the host); CuPy's reads the diagonal of an n x n device array.
rel err is against a float64 Kahan sum on the host.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from ._bench import dtype_list, int_list


def factor(n: int, dtype, lower: bool):
    """(A, its factor) in ``dtype``: A of condition number 100 (three reflections)."""
    from . import accuracy
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


def measure_potri(n: int, dtype, lower: bool, queue, repeat: int, cp, scipy: bool) -> dict:
    """One row of the potri table: oclla, and scipy (``scipy``) and/or CuPy (``cp``)."""
    import pyopencl.array as cl_array
    from scipy.linalg import lapack

    from . import accuracy
    from ._bench import best_of, cupy_best_of
    from .inverse import invert_device, potri_flops
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

    contenders = [("oclla", ours)] + ([("scipy", reference)] if scipy else [])
    best = {name: float("inf") for name, _ in contenders}
    for i in range(repeat + 1):                   # the first round is a warm-up
        for name, fn in contenders:
            t = best_of(fn, 1, 0)
            if i:
                best[name] = min(best[name], t)
    flops = potri_flops(n)
    row = dict(n=n, dtype=np.dtype(dtype).name, oclla=flops / best["oclla"] / 1e9,
               err=accuracy.inverse_error(a, out["inv"].get()))
    if scipy:
        row.update(scipy=flops / best["scipy"] / 1e9, vs_scipy=best["scipy"] / best["oclla"])
    if cp is not None:
        name, fn = cupy_inverse(cp, lower)
        dc = cp.asarray(c)
        t = cupy_best_of(cp, lambda: fn(dc.copy()), repeat)
        row.update(cupy=flops / t / 1e9, cupy_name=name, vs_cupy=t / best["oclla"])
    return row


def measure_logdet(n: int, dtype, queue, repeat: int, cp) -> dict:
    """One row of the log-det table (the factor's diagonal only is set: the rest is
    never read)."""
    import pyopencl.array as cl_array

    from . import _validate, accuracy
    from ._bench import best_of, cupy_best_of
    from .inverse import logdet_device
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


def parser(what: str) -> argparse.ArgumentParser:
    """The argument parser of ``oclla bench potri`` or ``oclla bench logdet``."""
    from .cli import add_device_option, version_text
    prog = f"oclla bench {what}"
    potri = what == "potri"
    p = argparse.ArgumentParser(
        prog=prog,
        description=("The inverse from a Cholesky factor (potri) against scipy and "
                     "cuSOLVER, in the same run." if potri else
                     "The log-determinant from a Cholesky factor on the device against "
                     "numpy and CuPy, in the same run."))
    p.add_argument("--version", action="version", version=version_text(prog))
    default = "1024,2048,3072,4096" if potri else "4096,8192"
    p.add_argument("--sizes", type=int_list(1), default=int_list(1)(default),
                   help=f"orders n, comma separated (default {default})")
    p.add_argument("--dtype", type=dtype_list, default=["float32", "float64"],
                   help="float32, float64 or both comma-separated (default both)")
    if potri:
        p.add_argument("--upper", action="store_true", help="A = UᵀU (default: A = LLᵀ)")
    p.add_argument("--repeat", type=int, default=3,
                   help="timed runs per contender, best kept (default 3)")
    add_device_option(p)
    p.add_argument("--reference", default="auto", choices=("auto", "cpu", "cuda"),
                   help="cuda: cuSOLVER through CuPy; cpu: " + ("scipy's potri" if potri
                                                                 else "numpy only")
                        + "; auto: cuda when CuPy sees a CUDA device (default auto)")
    return p


def main(what: str, argv=None) -> int:
    """Entry point of ``oclla bench potri`` / ``oclla bench logdet``; the exit status."""
    p = parser(what)
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    from .cli import report_errors
    return report_errors(f"oclla bench {what}", _run, what, args)


def _run(what: str, args) -> int:
    from . import device_info, get_queue
    from ._bench import cupy_or_none
    from .bench import _cuda_available, peak
    from .cli import CommandError
    if args.reference == "cuda" and not _cuda_available():
        raise CommandError("--reference cuda needs CuPy and a CUDA device (use --reference "
                           "cpu)")
    queue = get_queue(args.device)
    info = device_info(queue)
    dtypes = [np.dtype(d) for d in args.dtype if d == "float32" or info.fp64]
    if len(dtypes) < len(args.dtype):
        print(f"note: {info.name} has no float64: skipped")
    cp = None if args.reference == "cpu" else cupy_or_none()
    if what == "logdet":
        print(f"log-det on {info.name}: µs per call, GB/s of diagonal entries read")
        print(f"{'n':>6} {'dtype':>8} {'µs':>8} {'GB/s':>7} {'numpy µs':>8}"
              + (f" {'cupy µs':>8}" if cp else "") + f" {'rel err':>8}")
        for dtype in dtypes:
            for n in args.sizes:
                r = measure_logdet(n, dtype, queue, args.repeat, cp)
                print(f"{n:6d} {r['dtype']:>8} {r['us']:8.1f} {r['gbs']:7.3f} "
                      f"{r['host_us']:8.1f}" + (f" {r['cupy_us']:8.1f}" if cp else "")
                      + f" {r['rel']:8.1e}", flush=True)
        return 0
    lower = not args.upper
    scipy = cp is None
    print(f"potri {'lower' if lower else 'upper'} on {info.name}; GFLOP/s = 2n^3/3 / time; "
          f"vs = reference time / oclla time")
    print(f"{'n':>6} {'dtype':>8} {'oclla':>8} {'%peak':>5}"
          + (f" {'scipy':>8} {'vs':>6}" if scipy else "")
          + (f" {'cupy':>8} {'':>5} {'vs':>6}" if cp else "") + f" {'err':>7}")
    for dtype in dtypes:
        measure_potri(160, dtype, lower, queue, 1, None, False)     # build the kernels
        for n in args.sizes:
            r = measure_potri(n, dtype, lower, queue, args.repeat, cp, scipy)
            top = peak(info.name, r["dtype"])
            frac = f"{100 * r['oclla'] / top:4.0f}%" if top else "-"
            print(f"{n:6d} {r['dtype']:>8} {r['oclla']:8.1f} {frac:>5}"
                  + (f" {r['scipy']:8.1f} {r['vs_scipy']:6.2f}" if scipy else "")
                  + (f" {r['cupy']:8.1f} {r['cupy_name']:>5} {r['vs_cupy']:6.2f}" if cp
                     else "") + f" {r['err']:7.2g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "potri", sys.argv[2:]))
