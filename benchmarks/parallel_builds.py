"""Do program builds from several threads overlap?  Wall time of N builds from T threads.

    python benchmarks/parallel_builds.py LISTING [--threads 1,2,4,8] [--device NVIDIA]
    python benchmarks/parallel_builds.py LISTING --processes 4,8

LISTING: the program lines of ``benchmarks/cold_start.py --list`` (``<seconds> s
<source> <options>``; other lines are skipped).  For each thread count T a fresh
child process with empty compiler caches (as ``cold_start.py --cache cold``) builds
every listed program once from T threads (raw pyopencl, one ``cl.Program.build`` per
program) and prints the wall time and the sum of the builds' own seconds: builds that
run concurrently give a wall time near the slowest build, serialised ones near the sum.
``--processes P``: P child processes (one thread each) share one empty pyopencl cache,
each building every P-th program; then one more process builds them all again (from
that cache: pyopencl loads the binaries); both wall times are printed.  (pyopencl
keeps no binaries for NVIDIA's devices: it leaves caching to the driver, so on NVIDIA
that second process compiles from source again.)
``--ptx P``: P children build every P-th program from source and write each binary
(NVIDIA's: PTX) to a folder; then one process builds every program from those
binaries, from 1 and from 4 threads (on NVIDIA: the PTX assembler alone).
``--compute-cache``: two processes, one after the other, build every program from
source with NVIDIA's own compiler cache on (an empty ``CUDA_CACHE_PATH``): what the
driver's cache gives a second process.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

LINE = re.compile(r"^\s*[0-9.]+ s\s+(\S+\.cl)\s+(.*\S)\s*$")


def programs(path: str) -> list:
    """(source, options) of each program line of a cold_start.py listing, once each."""
    seen = []
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m and (m.group(1), m.group(2)) not in seen:
                seen.append((m.group(1), m.group(2)))
    return seen


def child(args) -> None:
    import pyopencl as cl
    from oclla import get_queue, kernels_cl
    queue = get_queue(args.device)
    listing = programs(args.listing)[args.part::args.parts]

    index = {item: i for i, item in enumerate(programs(args.listing))}
    ctx, dev = queue.context, queue.device

    def build(item):
        source, options = item
        text = kernels_cl.read_source(source)
        path = os.path.join(args.binaries or "", f"{index[item]:03d}.bin")
        t = time.perf_counter()
        try:
            if args.load:
                with open(path, "rb") as f:
                    prg = cl.Program(ctx, [dev], [f.read()]).build(options=options.split())
            else:
                prg = cl.Program(ctx, text).build(options=options.split())
            ok = True
        except Exception:          # a stale listing's options: reported, not fatal
            ok = False
        seconds = time.perf_counter() - t
        if ok and args.binaries and not args.load:
            with open(path, "wb") as f:
                f.write(prg.binaries[0])
        return seconds, ok

    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.threads) as pool:
        done = list(pool.map(build, listing))
    wall = time.perf_counter() - t0
    print(json.dumps({"device": queue.device.name.strip(), "threads": args.threads,
                      "programs": len(listing), "failed": sum(not ok for _, ok in done),
                      "wall_s": wall, "sum_s": sum(s for s, _ in done),
                      "max_s": max(s for s, _ in done)}), flush=True)


def _processes(args, count: int) -> None:
    """count children building every count-th program into one cold cache, then one
    process loading them all from it."""
    with tempfile.TemporaryDirectory(prefix="oclla-par-") as empty:
        env = dict(os.environ, XDG_CACHE_HOME=empty, CUDA_CACHE_PATH=empty,
                   CUDA_CACHE_DISABLE="1", POCL_CACHE_DIR=empty)
        base = [sys.executable, os.path.abspath(__file__), args.listing, "--child",
                "--threads", "1"] + (["--device", args.device] if args.device else [])
        t0 = time.perf_counter()
        children = [subprocess.Popen(base + ["--part", str(i), "--parts", str(count)], env=env,
                                     stdout=subprocess.PIPE, text=True)
                    for i in range(count)]
        sums = [json.loads(c.communicate()[0].strip().splitlines()[-1]) for c in children]
        wall = time.perf_counter() - t0
        t1 = time.perf_counter()
        again = subprocess.run(base, env=env, capture_output=True, text=True).stdout.strip()
        print(json.dumps({"processes": count, "wall_s": wall,
                          "sum_s": sum(r["sum_s"] for r in sums),
                          "max_part_s": max(r["wall_s"] for r in sums),
                          "failed": sum(r["failed"] for r in sums),
                          "reload_wall_s": time.perf_counter() - t1,
                          "reload": json.loads(again.splitlines()[-1])}), flush=True)


def _ptx(args, count: int) -> None:
    """count children building every count-th program from source and keeping its
    binary, then one process building them all from the binaries (1 and 4 threads)."""
    with tempfile.TemporaryDirectory(prefix="oclla-par-") as empty:
        env = dict(os.environ, XDG_CACHE_HOME=empty, CUDA_CACHE_PATH=empty,
                   CUDA_CACHE_DISABLE="1", POCL_CACHE_DIR=empty)
        folder = os.path.join(empty, "binaries")
        os.makedirs(folder)
        base = [sys.executable, os.path.abspath(__file__), args.listing, "--child",
                "--binaries", folder] + (["--device", args.device] if args.device else [])
        t0 = time.perf_counter()
        children = [subprocess.Popen(base + ["--threads", "1", "--part", str(i), "--parts",
                                             str(count)], env=env, stdout=subprocess.PIPE,
                                     text=True) for i in range(count)]
        parts = [json.loads(c.communicate()[0].strip().splitlines()[-1]) for c in children]
        wall = time.perf_counter() - t0
        loads = {}
        for threads in (1, 4):
            out = subprocess.run(base + ["--load", "--threads", str(threads)], env=env,
                                 capture_output=True, text=True).stdout.strip()
            loads[threads] = json.loads(out.splitlines()[-1])
        print(json.dumps({"ptx_processes": count, "wall_s": wall,
                          "max_part_s": max(r["wall_s"] for r in parts),
                          "sum_s": sum(r["sum_s"] for r in parts),
                          "failed": sum(r["failed"] for r in parts),
                          "load_1_thread": loads[1], "load_4_threads": loads[4]}), flush=True)


def _compute_cache(args) -> None:
    """Two processes, one after the other, building every program from source with
    NVIDIA's compiler cache on in an empty folder."""
    with tempfile.TemporaryDirectory(prefix="oclla-par-") as empty:
        env = dict(os.environ, XDG_CACHE_HOME=empty, CUDA_CACHE_PATH=empty,
                   POCL_CACHE_DIR=empty)
        env.pop("CUDA_CACHE_DISABLE", None)
        base = [sys.executable, os.path.abspath(__file__), args.listing, "--child",
                "--threads", "1"] + (["--device", args.device] if args.device else [])
        for run in ("first", "second"):
            out = subprocess.run(base, env=env, capture_output=True, text=True).stdout.strip()
            print(json.dumps({"compute_cache": run, **json.loads(out.splitlines()[-1])}),
                  flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("listing")
    parser.add_argument("--threads", default="1,2,4,8")
    parser.add_argument("--device", default=None)
    parser.add_argument("--processes", default=None)
    parser.add_argument("--ptx", default=None)
    parser.add_argument("--compute-cache", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--binaries", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--part", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--parts", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.threads = int(args.threads)
        child(args)
        return 0
    if args.ptx or args.compute_cache:
        for count in map(int, (args.ptx or "").split(",") if args.ptx else ()):
            _ptx(args, count)
        if args.compute_cache:
            _compute_cache(args)
        return 0
    if args.processes:
        for count in map(int, args.processes.split(",")):
            _processes(args, count)
        return 0
    for threads in args.threads.split(","):
        with tempfile.TemporaryDirectory(prefix="oclla-par-") as empty:
            env = dict(os.environ, XDG_CACHE_HOME=empty, CUDA_CACHE_PATH=empty,
                       CUDA_CACHE_DISABLE="1", POCL_CACHE_DIR=empty)
            command = [sys.executable, os.path.abspath(__file__), args.listing, "--child",
                       "--threads", threads] + (["--device", args.device] if args.device
                                                else [])
            out = subprocess.run(command, env=env, capture_output=True, text=True)
            print(out.stdout.strip() or out.stderr[-2000:], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
