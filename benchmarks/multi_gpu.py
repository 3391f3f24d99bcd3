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
schedule where only one GPU exists; no speed-up expected); ``--split``
partitions the first device into --devices equal sub-devices (PoCL's CPU:
the schedule's idle time measured without a GPU, ``--device pthread --split
--trace /tmp/t``).  ``--check``
measures the backward error (n ≤ 4096); ``--json PATH`` writes the rows.

``--trace PREFIX`` records the timed one- and N-device runs (oclla.record;
the times reported are those of the recorded runs) and writes each as a
Chrome trace, PREFIX-<mode>.json (chrome://tracing, ui.perfetto.dev: a lane
per device for its kernels, one per device for its relay copies), then
prints where the time went: per device the share of the wall time its
kernels kept it busy, its idle time in each third of the run, and the time
its copy queue spent downloading and uploading relayed panels; for the run,
how long the host took to enqueue everything (near the wall time: the host,
not the devices, sets the pace).
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
from oclla.trace import HOST                                    # noqa: E402
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


def union_ns(spans) -> int:
    """Length of the union of (start, end) intervals (ns)."""
    total, reach = 0, None
    for lo, hi in sorted(spans):
        if reach is None or lo > reach:
            total, reach = total + hi - lo, hi
        elif hi > reach:
            total, reach = total + hi - reach, hi
    return total


def idle_thirds(spans, t0: int, t1: int) -> list:
    """Idle ns of a lane in each third of [t0, t1] (spans: its busy intervals)."""
    cuts = [t0 + (t1 - t0) * i // 3 for i in range(4)]
    return [(b - a) - union_ns([(max(lo, a), min(hi, b)) for lo, hi in spans
                                if hi > a and lo < b]) for a, b in zip(cuts, cuts[1:])]


def where_time_went(rec, seconds: float, path: str) -> dict:
    """Write ``rec``'s run as a Chrome trace (relay copies on lanes of their own)
    and return / print each device's busy share, idle thirds and relay times."""
    doc = rec.to_chrome_trace()
    events = doc["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M"
             and e["name"] == "thread_name"}
    copy_tids = {}
    for e in events:
        if e["ph"] == "X" and e["name"].startswith("relay"):
            key = (e["pid"], e["tid"])
            if key not in copy_tids:
                copy_tids[key] = 1000 + len(copy_tids)
                events.append({"name": "thread_name", "ph": "M", "pid": e["pid"],
                               "tid": copy_tids[key], "args": {"name": f"{names[key]} copies"}})
            e["tid"] = copy_tids[key]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    run = rec.runs[-1]
    records = [k for k in run.kernels if k.device != HOST]
    lanes = sorted({k.device for k in records})
    t0 = min(k.start for k in records)
    t1 = max(k.end for k in records)
    summary = dict(trace=path, host_enqueue_s=(max(k.queued for k in records)
                                               - min(k.queued for k in records)) / 1e9,
                   devices={})
    for lane in lanes:
        mine = [k for k in records if k.device == lane]
        work = [(k.start, k.end) for k in mine if not k.name.startswith("relay")]
        down = union_ns([(k.start, k.end) for k in mine if k.name == "relay down"])
        up = union_ns([(k.start, k.end) for k in mine if k.name == "relay up"])
        busy = union_ns(work)
        idle = idle_thirds(work, t0, t1)
        summary["devices"][lane] = dict(busy_s=busy / 1e9, busy_share=busy / 1e9 / seconds,
                                        idle_thirds_s=[i / 1e9 for i in idle],
                                        relay_down_s=down / 1e9, relay_up_s=up / 1e9,
                                        kernels=len(work))
        print(f"    {lane}: busy {busy / 1e9:.3f} s = {busy / 1e9 / seconds:.0%} of the wall "
              f"time, idle by thirds {' / '.join(f'{i / 1e9:.3f}' for i in idle)} s, relay "
              f"down {down / 1e9:.3f} s, up {up / 1e9:.3f} s ({len(work)} kernels)")
    print(f"    host enqueued for {summary['host_enqueue_s']:.3f} s of {seconds:.3f} s; "
          f"device span {(t1 - t0) / 1e9:.3f} s; Chrome trace {path}")
    sys.stdout.flush()
    return summary


def recorded(trace_to: str | None, mode: str, work) -> tuple:
    """Run and time ``work()``, inside oclla.record() when ``trace_to`` is a prefix;
    returns (seconds, summary or None)."""
    if not trace_to:
        start = time.perf_counter()
        work()
        return time.perf_counter() - start, None
    with oclla.record() as rec:
        start = time.perf_counter()
        work()
        seconds = time.perf_counter() - start
    return seconds, (rec, f"{trace_to}-{mode.replace(' ', '')}.json")


def timed_multi(a: np.ndarray, queues, tile: int, check: bool, trace_to=None) -> dict:
    mt = multi_device.MultiTiles.from_numpy(a, queues=queues, tile=tile, check_finite=False)
    mode = f"{len(queues)} device{'s' if len(queues) > 1 else ''}"
    seconds, traced = recorded(trace_to, mode, mt.factor)
    n = a.shape[0]
    row = dict(mode=mode, n=n, tile=tile,
               devices=len(queues), seconds=seconds, gflops=cholesky_flops(n) / seconds / 1e9)
    if traced:
        row["traced"] = traced
    if check:
        row["backward_error"] = accuracy.cholesky_backward_error(symmetric(a), mt.to_numpy(),
                                                                 True)
    mt.release()
    return row


def timed_lu(a: np.ndarray, queues, tile: int, check: bool, trace_to=None) -> dict:
    mt = multi_device.MultiTiles.from_numpy(a, queues=queues, tile=tile, check_finite=False,
                                            full=True)
    result = []
    mode = f"LU {len(queues)} dev"
    seconds, traced = recorded(trace_to, mode,
                               lambda: result.append(multi_device_lu.factor_lu_multi(mt)))
    piv, _ = result[0]
    n = a.shape[0]
    row = dict(mode=mode, n=n, tile=tile, devices=len(queues),
               seconds=seconds, gflops=2 * n ** 3 / 3 / seconds / 1e9)
    if traced:
        row["traced"] = traced
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
    if "traced" in row:
        rec, path = row.pop("traced")
        row["where"] = where_time_went(rec, row["seconds"], path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--tile", type=int, default=tiled.TILE)
    p.add_argument("--device", default="NVIDIA",
                   help="substring of the platform or device names (default NVIDIA)")
    p.add_argument("--devices", type=int, default=2, help="devices of the N-device run")
    p.add_argument("--split", action="store_true",
                   help="--devices equal sub-devices of the first device (PoCL's CPU)")
    p.add_argument("--same-device", action="store_true",
                   help="every queue on the first device (a check where one GPU exists)")
    p.add_argument("--modes", default="tiled,one,many",
                   help="comma-separated subset of tiled, one, many")
    p.add_argument("--lu", action="store_true", help="also the LU on one and on N devices")
    p.add_argument("--check", action="store_true", help="backward errors (n <= 4096)")
    p.add_argument("--json", default=None)
    p.add_argument("--trace", default=None, metavar="PREFIX",
                   help="record the timed one- and N-device runs: Chrome traces "
                        "PREFIX-<mode>.json and each device's busy share and relay time")
    p.add_argument("--chunks", type=int, default=multi_device.CHUNKS,
                   help="most row chunks a relayed panel moves in (default %(default)s)")
    args = p.parse_args(argv)
    modes = {m.strip() for m in args.modes.split(",")}
    multi_device.CHUNKS = max(1, args.chunks)
    dtype = np.dtype(args.dtype)
    found = platform_devices(args.device)
    chosen = [found[0]] * args.devices if args.same_device else found[:args.devices]
    if args.split:
        units = found[0].max_compute_units // args.devices
        if units < 1:
            raise SystemExit(f"{found[0].name} has fewer than {args.devices} compute units")
        chosen = found[0].create_sub_devices(
            [cl.device_partition_property.EQUALLY, units])[:args.devices]
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
        rows.append(timed_multi(a, queues[:1], tile, check, args.trace))
        report(rows[-1])
    if "many" in modes:
        rows.append(timed_multi(a, queues, tile, check, args.trace))
        report(rows[-1])
    if args.lu:
        for qs in (queues[:1], queues):
            rows.append(timed_lu(a, qs, tile, check, args.trace))
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
