"""The tiled gemm with many parameter sets against the vendor BLAS, one run.

    python benchmarks/gemm_sweep.py [--dtype float64] [--sizes 4096,8192]
        [--rank-k 128,256] [--set '{"TILE_M": 128, ...}' ...] [--top 3] [--budget 240]

Every set (``--set``: a complete tiled ``gemm`` set, keys as in docs/parameters.md;
default: :data:`SETS` of the dtype) is first checked against numpy on an odd-sized
product (417 x 389 by 301, alpha and beta not 1, B as it is and transposed), then timed
through ``oclla.blas.gemm`` on device arrays, best of 3 after a warm-up:

* ``NN n``: C = A·B, n x n by n, for each of ``--sizes``;
* ``NN k``: the blocked factorizations' trailing update, C = C - A·B with A
  (n-k) x k and B k x (n-k), n the largest size, k each of ``--rank-k``.

The ``--top`` sets fastest at the largest size are then timed as the blocked
Cholesky uses them too: ``NT`` (C = A·Bᵀ, B stored n x k) and ``syrk`` (the
lower triangle of A·Aᵀ, half the flops counted).  Printed per set: TF/s and the
fraction of the device's peak (``--peak`` TF/s; default 33.5 in float64 and 67 in
float32, an H100 SXM's vector peaks), the private memory per work-item its
kernel reports (spilled registers) and, for float64 sets on NVIDIA's OpenCL, the
registers and spill stores ptxas reports (a second build with ``-cl-nv-verbose``).  The reference (cuBLAS through
CuPy, when it sees a CUDA device) is timed on the same shapes; cuBLAS may use
FP64 tensor cores, which OpenCL cannot reach.  ``--budget`` seconds bound the
sweep: sets not reached are listed as skipped.
"""

import argparse
import json
import re
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import _knobs, _params, kernels_cl
from oclla._bench import best_of, cupy_best_of, cupy_or_none
from oclla._device import device_info, resolve_queue
from oclla._programs import build_options
from oclla.blas import gemm, tile_launch, view_of


def _tiled(tm, tn, tk, wm, wn, interleave=1, vec_local=2, vec=4) -> dict:
    return dict(KERNEL="tiled", TILE_M=tm, TILE_N=tn, TILE_K=tk, WPT_M=wm, WPT_N=wn, VEC=vec,
                VEC_LOCAL=vec_local, INTERLEAVE=interleave)


#: Candidate sets per dtype: the contiguous register blocks as shipped before
#: (INTERLEAVE 0, 4-wide local reads), then interleaved blocks read in 16-byte
#: vectors (VEC_LOCAL 2 in float64, 4 in float32), narrower and wider reads, and
#: 2-wide global loads.
SETS = {
    "float64": [
        _tiled(128, 128, 8, 8, 8, 0, 4), _tiled(64, 128, 16, 8, 4, 0, 4),
        _tiled(128, 128, 8, 8, 8), _tiled(128, 64, 8, 8, 8), _tiled(64, 128, 8, 8, 8),
        _tiled(64, 64, 16, 8, 8), _tiled(64, 64, 8, 8, 8), _tiled(128, 64, 8, 8, 4),
        _tiled(64, 128, 8, 4, 8), _tiled(64, 64, 16, 4, 4), _tiled(128, 128, 8, 8, 4),
        _tiled(128, 128, 4, 8, 8), _tiled(64, 64, 16, 8, 4), _tiled(128, 64, 16, 8, 4),
        _tiled(128, 128, 8, 8, 8, vec_local=1), _tiled(128, 64, 8, 8, 4, vec_local=1),
        _tiled(128, 128, 8, 8, 8, vec_local=4), _tiled(128, 128, 8, 8, 8, vec=2),
        _tiled(128, 64, 8, 8, 4, vec=2), _tiled(128, 128, 8, 8, 8, 0, 2),
    ],
    "float32": [
        _tiled(64, 128, 16, 8, 4, 0, 4), _tiled(64, 128, 16, 8, 4, vec_local=4),
        _tiled(64, 128, 16, 8, 4), _tiled(128, 128, 8, 8, 8, vec_local=4),
        _tiled(128, 128, 16, 8, 8, vec_local=4), _tiled(128, 64, 16, 8, 8, vec_local=4),
        _tiled(128, 64, 16, 8, 4, vec_local=4),
    ],
}
PEAK = {"float64": 33.5, "float32": 67.0}


def short(p: dict) -> str:
    return (f"{p['TILE_M']}x{p['TILE_N']}x{p['TILE_K']} {p['WPT_M']}x{p['WPT_N']} "
            f"VEC={p['VEC']} VL={p['VEC_LOCAL']} IL={p['INTERLEAVE']}")


def ptxas_report(queue, p: dict, dtype) -> str:
    """Registers and spills of gemm_tiled with ``p`` as NVIDIA's ptxas reports them
    (a separate build with -cl-nv-verbose; '' elsewhere)."""
    if "NVIDIA" not in queue.device.platform.name:
        return ""
    defines, _, _ = tile_launch(p, 1, 1)
    options = list(build_options(dtype, dict(DIRECT=0, INDEX64=0, **defines)))
    try:
        prg = cl.Program(queue.context, kernels_cl.read_source("gemm.cl")).build(
            options=options + ["-cl-nv-verbose"])
        log = prg.get_build_info(queue.device, cl.program_build_info.LOG) or ""
    except cl.Error as exc:
        return f"verbose build failed: {exc}"
    regs = re.findall(r"Used (\d+) registers", log)
    spill = re.findall(r"(\d+) bytes spill stores", log)
    return f"regs {','.join(regs)} spill {','.join(spill) or '?'}"


def private_bytes(queue, p: dict, dtype) -> int:
    from oclla._programs import get_kernel
    defines, _, _ = tile_launch(p, 1, 1)
    kernel = get_kernel(queue, "gemm.cl", "gemm_tiled", dtype, DIRECT=0, **defines)
    return kernel.get_work_group_info(cl.kernel_work_group_info.PRIVATE_MEM_SIZE, queue.device)


def correct(queue, p: dict, dtype) -> str | None:
    """None if ``p`` computes an odd-sized product right (B as it is and transposed),
    else the error."""
    rng = np.random.default_rng(7)
    m, n, k = 417, 389, 301
    tol = 1e-3 if dtype == np.float32 else 1e-11
    for ta, tb in ((False, False), (False, True)):
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
        c = rng.standard_normal((m, n)).astype(dtype)
        da, db, dc = (cl_array.to_device(queue, x) for x in (a, b, c))
        gemm(queue, m, n, k, 0.5, view_of(da), view_of(db), -1.5, view_of(dc), dtype=dtype,
             trans_a=ta, trans_b=tb, tile=p)
        ref = 0.5 * (a.T if ta else a) @ (b.T if tb else b) - 1.5 * c
        err = np.abs(dc.get() - ref).max() / np.abs(ref).max()
        if not err < tol:
            return f"relative error {err:.2e} (trans_a={ta}, trans_b={tb})"
    return None


class Shapes:
    """Device operands for every timed shape (allocated once)."""

    def __init__(self, queue, dtype, sizes, ranks):
        rng = np.random.default_rng(1)
        self.big = max(sizes)
        self.a = cl_array.to_device(queue, rng.standard_normal((self.big, self.big))
                                    .astype(dtype))
        self.b = cl_array.to_device(queue, rng.standard_normal((self.big, self.big))
                                    .astype(dtype))
        self.c = cl_array.zeros(queue, (self.big, self.big), dtype)
        self.cases = [(f"NN {n}", n, n, n, False, False, None) for n in sizes]
        self.cases += [(f"NN k={k}", self.big - k, self.big - k, k, False, False, None)
                       for k in ranks]

    @staticmethod
    def extra(big):
        return [(f"NT {big}", big, big, big, False, True, None),
                (f"syrk {big}", big, big, big, False, True, "lower")]

    def flops(self, m, n, k, tri):
        return (m * (n + 1) if tri else 2 * m * n) * k

    def oclla_fn(self, queue, p, dtype, m, n, k, ta, tb, tri):
        a, b, c = view_of(self.a), view_of(self.b if tri is None else self.a), view_of(self.c)

        def run():
            gemm(queue, m, n, k, -1.0, a, b, 1.0, c, dtype=dtype, trans_a=ta, trans_b=tb,
                 triangle=tri, tile=p)
            queue.finish()
        return run

    def cupy_fn(self, cp, dtype, m, n, k, ta, tb, tri):
        a = cp.random.default_rng(1).standard_normal((max(m, k), max(m, k)), dtype=dtype)
        x = a[:m, :k]
        y = (a[:n, :k].T if tb else a[:k, :n])
        return lambda: cp.matmul(x, y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", default="float64,float32")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rank-k", default="128,256")
    ap.add_argument("--set", action="append", default=[], help="a gemm set as JSON")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peak", type=float, default=None)
    ap.add_argument("--budget", type=float, default=240.0)
    ap.add_argument("--no-ptxas", action="store_true")
    args = ap.parse_args()
    start = time.perf_counter()
    queue = resolve_queue(None)
    info = device_info(queue)
    cp = cupy_or_none()
    sizes = [int(s) for s in args.sizes.split(",")]
    ranks = [int(s) for s in args.rank_k.split(",") if s]
    print(f"{info.name} (driver {info.driver_version}), {time.strftime('%Y-%m-%d %H:%M')}")
    for dtype_name in args.dtype.split(","):
        dtype = np.dtype(dtype_name).type
        peak = args.peak or PEAK[dtype_name]
        sets = [json.loads(s) for s in args.set] or SETS[dtype_name]
        shapes = Shapes(queue, dtype, sizes, ranks)
        shipped = _params.params(queue, "gemm", dtype)
        print(f"\n== {dtype_name}: peak {peak} TF/s; the device's own set: {shipped}")
        cases = shapes.cases

        def line(label, seconds, flops, ref=None):
            tf = flops / seconds / 1e12
            text = f"{label:<10} {seconds * 1e3:8.2f} ms {tf:6.2f} TF/s {100 * tf / peak:5.1f}%"
            return text + (f"  ({ref / seconds:.2f}x ref)" if ref else "")

        refs = {}
        if cp is not None:
            for name, m, n, k, ta, tb, tri in cases + Shapes.extra(shapes.big):
                fn = shapes.cupy_fn(cp, dtype, m, n, k, ta, tb, tri)
                refs[name] = cupy_best_of(cp, fn, args.repeat)
                flops = 2 * m * n * k
                print("  cuBLAS " + line(name, refs[name], flops))
            cp.get_default_memory_pool().free_all_blocks()
        results = []
        for p in sets:
            p = _knobs.complete_gemm(p)
            if time.perf_counter() - start > args.budget:
                print(f"  skipped (budget): {short(p)}")
                continue
            problem = _params.check("gemm", p, info, np.dtype(dtype).itemsize)
            if problem is None:
                try:
                    problem = correct(queue, p, dtype)
                except (cl.Error, oclla.DeviceError) as exc:
                    problem = f"{type(exc).__name__}: {str(exc)[:200]}"
            if problem:
                print(f"  {short(p)}: rejected ({problem})")
                continue
            extra = "" if args.no_ptxas or dtype != np.float64 else ptxas_report(queue, p, dtype)
            print(f"  {short(p)}  private {private_bytes(queue, p, dtype)} B {extra}")
            times = {}
            for name, m, n, k, ta, tb, tri in cases:
                times[name] = best_of(shapes.oclla_fn(queue, p, dtype, m, n, k, ta, tb, tri),
                                      args.repeat)
                print("      " + line(name, times[name], shapes.flops(m, n, k, tri),
                                      refs.get(name)), flush=True)
            results.append((times[cases[len(sizes) - 1][0]], p))
        results.sort(key=lambda r: r[0])
        print(f"\n  {dtype_name} fastest at n={shapes.big}:")
        for seconds, p in results[:args.top]:
            print(f"  {short(p)}  {json.dumps(p)}")
            for name, m, n, k, ta, tb, tri in cases[len(sizes) - 1:len(sizes)] + \
                    Shapes.extra(shapes.big):
                if time.perf_counter() - start > args.budget + 30:
                    break
                t = best_of(shapes.oclla_fn(queue, p, dtype, m, n, k, ta, tb, tri),
                            args.repeat)
                print("      " + line(name, t, shapes.flops(m, n, k, tri), refs.get(name)),
                      flush=True)
        del shapes
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
