"""Triangular solve by substitution against inverse-plus-multiply (Macindoe 2013, §4.3.6).

    python benchmarks/trsm_inverse.py                  # n = 1024, 2048, float32
    python benchmarks/trsm_inverse.py --sizes 4096,8192 --dtype float64

The thesis's largest measured win was to replace the Cholesky's TRSM by a
triangular inverse of the diagonal block and a multiplication.  oclla does
this wherever the parameters say so; this run switches it off and on:

* ``potrf``: the blocked Cholesky with the ``chol`` family's TRSM_INVERSE = 0
  (panels solved by ``oclla.blas.trsm`` with substitution kernels) and 1 (the
  leaf inverts its block, the panel is one multiplication), set through
  ``oclla._params.override``; GFLOP/s count n³/3.
* ``trsm``: ``oclla.blas.trsm`` on an n x n triangle and n right-hand sides,
  ``inverse=False`` (substitution per diagonal block) and ``True``
  (``trtri_blocks`` once, then GEMMs); GFLOP/s count n³.

Data are on the device; best of --repeat, the two settings interleaved.
``inv/subst`` is the substitution's time over the inverse's (above 1: the
inverse wins).  err: the Cholesky backward error ‖A − LLᵀ‖∞/(n‖A‖∞ε), the
solve's ‖B − T·X‖∞/(‖T‖∞‖X‖∞nε).
"""

import argparse
import sys

import numpy as np
import pyopencl.array as cl_array

import oclla
from oclla import _params, accuracy
from oclla._bench import best_of
from oclla.blas import trsm, view_of
from oclla.cholesky import factor_device


def interleaved(runs: dict, repeat: int) -> dict:
    """Best time of each ``runs[name]()`` over ``repeat`` rounds after a warm-up round."""
    best = dict.fromkeys(runs, float("inf"))
    for i in range(repeat + 1):
        for name, fn in runs.items():
            t = best_of(fn, 1, 0)
            if i:
                best[name] = min(best[name], t)
    return best


def measure_potrf(n: int, dtype, queue, repeat: int) -> dict:
    a = accuracy.spd_with_condition(n, 100.0, reflections=3, rng=n, dtype=dtype)
    device = cl_array.to_device(queue, a)
    out = {}

    def run(inverse: int):
        def fn():
            _params.override("chol", {"TRSM_INVERSE": inverse})
            try:
                work = device.copy()
                factor_device(queue, work, lower=True, method="blocked")
                queue.finish()
            finally:
                _params.override("chol", None)
            out[inverse] = work
        return fn

    best = interleaved({"subst": run(0), "inverse": run(1)}, repeat)
    flops = n ** 3 / 3.0
    return dict(what="potrf", n=n, subst=flops / best["subst"] / 1e9,
                inverse=flops / best["inverse"] / 1e9, ratio=best["subst"] / best["inverse"],
                err=max(accuracy.cholesky_backward_error(a, out[k].get(), True) for k in out))


def measure_trsm(n: int, dtype, queue, repeat: int) -> dict:
    rng = np.random.default_rng(n)
    t = (np.tril(rng.uniform(-1, 1, (n, n))) / n + np.eye(n) * 2).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    dt, db = cl_array.to_device(queue, t), cl_array.to_device(queue, b)
    out = {}

    def run(inverse: bool):
        def fn():
            x = db.copy()
            trsm(queue, n, n, view_of(dt), view_of(x), dtype=dtype, lower=True,
                 inverse=inverse)
            queue.finish()
            out[inverse] = x
        return fn

    best = interleaved({"subst": run(False), "inverse": run(True)}, repeat)
    flops = float(n) ** 3
    return dict(what="trsm", n=n, subst=flops / best["subst"] / 1e9,
                inverse=flops / best["inverse"] / 1e9, ratio=best["subst"] / best["inverse"],
                err=max(accuracy.solve_backward_error(t, out[k].get(), b) for k in out))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1024,2048")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    queue = oclla.get_queue(args.device)
    dtype = np.dtype(args.dtype)
    for measure in (measure_potrf, measure_trsm):
        measure(160, dtype, queue, 1)                    # build the kernels
    print(f"substitution vs inverse + multiply, {dtype.name} on "
          f"{oclla.device_info(queue).name}; GFLOP/s")
    print(f"{'routine':>7} {'n':>6} {'subst':>8} {'inverse':>8} {'inv/subst':>9} {'err':>7}")
    for n in (int(s) for s in args.sizes.split(",")):
        for measure in (measure_potrf, measure_trsm):
            r = measure(n, dtype, queue, args.repeat)
            print(f"{r['what']:>7} {n:6d} {r['subst']:8.1f} {r['inverse']:8.1f} "
                  f"{r['ratio']:9.2f} {r['err']:7.2g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
