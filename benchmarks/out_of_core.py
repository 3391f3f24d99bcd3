"""Cholesky beyond one buffer: one buffer vs tiles on the device vs streamed from the host.

    python benchmarks/out_of_core.py --n 65536 --dtype float64 --device NVIDIA
    python benchmarks/out_of_core.py --n 100000 --dtype float32 --device NVIDIA
    python benchmarks/out_of_core.py --n 2000 --tile 256 --stream-tile 256     # PoCL
    python benchmarks/out_of_core.py --lu --n 65536 --dtype float32 --device NVIDIA

Three factorizations of an SPD matrix (A = L·Lᵀ, lower triangle), each timed
after a warm-up of a small order with the same tile widths (the kernels are
built then):

``one-buffer``   :func:`oclla.cho_factor` of a device array of order
                 --reference-n (default: n if one buffer holds it, else the
                 largest power of two that does), data already on the device;
``tiled``        :func:`oclla.tiled.factor_tiles` of a TiledMatrix of order n
                 (tiles of --tile), data already on the device;
``out-of-core``  :func:`oclla.out_of_core.factor_streamed` of the host matrix
                 of order n in place, panels of --stream-tile (several widths:
                 one run each, the matrix made again before each), transfers
                 through page-locked staging buffers (``--transfers pinned``)
                 and/or straight from pageable memory (``pageable``): the time
                 is the wall time, every transfer included; the achieved bus
                 bandwidth (bytes over the copy queue's busy time) and the
                 share of the transfer time hidden behind computation come
                 from the OpenCL events' profiling times.

GFLOP/s count n³/3 + n²/2 + n/6.  With ``--lu`` the same three runs factor
P·A = L·U of a general matrix instead (:func:`oclla.lu_factor` of a device
array, :func:`oclla.tiled_lu.factor_lu_tiles`,
:func:`oclla.out_of_core_lu.factor_streamed`; GFLOP/s count 2n³/3; the
streamed LU always stages its uploads through page-locked buffers with
``pinned``, its downloads go straight to pageable memory).  The issue's goals are printed beside the
ratios: tiled float64 n = 65536 ≥ 90 % of one buffer at n = 32768; float32
n = 100000 streamed from host memory ≥ 70 % of in-core (here: the tiled run,
since one buffer cannot hold it).

The matrix is made cheaply on the host: a random lower triangle in [0, 1)
(a block of rows repeated) with n on the diagonal, diagonally dominant hence
SPD (the upper triangle is never read).  ``--check`` measures the backward
error (oclla.accuracy; n³ host operations, orders up to 4096).  The host
needs about two copies of the matrix (the out-of-core run factors one in
place); ``--json PATH`` writes the results.
"""

import argparse
import json
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import accuracy, out_of_core, out_of_core_lu, tiled, tiled_lu
from oclla._params import params
from oclla.cholesky import cholesky_flops
from oclla.lu import lu_flops


def make_spd(n: int, dtype, seed: int = 0, rows: int = 1024) -> np.ndarray:
    """A random lower triangle in [0, 1) with n on the diagonal (the upper triangle, never
    read, holds the same rows)."""
    rng = np.random.default_rng(seed)
    block = rng.random((min(rows, max(n, 1)), n), dtype=np.float32).astype(dtype)
    a = np.empty((n, n), dtype)
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        a[i0:i1] = np.roll(block[:i1 - i0], i0 // rows, axis=1)
    a[np.diag_indices(n)] = n
    return a


def make_general(n: int, dtype, seed: int = 0, rows: int = 1024) -> np.ndarray:
    """A random matrix in [-1, 1) (a block of rows, rolled by one column per repeat):
    partial pivoting interchanges rows at every step."""
    rng = np.random.default_rng(seed)
    block = (2 * rng.random((min(rows, max(n, 1)), n), dtype=np.float32) - 1).astype(dtype)
    a = np.empty((n, n), dtype)
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        a[i0:i1] = np.roll(block[:i1 - i0], i0 // rows, axis=1)
    return a


def symmetric(a: np.ndarray) -> np.ndarray:
    return np.tril(a) + np.tril(a, -1).T


def largest_one_buffer_order(queue, dtype) -> int:
    info = oclla.device_info(queue)
    limit = min(info.max_alloc_size, info.global_mem_size // 2)
    n = 1
    while (2 * n) ** 2 * np.dtype(dtype).itemsize <= limit:
        n *= 2
    return n


def run_one_buffer(queue, n: int, dtype, check: bool) -> dict:
    a = make_spd(n, dtype)
    d = cl_array.to_device(queue, a)
    queue.finish()
    start = time.perf_counter()
    oclla.cho_factor(d, lower=True, overwrite_a=True, check_finite=False, queue=queue)
    queue.finish()
    seconds = time.perf_counter() - start
    out = dict(mode="one-buffer", n=n, seconds=seconds, gflops=cholesky_flops(n) / seconds / 1e9)
    if check:
        out["backward_error"] = accuracy.cholesky_backward_error(symmetric(a), d.get(), True)
    return out


def run_tiled(queue, a: np.ndarray, tile: int, check: bool) -> dict:
    n = a.shape[0]
    tm = tiled.TiledMatrix.from_numpy(a, tile=tile, triangle="lower", queue=queue,
                                      check_finite=False)
    start = time.perf_counter()
    tiled.factor_tiles(tm, lower=True)
    seconds = time.perf_counter() - start
    out = dict(mode="tiled", n=n, tile=tm.tile, panels=len(tm.panels),
               device_gib=tm.nbytes / 2**30, seconds=seconds,
               gflops=cholesky_flops(n) / seconds / 1e9)
    if check:
        out["backward_error"] = accuracy.cholesky_backward_error(symmetric(a), tm.to_numpy(),
                                                                 True)
    tm.release()
    return out


def streamed_row(a: np.ndarray, stats, pinned: bool) -> dict:
    """The printed/JSON row of a streamed run of the n x n matrix ``a`` from its
    :class:`oclla.out_of_core.Stats`."""
    n = a.shape[0]
    return dict(mode="out-of-core", n=n, tile=stats.tile, pinned=pinned,
                host_copy_s=stats.host_copy_s,
                device_gib=out_of_core.BUFFERS * n * stats.tile * a.dtype.itemsize / 2**30,
                seconds=stats.seconds, gflops=stats.gflops, up_gb=stats.bytes_up / 1e9,
                down_gb=stats.bytes_down / 1e9, transfer_s=stats.transfer_s,
                compute_s=stats.compute_s, overlap_s=stats.overlap_s,
                bus_gbs=stats.bandwidth_gbs, hidden=stats.hidden)


def run_streamed(queue, a: np.ndarray, tile: int, check: bool, pinned: bool = True) -> dict:
    n = a.shape[0]
    reference = symmetric(a) if check else None
    stats = out_of_core.factor_streamed(a, a, lower=True, queue=queue, tile=tile,
                                        pinned=pinned)
    out = streamed_row(a, stats, pinned)
    if check:
        out["backward_error"] = accuracy.cholesky_backward_error(reference, a, True)
    return out


def run_one_buffer_lu(queue, n: int, dtype, check: bool) -> dict:
    a = make_general(n, dtype)
    d = cl_array.to_device(queue, a)
    queue.finish()
    start = time.perf_counter()
    _, piv = oclla.lu_factor(d, overwrite_a=True, check_finite=False, queue=queue)
    queue.finish()
    seconds = time.perf_counter() - start
    out = dict(mode="one-buffer", n=n, seconds=seconds, gflops=lu_flops(n) / seconds / 1e9)
    if check:
        out["backward_error"] = accuracy.lu_backward_error(a, d.get(), piv.get())
    return out


def run_tiled_lu(queue, a: np.ndarray, tile: int, check: bool) -> dict:
    n = a.shape[0]
    tm = tiled.TiledMatrix.from_numpy(a, tile=tile, queue=queue, check_finite=False)
    tm.queue.finish()
    start = time.perf_counter()
    piv, _ = tiled_lu.factor_lu_tiles(tm)
    seconds = time.perf_counter() - start
    out = dict(mode="tiled", n=n, tile=tm.tile, panels=len(tm.panels),
               device_gib=tm.nbytes / 2**30, seconds=seconds, gflops=lu_flops(n) / seconds / 1e9)
    if check:
        out["backward_error"] = accuracy.lu_backward_error(a, tm.to_numpy(), piv)
    tm.release()
    return out


def run_streamed_lu(queue, a: np.ndarray, tile: int, check: bool, pinned: bool = True) -> dict:
    n = a.shape[0]
    reference = a.copy() if check else None
    piv, _, stats = out_of_core_lu.factor_streamed(a, queue=queue, tile=tile, pinned=pinned)
    out = streamed_row(a, stats, pinned)
    if check:
        out["backward_error"] = accuracy.lu_backward_error(reference, a, piv)
    return out


#: (make the matrix, one-buffer run, tiled run, streamed run) of each factorization.
RUNS = {False: (make_spd, run_one_buffer, run_tiled, run_streamed),
        True: (make_general, run_one_buffer_lu, run_tiled_lu, run_streamed_lu)}


def bus_bandwidth(queue, dtype, pinned: bool, nbytes: int = 1 << 30) -> tuple:
    """GB/s (up, down) of one plain copy of ``nbytes`` between host and device: from
    pageable numpy memory, or from a mapped CL_MEM_ALLOC_HOST_PTR buffer (``pinned``)."""
    nbytes = min(nbytes, oclla.device_info(queue).max_alloc_size // 2)
    entries = nbytes // np.dtype(dtype).itemsize
    staging = None
    if pinned:
        staging = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE
                            | cl.mem_flags.ALLOC_HOST_PTR, entries * np.dtype(dtype).itemsize)
        host, event = cl.enqueue_map_buffer(queue, staging, cl.map_flags.READ
                                            | cl.map_flags.WRITE, 0, (entries,), dtype)
        event.wait()
        host[:] = 1
    else:
        host = np.ones(entries, dtype)
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, host.nbytes)
    cl.enqueue_copy(queue, buf, host).wait()
    rates = []
    for event in (cl.enqueue_copy(queue, buf, host), cl.enqueue_copy(queue, host, buf)):
        event.wait()
        rates.append(host.nbytes / ((event.profile.end - event.profile.start) * 1e-9) / 1e9)
    if staging is not None:
        host.base.release(queue)
        staging.release()
    buf.release()
    return tuple(rates)


def warm_up(queue, dtype, ref_n: int, tile: int, stream_tiles, modes, lu: bool = False) -> None:
    """Build every kernel the timed runs use: the one-buffer run past the device's
    SMALL_N (where the blocked potrf changes its leaves), the others with their tiles."""
    make, one_buffer, tiles, streamed = RUNS[lu]
    if "one-buffer" in modes:
        p = params(queue, "lu" if lu else "chol", dtype)
        one_buffer(queue, min(ref_n, max(600, p["SMALL_N"] + 2 * p["NB"] + 1)), dtype, False)
    if "tiled" in modes:
        tiles(queue, make(2 * tile + 7, dtype), tile, False)
    if "out-of-core" in modes:
        for stream_tile in stream_tiles:
            streamed(queue, make(3 * stream_tile + 7, dtype), stream_tile, False)


def size(nbytes: float) -> str:
    """Bytes in GiB, or MiB below one GiB."""
    return f"{nbytes / 2**30:.1f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:.1f} MiB"


def report(row: dict) -> None:
    line = (f"{row['mode']:>12}  n={row['n']:>6}  {row['seconds']:9.3f} s  "
            f"{row['gflops']:9.1f} GFLOP/s")
    if "tile" in row:
        line += f"  tile={row['tile']}  device {size(row['device_gib'] * 2**30)}"
    print(line)
    if row["mode"] == "out-of-core":
        print(f"{'':>14}{'pinned staging' if row['pinned'] else 'pageable memory'}: host "
              f"copies {row['host_copy_s']:.2f} s on the host thread")
        print(f"{'':>14}bus: {size(row['up_gb'] * 1e9)} up, {size(row['down_gb'] * 1e9)} down in "
              f"{row['transfer_s']:.2f} s of transfers = {row['bus_gbs']:.1f} GB/s; compute "
              f"{row['compute_s']:.2f} s; overlap {row['overlap_s']:.2f} s = "
              f"{100 * row['hidden']:.0f} % of the transfer time hidden")
    if "backward_error" in row:
        print(f"{'':>14}backward error {row['backward_error']:.2f} (units of nε, passes "
              f"below {accuracy.THRESHOLD:.0f})")
    sys.stdout.flush()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=4096, help="order of the tiled and streamed runs")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    p.add_argument("--device", default=None, help="device index or name substring "
                   "(oclla devices lists them)")
    p.add_argument("--tile", type=int, default=None,
                   help=f"tile of the tiled run (default: oclla.tiled.TILE = {tiled.TILE}, "
                        f"narrowed to a multiple of 16 whose panel fits a buffer)")
    p.add_argument("--stream-tile", default=None,
                   help=f"panel width(s) of the out-of-core runs, comma-separated (default: "
                        f"oclla.out_of_core.TILE = {out_of_core.TILE}, narrowed to fit)")
    p.add_argument("--transfers", default="pinned",
                   help="comma-separated: pinned (page-locked staging), pageable (straight "
                        "from numpy memory); one out-of-core run per width and kind")
    p.add_argument("--reference-n", type=int, default=None,
                   help="order of the one-buffer run (default: n if it fits one buffer, "
                        "else the largest power of two that does)")
    p.add_argument("--modes", default="one-buffer,tiled,out-of-core",
                   help="comma-separated subset of one-buffer, tiled, out-of-core")
    p.add_argument("--check", action="store_true", help="backward errors (n <= 4096)")
    p.add_argument("--lu", action="store_true",
                   help="LU with partial pivoting of a general matrix instead of Cholesky")
    p.add_argument("--json", default=None, help="write the results to this file")
    args = p.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    queue = oclla.get_queue(args.device)
    info = oclla.device_info(queue)
    dtype = np.dtype(args.dtype)
    n = args.n
    check = args.check and n <= 4096
    tile = tiled.choose_tile(queue, n, dtype, args.tile or tiled.TILE)
    stream_tiles = [out_of_core.plan_tile(queue, n, dtype, int(t) if t else None)
                    for t in (args.stream_tile or "").split(",")]
    kinds = [k.strip() for k in args.transfers.split(",") if k.strip()]
    if set(kinds) - {"pinned", "pageable"}:
        p.error(f"--transfers takes pinned and/or pageable, got {args.transfers}")
    one_buffer = n * n * dtype.itemsize <= min(info.max_alloc_size, info.global_mem_size // 2)
    ref_n = args.reference_n or (n if one_buffer else largest_one_buffer_order(queue, dtype))
    print(info.describe())
    print(f"n={n} {dtype.name}: {size(n * n * dtype.itemsize)} "
          f"({'fits' if one_buffer else 'exceeds'} one buffer of "
          f"{size(info.max_alloc_size)}); tile {tile}, stream tiles {stream_tiles}")
    for pinned in (False, True):
        up, down = bus_bandwidth(queue, dtype, pinned)
        print(f"plain copy of 1 GiB ({'pinned' if pinned else 'pageable'}): host-to-device "
              f"{up:.1f} GB/s, device-to-host {down:.1f} GB/s")
    warm_up(queue, dtype, ref_n, tile, stream_tiles, modes, args.lu)
    make, run_one, run_tiles, run_stream = RUNS[args.lu]
    print("LU with partial pivoting (2n³/3 flops)" if args.lu else "Cholesky (n³/3 flops)")
    rows = []
    if "one-buffer" in modes:
        rows.append(run_one(queue, ref_n, dtype, check and ref_n <= 4096))
        report(rows[-1])
    a = make(n, dtype) if {"tiled", "out-of-core"} & set(modes) else None
    if "tiled" in modes:
        rows.append(run_tiles(queue, a, tile, check))
        report(rows[-1])
    if "out-of-core" in modes:
        runs = [(t, k) for t in stream_tiles for k in kinds]
        for i, (stream_tile, kind) in enumerate(runs):
            if i:                       # the previous run factored the matrix in place
                a = make(n, dtype)
            rows.append(run_stream(queue, a, stream_tile, check, kind == "pinned"))
            report(rows[-1])
    by = {r["mode"]: r for r in rows}
    goals = ("", "") if args.lu else (" (goal for float64 n=65536 vs 32768: >= 90%)",
                                      " (goal for float32 n=100000: >= 70%)")
    if "tiled" in by and "one-buffer" in by:
        print(f"tiled n={n} / one buffer n={ref_n}: "
              f"{by['tiled']['gflops'] / by['one-buffer']['gflops']:.0%}{goals[0]}")
    base = by.get("tiled") or by.get("one-buffer")
    for row in rows:
        if row["mode"] == "out-of-core" and base:
            print(f"out-of-core (tile {row['tile']}, "
                  f"{'pinned' if row['pinned'] else 'pageable'}) / {base['mode']} (in core): "
                  f"{row['gflops'] / base['gflops']:.0%}{goals[1]}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(device=info.name, dtype=dtype.name,
                           factorization="lu" if args.lu else "cholesky", rows=rows), fh,
                      indent=1)
    failed = [r for r in rows if "backward_error" in r and not accuracy.passes(r["backward_error"])]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
