"""``oclla bench update``: rank-k Cholesky update/downdate against refactorization.

    oclla bench update --sizes 1000,2000,4000 --ranks 1,16,64     # the CPU goal: n = 4000, k = 16
    oclla bench update --reference cuda --sizes 5000,8192,16384 --dtype float32,float64
    oclla bench update --sign -1 --dtype float64                  # downdates
    oclla bench update --stream --sizes 65536 --ranks 16 --dtype float64

Per (dtype, n, k): the time of ``cholesky_update`` on a factor already on the
device (the kernels alone, ``--method`` as given; the factor updated in place in one
device buffer, copied back in before each call, as a resident factor is updated call
after call), against refactoring A ± V·Vᵀ: with oclla's own blocked ``cholesky`` on
the device (the same syrk + potrf there, also in one buffer; CuPy's pool reuses its
memory alike), and with the reference: ``--reference cpu``
scipy (``?syrk`` + ``?potrf`` on the host), ``--reference cuda`` (or
``auto`` where CuPy sees a CUDA device) CuPy (cuBLAS syrk, or a GEMM where
CuPy has no syrk, + cuSOLVER potrf).  Best of ``--repeat``, the contenders
interleaved so that a shared machine's load hits them alike.  The test
matrices are X·Xᵀ/n + I, formed with CuPy where it runs.

GFLOP/s of the update count 3k·n² + 3k·n (:func:`oclla.update.update_flops`),
GB/s the bytes no method avoids (the triangle read and written once, V read
once: what the fused rank-1 launch moves; the blocked method also reads and
writes V once per panel, which the figure does not credit); ``roof`` is the
larger of GFLOP/s over the device's vector peak and GB/s over its memory
bandwidth, where this module knows them (:data:`BANDWIDTH`,
:data:`oclla.bench.PEAKS`).  ``dev ms`` is the update's kernels' own time (their
profiling events, summed; best of up to three calls under :func:`oclla.record`, apart
from the timed ones) and ``dev roof`` the roof by it: the device's share of the wall,
without the host's part of a call (its Python and the driver's launch and read, tens of
microseconds, several times longer on a host core that has idled, e.g. after a long
wait for the device).  The ``x`` columns are refactorization time /
update time; err is the update's backward error ‖Ã − R̃ᵀR̃‖∞/(n‖Ã‖∞ε)
(:mod:`oclla.accuracy`).

``--stream`` times a host factor streamed through the device a panel at a
time (:func:`oclla.update_stream.stream_update`, in place): seconds, GFLOP/s
and the bus GB/s of the triangle going up and down; the host needs one copy
of the factor (32 GiB at n = 65536 in float64), made cheaply
(:func:`synthetic_factor`).

On a machine whose cores are shared with other work, a multi-threaded
OpenBLAS behind scipy spins and slows down tenfold or more; set
``OPENBLAS_NUM_THREADS=1`` there (and say so beside the numbers).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from ._bench import dtype_list, int_list

#: Memory bandwidth in GB/s of the SXM parts, by name substring (the roof column).
BANDWIDTH = {"H100": 3350.0, "H200": 4800.0}


def base(n: int, dtype, cp=None, seed: int = 0):
    """(B, R): an SPD B = X·Xᵀ/n + I (X standard normal) and its upper factor, host
    arrays of ``dtype``; formed with CuPy where ``cp`` is given (seconds less at large
    n on the host), else with numpy and scipy."""
    if cp is not None:
        x = cp.random.RandomState(seed + n).standard_normal((n, n))
        b = x @ x.T / n + cp.eye(n)
        del x
        return b.astype(dtype).get(), cp.ascontiguousarray(
            cp.linalg.cholesky(b).T).astype(dtype).get()
    import scipy.linalg as sla
    rng = np.random.default_rng(seed + n)
    x = rng.standard_normal((n, n)).astype(dtype)
    b = x @ x.T / n + np.eye(n, dtype=dtype)
    return b, np.ascontiguousarray(sla.cholesky(b)).astype(dtype)


def problem(b, c, k: int, sign: int, seed: int = 0):
    """(A, R, V, Ã) from :func:`base`'s (B, R): for an update A = B (R its factor),
    for a downdate A = B + V·Vᵀ (factored here), so that Ã = B stays SPD."""
    import scipy.linalg as sla
    n, dtype = b.shape[0], b.dtype
    rng = np.random.default_rng(seed + n + k)
    v = (rng.standard_normal((n, k)) / np.sqrt(max(k, 1))).astype(dtype)
    if sign > 0:
        return b, c, v, b + v @ v.T
    a = b + v @ v.T
    return a, np.ascontiguousarray(sla.cholesky(a)).astype(dtype), v, b


def moved_bytes(n: int, k: int, itemsize: int) -> float:
    """Bytes every update of an order-n factor by n x k V moves: the triangle's
    n(n+1)/2 entries read and written once, V read once."""
    return float(itemsize) * (n * (n + 1) + n * k)


def roof(device: str, dtype: str, gflops: float, gbs: float) -> float | None:
    """The larger fraction of the vector peak or the memory bandwidth reached (None
    for a device this module has no figures for)."""
    from .bench import peak
    flops = peak(device, dtype)
    bw = next((v for key, v in BANDWIDTH.items() if key in device), None)
    if flops is None or bw is None:
        return None
    return max(gflops / flops, gbs / bw)


def measure(b, c, k: int, sign: int, method: str, queue, repeat: int, *, cp=None,
            scipy: bool = True, err_max_n: int = 8192) -> dict:
    """One row of the table (see the module docstring) for :func:`base`'s (B, R) and
    rank k: the update, oclla's refactorization, and scipy's (``scipy``) and/or
    CuPy's (``cp``); the backward error where n <= ``err_max_n`` (a host product of
    order n)."""
    import pyopencl as cl
    import pyopencl.array as cl_array
    from scipy.linalg import blas, lapack

    from . import _scratch, accuracy, blas as oblas, trace, update
    from ._bench import cupy_best_of
    from .cholesky import factor_device
    a, c, v, at = problem(b, c, k, sign)
    n, dtype = a.shape[0], a.dtype
    d_c, d_v, d_a = (cl_array.to_device(queue, x) for x in (c, v, a))
    prefix = "s" if dtype == np.float32 else "d"
    syrk, potrf = getattr(blas, prefix + "syrk"), getattr(lapack, prefix + "potrf")
    af, vf = (np.asfortranarray(a), np.asfortranarray(v)) if scipy else (None, None)
    vt_dev = cl_array.to_device(queue, np.ascontiguousarray(v.T))
    best = dict.fromkeys(("update", "oclla") + (("scipy",) if scipy else ()), float("inf"))
    work, vw, work_a = d_c.copy(), d_v.copy(), d_a.copy()

    def restore(*copies):
        for copy, original in copies:
            cl.enqueue_copy(queue, copy.data, original.data)

    def update_work(info):
        update.modify_device(queue, work.data, 0, n, n, vw, lower=False, sign=sign,
                             method=method, info=info)

    for i in range(repeat + 1):                   # the first round is a warm-up
        restore((work, d_c), (vw, d_v), (work_a, d_a))
        # info as cholesky_update makes it (the pool's, zeroed by a command on the queue)
        info = _scratch.zeroed_ints(queue)
        queue.finish()
        t = time.perf_counter()
        update_work(info)
        queue.finish()
        elapsed = {"update": time.perf_counter() - t}
        if scipy:
            t = time.perf_counter()
            potrf(syrk(float(sign), vf, beta=1.0, c=af, trans=0, lower=0, overwrite_c=0),
                  lower=0, overwrite_a=1, clean=0)            # A ± V·Vᵀ, then its factor
            elapsed["scipy"] = time.perf_counter() - t
        t = time.perf_counter()
        oblas.syrk(queue, n, k, float(sign), oblas.view_of(vt_dev), 1.0,
                   oblas.view_of(work_a), dtype=dtype, lower=False, trans=True)
        factor_device(queue, work_a, lower=False, method="blocked")
        queue.finish()
        elapsed["oclla"] = time.perf_counter() - t
        if i:
            best = {key: min(best[key], elapsed[key]) for key in best}
    if int(info.get()[0]):
        raise RuntimeError(f"the update of order {n}, rank {k} failed")
    device_s = float("inf")
    for _ in range(min(repeat, 3)):               # the kernels' own time, recorded apart
        restore((work, d_c), (vw, d_v))
        with trace.record() as rec:
            update_work(_scratch.zeroed_ints(queue))
        device_s = min(device_s, 1e-9 * sum(kernel.duration_ns for kernel in rec.kernels
                                            if kernel.device != "host"))
    row = dict(dtype=dtype.name, n=n, k=k, ms=1e3 * best["update"], device_ms=1e3 * device_s,
               device_gflops=update.update_flops(n, k) / device_s / 1e9,
               device_gbs=moved_bytes(n, k, dtype.itemsize) / device_s / 1e9,
               gflops=update.update_flops(n, k) / best["update"] / 1e9,
               gbs=moved_bytes(n, k, dtype.itemsize) / best["update"] / 1e9,
               oclla=best["oclla"] / best["update"],
               err=accuracy.cholesky_backward_error(at, work.get(), False)
               if n <= err_max_n else None)
    if scipy:
        row["scipy"] = best["scipy"] / best["update"]
    if cp is not None:
        da, dv = cp.asarray(a), cp.asarray(v)
        cusyrk = getattr(getattr(cp, "cublas", None), "syrk", None)   # CuPy >= 13

        def refactor():
            out = da.copy()
            if cusyrk is not None:
                cusyrk("N", dv, out=out, alpha=float(sign), beta=1.0, lower=True)
            else:                                   # the full product: cuBLAS gemm
                out += float(sign) * (dv @ dv.T)
            return cp.linalg.cholesky(out)
        row["cupy"] = cupy_best_of(cp, refactor, repeat) / best["update"]
    return row


def synthetic_factor(n: int, dtype, seed: int = 0, band: int = 8) -> np.ndarray:
    """An upper factor made cheaply at any order: the identity plus a small random band
    above the diagonal (entries of at most 0.1/band: a factor of a well-conditioned
    matrix).  The array is zeroed by threads first, so that no page is first touched
    inside a timed update."""
    from concurrent.futures import ThreadPoolExecutor
    c = np.empty((n, n), dtype)
    cuts = np.linspace(0, n, 17).astype(int)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda ab: c[ab[0]:ab[1]].fill(0), zip(cuts[:-1], cuts[1:])))
    flat = c.reshape(-1)
    flat[::n + 1] = 1
    rng = np.random.default_rng(seed + n)
    for d in range(1, min(band, n - 1) + 1):
        flat[d::n + 1][:n - d] = rng.random(n - d) * (0.1 / band)
    return c


def measure_streamed(n: int, k: int, dtype, sign: int, queue) -> dict:
    """One streamed update, in place, of :func:`synthetic_factor` by a small V: time
    and bus traffic (the triangle up and down)."""
    from . import update, update_stream
    c = synthetic_factor(n, dtype)
    rng = np.random.default_rng(n + k)
    v = (0.1 * rng.standard_normal((n, k))).astype(dtype)
    update_stream.stream_update(c[:64, :64].copy(), v[:64], sign=sign, lower=False,
                                check_finite=False, queue=queue)              # build kernels
    t = time.perf_counter()
    update_stream.stream_update(c, v, sign=sign, lower=False, check_finite=False,
                                queue=queue, overwrite_c=True)
    elapsed = time.perf_counter() - t
    return dict(dtype=np.dtype(dtype).name, n=n, k=k, s=elapsed,
                gflops=update.update_flops(n, k) / elapsed / 1e9,
                bus=float(n) * (n + 1) * np.dtype(dtype).itemsize / elapsed / 1e9)


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``oclla bench update``."""
    from .cli import add_device_option, version_text
    p = argparse.ArgumentParser(
        prog="oclla bench update",
        description="Rank-k Cholesky update/downdate against refactorization (scipy, "
                    "oclla, cuSOLVER), in the same run.")
    p.add_argument("--version", action="version", version=version_text("oclla bench update"))
    p.add_argument("--sizes", type=int_list(1), default=[1000, 2000, 4000],
                   help="orders n, comma separated (default 1000,2000,4000)")
    p.add_argument("--ranks", type=int_list(0), default=[1, 16, 64],
                   help="ranks k, comma separated (default 1,16,64)")
    p.add_argument("--dtype", type=dtype_list, default=["float32", "float64"],
                   help="float32, float64 or both comma-separated (default both)")
    p.add_argument("--sign", type=int, default=1, choices=(1, -1),
                   help="+1 update (default), -1 downdate")
    p.add_argument("--method", default="blocked", choices=("blocked", "pivot", "product"))
    p.add_argument("--repeat", type=int, default=3,
                   help="timed runs per contender, best kept (default 3)")
    add_device_option(p)
    p.add_argument("--reference", default="auto", choices=("auto", "cpu", "cuda"),
                   help="cuda: add cuSOLVER's refactorization through CuPy; cpu: scipy and "
                        "oclla only; auto: cuda when CuPy sees a CUDA device (default auto)")
    p.add_argument("--err-max-n", type=int, default=8192, metavar="N",
                   help="largest n whose backward error is measured (a host product of "
                        "order n; default 8192)")
    p.add_argument("--stream", action="store_true",
                   help="stream a host factor through the device (one run per n and k)")
    return p


def main(argv=None) -> int:
    """Entry point of ``oclla bench update``; returns the exit status."""
    p = parser()
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be at least 1")
    if min(args.sizes) < 1:
        p.error("--sizes needs positive orders")
    from .cli import report_errors
    return report_errors("oclla bench update", _run, args)


def _run(args) -> int:
    from . import device_info, get_queue
    from ._bench import cupy_or_none
    from .bench import _cuda_available
    from .cli import CommandError
    if args.reference == "cuda" and not _cuda_available():
        raise CommandError("--reference cuda needs CuPy and a CUDA device (use --reference "
                           "cpu)")
    queue = get_queue(args.device)
    info = device_info(queue)
    dtypes = [np.dtype(d) for d in args.dtype if d == "float32" or info.fp64]
    if len(dtypes) < len(args.dtype):
        print(f"note: {info.name} has no float64: skipped")
    if args.stream:
        print(f"cholesky_update streamed on {info.name}; bus GB/s = the factor's triangle up "
              f"and down / time")
        for dtype in dtypes:
            for n in args.sizes:
                for k in args.ranks:
                    r = measure_streamed(n, k, dtype, args.sign, queue)
                    print(f"{r['dtype']:>7} {n:6d} {k:4d} {r['s']:9.2f} s "
                          f"{r['gflops']:8.2f} GFLOP/s {r['bus']:7.2f} bus GB/s", flush=True)
        return 0
    cp = None if args.reference == "cpu" else cupy_or_none()
    scipy = cp is None
    from . import update
    print(f"cholesky_update ({'update' if args.sign > 0 else 'downdate'}, {args.method}) on "
          f"{info.name}; x = refactorization time / update time; roof = the larger of "
          f"GFLOP/s / vector peak and GB/s / memory bandwidth; dev = the update's kernels' "
          f"own time and the roof by it")
    print(f"{'dtype':>7} {'n':>6} {'k':>4} {'ms':>9} {'GFLOP/s':>8} {'GB/s':>7} {'roof':>6}"
          f" {'dev ms':>8} {'dev roof':>8}"
          + (f" {'x scipy':>7}" if scipy else "") + f" {'x oclla':>7}"
          + (f" {'x cupy':>7}" if cp else "") + f" {'err':>7}")
    for dtype in dtypes:
        rows = update.panel_rows(queue, dtype)
        warm = base(2 * rows + 3, dtype)
        measure(*warm, 2, args.sign, args.method, queue, 1, scipy=False)   # build kernels
        for n in args.sizes:
            b, c = base(n, dtype, cp)
            for k in args.ranks:
                if k == 0:
                    continue
                r = measure(b, c, k, args.sign, args.method, queue, args.repeat, cp=cp,
                            scipy=scipy, err_max_n=args.err_max_n)
                frac = roof(info.name, r["dtype"], r["gflops"], r["gbs"])
                device = roof(info.name, r["dtype"], r["device_gflops"], r["device_gbs"])
                print(f"{r['dtype']:>7} {n:6d} {k:4d} {r['ms']:9.2f} {r['gflops']:8.2f} "
                      f"{r['gbs']:7.2f} {'-' if frac is None else f'{100 * frac:5.1f}%':>6}"
                      f" {r['device_ms']:8.3f} "
                      f"{'-' if device is None else f'{100 * device:7.1f}%':>8}"
                      + (f" {r['scipy']:7.2f}" if scipy else "") + f" {r['oclla']:7.2f}"
                      + (f" {r['cupy']:7.2f}" if cp else "")
                      + (f" {r['err']:7.3f}" if r["err"] is not None else f" {'-':>7}"),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
