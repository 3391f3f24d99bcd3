"""Hybrid Cholesky (diagonal blocks on the host's LAPACK) against the device-only one.

    python benchmarks/hybrid.py                            # n = 1024, 2048, float32
    python benchmarks/hybrid.py --sizes 8192,16384 --dtype float64 --blocks 256,512,1024

Macindoe (2013) overlaps the CPU's factorization of each diagonal block with
the GPU's update of the panel below it (``oclla.hybrid``).  Columns: the
device-only blocked ``oclla.cholesky`` (its own leaf kernels, no transfers),
then the hybrid one per static block width and with the dynamic schedule
(narrowest width: the smallest of --blocks).  GFLOP/s count n³/3; ``best/dev``
is the device-only time over the best hybrid time (above 1: the hybrid pays).
Data are on the device; best of --repeat, all variants interleaved.

Where the device is the host's own CPU (PoCL), run with OPENBLAS_NUM_THREADS=1
(or your BLAS's equivalent): a multi-threaded host LAPACK and the device's
worker threads then fight for the same cores, and blocks from 256 on take ten
times longer (2 cores, n = 1024: 0.3 against 2.6 GFLOP/s at width 256).
"""

import argparse
import sys

import numpy as np
import pyopencl.array as cl_array

import oclla
from oclla import accuracy, hybrid
from oclla._bench import best_of
from oclla.cholesky import factor_device


def measure(n: int, dtype, lower: bool, blocks: list, queue, repeat: int) -> dict:
    a = accuracy.spd_with_condition(n, 100.0, reflections=3, rng=n, dtype=dtype)
    device = cl_array.to_device(queue, a)
    out = {}

    def variant(name, factor):
        def fn():
            work = device.copy()
            factor(work)
            queue.finish()
            out[name] = work
        return fn

    runs = {"device": variant("device", lambda w: factor_device(queue, w, lower=lower,
                                                                method="blocked"))}
    for nb in blocks:
        runs[f"static {nb}"] = variant(f"static {nb}", lambda w, nb=nb: hybrid.factor_hybrid(
            queue, w, lower=lower, widths=hybrid.block_schedule(n, "static", nb)))
    runs["dynamic"] = variant("dynamic", lambda w: hybrid.factor_hybrid(
        queue, w, lower=lower, widths=hybrid.block_schedule(n, "dynamic", min(blocks))))
    best = dict.fromkeys(runs, float("inf"))
    for i in range(repeat + 1):                   # the first round is a warm-up
        for name, fn in runs.items():
            t = best_of(fn, 1, 0)
            if i:
                best[name] = min(best[name], t)
    flops = n ** 3 / 3.0
    hybrid_best = min(t for name, t in best.items() if name != "device")
    errors = [accuracy.cholesky_backward_error(a, np.tril(w.get()) if lower else
                                               np.triu(w.get()), lower) for w in out.values()]
    return dict(n=n, gflops={k: flops / t / 1e9 for k, t in best.items()},
                ratio=best["device"] / hybrid_best, err=max(errors))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1024,2048")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--blocks", default="128,256,512", help="static block widths")
    p.add_argument("--upper", action="store_true", help="A = UᵀU (default: LLᵀ)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    queue = oclla.get_queue(args.device)
    dtype = np.dtype(args.dtype)
    blocks = [int(b) for b in args.blocks.split(",")]
    lower = not args.upper
    measure(300, dtype, lower, blocks, queue, 1)            # build the kernels
    names = ["device"] + [f"static {nb}" for nb in blocks] + ["dynamic"]
    print(f"hybrid potrf {'lower' if lower else 'upper'} {dtype.name} on "
          f"{oclla.device_info(queue).name}; GFLOP/s = n^3/3 / time")
    print(f"{'n':>6} " + " ".join(f"{name:>10}" for name in names) +
          f" {'best/dev':>8} {'err':>7}")
    for n in (int(s) for s in args.sizes.split(",")):
        r = measure(n, dtype, lower, blocks, queue, args.repeat)
        print(f"{n:6d} " + " ".join(f"{r['gflops'][name]:10.1f}" for name in names) +
              f" {r['ratio']:8.2f} {r['err']:7.2g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
