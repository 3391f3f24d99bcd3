"""What NVIDIA's PTX assembler costs per program, and what its optimisation level buys.

    python benchmarks/build_cost.py --dtype float32 --levels 3,2,1,0
    python benchmarks/build_cost.py --levels 3 --verbose      # registers and spills

On NVIDIA's OpenCL a build compiles OpenCL C to PTX and then PTX to machine code with
``ptxas``; the second step is most of a build's time (reloading pyopencl's cached PTX
costs nearly as much as a build from source).  ``-cl-nv-opt-level=N``
(cl_nv_compiler_options) is passed on to ``ptxas --opt-level N``.

For each level a fresh child process with empty compiler caches (as
``cold_start.py --cache cold``) adds that option to every program it builds, makes
the first calls of ``cold_start.py``'s routines at ``--first`` orders (the builds a
user waits for), and then times ``lu_factor``, ``cholesky`` and ``rfp.cholesky`` on
device arrays at ``--sizes`` (best of ``--repeat``, the kernels' speed at that
level).  It prints each program's build seconds, the PTX lines of each kernel in it,
and with ``--verbose`` (NVIDIA only) the ptxas report (registers, spills) of the programs that
took longer than ``--slow`` seconds.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cold_start  # noqa: E402

TIMED = ("lu_factor", "cholesky", "rfp.cholesky")


def _with_level(level: int | None):
    """Make every later build of oclla._programs add -cl-nv-opt-level=level."""
    from oclla import _programs
    if level is None:
        return
    build = _programs._build

    def build_at_level(ctx, source, options):
        return build(ctx, source, options + (f"-cl-nv-opt-level={level}",))

    _programs._build = build_at_level


def _plain(options) -> tuple:
    """Build options without the level (as the program cache keys them)."""
    return tuple(o for o in options if not o.startswith("-cl-nv-opt-level"))


def _ptx_entries(prg) -> dict:
    """Kernel name -> lines of its .entry section in the program's PTX."""
    text = prg.binaries[0].decode("latin-1", "replace")
    out, name, count = {}, None, 0
    for line in text.splitlines():
        m = re.match(r"\s*(?:\.visible\s+)?\.entry\s+(\w+)", line)
        if m:
            if name:
                out[name] = count
            name, count = m.group(1), 0
        count += 1
    if name:
        out[name] = count
    return out


def _timed_call(name, n, dtype, queue, rng):
    """A call of routine `name` at order n on device arrays (results stay there)."""
    import numpy as np
    import pyopencl.array as cl_array
    import oclla
    from oclla import rfp
    x = rng.standard_normal((n, n))
    if name == "lu_factor":
        a = cl_array.to_device(queue, x.astype(dtype))
        return lambda: oclla.lu_factor(a)
    spd = (x @ x.T / n + np.eye(n)).astype(dtype)
    if name == "cholesky":
        s = cl_array.to_device(queue, spd)
        return lambda: oclla.cholesky(s)
    arf = cl_array.to_device(queue, rfp.pack(spd))
    return lambda: rfp.cholesky(arf, n)


def child(args) -> None:
    import numpy as np
    import pyopencl as cl
    import oclla
    from oclla import _programs
    _with_level(args.level)
    dtype = np.dtype(args.dtype)
    queue = oclla.get_queue()
    print(json.dumps({"device": queue.device.name.strip(), "level": args.level,
                      "driver": queue.device.driver_version}), flush=True)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for n in args.first:
        calls = cold_start._calls(n, dtype, rng)
        for name in cold_start.ROUTINES:
            calls[name]()
    queue.finish()
    first_wall = time.perf_counter() - t0
    programs = {(source, options): prg for (_, source, options), prg
                in _programs._programs.items()}
    builds = []
    for b in _programs.builds():
        prg = programs.get((b.source, _plain(b.options)))
        entries = _ptx_entries(prg) if prg is not None else {}
        builds.append((b.source, " ".join(o for o in b.options if o != "-cl-std=CL1.2"),
                       b.seconds, entries))
    print(json.dumps({"first_wall": first_wall, "builds": builds}), flush=True)
    times = {}
    for n in args.sizes:
        for name in TIMED:
            call = _timed_call(name, n, dtype, queue, rng)
            call()
            queue.finish()
            best = float("inf")
            for _ in range(args.repeat):
                t = time.perf_counter()
                call()
                queue.finish()
                best = min(best, time.perf_counter() - t)
            times[f"{name} {n}"] = best
    print(json.dumps({"times": times}), flush=True)
    if args.verbose and "cl_nv_compiler_options" in queue.device.extensions:
        for (_, source, options), prg in list(_programs._programs.items()):
            seconds = max((b.seconds for b in _programs.builds()
                           if b.source == source and _plain(b.options) == options), default=0)
            if seconds < args.slow:
                continue
            extra = [o for o in options if "-cl-nv-opt-level" not in o]
            text = cl.Program(queue.context, oclla.kernels_cl.read_source(source))
            t = time.perf_counter()
            built = text.build(options=extra + ["-cl-nv-verbose"])
            log = built.get_build_info(queue.device, cl.program_build_info.LOG)
            keep = [line.strip() for line in log.splitlines()
                    if re.search(r"registers|spill|Compiling entry|bytes stack", line)]
            print(json.dumps({"verbose": source, "options": " ".join(extra[1:]),
                              "seconds": time.perf_counter() - t, "log": keep}), flush=True)


def programs_mode(path: str) -> None:
    """Build each program listed in `path` (lines "source -DNAME=V ...", a leading "v "
    for ptxas's report too) from source, then again from the binary the first build
    gave (on NVIDIA: PTX, so the second build is ptxas alone), and print both times,
    each kernel's PTX lines and, where asked, ptxas's registers and spills."""
    import pyopencl as cl
    import oclla
    queue = oclla.get_queue()
    ctx, dev = queue.context, queue.device
    print(f"# {dev.name.strip()}, driver {dev.driver_version}")
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        verbose = line.startswith("v ")
        source, *options = line.split()[1:] if verbose else line.split()
        options = ["-cl-std=CL1.2"] + options
        text = oclla.kernels_cl.read_source(source)
        t = time.perf_counter()
        prg = cl.Program(ctx, text).build(options=options)
        from_source = time.perf_counter() - t
        binary = prg.binaries[0]
        t = time.perf_counter()
        cl.Program(ctx, [dev], [binary]).build(options=options)
        from_binary = time.perf_counter() - t
        entries = _ptx_entries(prg)
        print(f"{from_source:6.2f} s source {from_binary:6.2f} s binary  {source} "
              f"{' '.join(options[1:])}\n        PTX lines: "
              + ", ".join(f"{k} {v}" for k, v in entries.items()), flush=True)
        if verbose and "cl_nv_compiler_options" in dev.extensions:
            log = cl.Program(ctx, text).build(options=options + ["-cl-nv-verbose"]) \
                .get_build_info(dev, cl.program_build_info.LOG)
            for row in log.splitlines():
                if re.search(r"registers|spill|Compiling entry|bytes stack", row):
                    print(f"        {row.strip()}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--levels", default="3,2,1,0",
                        help="ptxas levels (comma list; 'none' adds no option)")
    parser.add_argument("--first", default="100,2048,2049")
    parser.add_argument("--sizes", default="1024,2048,4096,8192")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--slow", type=float, default=0.3)
    parser.add_argument("--programs", metavar="FILE",
                        help="build the programs listed in FILE instead (see programs_mode)")
    parser.add_argument("--level", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.first = [int(s) for s in args.first.split(",")]
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.programs:
        programs_mode(args.programs)
        return 0
    if args.child:
        args.level = None if args.level in (None, "none") else int(args.level)
        child(args)
        return 0
    results = {}
    for level in args.levels.split(","):
        command = [sys.executable, os.path.abspath(__file__), "--child", "--level", level,
                   "--dtype", args.dtype, "--first", ",".join(map(str, args.first)),
                   "--sizes", ",".join(map(str, args.sizes)), "--repeat", str(args.repeat),
                   "--slow", str(args.slow)] + (["--verbose"] if args.verbose else [])
        with tempfile.TemporaryDirectory(prefix="oclla-cold-") as empty:
            env = dict(os.environ, XDG_CACHE_HOME=empty, CUDA_CACHE_PATH=empty,
                       CUDA_CACHE_DISABLE="1", POCL_CACHE_DIR=empty)
            out = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True)
        rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        results[level] = {k: v for r in rows for k, v in r.items() if k != "verbose"}
        for r in rows:
            if "verbose" in r:
                print(f"ptxas -v  {r['verbose']} {r['options']}  ({r['seconds']:.2f} s)")
                for line in r["log"]:
                    print(f"    {line}")
        if out.returncode:
            print(f"level {level}: child failed ({out.returncode})")
    for level, r in results.items():
        if "builds" not in r:
            continue
        total = sum(b[2] for b in r["builds"])
        print(f"\n## level {level}: {r.get('device')} driver {r.get('driver')}, {args.dtype}: "
              f"first calls {r['first_wall']:.2f} s, {len(r['builds'])} programs, "
              f"{total:.2f} s of builds")
        for source, options, seconds, entries in sorted(r["builds"], key=lambda b: -b[2]):
            sizes = ", ".join(f"{k} {v}" for k, v in entries.items())
            print(f"  {seconds:6.2f} s  {source:<14} {sizes}\n           {options}")
    names = [k for r in results.values() for k in r.get("times", {})]
    names = list(dict.fromkeys(names))
    print(f"\n## ms, best of {args.repeat} (device arrays)\n{'call':<22}"
          + "".join(f"{'level ' + lv:>12}" for lv in results))
    for name in names:
        print(f"{name:<22}" + "".join(f"{1e3 * r.get('times', {}).get(name, float('nan')):>12.2f}"
                                      for r in results.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
