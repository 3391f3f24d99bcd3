"""One launch of the blocked LU's register leaf (getf2_rows), timed and checked.

    python benchmarks/lu_leaf.py --n 2048 --lw 16 --rows 4 --wg 512 --scan 8 \\
        --cases 1:1,16:16,16:128,16:2048

Factors the leaf a[:, 0:w] of a random n x n float32 matrix (rows held ROWS
per work-item by WG items, so n <= ROWS x WG) and completes the panel's
columns up to p1 itself, for each ``w:p1`` case; with ``--map`` as a leaf of
the last panel (MAP = 1: rows through a row map, other columns left alone, p1
unused).  Printed: the kernel's register spill (private memory per item), and
per case the kernel time from profiling events (best of --repeat), whether the
pivots equal LAPACK's sgetrf of the n x w panel, and the largest difference
from its factors.
"""

import argparse

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.linalg.lapack as lapack

import oclla
from oclla._programs import enqueue, get_kernel, int_zeros


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--lw", type=int, default=16)
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--wg", type=int, default=512)
    ap.add_argument("--scan", type=int, default=8)
    ap.add_argument("--stage", type=int, default=0, help="rows per chunk (0: WG)")
    ap.add_argument("--cases", default="1:1,16:16,16:128")
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--map", action="store_true", help="the last panel's leaf (MAP = 1)")
    args = ap.parse_args(argv)
    queue = oclla.get_queue()
    n, lw, wg = args.n, args.lw, args.wg
    kernel = get_kernel(queue, "lu_rows.cl", "getf2_rows", np.float32, WG=wg, NO_PIVOT=0,
                        LW=lw, ROWS=args.rows, STAGE=args.stage or wg, ARGMAX_SCAN=args.scan,
                        MAP=int(args.map))
    spill = kernel.get_work_group_info(cl.kernel_work_group_info.PRIVATE_MEM_SIZE, queue.device)
    a = np.random.default_rng(1).standard_normal((n, n)).astype(np.float32)
    work = cl_array.to_device(queue, a)
    piv, info, perm = int_zeros(queue, n), int_zeros(queue, 1), int_zeros(queue, 1 + 3 * lw)
    # the leaf at column 0 reads the first map and writes the second (kernels_cl/flat_tail.h)
    maps = cl_array.to_device(queue, np.tile(np.arange(n, dtype=np.int32), 2))
    linv = cl_array.empty(queue, lw * lw, np.float32)
    print(f"{oclla.device_info(queue).name}: n={n} LW={lw} ROWS={args.rows} WG={wg} "
          f"ARGMAX_SCAN={args.scan} MAP={int(args.map)}; private memory {spill} bytes per item")
    for case in args.cases.split(","):
        w, p1 = (int(x) for x in case.split(":"))
        best = float("inf")
        for _ in range(args.repeat):
            work.set(a)
            extra = (maps.data, linv.data) if args.map else (0, p1, perm.data)
            event = enqueue(queue, kernel, (wg,), (wg,), work.data, n, n, 0, w, *extra,
                            piv.data, info.data)
            event.wait()
            best = min(best, (event.profile.end - event.profile.start) / 1e3)
        lu_ref, piv_ref, _ = lapack.sgetrf(a[:, :w].copy())
        same = np.array_equal(piv.get()[:w], piv_ref[:w])
        rows = maps.get()[n:] if args.map else np.arange(n)     # logical row r: memory row
        diff = np.abs(work.get()[rows, :w] - lu_ref).max()
        print(f"  w={w:3d} p1={p1:5d}: {best:8.1f} us  pivots {'as LAPACK' if same else 'DIFFER'}"
              f"  max diff {diff:.1e}", flush=True)


if __name__ == "__main__":
    main()
