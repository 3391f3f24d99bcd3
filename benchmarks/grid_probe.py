"""Where getrf_grid's time per column goes: one tall panel with parts of the kernel cut out.

    python benchmarks/grid_probe.py M,M2,... W DTYPES
    python benchmarks/grid_probe.py 8192,16384 64 float64,float32

Per dtype and panel height m, an m x W panel (W <= the program's width, the
device's ``lu`` knobs: GRID_WX, GRID_WY, GRID_RPI, GRID_PER_CU, NB and
PANEL_SPLIT as the blocked LU builds it) factored by one launch of
``getrf_grid`` (kernels_cl/lu_grid.cl), as built after textual cuts:

    full        the kernel as it is
    nowait      no wait for the words of other work-groups (candidates and
                pivot rows taken as they are found: wrong results; the
                work-groups' own time)
    noreduce    each work-group's candidate and the winner taken without the
                two argmax reductions over the work-group (the first item's)
    nodivide    multipliers by the reciprocal alone (no division's branch)
    noupdate    the register rows' rank-1 update left out (only the multiplier)
    nocopies    no row copies published (candidate and diagonal rows; nor waited
                for, as in nowait)

Cut kernels compute wrong factors; only their times mean anything.  Each
variant is launched REPEAT times on copies of one random panel; printed: device
ms per launch (best), µs per column, and the same for an empty kernel launched
W times (the floor of a launch per column).  The default device, or
OCLLA_DEVICE.
"""

import sys

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import kernels_cl
from oclla._device import device_info
from oclla._params import params
from oclla._programs import build_options, int_zeros
from oclla.lu_blocked import GRID_SLOT_WORDS, grid_shared_ints

REPEAT = 5
CUTS = {
    "full": (),
    "nowait": (("} while (!there);", "} while (0);"),
               ("} while (act && !there);", "} while (0);")),
    "noreduce": (("const int cand = argmax_scan(vals, rows, WY, &mine);",
                  "mine = vals[0]; const int cand = rows[0];"),
                 ("const int winner = argmax_scan(top_vals, top_rows, FOLD, &value);",
                  "value = top_vals[0]; const int winner = top_rows[0];")),
    "nodivide": (("if (by_inv) {", "if (1) {"),),
    "noupdate": (("v[i][k] = jc == j ? l[i] : v[i][k] - l[i] * u[k];",
                  "v[i][k] = jc == j ? l[i] : v[i][k];"),),
    "nocopies": (("if ((r == cand && mine >= ZERO) || r == col)", "if (0)"),
                 ("} while (act && !there);", "} while (0);")),
}


def shape(queue, dtype, m: int, w: int) -> dict:
    """getrf_grid's build options and launch shape for an m x w panel, as
    oclla.lu_blocked.Panels._grid chooses them."""
    p = params(queue, "lu", dtype)
    wx, wy = p["GRID_WX"], p["GRID_WY"]
    split, nb = p["PANEL_SPLIT"], p["NB"]
    cpi = -(-max(w, min(split, nb) if split else nb) // wx)
    groups = device_info(queue).compute_units * p["GRID_PER_CU"]
    blocks = -(-m // wy)
    return dict(wx=wx, wy=wy, cpi=cpi, groups=groups, rpi=-(-blocks // groups),
                defines=dict(WX=wx, WY=wy, CPI=cpi, RPI=p["GRID_RPI"], NO_PIVOT=0,
                             SLOT_WORDS=GRID_SLOT_WORDS, GRID_GROUPS=groups))


def time_variant(queue, prg, dtype, panel, m: int, w: int, s: dict) -> float:
    """Best device ms of one launch of the variant's getrf_grid on a copy of ``panel``."""
    kern = cl.Kernel(prg, "getrf_grid")
    groups, width = s["groups"], s["cpi"] * s["wx"]
    joins = int_zeros(queue, REPEAT + 1)
    shared = int_zeros(queue, grid_shared_ints(groups, width, dtype))
    piv, info = int_zeros(queue, m), int_zeros(queue)
    best = float("inf")
    for rep in range(REPEAT + 1):
        a = panel.copy()
        kern.set_args(a.data, np.int32(w), np.int32(m), np.int32(0), np.int32(w), piv.data,
                      info.data, joins.data, np.int32(rep), shared.data,
                      np.int32(1 + rep * w), np.int32(s["rpi"]))
        event = cl.enqueue_nd_range_kernel(queue, kern, (groups * s["wx"], s["wy"]),
                                           (s["wx"], s["wy"]))
        event.wait()
        if rep:
            best = min(best, (event.profile.end - event.profile.start) / 1e6)
    return best


def main(argv) -> int:
    heights = [int(x) for x in argv[0].split(",")]
    w = int(argv[1])
    dtypes = [np.dtype(d) for d in argv[2].split(",")]
    queue = oclla.get_queue()
    if not queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
        queue = cl.CommandQueue(queue.context, queue.device,
                                properties=cl.command_queue_properties.PROFILING_ENABLE)
    print(device_info(queue).name, f"panels of {w} columns", flush=True)
    nop = cl.Kernel(cl.Program(queue.context, "__kernel void nop(__global int *x) {}").build(),
                    "nop")
    x = cl_array.zeros(queue, 1, np.int32)
    nop.set_args(x.data)
    cl.enqueue_nd_range_kernel(queue, nop, (64,), (64,)).wait()
    events = [cl.enqueue_nd_range_kernel(queue, nop, (64,), (64,)) for _ in range(w)]
    queue.finish()
    floor = sum(e.profile.end - e.profile.start for e in events) / 1e3 / w
    print(f"nop: {floor:.2f} us per launch", flush=True)
    text = kernels_cl.read_source("lu_grid.cl")
    for dtype in dtypes:
        for m in heights:
            panel = cl_array.to_device(
                queue, np.random.default_rng(m).standard_normal((m, w)).astype(dtype))
            s = shape(queue, dtype, m, w)
            cells = []
            for name, cuts in CUTS.items():
                src = text
                for old, new in cuts:
                    assert old in src, old
                    src = src.replace(old, new)
                prg = cl.Program(queue.context, src).build(
                    options=list(build_options(dtype, s["defines"])))
                ms = time_variant(queue, prg, dtype, panel, m, w, s)
                cells.append(f"{name} {ms:.3f} ms {1e3 * ms / w:.2f} us/col")
            print(f"{dtype.name} m={m} ({s['groups']} work-groups launched, rpi {s['rpi']}): "
                  + " | ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
