"""What a first call costs: program builds per routine and order, cold and warm caches.

    python benchmarks/cold_start.py                          # float64, the default device
    python benchmarks/cold_start.py --dtype float32 --sizes 100,101,300
    python benchmarks/cold_start.py --cache warm             # the driver's cache as it is
    python benchmarks/cold_start.py --warmup                 # oclla.warmup() first
    python benchmarks/cold_start.py --list --binaries DIR    # every program, its binary

Each run happens in a fresh child process.  ``--cache cold`` (the default) points
the compiler caches at an empty directory first (pyopencl's: ``XDG_CACHE_HOME``;
NVIDIA's: ``CUDA_CACHE_PATH`` and ``CUDA_CACHE_DISABLE``; PoCL's: ``POCL_CACHE_DIR``),
so every program is compiled from source.  For each order n and routine the child
times a first call and a second call (host arrays in and out, so each call ends
with its results on the host), and counts the programs the first call built and the
seconds those builds took (:func:`oclla._programs.builds`); builds while an order's
operands are prepared (the packed copy; on a device without stored parameters, the
parameter self-checks of a first use) get a line of their own.  The table ends with the
process's totals; ``--list`` also prints every program built (source and options, and
whether it was built from the binary the package ships for the device, ``binary``, or
compiled, ``source``: :mod:`oclla._prebuilt`; ``OCLLA_PREBUILT=0`` in the environment,
which the child inherits, compiles every one),
``--binaries DIR`` writes each one's device binary there (NVIDIA's is PTX: its
``.entry`` sections show which kernel of a program is large).

Routines: ``lu_factor``, ``lu_solve``, ``cholesky``, ``cho_solve``, ``rfp.cholesky``
and ``assemble_ad2at`` (A of shape n x 2n).  A new order should build nothing: its
"built" column 0 and its first call within a few milliseconds of its second.  Before the
process totals comes the first calls' wall time: the sum of every first call's time and
of the time the operands' builds took.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SIZES = (100, 101, 102, 300, 301, 2048, 2049, 4096)
ROUTINES = ("lu_factor", "lu_solve", "cholesky", "cho_solve", "rfp.cholesky",
            "assemble_ad2at")


def _operands(n: int, dtype, rng):
    import numpy as np
    x = rng.standard_normal((n, n))
    a = x.astype(dtype)
    spd = (x @ x.T / n + np.eye(n)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    wide = rng.standard_normal((n, 2 * n)).astype(dtype)
    d2 = rng.uniform(0.5, 2.0, 2 * n).astype(dtype)
    return a, spd, b, wide, d2


def _calls(n: int, dtype, rng) -> dict:
    """Routine name -> a call of it at order n.  The solves use the factors that the
    factorizations' calls returned (so they come after them); the packed matrix is made
    here, beforehand."""
    import oclla
    from oclla import rfp
    a, spd, b, wide, d2 = _operands(n, dtype, rng)
    arf = rfp.pack(spd)
    out = {}

    def keep(name, value):
        out[name] = value
        return value

    return {"lu_factor": lambda: keep("lu", oclla.lu_factor(a)),
            "lu_solve": lambda: oclla.lu_solve(out.get("lu") or oclla.lu_factor(a), b),
            "cholesky": lambda: keep("c", oclla.cholesky(spd)),
            "cho_solve": lambda: oclla.cho_solve(
                (out["c"] if "c" in out else oclla.cholesky(spd), False), b),
            "rfp.cholesky": lambda: rfp.cholesky(arf, n),
            "assemble_ad2at": lambda: oclla.assemble_ad2at(wide, d2)}


def child(args) -> None:
    """Measure in this process; print one JSON object per line."""
    import numpy as np
    import oclla
    from oclla import _programs
    dtype = np.dtype(args.dtype)
    queue = oclla.get_queue(args.device)
    print(json.dumps({"device": queue.device.name.strip(),
                      "platform": queue.device.platform.name.strip()}), flush=True)
    if args.warmup:
        t = time.perf_counter()
        oclla.warmup(dtype=dtype, queue=queue)
        print(json.dumps({"warmup": time.perf_counter() - t,
                          "built": _programs.build_count(),
                          "build_s": _programs.build_seconds()}), flush=True)
    rng = np.random.default_rng(0)
    for n in args.sizes:
        # the operands' own preparation (a factor to solve with, a packed copy) may
        # build programs: those are counted apart, before the timed calls
        before, before_s = _programs.build_count(), _programs.build_seconds()
        t = time.perf_counter()
        calls = _calls(n, dtype, rng)
        setup = _programs.build_count() - before
        if setup:
            print(json.dumps({"n": n, "setup_built": setup,
                              "setup_s": _programs.build_seconds() - before_s,
                              "setup_ms": 1e3 * (time.perf_counter() - t)}), flush=True)
        for name in args.routines:
            first_builds, first_seconds = _programs.build_count(), _programs.build_seconds()
            t0 = time.perf_counter()
            calls[name]()
            t1 = time.perf_counter()
            calls[name]()
            t2 = time.perf_counter()
            print(json.dumps({"n": n, "routine": name, "first_ms": 1e3 * (t1 - t0),
                              "second_ms": 1e3 * (t2 - t1),
                              "built": _programs.build_count() - first_builds,
                              "build_s": _programs.build_seconds() - first_seconds}),
                  flush=True)
    if args.binaries:
        _write_binaries(args.binaries)
    print(json.dumps({"total_built": _programs.build_count(),
                      "total_build_s": _programs.build_seconds(),
                      "builds": [(b.source, " ".join(b.options), b.seconds, b.prebuilt)
                                 for b in _programs.builds()]}), flush=True)


def _write_binaries(folder: str) -> None:
    """Each program's device binary to folder/<index>-<source>.bin (index: its place in
    :func:`oclla._programs.builds`), and index.txt: index, seconds, source, options."""
    from oclla import _programs
    os.makedirs(folder, exist_ok=True)
    programs = {(source, options): prg for (_, source, options), prg
                in _programs.programs().items()}
    with open(os.path.join(folder, "index.txt"), "w") as index:
        for i, b in enumerate(_programs.builds()):
            prg = programs.get((b.source, b.options))
            if prg is None:
                continue
            for d, binary in enumerate(prg.binaries):
                name = f"{i:03d}-{b.source}{'' if d == 0 else f'-{d}'}.bin"
                with open(os.path.join(folder, name), "wb") as out:
                    out.write(binary)
            index.write(f"{i:03d} {b.seconds:8.3f} {b.source} {' '.join(b.options)}\n")


HEADER = (f"{'n':>6} {'routine':<15} {'first ms':>10} {'second ms':>10} {'built':>6} "
          f"{'build s':>8} {'beyond run ms':>14}")


def row_text(r: dict, listing: bool) -> str:
    """The table's lines for one JSON object of the child's."""
    if "device" in r:
        return f"device: {r['device']} ({r['platform']})\n{HEADER}"
    if "warmup" in r:
        return (f"warmup: {r['warmup']:.2f} s, {r['built']} programs built in "
                f"{r['build_s']:.2f} s")
    if "setup_built" in r:
        return (f"{r['n']:>6} {'(operands)':<15} {r['setup_ms']:>10.1f} {'':>10} "
                f"{r['setup_built']:>6} {r['setup_s']:>8.2f}"
                "   (building the operands: pack, a device's first parameter self-checks)")
    if "routine" in r:
        return (f"{r['n']:>6} {r['routine']:<15} {r['first_ms']:>10.1f} "
                f"{r['second_ms']:>10.1f} {r['built']:>6} {r['build_s']:>8.2f} "
                f"{r['first_ms'] - r['second_ms']:>14.1f}")
    prebuilt = sum(b[3] for b in r["builds"])
    text = (f"process total: {r['total_built']} programs built in "
            f"{r['total_build_s']:.2f} s, {prebuilt} of them from shipped binaries")
    if listing:
        text += "".join(f"\n  {seconds:7.2f} s  {'binary' if shipped else 'source'}  "
                        f"{source}  {options}"
                        for source, options, seconds, shipped in r["builds"])
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--routines", default=",".join(ROUTINES))
    parser.add_argument("--device", default=None)
    parser.add_argument("--cache", default="cold", choices=("cold", "warm"))
    parser.add_argument("--warmup", action="store_true", help="call oclla.warmup() first")
    parser.add_argument("--list", action="store_true", help="list every program built")
    parser.add_argument("--binaries", metavar="DIR",
                        help="write each program's device binary to DIR")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.routines = args.routines.split(",")
    unknown = set(args.routines) - set(ROUTINES)
    if unknown:
        parser.error(f"unknown routines {sorted(unknown)}; choose from {ROUTINES}")
    if args.child:
        child(args)
        return 0
    command = [sys.executable, os.path.abspath(__file__), "--child", "--dtype", args.dtype,
               "--sizes", ",".join(map(str, args.sizes)), "--routines",
               ",".join(args.routines)]
    command += ["--device", args.device] if args.device else []
    command += ["--warmup"] if args.warmup else []
    command += ["--binaries", os.path.abspath(args.binaries)] if args.binaries else []
    print(f"cache: {args.cache}, dtype: {args.dtype}", flush=True)
    with tempfile.TemporaryDirectory(prefix="oclla-cold-") as empty:
        env = dict(os.environ)
        if args.cache == "cold":
            env.update(XDG_CACHE_HOME=empty, CUDA_CACHE_PATH=empty, CUDA_CACHE_DISABLE="1",
                       POCL_CACHE_DIR=empty)
        first_ms = 0.0              # what a user waits for: the first calls and the
        with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) as proc:
            for line in proc.stdout:   # operands' own builds, each timed on the host
                if line.startswith("{"):
                    r = json.loads(line)
                    first_ms += r.get("first_ms", 0.0) + r.get("setup_ms", 0.0)
                    if "total_built" in r:
                        print(f"first calls' wall time: {first_ms / 1e3:.2f} s (every "
                              "routine's first call and the operands' builds, one after "
                              "another; the builds' own seconds, summed, are below)", flush=True)
                    print(row_text(r, args.list), flush=True)
                else:
                    print(line, end="", flush=True)
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
