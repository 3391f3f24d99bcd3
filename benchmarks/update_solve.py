"""The product-form update (``method="product"``) under several sets of the ``update`` knobs.

    python benchmarks/update_solve.py SIZES RANKS DTYPES [--lower] [SET ...]
    python benchmarks/update_solve.py 4096,8192,16384 1,16 float32,float64 \\
        '{"SOLVE": "steps"}' '{"SOLVE": "chain"}'

Each SET is a JSON object of ``update`` knobs laid over the device's own
(docs/parameters.md), run through :func:`oclla._params.trial`.  Per (dtype, n,
k): CuPy's refactorization of A + V·Vᵀ when CuPy sees a CUDA device, then per
set, interleaved, the update of an upper factor (``--lower``: of a lower one) on
the device (best of 5 after
a warm-up), the refactorization's time over it (``x``), the device ms per phase
of one recorded call (solve, prefix, apply) and the backward error
‖Ã − R̃ᵀR̃‖∞/(n‖Ã‖∞ε) for n <= 8192.  The default device, or OCLLA_DEVICE.
"""

import collections
import json
import os
import sys

import numpy as np
import pyopencl.array as cl_array
import scipy.linalg as sla

import oclla
from oclla._bench import cupy_best_of, cupy_or_none
from oclla._params import params, trial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from update_variants import timed, update_error  # noqa: E402


def phase_times(queue, c, v, lower: bool) -> str:
    """Device ms per phase of one recorded update."""
    times = collections.Counter()
    with oclla.record() as rec:
        oclla.cholesky_update(c, v, method="product", lower=lower, queue=queue)
    for step in rec.steps:
        times[step.phase] += sum(k.end - k.start for k in step.kernels)
    return " ".join(f"{name}={t / 1e6:.2f}" for name, t in times.items())


def main(argv) -> int:
    sizes, ranks = ([int(s) for s in a.split(",")] for a in argv[:2])
    dtypes = [np.dtype(d) for d in argv[2].split(",")]
    lower = "--lower" in argv[3:]
    sets = [json.loads(s) for s in argv[3:] if s != "--lower"] or [{}]
    queue = oclla.get_queue()
    print(oclla.device_info(queue).name, flush=True)
    cp = cupy_or_none()
    for dtype in dtypes:
        for n in sizes:
            rng = np.random.default_rng(n)
            x = rng.standard_normal((n, n)).astype(dtype)
            a = x @ x.T / n + np.eye(n, dtype=dtype)
            c_host = np.ascontiguousarray(sla.cholesky(a, lower=lower)).astype(dtype)
            c = cl_array.to_device(queue, c_host)
            for k in ranks:
                v_host = (rng.standard_normal((n, k)) / np.sqrt(k)).astype(dtype)
                v = cl_array.to_device(queue, v_host)
                line = [f"{dtype.name} n={n} k={k}"]
                ref = None
                if cp is not None:
                    da, dv = cp.asarray(a), cp.asarray(v_host)
                    ref = cupy_best_of(cp, lambda: cp.linalg.cholesky(da + dv @ dv.T), 3)
                    line.append(f"cupy {ref * 1e3:.2f}ms")
                for knobs in sets:
                    with trial(queue, "update", dtype,
                               {**params(queue, "update", dtype), **knobs}):
                        best, result = timed(queue, c, v, n, method="product",
                                             lower=lower, repeat=5)
                        phases = phase_times(queue, c, v, lower)
                    err = ""
                    if n <= 8192:
                        err = " err %.3f" % update_error(a, v_host, result.get(), lower)
                    x_ref = f" x{ref / best:.2f}" if ref else ""
                    line.append(f"{json.dumps(knobs)} {best * 1e3:.2f}ms{x_ref} "
                                f"[{phases}]{err}")
                print(" | ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
