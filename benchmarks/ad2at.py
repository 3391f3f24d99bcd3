"""A·D²·Aᵀ assembly (one triangle) in full and RFP storage against numpy and CuPy, one run.

    python benchmarks/ad2at.py                       # m = 1024, 2048, n = 2m, float32
    python benchmarks/ad2at.py --sizes 8192 --n-factor 2    # the issue's GPU case

Device timings are of the assembly alone with A and d2 already on the device
(best of --repeat); numpy and CuPy compute the full product ``(A*d2) @ A.T``
(host arrays, resp. device-resident).  GFLOP/s count the triangle, m(m+1)·n;
the "vs cupy" column is our wall time over CuPy's (the issue asks for <= 1).
Errors are max|C − C_ref| / (n·max|A|²·max d2·ε).
"""

import argparse
import sys

import numpy as np
import pyopencl.array as cl_array

import oclla
from oclla import accuracy
from oclla._bench import best_of, cupy_best_of, cupy_or_none
from oclla.ad2at import ad2at_flops, assemble_device
from oclla.rfp import unpack


def measure(m: int, n: int, dtype, queue, repeat: int, cp, method: str) -> dict:
    rng = np.random.default_rng(m)
    a = rng.random((m, n)).astype(dtype)
    d2 = rng.random(n).astype(dtype)
    da, dd = cl_array.to_device(queue, a), cl_array.to_device(queue, d2)
    flops = ad2at_flops(m, n)
    out = {}

    def assemble(packed):
        out[packed] = assemble_device(queue, da, dd, packed=packed, lower=True, method=method)
        queue.finish()

    t_full = best_of(lambda: assemble(False), repeat)
    t_packed = best_of(lambda: assemble(True), repeat)
    t_numpy = best_of(lambda: (a * d2) @ a.T, repeat)
    ref = np.tril((a.astype(np.float64) * d2) @ a.T.astype(np.float64))
    scale = n * float(np.abs(a).max()) ** 2 * float(d2.max()) * accuracy.eps(dtype)
    row = dict(m=m, n=n, full_s=t_full, packed_s=t_packed, numpy_s=t_numpy,
               full=flops / t_full / 1e9, packed=flops / t_packed / 1e9,
               err_full=float(np.abs(out[False].get() - ref).max() / scale),
               err_packed=float(np.abs(unpack(out[True].get(), m) - ref).max() / scale))
    if cp is not None:
        ca, cd = cp.asarray(a), cp.asarray(d2)
        row["cupy_s"] = cupy_best_of(cp, lambda: (ca * cd) @ ca.T, repeat)
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1024,2048", help="m values, comma separated")
    p.add_argument("--n-factor", type=int, default=2, help="n = n_factor * m")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--method", default="blocked", choices=("blocked", "pivot"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    queue = oclla.get_queue(args.device)
    dtype = np.dtype(args.dtype)
    cp = cupy_or_none()
    measure(96, 192, dtype, queue, 1, None, args.method)     # build the kernels
    print(f"A·D²·Aᵀ ({args.method}) {dtype.name} on {oclla.device_info(queue).name}; "
          f"times in ms, GFLOP/s = m(m+1)n / time")
    head = f"{'m':>6} {'n':>6} {'full':>9} {'packed':>9} {'numpy':>9}"
    head += f" {'cupy':>9} {'vs cupy':>8}" if cp else ""
    print(head + f" {'GF/s full':>9} {'GF/s pk':>8} {'err':>6} {'err pk':>6}")
    for m in (int(s) for s in args.sizes.split(",")):
        r = measure(m, args.n_factor * m, dtype, queue, args.repeat, cp, args.method)
        line = (f"{m:6d} {r['n']:6d} {r['full_s'] * 1e3:9.1f} {r['packed_s'] * 1e3:9.1f} "
                f"{r['numpy_s'] * 1e3:9.1f}")
        if cp:
            line += f" {r['cupy_s'] * 1e3:9.1f} {r['full_s'] / r['cupy_s']:8.2f}"
        print(line + f" {r['full']:9.1f} {r['packed']:8.1f} {r['err_full']:6.2f} "
              f"{r['err_packed']:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
