"""What NVIDIA's PTX assembler costs per program, and what its optimisation level buys.

    python benchmarks/build_cost.py --dtype float32 --levels 3,2,1,0
    python benchmarks/build_cost.py --levels 3 --verbose      # registers and spills
    python benchmarks/build_cost.py --variants lu_rows syrk_leaf --repeat 2

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

``--variants SET ...`` builds instead the largest programs (source and -D options as
the library builds them on an H100/H200 from the shipped tuned entries) and variants
of their text: a part removed (compile-only: the kernels it gives are wrong), a loop
left rolled, a function kept out of line (``--variants list`` prints them).  Each is
built from source ``--repeat`` times in this process with a distinct empty kernel
appended each time (so no driver reuses an earlier build); run it with the
compiler's cache off (NVIDIA: ``CUDA_CACHE_DISABLE=1``; PoCL defers most of its
compiling to a kernel's first launch, so its times here say little).  An edit whose
text is no longer in the source stops the run.
"""

import argparse
import itertools
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


LU32 = ("-DARGMAX_SCAN=8 -DINDEX64=0 -DLW=16 -DMAP=1 -DNO_PIVOT=0 -DPRECISION=32 -DPREV=1 "
        "-DROWS=4 -DSTAGE=256 -DTILE_M={tm} -DTILE_N=64 -DWG={wg} -DWPT_M=4 -DWPT_N=4")
LU64 = ("-DARGMAX_SCAN=8 -DINDEX64=0 -DLW=8 -DMAP=1 -DNO_PIVOT=0 -DPRECISION=64 -DPREV=1 "
        "-DROWS=4 -DSTAGE=256 -DTILE_M={tm} -DTILE_N=32 -DWG={wg} -DWPT_M=2 -DWPT_N=2")
SY32 = ("-DINTERLEAVE=0 -DLEAF=64 -DPRECISION=32 -DTILE_K=16 -DTILE_M=64 -DTILE_N=128 "
        "-DVEC_A=4 -DVEC_B=4 -DVEC_LOCAL=4 -DWPT_M=8 -DWPT_N=4")
SY64 = ("-DINTERLEAVE=1 -DLEAF=64 -DPRECISION=64 -DTILE_K=8 -DTILE_M=128 -DTILE_N=64 "
        "-DVEC_A=2 -DVEC_B=2 -DVEC_LOCAL=2 -DWPT_M=8 -DWPT_N=4")


def _gone(*texts):
    """Edits removing each text (a statement or macro use)."""
    return [(t, "") for t in texts]


#: The tiles of the previous leaf's update (flat_update.h): their loop over the leaf's
#: columns, unrolled as shipped.
TILE_LOOP = ("    #pragma unroll\n    for (int k = 0; k < LW; k++)\n        #pragma unroll\n"
             "        for (int i = 0; i < WPT_M; i++)")
LU_EDITS = {
    "ref": [],
    "PREV=0": "-DPREV=1>-DPREV=0",
    "ROWS=2": "-DROWS=4>-DROWS=2",
    "no column-step updates": _gone("EACH_SLOT(UPDATE, j)"),
    "no publish/take": _gone("EACH_SLOT(PUBLISH_J, j)", "EACH_SLOT(PUBLISH_P, j)",
                             "EACH_SLOT(TAKE_J, j)", "EACH_SLOT(TAKE_P, j)"),
    "no slot stores": _gone("EACH_SLOT(STORE_SLOT, js)"),
    "no slot loads": _gone("EACH_SLOT(LOAD_SLOT, js)"),
    "no rotation": _gone("EACH_SLOT(ROTATE, 0)"),
    "no tiles": [("flat_update_tile(a, lda, n, c0 - LW,",
                  "if (0) flat_update_tile(a, lda, n, c0 - LW,")],
    "tiles out of line": [("void flat_update_tile(",
                           "__attribute__((noinline)) void flat_update_tile(")],
    "tiles' loop rolled": [(TILE_LOOP, TILE_LOOP.replace("#pragma unroll\n    for (int k",
                                                         "#pragma unroll 1\n    for (int k", 1))],
}
SYRK_EDITS = {
    "ref": [],
    "LEAF 48": "-DLEAF=64>-DLEAF=48",
    "LEAF 32": "-DLEAF=64>-DLEAF=32",
    "no inverse": [("const int inverse = ldw > 0;", "const int inverse = 0;")],
    "no leaf": [("const int bad = factor_rows(", "const int bad = 0; if (0) factor_rows(")],
    "leaf inline": [("#define LEAF_FN __attribute__((noinline))", "#define LEAF_FN inline")],
    "gemm tile out of line": [("inline void gemm_tile(",
                               "__attribute__((noinline)) void gemm_tile(")],
    "no Z_TURN": _gone("UPTO_LEAF(Z_TURN)"),
    "no ROW_TURN": _gone("UPTO_LEAF(ROW_TURN)"),
    "no stores of the rows": _gone("UPTO_LEAF(ROW_TO_LOCAL)", "UPTO_LEAF(Z_TO_LOCAL)"),
}
SETS = {
    "lu_rows": [(f"lu_rows {d} {wg} items, {label}", "lu_rows.cl", opts.format(tm=tm, wg=wg), e)
                for d, opts in (("f32", LU32), ("f64", LU64))
                for wg, tm in ((256, 64), (512, 128)) for label, e in LU_EDITS.items()],
    "syrk_leaf": [(f"syrk_leaf {d}, {label}", "syrk_leaf.cl", opts, e)
                  for d, opts in (("f32", SY32), ("f64", SY64))
                  for label, e in SYRK_EDITS.items()],
    "others": [("gemm f32", "gemm.cl", "-DDIRECT=0 -DINDEX64=0 " + SY32, []),
               ("gemm f64", "gemm.cl", "-DDIRECT=0 -DINDEX64=0 " + SY64, []),
               ("trsm f32", "trsm.cl", "-DDOUBLING=1 -DFEW=2 -DINDEX64=0 -DPRECISION=32 "
                "-DROWS_WIDTH=16 -DTRSM_NB=64", []),
               ("lu_grid f32", "lu_grid.cl", "-DCPI=4 -DINDEX64=0 -DNO_PIVOT=0 -DPRECISION=32 "
                "-DRPI=8 -DWX=32 -DWY=8", []),
               ("util f32", "util.cl", "-DINDEX64=0 -DPRECISION=32", [])],
}

_serial = itertools.count()     # distinct kernels appended to variant builds


def _variant_text(source: str, options: str, edits) -> tuple[str, str]:
    """(program text, options) of a variant: edits are (old, new) pairs on the text, or
    one "old>new" string on the options."""
    from oclla import kernels_cl
    text = kernels_cl.read_source(source)
    if isinstance(edits, str):
        old, new = edits.split(">")
        if old not in options:
            raise SystemExit(f"{source}: option {old} not in {options}")
        return text, options.replace(old, new)
    for old, new in edits:
        if old not in text:
            raise SystemExit(f"{source}: the text to edit is gone:\n{old}")
        text = text.replace(old, new)
    return text, options


def _source_build_seconds(ctx, text: str, options: str) -> float:
    """Seconds to build ``text`` from source (a distinct empty kernel appended)."""
    import pyopencl as cl
    marked = text + f"\n__kernel void build_probe_{os.getpid()}_{next(_serial)}(void) {{}}\n"
    start = time.perf_counter()
    cl.Program(ctx, marked).build(options=["-cl-std=CL1.2"] + options.split())
    return time.perf_counter() - start


def variants_mode(sets: list, repeat: int) -> None:
    """Build the variants of ``sets`` (keys of :data:`SETS`; ``list``: print them)."""
    unknown = sorted(set(sets) - set(SETS) - {"list"})
    if unknown:
        raise SystemExit(f"unknown variant sets {unknown}; choose from {sorted(SETS)}")
    chosen = [v for name in (sorted(set(sets) - {"list"}) or sorted(SETS)) for v in SETS[name]]
    if "list" in sets:
        for label, source, options, edits in chosen:
            print(f"{label:<46} {source} {_variant_text(source, options, edits)[1]}")
        return
    import oclla
    queue = oclla.get_queue()
    print(f"# {queue.device.name.strip()}, driver {queue.device.driver_version}", flush=True)
    for label, source, options, edits in chosen:
        text, opts = _variant_text(source, options, edits)
        times = [_source_build_seconds(queue.context, text, opts) for _ in range(repeat)]
        print(f"{min(times):6.2f} s (of {', '.join(f'{t:.2f}' for t in times)})  {label}",
              flush=True)


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
    parser.add_argument("--variants", nargs="+", metavar="SET",
                        help=f"build variants of the largest programs instead: sets "
                             f"{', '.join(sorted(SETS))} or list")
    parser.add_argument("--level", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.first = [int(s) for s in args.first.split(",")]
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.programs:
        programs_mode(args.programs)
        return 0
    if args.variants:
        variants_mode(args.variants, args.repeat)
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
