"""Where a blocked ``cholesky_update``'s time goes: its panel kernels with parts cut out.

    python benchmarks/update_probe.py N RANKS DTYPES [OLD_UPDATE_CL]
    python benchmarks/update_probe.py 8192 1,16,64 float32,float64 /tmp/update_old.cl

Per (dtype, k) and panel kernel (``factor_panel_local``: the rotations;
``factor_panel_reflect``: the reflectors), the n/PANEL panels of an order-n
update launched back to back on a factor on the device (the device's
``update`` knobs), as built from kernels_cl/update.cl after textual cuts:

    full      the kernel as it is
    loadstore the row loop removed: the triangle's load and store, V's rows
    barriers  the row loop's body replaced by one barrier per row
    nobarrier the row loop without its barriers (wrong results; the time of the work)

and ``old``, the kernel of OLD_UPDATE_CL (another version of the file), where
given; ``chain`` adds each panel's apply kernel (the whole update) for the
file and for OLD_UPDATE_CL.  Printed: device ms summed over the kernels'
profiling events, and µs per row.  ``nop``: as many launches of an empty
kernel, the floor of a launch.  The default device, or OCLLA_DEVICE.
"""

import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import kernels_cl, update
from oclla._knobs import pow2_at_least
from oclla._params import params
from oclla._programs import build_options, int_zeros
from oclla.bench_update import synthetic_factor

LOOP = "for (int i = 0; i < nb; i++) {"
CUTS = {
    "full": (),
    "loadstore": ((LOOP, "for (int i = 0; i < 0; i++) {"),),
    "barriers": ((LOOP, LOOP + " barrier(CLK_LOCAL_MEM_FENCE); continue;"),),
    "nobarrier": (("inline int compute_rotations",
                   "#define barrier(f) ((void)0)\ninline int compute_rotations"),
                  ("if (failed)", "if (0 && failed)")),
}


def inline_headers(text: str) -> str:
    """``text`` (a version of update.cl) with its includes inlined as read_source does."""
    for header in ("common.h", "triangle.h"):
        text = text.replace(f'#include "{header}"', kernels_cl.read_source(header), 1)
    return text


def build(queue, text: str, dtype, opts: dict) -> cl.Program:
    return cl.Program(queue.context, text).build(options=list(build_options(dtype, opts)))


def run(queue, prg, panel: str, apply, dtype, n: int, k: int, c, v, reflect: bool):
    """Device ms of the panel kernels (and apply kernels, if ``apply``) of one update."""
    rows = update.panel_rows(queue, dtype)
    opts = update._options(queue, dtype, k, False, False, reflect)
    fwg = pow2_at_least(max(opts["PANEL"], opts["KF"]))
    wg = params(queue, "update", dtype)["APPLY_WG"]
    rot, kp = update.rotations(queue, n, k, dtype, rows, reflect=reflect)
    kern = cl.Kernel(prg, panel)
    app = cl.Kernel(prg, apply) if apply else None
    best = None
    for rep in range(3):
        work, vw, info = c.copy(), v.copy(), int_zeros(queue)
        queue.finish()
        events = []
        t = time.perf_counter()
        for i0 in range(0, n, rows):
            nb = min(rows, n - i0)
            args = (work.data, np.int64(0), np.int32(n), np.int32(n), np.int32(i0),
                    np.int32(nb), vw.data, np.int64(0), np.int32(k), rot.data, np.int32(kp))
            kern.set_args(*args, np.int32(1), info.data)
            events.append(cl.enqueue_nd_range_kernel(queue, kern, (fwg,), (fwg,)))
            t_cols = n - i0 - nb
            if app is not None and t_cols:
                app.set_args(*args, info.data)
                g = -(-t_cols // wg) * wg
                events.append(cl.enqueue_nd_range_kernel(queue, app, (g,), (wg,)))
        queue.finish()
        wall = time.perf_counter() - t
        dev = sum(e.profile.end - e.profile.start for e in events) / 1e6
        if rep and (best is None or wall < best[1]):
            best = (dev, wall * 1e3)
    return best, work


def main(argv) -> int:
    n = int(argv[0])
    ranks = [int(s) for s in argv[1].split(",")]
    dtypes = [np.dtype(d) for d in argv[2].split(",")]
    old = open(argv[3]).read() if len(argv) > 3 else None
    queue = oclla.get_queue()
    print(oclla.device_info(queue).name, f"n={n}", flush=True)
    nop = cl.Program(queue.context, "__kernel void nop(__global int *x) {}").build()
    x = cl_array.zeros(queue, 1, np.int32)
    for dtype in dtypes:
        rows = update.panel_rows(queue, dtype)
        knl = cl.Kernel(nop, "nop")
        knl.set_args(x.data)
        cl.enqueue_nd_range_kernel(queue, knl, (64,), (64,))
        queue.finish()
        t = time.perf_counter()
        evs = [cl.enqueue_nd_range_kernel(queue, knl, (64,), (64,)) for _ in range(n // rows)]
        queue.finish()
        print(f"{dtype.name} nop x{n // rows}: device "
              f"{sum(e.profile.end - e.profile.start for e in evs) / 1e6:.3f} ms, wall "
              f"{(time.perf_counter() - t) * 1e3:.3f} ms", flush=True)
        c = cl_array.to_device(queue, synthetic_factor(n, dtype))
        rng = np.random.default_rng(n)
        text = kernels_cl.read_source("update.cl")
        old_text = None if old is None else inline_headers(old)
        for k in ranks:
            v = cl_array.to_device(queue, (0.1 * rng.standard_normal((n, k))).astype(dtype))
            for reflect, panel, apply in ((False, "factor_panel_local", "apply_panel"),
                                          (True, "factor_panel_reflect",
                                           "apply_panel_reflect")):
                if reflect and k > params(queue, "update", dtype)["KF"]:
                    continue
                opts = update._options(queue, dtype, k, False, False, reflect)
                cells = []
                variants = [(name, cuts, text, None) for name, cuts in CUTS.items()]
                variants.append(("chain", (), text, apply))
                if old_text is not None:
                    variants += [("old", (), old_text, None), ("oldchain", (), old_text, apply)]
                for name, cuts, src, app in variants:
                    for a, b in cuts:
                        assert a in src, a
                        src = src.replace(a, b)
                    try:
                        (dev, wall), _ = run(queue, build(queue, src, dtype, opts), panel, app,
                                             dtype, n, k, c, v, reflect)
                        cells.append(f"{name} {dev:.2f}/{wall:.2f}ms "
                                     f"{1e3 * dev / n:.3f}us/row")
                    except Exception as exc:                 # a cut that does not build
                        cells.append(f"{name} failed ({type(exc).__name__}: {exc})"[:200])
                print(f"{dtype.name} k={k} {panel}: " + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
