"""Blocked potrf or getrf with several kernel parameter sets against the reference, one run.

    python benchmarks/param_sets.py potrf --sizes 1024,2048 \\
        --set '{}' --set 'chol:{"ROW_LEAF": 1}' [--dtype float32] [--repeat 5] [--profile]

Each ``--set`` is ``{}`` (the parameters the device would use anyway) or
``family:{json}``, keys laid over the device's choice for that family
(several families: ``family:{json};family:{json}``).  For every size the sets
and the reference (``oclla bench``'s: cuSOLVER through CuPy when it sees a CUDA
device, else SciPy) are timed interleaved, best of ``--repeat`` after a warm-up, oclla on
device-resident arrays, each round starting with another set (:func:`rotated`) and each
set's timed call preceded by an untimed one (a set's parameters are chosen again at its
first call after the switch); ``--variant`` times a per-pivot LU variant instead of the
blocked one.  Printed per row: milliseconds, the reference's time
divided by oclla's (1.0 = as fast), the backward error in units of n·ε
(oclla.accuracy) and, with ``--profile``, the kernel time per kernel of one
recorded run and where the device sat idle between its kernels (``idle``).
"""

import argparse
import collections
import json
import time

import numpy as np
import pyopencl.array as cl_array
import oclla
from oclla import _params, accuracy
from oclla.bench import reference


def parse_set(text: str) -> dict:
    """``{}`` or ``family:{json}[;family:{json}]`` -> {family: keys}."""
    if text.strip() == "{}":
        return {}
    out = {}
    for part in text.split(";"):
        family, _, keys = part.partition(":")
        out[family.strip()] = json.loads(keys)
    return out


def matrix(routine: str, n: int, dtype) -> np.ndarray:
    x = np.random.default_rng(n).standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype) if routine == "potrf" else x.astype(dtype)


def use(queue, dtype, chosen: dict) -> None:
    for family in _params.FAMILIES:
        _params.override(family, None)
    for family, keys in chosen.items():
        _params.override(family, {**_params.params(queue, family, dtype), **keys})


def factor_fn(routine: str, work, variant=None):
    if routine == "potrf":
        return lambda: oclla.cho_factor(work, lower=True, overwrite_a=True, check_finite=False)
    method = "pivot" if variant else "blocked"
    return lambda: oclla.lu_factor(work, method=method, variant=variant, overwrite_a=True,
                                   check_finite=False)


def rotated(count: int, round_: int) -> list:
    """The sets' indices in the order round ``round_`` times them: each round starts one
    set later, so that no set always runs first after the reference (on a GPU whose
    OpenCL and CUDA contexts share it, the first call after the other context's pays the
    switch between them, as ``oclla bench`` notes)."""
    return [(round_ + i) % count for i in range(count)]


def error(routine: str, a: np.ndarray, result) -> float:
    if routine == "potrf":
        c = np.tril(result[0].get())
        return accuracy.cholesky_backward_error(a, c, True)
    lu, piv = result
    return accuracy.lu_backward_error(a, lu.get(), piv.get() if hasattr(piv, "get") else piv)


def profile(run) -> str:
    kernels = [k for s in run.steps for k in s.kernels if k.end and k.start]
    total, count = collections.Counter(), collections.Counter()
    for k in kernels:
        total[k.name] += (k.end - k.start) / 1e6
        count[k.name] += 1
    line = ", ".join(f"{name} {ms:.2f} ms x{count[name]}" for name, ms in total.most_common())
    return line + "\n      " + idle(kernels)


def idle(kernels) -> str:
    """Where the device waited (profiling clock): the span from the first start to the
    last end, the host's span from the first to the last enqueue, and the time no
    kernel ran (the kernels of both queues of a look-ahead taken together), split into
    gaps that began before the next kernel was enqueued (the host behind) and the rest
    (launch and cross-queue waits)."""
    kernels = sorted(kernels, key=lambda k: k.start)
    late = launch = 0
    busy_until = kernels[0].end
    for k in kernels[1:]:
        gap = max(0, k.start - busy_until)
        behind = min(gap, max(0, k.queued - busy_until))
        late += behind
        launch += gap - behind
        busy_until = max(busy_until, k.end)
    span = busy_until - kernels[0].start
    host = kernels[-1].queued - kernels[0].queued
    return (f"device span {span / 1e6:.2f} ms, host enqueue span {host / 1e6:.2f} ms, idle "
            f"{(late + launch) / 1e6:.2f} ms ({late / 1e6:.2f} ms with the host behind, "
            f"{launch / 1e6:.2f} ms launch)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("routine", choices=("potrf", "getrf"))
    ap.add_argument("--sizes", default="1024,2048")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--set", action="append", dest="sets", default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--variant", default=None,
                    help="getrf only: a per-pivot variant (method='pivot') instead of blocked")
    args = ap.parse_args(argv)
    queue = oclla.get_queue()
    dtype = np.dtype(args.dtype)
    sets = [parse_set(s) for s in (args.sets or ["{}"])]
    ref = reference("auto")
    info = oclla.device_info(queue)
    print(f"{info.name} (driver {info.driver_version}), {args.routine} {dtype.name}, "
          f"reference {ref.name}, best of {args.repeat}")
    for n in (int(s) for s in args.sizes.split(",")):
        a = matrix(args.routine, n, dtype)
        src = cl_array.to_device(queue, a)
        best = [float("inf")] * len(sets)
        ref_best = float("inf")
        last = [None] * len(sets)
        ref_a = ref.prepare(a)
        for rep in range(args.repeat + 1):                 # round 0 warms up
            for i in rotated(len(sets), rep):
                chosen = sets[i]
                use(queue, dtype, chosen)
                factor_fn(args.routine, src.copy(), args.variant)()   # choices made again
                work = src.copy()
                queue.finish()
                t = time.perf_counter()
                last[i] = factor_fn(args.routine, work, args.variant)()
                queue.finish()
                if rep:
                    best[i] = min(best[i], time.perf_counter() - t)
            ref.sync()
            t = time.perf_counter()
            ref.run(args.routine, ref_a)
            ref.sync()
            if rep:
                ref_best = min(ref_best, time.perf_counter() - t)
        print(f"n={n}: reference {1e3 * ref_best:.3f} ms")
        for i, chosen in enumerate(sets):
            use(queue, dtype, chosen)
            line = (f"  {json.dumps(chosen) if chosen else '{}':60s} {1e3 * best[i]:9.3f} ms "
                    f"{ref_best / best[i]:6.1%}  err {error(args.routine, a, last[i]):.2f}")
            if args.profile:
                with oclla.record() as rec:
                    factor_fn(args.routine, src.copy(), args.variant)()
                    queue.finish()
                line += "\n      " + profile(rec.runs[-1])
            print(line, flush=True)
    use(queue, dtype, {})


if __name__ == "__main__":
    main()
