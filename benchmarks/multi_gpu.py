"""Tiled Cholesky on one GPU and on two (oclla.multi_device), one command.

    python benchmarks/multi_gpu.py --n 65536 --dtype float32
    python benchmarks/multi_gpu.py --n 2000 --tile 256 --device pthread --same-device --check

The devices are the GPUs of one platform (the first whose devices match
--device, default "NVIDIA"), in one context.  Three timed factorizations of
the same SPD matrix of order n (A = L·Lᵀ), each after a warm-up of order
3·tile + 7 that builds the kernels:

``tiled``         :func:`oclla.tiled.factor_tiles` on the first device (the
                  one-device left-looking code, for reference);
``1 device``      :func:`oclla.multi_device.factor_multi` with one queue;
``N devices``     the same with a queue on each of the first --devices devices
                  (panels round-robin by tile column).

Only the factorization is timed (the panels are uploaded before, read back
after).  GFLOP/s count n³/3 + n²/2 + n/6; the ratio of the last two is the
speed-up (the issue's goal: two H100s ≥ 1.8x one at n = 65536 float32).
``--lu`` also times the LU with partial pivoting (oclla.multi_device_lu) on one
and on N devices (the same matrix, read whole; 2n³/3 flops).
``--same-device`` puts every queue on the first device (a check of the
schedule where only one GPU exists; no speed-up expected).  ``--check``
measures the backward error (n ≤ 4096); ``--json PATH`` writes the rows.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import oclla                                                    # noqa: E402
from oclla import accuracy, multi_device, multi_device_lu, tiled  # noqa: E402
from oclla.cholesky import cholesky_flops                       # noqa: E402
from out_of_core import make_spd, symmetric                     # noqa: E402


def platform_devices(match: str) -> list:
    """The devices of the first platform that has devices whose name, vendor or
    platform name contains ``match`` (case-insensitive), those devices only."""
    key = match.lower()
    for platform in cl.get_platforms():
        found = [d for d in platform.get_devices()
                 if key in f"{platform.name} {d.name} {d.vendor}".lower()]
        if found:
            return found
    raise SystemExit(f"no OpenCL device matches {match!r}")


def timed_multi(a: np.ndarray, queues, tile: int, check: bool) -> dict:
    mt = multi_device.MultiTiles.from_numpy(a, queues=queues, tile=tile, check_finite=False)
    start = time.perf_counter()
    mt.factor()
    seconds = time.perf_counter() - start
    n = a.shape[0]
    row = dict(mode=f"{len(queues)} device{'s' if len(queues) > 1 else ''}", n=n, tile=tile,
               devices=len(queues), seconds=seconds, gflops=cholesky_flops(n) / seconds / 1e9)
    if check:
        row["backward_error"] = accuracy.cholesky_backward_error(symmetric(a), mt.to_numpy(),
                                                                 True)
    mt.release()
    return row


def timed_lu(a: np.ndarray, queues, tile: int, check: bool) -> dict:
    mt = multi_device.MultiTiles.from_numpy(a, queues=queues, tile=tile, check_finite=False,
                                            full=True)
    start = time.perf_counter()
    piv, _ = multi_device_lu.factor_lu_multi(mt)
    seconds = time.perf_counter() - start
    n = a.shape[0]
    row = dict(mode=f"LU {len(queues)} dev", n=n, tile=tile, devices=len(queues),
               seconds=seconds, gflops=2 * n ** 3 / 3 / seconds / 1e9)
    if check:
        row["backward_error"] = accuracy.lu_backward_error(a, mt.to_numpy(), piv)
    mt.release()
    return row


def timed_tiled(a: np.ndarray, queue, tile: int, check: bool) -> dict:
    tm = tiled.TiledMatrix.from_numpy(a, tile=tile, triangle="lower", queue=queue,
                                      check_finite=False)
    start = time.perf_counter()
    tiled.factor_tiles(tm, lower=True)
    seconds = time.perf_counter() - start
    n = a.shape[0]
    row = dict(mode="tiled", n=n, tile=tile, devices=1, seconds=seconds,
               gflops=cholesky_flops(n) / seconds / 1e9)
    if check:
        row["backward_error"] = accuracy.cholesky_backward_error(symmetric(a), tm.to_numpy(),
                                                                 True)
    tm.release()
    return row


def report(row: dict) -> None:
    line = (f"{row['mode']:>10}  n={row['n']:>6}  tile={row['tile']}  {row['seconds']:8.3f} s  "
            f"{row['gflops']:10.1f} GFLOP/s")
    if "backward_error" in row:
        line += f"  backward error {row['backward_error']:.2f}"
    print(line)
    sys.stdout.flush()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--tile", type=int, default=tiled.TILE)
    p.add_argument("--device", default="NVIDIA",
                   help="substring of the platform or device names (default NVIDIA)")
    p.add_argument("--devices", type=int, default=2, help="devices of the N-device run")
    p.add_argument("--same-device", action="store_true",
                   help="every queue on the first device (a check where one GPU exists)")
    p.add_argument("--modes", default="tiled,one,many",
                   help="comma-separated subset of tiled, one, many")
    p.add_argument("--lu", action="store_true", help="also the LU on one and on N devices")
    p.add_argument("--check", action="store_true", help="backward errors (n <= 4096)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    modes = {m.strip() for m in args.modes.split(",")}
    dtype = np.dtype(args.dtype)
    found = platform_devices(args.device)
    chosen = [found[0]] * args.devices if args.same_device else found[:args.devices]
    queues = multi_device.context_queues(chosen)
    for q in queues:
        print(oclla.device_info(q).describe())
    if len(chosen) < args.devices:
        print(f"only {len(chosen)} device(s) match {args.device!r}: the N-device run uses "
              f"{len(chosen)}")
    n, tile = args.n, min(args.tile, args.n)
    check = args.check and n <= 4096
    print(f"n={n} {dtype.name}: {n * n * dtype.itemsize / 2**30:.1f} GiB, tile {tile}, "
          f"{-(-n // tile)} panels")
    began = time.perf_counter()
    small = make_spd(3 * tile + 7, dtype)
    if "tiled" in modes:
        timed_tiled(small, queues[0], tile, False)
    if "one" in modes:
        timed_multi(small, queues[:1], tile, False)
    if "many" in modes:
        timed_multi(small, queues, tile, False)
    if args.lu:
        for qs in (queues[:1], queues):
            timed_lu(small, qs, tile, False)
    print(f"warm-up (kernel builds) {time.perf_counter() - began:.1f} s")
    began = time.perf_counter()
    a = make_spd(n, dtype)
    print(f"matrix made on the host in {time.perf_counter() - began:.1f} s")
    sys.stdout.flush()
    rows = []
    if "tiled" in modes:
        rows.append(timed_tiled(a, queues[0], tile, check))
        report(rows[-1])
    if "one" in modes:
        rows.append(timed_multi(a, queues[:1], tile, check))
        report(rows[-1])
    if "many" in modes:
        rows.append(timed_multi(a, queues, tile, check))
        report(rows[-1])
    if args.lu:
        for qs in (queues[:1], queues):
            rows.append(timed_lu(a, qs, tile, check))
            report(rows[-1])
    by = {r["mode"]: r for r in rows}
    for kind, one_name in (("Cholesky", "1 device"), ("LU", "LU 1 dev")):
        one = by.get(one_name)
        many = next((r for r in rows if r["devices"] > 1
                     and r["mode"].startswith("LU") == (kind == "LU")), None)
        if one and many:
            print(f"{kind}: {many['mode']} / {one['mode']}: {many['gflops'] / one['gflops']:.2f}x"
                  f" (goal for two H100s, Cholesky n=65536 float32: >= 1.8x)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(devices=[oclla.device_info(q).name for q in queues],
                           dtype=dtype.name, rows=rows), fh, indent=1)
    failed = [r for r in rows
              if "backward_error" in r and not accuracy.passes(r["backward_error"])]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
