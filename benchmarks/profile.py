"""Where the time of one factorization goes: kernel time per kernel name, launches, device span.

    python benchmarks/profile.py N [blocked|pivot|cholesky] [float32|float64]
    python benchmarks/profile.py N update|product [float32|float64] [K]

Factors a seeded N x N matrix (LU with the given method, or the blocked
Cholesky of an SPD matrix), or updates the upper Cholesky factor of one by a
rank-K V (``cholesky_update``, its blocked method or the product form; K
default 16), on the default device once to warm up, then once
under ``oclla.record()``, and prints wall time, the device's busy span, the
summed kernel times per kernel and the launch counts (kernels on two queues
overlap, so the sum may exceed the span).  Wall time is taken from a run
without the recorder (recording uses the caller's profiling queue).
"""

import collections
import sys
import time

import numpy as np
import pyopencl.array as cl_array

import oclla


def main(argv):
    n = int(argv[0]) if argv else 1024
    method = argv[1] if len(argv) > 1 else "blocked"
    dtype = np.dtype(argv[2] if len(argv) > 2 else "float32")
    queue = oclla.get_queue()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n))
    if method in ("cholesky", "update", "product"):
        x = x @ x.T / n + np.eye(n)
    if method in ("update", "product"):
        k = int(argv[3]) if len(argv) > 3 else 16
        flops = 4.0 * k * n * n
        x = np.linalg.cholesky(x).T                              # the upper factor
        v = cl_array.to_device(queue, (0.3 * rng.standard_normal((n, k))).astype(dtype))
        how = "blocked" if method == "update" else "product"
        factor = lambda: oclla.cholesky_update(a, v, method=how,  # noqa: E731
                                               check_finite=False)
    elif method == "cholesky":
        flops = n ** 3 / 3.0
        factor = lambda: oclla.cho_factor(a, check_finite=False)            # noqa: E731
    else:
        flops = 2.0 * n ** 3 / 3.0
        factor = lambda: oclla.lu_factor(a, method=method, check_finite=False)  # noqa: E731
    a = cl_array.to_device(queue, np.ascontiguousarray(x, dtype))
    factor()
    queue.finish()
    t0 = time.perf_counter()
    factor()
    queue.finish()
    wall = time.perf_counter() - t0
    with oclla.record() as rec:
        factor()
        queue.finish()
    kernels = [k for s in rec.runs[-1].steps for k in s.kernels if k.end and k.start]
    total, count = collections.Counter(), collections.Counter()
    for k in kernels:
        total[k.name] += (k.end - k.start) / 1e6
        count[k.name] += 1
    span = (max(k.end for k in kernels) - min(k.start for k in kernels)) / 1e6
    print(f"{oclla.device_info(queue).name}: {method} n={n} {dtype.name}: wall "
          f"{1e3 * wall:.1f} ms ({flops / wall / 1e9:.1f} GFLOP/s), recorded span "
          f"{span:.1f} ms, kernels {sum(total.values()):.1f} ms, launches {len(kernels)}")
    for name, ms in total.most_common():
        print(f"  {name:16s} {ms:9.2f} ms  x{count[name]}")


if __name__ == "__main__":
    main(sys.argv[1:])
