"""Build seconds and run time of the update's programs: kernels_cl/update.cl against
another version of it, in one process.

    PYOPENCL_NO_CACHE=1 python benchmarks/update_build.py OLD.cl SIZES RANKS DTYPES [KNOBS]
    git show 8cec679:kernels_cl/update.cl > benchmarks/_old_update.cl   # inside the tree
    PYOPENCL_NO_CACHE=1 python benchmarks/update_build.py benchmarks/_old_update.cl \\
        8192 16,64 float32,float64
    VERSIONS=new,new:PG=8,old python benchmarks/update_build.py ...

Per (dtype, n, k) and version (VERSIONS, default ``new,old``: the working tree's
update.cl, the same with extra defines ``new:NAME=V:...``, then OLD.cl): the
program that the blocked ``cholesky_update`` of rank k uses on this device (the
``update`` knobs as they are, or with KNOBS, e.g. ``REFLECT=16,KF=64,PANEL=64``, through
:func:`oclla._params.trial`) is built from source (seconds; pyopencl's cache must be
off for a real build), put in oclla's program cache in place of the library's own,
and the update of an order-n factor on the device is timed (best of 3 after a
warm-up, :func:`oclla.update.modify_device`).  Then ``max|R̃ - R̃_old| / max|R̃|``
between the versions' results, each kernel's PTX lines (NVIDIA) and, with
``-cl-nv-verbose`` accepted (NVIDIA), ptxas's registers and spills.  The default
device, or OCLLA_DEVICE.
"""

import os
import re
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import _programs, kernels_cl, update
from oclla._params import params, trial
from oclla._programs import build_options

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from update_variants import timed  # noqa: E402  (best of 3 of the update's device part)


def inline_headers(text: str) -> str:
    """A version of update.cl with its includes inlined as read_source inlines them."""
    return re.sub(r'#include "([\w.]+)"', lambda m: kernels_cl.read_source(m.group(1)), text)


def build(queue, text: str, options: tuple):
    """(program, seconds, ptxas lines): built from source; NVIDIA's verbose log asked."""
    ctx, dev = queue.context, queue.device
    nvidia = "NVIDIA" in dev.platform.name
    extra = ["-cl-nv-verbose"] if nvidia else []
    t = time.perf_counter()
    prg = cl.Program(ctx, text).build(options=list(options) + extra)
    seconds = time.perf_counter() - t
    log = prg.get_build_info(dev, cl.program_build_info.LOG) or ""
    keep = [row.strip() for row in log.splitlines()
            if re.search(r"registers|spill|Compiling entry|bytes stack", row)]
    return prg, seconds, keep


def ptx_lines(prg) -> str:
    text = prg.binaries[0].decode("latin-1", "replace")
    out, name, count = [], None, 0
    for line in text.splitlines():
        m = re.match(r"\s*\.(?:visible\s+)?\.entry\s+(\w+)", line)
        if m:
            if name:
                out.append(f"{name} {count}")
            name, count = m.group(1), 0
        count += 1
    if name:
        out.append(f"{name} {count}")
    return ", ".join(out) if text.lstrip().startswith(("//", ".version")) else ""


def factor(queue, n: int, dtype, rng):
    """An upper factor R with a dominant positive diagonal (no factorization needed)."""
    r = np.triu(rng.uniform(-1.0, 1.0, (n, n)) / np.sqrt(n))
    r[np.diag_indices(n)] = 2.0 + rng.uniform(0.0, 1.0, n)
    return cl_array.to_device(queue, r.astype(dtype))


def main(argv) -> int:
    old_text = inline_headers(open(argv[0]).read())
    new_text = kernels_cl.read_source("update.cl")
    sizes, ranks = ([int(s) for s in a.split(",")] for a in argv[1:3])
    dtypes = [np.dtype(d) for d in argv[3].split(",")]
    knobs = dict((kv.split("=")[0], int(kv.split("=")[1]))
                 for kv in argv[4].split(",")) if len(argv) > 4 else {}
    queue = oclla.get_queue()
    dev = queue.device
    print(f"# {dev.name.strip()}, driver {dev.driver_version}", flush=True)
    for dtype in dtypes:
        with trial(queue, "update", dtype, {**params(queue, "update", dtype), **knobs}):
            for n in sizes:
                rng = np.random.default_rng(n)
                c = factor(queue, n, dtype, rng)
                for k in ranks:
                    v = cl_array.to_device(queue, (0.5 * rng.standard_normal((n, k))
                                                   / np.sqrt(k)).astype(dtype))
                    reflect = update.reflects(queue, dtype, k, 1)
                    opts = update._options(queue, dtype, k, False, False, reflect)
                    options = build_options(dtype, opts)
                    results = []
                    for name in os.environ.get("VERSIONS", "new,old").split(","):
                        text = old_text if name == "old" else new_text
                        extra = tuple(f"-D{d}" for d in name.split(":")[1:])
                        prg, seconds, log = build(queue, text, options + extra)
                        _programs._programs[(queue.context, "update.cl", options)] = prg
                        _programs._thread_kernels.cache = {}
                        best, work = timed(queue, c, v, n)
                        results.append(work.get())
                        print(f"{dtype.name} n={n} k={k} {name}: build {seconds:.2f} s, "
                              f"update {best * 1e3:.2f} ms  "
                              f"({' '.join(options[1:])})", flush=True)
                        ptx = ptx_lines(prg)
                        if ptx:
                            print(f"    PTX lines: {ptx}", flush=True)
                        for row in log:
                            if "apply_panel" in row or "factor_panel" in row or \
                                    "spill" in row or "registers" in row:
                                print(f"    {row}", flush=True)
                    names = os.environ.get("VERSIONS", "new,old").split(",")
                    scale = np.abs(results[0]).max()
                    diff = np.abs(results[0] - results[-1]).max()
                    print(f"    max|{names[0]} - {names[-1]}| / max|R| = {diff / scale:.3g}",
                          flush=True)
                    _programs._programs.pop((queue.context, "update.cl", options), None)
                    _programs._thread_kernels.cache = {}
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
