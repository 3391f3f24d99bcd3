"""The packed (RFP) Cholesky against the full one, and the packed one part by part, one run.

    python benchmarks/packed_parts.py --sizes 4096,8192,16384 --dtype float32,float64
    python benchmarks/packed_parts.py --sizes 4096 --depths 0,64,256,1024 --rounds 3

Per (dtype, n), device arrays factored in place: the full lower factor, then the packed
lower layout with each ``chol`` RFP_T2_DEPTH of ``--depths`` (run through
:func:`oclla._params.trial`; the device's own value when not given) and the packed upper
layout, interleaved in ``--rounds`` rounds (best of ``--repeat`` calls each; printed: the
best (worst) of the rounds' bests in ms and, in brackets, the ratio to the full factor).
Where the device sweeps T1 and S together (:func:`oclla.cholesky.sweeps_fused`), the
lower layout's three parts timed apart (the sweep over T1 and S, T2 -= SᵀS, the factor
of T2; the device finished between them), and the device time per kernel of one
recorded call of the full and of each packed layout (``oclla.record``).  Backward errors
‖A − LLᵀ‖∞/(n‖A‖∞ε) (oclla.accuracy) where n <= ``--check-up-to``.  The default device,
or OCLLA_DEVICE.  ``--t2-in-place`` adds the lower layout with T2 factored in place
(the route of a recording) beside its factor through an upper copy, and the upper
layout likewise.
"""

import argparse
import collections
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import _params, accuracy, rfp
from oclla.blas import View, syrk
from oclla.cholesky import block_size, factor_blocked, factor_device, sweeps_fused
from oclla.rfp import factor_packed


def spd(n: int, dtype, seed: int = 3) -> np.ndarray:
    """A symmetric, diagonally dominant matrix (positive definite), built in O(n²)."""
    x = np.random.default_rng(seed + n).uniform(-1, 1, (n, n))
    a = np.triu(x, 1)
    a += a.T
    a[np.diag_indices(n)] = n + 1.0
    return a.astype(dtype)


def timed(queue, src, work, factor) -> float:
    """ms of one factorization of a fresh copy of ``src`` in ``work``."""
    cl.enqueue_copy(queue, work.data, src.data)
    queue.finish()
    start = time.perf_counter()
    factor(work)
    queue.finish()
    return (time.perf_counter() - start) * 1e3


def parts(queue, work, n: int, dtype) -> list:
    """ms of the lower layout's sweep over T1 and S, of T2 -= SᵀS and of T2's factor."""
    lay = rfp.layout(n, True)
    info = cl_array.zeros(queue, 1, np.int32)
    t1, s, t2 = (View(work.data, x, lay.lda) for x in (lay.t1, lay.s, lay.t2))
    nb = block_size(queue, dtype, n)
    steps = (lambda: factor_blocked(queue, t1, lay.n1, lower=False, dtype=dtype, info=info,
                                    block=nb, width=lay.n1 + lay.n2),
             lambda: syrk(queue, lay.n2, lay.n1, -1.0, s, 1.0, t2, dtype=dtype, lower=True,
                          trans=True),
             lambda: rfp._factor_t2(queue, t2, lay, dtype=dtype, info=info, block=nb))
    out = []
    for step in steps:
        start = time.perf_counter()
        step()
        queue.finish()
        out.append((time.perf_counter() - start) * 1e3)
    return out


def kernels(queue, src, work, factor) -> str:
    """Device ms per kernel name of one recorded call (the seven largest)."""
    cl.enqueue_copy(queue, work.data, src.data)
    queue.finish()
    with oclla.record() as rec:
        factor(work)
        queue.finish()
    ms, count = collections.defaultdict(float), collections.Counter()
    for k in rec.kernels:
        ms[k.name] += (k.end - k.start) / 1e6
        count[k.name] += 1
    top = sorted(ms.items(), key=lambda kv: -kv[1])[:7]
    return f"{sum(ms.values()):.2f}: " + ", ".join(f"{k} {t:.2f} ({count[k]})" for k, t in top)


def t2_in_place(call):
    """``call()`` with the packed Cholesky's T2 factored in place (lower), as a recording
    factors it, where it would go through an upper copy (:func:`oclla.rfp._factor_t2`)."""
    keep = rfp.chol_fused_leaf
    rfp.chol_fused_leaf = lambda p, gemm: False
    try:
        return call()
    finally:
        rfp.chol_fused_leaf = keep


def measure(queue, n: int, dtype, depths, rounds: int, repeat: int, check: int,
            compare_t2: bool = False) -> None:
    a = spd(n, dtype)
    full = cl_array.to_device(queue, a)
    lower = rfp.pack(full, lower=True, queue=queue)
    upper = rfp.pack(full, lower=False, queue=queue)
    work = {id(x): x.copy() for x in (full, lower, upper)}
    base = _params.params(queue, "chol", dtype)
    variants = {"full": (full, {}, lambda w: factor_device(queue, w, lower=True,
                                                           method="blocked"))}
    for depth in depths:
        variants[f"packed L{'' if depth is None else f' d{depth}'}"] = (
            lower, {} if depth is None else dict(RFP_T2_DEPTH=depth),
            lambda w: factor_packed(queue, w, n, lower=True, method="blocked"))
    variants["packed U"] = (upper, {},
                            lambda w: factor_packed(queue, w, n, lower=False, method="blocked"))
    if compare_t2:
        for name, src, low in (("L", lower, True), ("U", upper, False)):
            variants[f"packed {name}, T2 in place"] = (
                src, {}, lambda w, low=low: t2_in_place(
                    lambda: factor_packed(queue, w, n, lower=low, method="blocked")))
    best = collections.defaultdict(list)
    for _ in range(rounds):
        for label, (src, change, factor) in variants.items():
            with _params.trial(queue, "chol", dtype, dict(base, **change)):
                timed(queue, src, work[id(src)], factor)
                best[label].append(min(timed(queue, src, work[id(src)], factor)
                                       for _ in range(repeat)))
    f0 = min(best["full"])
    print(f"{np.dtype(dtype).name} {n} " + " | ".join(
        f"{label} {min(t):.2f} ({max(t):.2f}) [{min(t) / f0:.3f}]"
        for label, t in best.items()), flush=True)
    if sweeps_fused(queue, dtype, rfp.layout(n, True).n1, block_size(queue, dtype, n)):
        cl.enqueue_copy(queue, work[id(lower)].data, lower.data)
        queue.finish()
        parts(queue, work[id(lower)], n, dtype)                  # builds, caches
        times = []
        for _ in range(repeat):
            cl.enqueue_copy(queue, work[id(lower)].data, lower.data)
            queue.finish()
            times.append(parts(queue, work[id(lower)], n, dtype))
        sweep, update, t2 = min(times, key=sum)
        print(f"  packed L in parts: sweep over T1 and S {sweep:.2f} + T2 -= SᵀS "
              f"{update:.2f} + T2's factor {t2:.2f} = {sweep + update + t2:.2f} ms", flush=True)
    for label in ("full", next(v for v in variants if v.startswith("packed L")), "packed U"):
        src, change, factor = variants[label]
        with _params.trial(queue, "chol", dtype, dict(base, **change)):
            print(f"  {label} kernels {kernels(queue, src, work[id(src)], factor)}",
                  flush=True)
    if n <= check:
        for label, (src, change, factor) in variants.items():
            with _params.trial(queue, "chol", dtype, dict(base, **change)):
                cl.enqueue_copy(queue, work[id(src)].data, src.data)
                factor(work[id(src)])
                got = work[id(src)].get()
            is_lower = not label.startswith("packed U")
            c = got if label == "full" else rfp.unpack(got, n, lower=is_lower)
            err = accuracy.cholesky_backward_error(a, c, is_lower)
            print(f"  {label} backward error {err:.3f} units", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--dtype", default="float32,float64")
    ap.add_argument("--depths", default="", help="RFP_T2_DEPTH values, comma-separated "
                    "(default: the device's own)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check-up-to", type=int, default=4096)
    ap.add_argument("--t2-in-place", action="store_true",
                    help="also both layouts with T2 factored in place (a recording's route)")
    args = ap.parse_args()
    queue = oclla.get_queue()
    depths = [int(d) for d in args.depths.split(",") if d] or [None]
    print(f"{oclla.device_info(queue).name}: full lower against packed (RFP), ms")
    for name in args.dtype.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            measure(queue, n, np.dtype(name), depths, args.rounds, args.repeat,
                    args.check_up_to, args.t2_in_place)


if __name__ == "__main__":
    main()
