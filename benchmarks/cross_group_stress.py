"""Repeat the kernels whose work-groups read what other work-groups of the same launch
wrote, and count wrong or differing results.

    python benchmarks/cross_group_stress.py [REPEATS] [N]

OpenCL 1.2 orders nothing between the work-groups of a launch; these kernels rest on
what the hardware does (kernels_cl/grid.h, tagged.h, arrival.h, publish.h): the blocked LU's
panels across work-groups (``lu`` PANEL = "grid", tagged words), the per-pivot LU in
place (arrival.h's last work-group), the product-form update's solve (``update`` SOLVE
= "chain") and the few-column solves in one launch (``trsm`` FEW_ROUTE = "chain", 1, 16
and 64 right-hand sides).  Each runs REPEATS times (default 20) at order N (default
4096) on the same input, both dtypes where the device has float64, under the device's
own parameters with only that route laid over them; per case it prints the largest
backward error (units of n·‖A‖·ε; above 30 is wrong), how many results differ
bitwise from the first (a deterministic kernel gives none; a race gives some) and the
kernels one recorded run launched (is the route the one named?).
The default device, or OCLLA_DEVICE.
"""

import sys

import numpy as np
import pyopencl.array as cl_array

import oclla
from oclla import accuracy
from oclla._params import params, trial


def _spd(rng, n, dtype):
    x = rng.standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


def _cases(queue, n, dtype, rng):
    """(label, family, knobs laid over the device's, run() -> (result, backward error))."""
    a = rng.standard_normal((n, n)).astype(dtype)
    spd = _spd(rng, n, dtype)
    d_a, d_spd = cl_array.to_device(queue, a), cl_array.to_device(queue, spd)

    def lu(method, **kw):
        def run():
            lu_, piv = oclla.lu_factor(d_a, method=method, check_finite=False, **kw)
            host = (lu_.get(), piv.get())
            return host[0], accuracy.lu_backward_error(a, *host)
        return run

    yield "lu grid panels", "lu", dict(PANEL="grid"), lu("blocked")
    if n <= 2048:
        yield "lu per-pivot in place", None, {}, lu("pivot", variant="inplace")
    c = oclla.cholesky(d_spd, check_finite=False)
    v = cl_array.to_device(queue, (rng.standard_normal((n, 16)) / 4).astype(dtype))
    target = spd.astype(np.float64) + v.get().astype(np.float64) @ v.get().T.astype(np.float64)

    def update():
        out = oclla.cholesky_update(c, v, method="product", check_finite=False).get()
        return out, accuracy.cholesky_backward_error(target, out, False)

    yield "update solve chain", "update", dict(SOLVE="chain"), update
    factor = oclla.cho_factor(d_spd, check_finite=False)
    for k in (1, 16, 64):
        b = rng.standard_normal((n, k)).astype(dtype)
        d_b = cl_array.to_device(queue, b)

        def solve(d_b=d_b, b=b):
            x = oclla.cho_solve(factor, d_b, check_finite=False).get()
            return x, accuracy.solve_backward_error(spd, x, b)

        yield f"cho_solve chain x{k}", "trsm", dict(FEW_ROUTE="chain", FEW_RHS=128), solve


def main(argv) -> int:
    repeats = int(argv[1]) if len(argv) > 1 else 20
    n = int(argv[2]) if len(argv) > 2 else 4096
    queue = oclla.get_queue()
    info = oclla.device_info(queue)
    print(f"{info.name} ({info.platform}, driver {info.driver_version}): n = {n}, "
          f"{repeats} runs a case")
    for dtype in (np.float32, np.float64) if info.fp64 else (np.float32,):
        rng = np.random.default_rng(7)
        for label, family, knobs, run in _cases(queue, n, dtype, rng):
            over = dict(params(queue, family, dtype), **knobs) if family else None
            results, worst = [], 0.0
            for _ in range(repeats):
                if over is None:
                    out, err = run()
                else:
                    with trial(queue, family, dtype, over):
                        out, err = run()
                results.append(out)
                worst = max(worst, err)
            differ = sum(not np.array_equal(r, results[0]) for r in results[1:])
            with oclla.record() as rec:
                if over is None:
                    run()
                else:
                    with trial(queue, family, dtype, over):
                        run()
            kernels = " ".join(sorted({k.name for k in rec.kernels}))
            print(f"{np.dtype(dtype).name:8s} {label:24s} worst error {worst:9.3g}  "
                  f"differing results {differ} of {repeats - 1}  [{kernels}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
