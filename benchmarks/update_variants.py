"""cholesky_update's blocked method under several sets of the ``update`` knobs, one run.

    python benchmarks/update_variants.py SIZES RANKS SETS DTYPES
    python benchmarks/update_variants.py 8192 1,16,64 64:1:64:32:0,64:1:64:32:1 float32,float64

SETS: comma-separated PANEL:LOCAL_PANEL:KF:APPLY_WG[:REFLECT] (docs/parameters.md;
the device's other update knobs as they are), each run through
:func:`oclla._params.trial`.  Per (dtype, n, k): CuPy's
refactorization of A + V·Vᵀ when CuPy sees a CUDA device, then per set the
update of a factor on the device (best of 3 after a warm-up; with its
look-ahead, and in parentheses without: the panels one after the other on one
queue) and, in brackets, the device time in ms per kernel of one recorded call
(``oclla.record``); err (k = 16, n <= 8192) the backward error
‖Ã − R̃ᵀR̃‖∞/(n‖Ã‖∞ε).  The default device, or OCLLA_DEVICE.
"""

import collections
import sys
import time

import numpy as np
import pyopencl.array as cl_array
import scipy.linalg as sla

import oclla
from oclla import accuracy, update
from oclla._bench import cupy_best_of, cupy_or_none
from oclla._params import params, trial
from oclla._programs import int_zeros

KEYS = ("PANEL", "LOCAL_PANEL", "KF", "APPLY_WG", "REFLECT")


def kernel_times(queue, c, v) -> str:
    """Device ms per kernel name of one recorded ``cholesky_update``."""
    times = collections.Counter()
    with oclla.record() as rec:
        oclla.cholesky_update(c, v, queue=queue)
    for run in rec.runs:
        for step in run.steps:
            for k in step.kernels:
                times[k.name] += k.end - k.start
    return " ".join(f"{name}={t / 1e6:.2f}" for name, t in times.items())


def update_error(a, v_host, factor, lower: bool) -> float:
    """Backward error ‖Ã − R̃ᵀR̃‖∞/(n‖Ã‖∞ε) of an updated factor, Ã = A + V·Vᵀ in float64."""
    v64 = v_host.astype(np.float64)
    return accuracy.cholesky_backward_error(a.astype(np.float64) + v64 @ v64.T, factor, lower)


def timed(queue, c, v, n: int, *, method: str = "blocked", lower: bool = False,
          repeat: int = 3) -> tuple:
    """Best of ``repeat`` (after a warm-up) of the update's device part, and its result."""
    best = float("inf")
    for rep in range(repeat + 1):
        work, vw, info = c.copy(), v.copy(), int_zeros(queue)
        queue.finish()
        t = time.perf_counter()
        update.modify_device(queue, work.data, 0, n, n, vw, lower=lower, sign=1,
                             method=method, info=info)
        queue.finish()
        if rep:
            best = min(best, time.perf_counter() - t)
    assert int(info.get()[0]) == 0, "the update failed"
    return best, work


def timed_plain(queue, c, v, n: int) -> float:
    """As :func:`timed`, the panels one after the other on one queue (no look-ahead)."""
    from oclla._programs import launch_queue
    k = v.shape[1]
    kernels = update._panel_kernels(queue, v.dtype, k, False, False, 1)
    best = float("inf")
    for rep in range(4):
        work, vw, info = c.copy(), v.copy(), int_zeros(queue)
        rot, kp = update.rotations(queue, n, k, v.dtype, kernels.rows, reflect=kernels.reflect)
        queue.finish()
        t = time.perf_counter()
        with launch_queue(queue) as q:
            for i0 in range(0, n, kernels.rows):
                update._panel_pass(q, kernels, work.data, 0, n, n, i0, vw, 0, rot, kp,
                                   sign=1, info=info, region=None)
        queue.finish()
        if rep:
            best = min(best, time.perf_counter() - t)
    return best


def main(argv) -> int:
    sizes, ranks = ([int(s) for s in a.split(",")] for a in argv[:2])
    sets = [dict(zip(KEYS, map(int, s.split(":")))) for s in argv[2].split(",")]
    queue = oclla.get_queue()
    print(oclla.device_info(queue).name, flush=True)
    cp = cupy_or_none()
    for dtype in (np.dtype(d) for d in argv[3].split(",")):
        for n in sizes:
            rng = np.random.default_rng(n)
            x = rng.standard_normal((n, n)).astype(dtype)
            a = x @ x.T / n + np.eye(n, dtype=dtype)
            c = cl_array.to_device(queue, np.ascontiguousarray(sla.cholesky(a)).astype(dtype))
            for k in ranks:
                v_host = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(dtype)
                v = cl_array.to_device(queue, v_host)
                line = [f"{dtype.name} n={n} k={k}"]
                if cp is not None:
                    da, dv = cp.asarray(a), cp.asarray(v_host)
                    t = cupy_best_of(cp, lambda: cp.linalg.cholesky(da + dv @ dv.T), 3)
                    line.append(f"cupy {t * 1e3:.2f}ms")
                for knobs in sets:
                    with trial(queue, "update", dtype,
                               {**params(queue, "update", dtype), **knobs}):
                        best, result = timed(queue, c, v, n)
                        plain = timed_plain(queue, c, v, n)
                        kernels = kernel_times(queue, c, v)
                    err = ""
                    if n <= 8192 and k == 16:
                        err = " err %.3f" % update_error(a, v_host, result.get(), False)
                    name = "P{PANEL}L{LOCAL_PANEL}K{KF}W{APPLY_WG}".format(**knobs) + (
                        f"H{knobs['REFLECT']}" if "REFLECT" in knobs else "")
                    line.append(f"{name} {best * 1e3:.2f}ms (one queue {plain * 1e3:.2f}ms) "
                                f"[{kernels}]{err}")
                print(" | ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
