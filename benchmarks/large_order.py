"""LU of a device matrix whose order needs 64-bit element indices: time and sampled error.

    python benchmarks/large_order.py                        # n = 50000, float32, blocked
    python benchmarks/large_order.py --n 47000 --rows 32 --method pivot

From n = 46341 on an n x n matrix has 2³¹ entries or more, so element indices
(row · n + column) past row 2³¹/n do not fit an int (kernels_cl/common.h
forms them in 64 bits).  The matrix, seeded standard normal, is made on the
host and copied to the default device, and ``lu_factor`` factors it there in
place (``overwrite_a``); the time is that of the factorization alone, after a
warm-up factorization of order --warmup that builds the kernels.

Checking P·A = L·U in full would take n³ operations on the host, so only
--rows rows of P·A − L·U are formed: rows spread over the matrix, the first
row past the 2³¹ boundary and the last row among them.  Row i of L·U needs
row i of L and the rows 0..i of U, read back in chunks of --chunk rows: about
rows · n² operations.  The error is LAPACK's ‖PA − LU‖∞ / (n ‖A‖∞ ε) over the
sampled rows (a lower bound of the full one; oclla.accuracy), and passes below
its threshold of 30.  The exit status is 1 when it does not, 2 when the matrix
does not fit the device.
"""

import argparse
import sys
import time

import numpy as np
import pyopencl.array as cl_array

import oclla
from oclla import accuracy

INDEX_LIMIT = 2 ** 31          # element indices from here on need more than an int


def first_row_past_limit(n: int) -> int:
    """The first row of an n x n matrix whose element indices are 2³¹ or more."""
    return -(-INDEX_LIMIT // n)


def sampled_rows(n: int, count: int) -> np.ndarray:
    """``count`` rows spread evenly over [0, n), the first and the last among them, and
    the first row whose indices pass 2³¹ (if there is one)."""
    rows = set(np.linspace(0, n - 1, max(count, 2)).astype(int).tolist())
    if first_row_past_limit(n) < n:
        rows.add(first_row_past_limit(n))
    return np.array(sorted(rows))


def row_abs_sums(a: np.ndarray, chunk: int) -> np.ndarray:
    """Σ_j |a_ij| for every row, in float64, a chunk of rows at a time."""
    return np.concatenate([np.abs(a[k:k + chunk]).sum(axis=1, dtype=np.float64)
                           for k in range(0, a.shape[0], chunk)])


def sampled_lu_error(a: np.ndarray, lu_dev: cl_array.Array, piv, rows, chunk: int) -> float:
    """‖(PA − LU)[rows]‖∞ / (n ‖A‖∞ ε) for the packed device factor ``lu_dev`` of ``a``."""
    n = a.shape[0]
    perm = accuracy.permutation_from_piv(piv, n)
    lrows = np.zeros((len(rows), n))                 # the sampled rows of L
    for s, i in enumerate(rows):
        lrows[s, :i] = lu_dev[i:i + 1].get()[0, :i]
        lrows[s, i] = 1.0
    product = np.zeros((len(rows), n))               # the sampled rows of L·U
    for k0 in range(0, int(rows[-1]) + 1, chunk):
        k1 = min(n, k0 + chunk)
        u = np.triu(lu_dev[k0:k1].get().astype(np.float64), k0)   # U's rows k0..k1
        product += lrows[:, k0:k1] @ u
    residual = a[perm[rows]].astype(np.float64) - product
    scale = n * float(row_abs_sums(a, chunk).max()) * accuracy.eps(lu_dev.dtype)
    return float(np.abs(residual).sum(axis=1).max() / scale)


def factor_and_check(queue, n: int, *, dtype=np.float32, rows: int = 16, seed: int = 0,
                     chunk: int = 1024, warmup: int = 1024, **lu_options) -> dict:
    """Factor a seeded n x n matrix on the device; its time and sampled backward error."""
    dtype = np.dtype(dtype)
    if warmup:
        small = np.random.default_rng(seed).standard_normal((warmup, warmup), dtype=dtype)
        oclla.lu_factor(cl_array.to_device(queue, small), overwrite_a=True, queue=queue,
                        **lu_options)
        queue.finish()
    a = np.random.default_rng(seed).standard_normal((n, n), dtype=dtype)
    work = cl_array.to_device(queue, a)
    queue.finish()
    t = time.perf_counter()
    lu, piv = oclla.lu_factor(work, overwrite_a=True, queue=queue, **lu_options)
    queue.finish()
    seconds = time.perf_counter() - t
    picked = sampled_rows(n, rows)
    error = sampled_lu_error(a, lu, piv.get(), picked, chunk)
    return dict(n=n, dtype=dtype.name, seconds=seconds,
                gflops=2.0 * n ** 3 / 3.0 / seconds / 1e9, rows=picked.tolist(),
                error=error, ok=accuracy.passes(error))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=50000)
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--method", default="blocked", choices=("blocked", "pivot"))
    p.add_argument("--variant", default=None, help="for --method pivot (see lu_factor)")
    p.add_argument("--rows", type=int, default=16, help="rows of PA - LU to check")
    p.add_argument("--chunk", type=int, default=1024, help="rows of U read back at once")
    p.add_argument("--warmup", type=int, default=1024, help="order of the warm-up (0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    queue = oclla.get_queue(args.device)
    info = oclla.device_info(queue)
    need = args.n * args.n * np.dtype(args.dtype).itemsize
    print(info.describe())
    if need > min(info.max_alloc_size, info.global_mem_size):
        print(f"n = {args.n}: the matrix needs {need / 2**30:.1f} GiB in one buffer, more "
              f"than this device allows")
        return 2
    options = dict(method=args.method)
    if args.variant:
        options["variant"] = args.variant
    row = factor_and_check(queue, args.n, dtype=args.dtype, rows=args.rows, seed=args.seed,
                           chunk=args.chunk, warmup=args.warmup, **options)
    print(f"{'n':>7} {'dtype':>8} {'seconds':>9} {'GFLOP/s':>9} {'rows':>5} "
          f"{'error':>9} ok")
    print(f"{row['n']:7d} {row['dtype']:>8} {row['seconds']:9.3f} {row['gflops']:9.1f} "
          f"{len(row['rows']):5d} {row['error']:9.2e} {'yes' if row['ok'] else 'NO'}")
    past = first_row_past_limit(args.n)
    print(f"rows checked: {row['rows']}"
          + (f" (from row {past} on, element indices pass 2^31)" if past < args.n else ""))
    return 0 if row["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
