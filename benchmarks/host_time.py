"""The host's own time in a factorization: Python alone, every enqueue a no-op.

    python benchmarks/host_time.py [--routine getrf|potrf] [--sizes 4096] [--dtype float64]
        [--params "NVIDIA H200"] [--repeat 10]

A blocked factorization enqueues hundreds of kernels, and the Python that decides each
launch runs on the host before the device can start it.  Where that Python takes about as
long as the device's kernels, the host sets the call's time (the float64 LU at n = 4096
on an H200: benchmarks/results/nvidia-h200-2026-12-01-host-time.txt).  Here every
pyopencl enqueue (kernels, markers, barriers, fills, copies) returns at once without
doing anything, so the time of a call is the Python alone (with the kernel arguments
set): nothing runs, no result is read, and the matrix stays as it was.  ``--params``
takes the stored (tuned) parameters of another device from ``oclla/data/tuned.json``,
so that a CPU runs the host loop of that device's code path: its launches, in the same
order and number.  Printed per size: the best and the median of ``--repeat`` calls in ms,
and the kernel launches per call.
"""

import argparse
import importlib
import json
import time
from importlib import resources

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import _params, lu_blocked
from oclla._programs import index_width
from oclla.blas import view_of

cholesky = importlib.import_module("oclla.cholesky")   # the module; oclla.cholesky is the routine
ENQUEUES = ("enqueue_nd_range_kernel", "enqueue_marker", "enqueue_barrier",
            "enqueue_fill_buffer", "enqueue_copy")


def stored_params(device: str, dtype) -> dict:
    """The shipped tuned parameter families of ``device`` for ``dtype``."""
    text = resources.files("oclla").joinpath("data", "tuned.json").read_text(encoding="utf-8")
    for entry in json.loads(text)["entries"]:
        if entry["device"] == device and entry["dtype"] == np.dtype(dtype).name:
            return entry["params"]
    raise SystemExit(f"no stored parameters for {device!r} in {np.dtype(dtype).name}")


def idle_enqueues(queue) -> list:
    """Replace pyopencl's enqueue functions by ones that return a completed event; a
    one-entry list counting the kernel launches."""
    done = cl.UserEvent(queue.context)
    done.set_status(cl.command_execution_status.COMPLETE)
    launches = [0]

    def launch(*args, **kwargs):
        launches[0] += 1
        return done
    for name in ENQUEUES:
        setattr(cl, name, launch if name == "enqueue_nd_range_kernel" else
                (lambda *args, **kwargs: done))
    return launches


def factor_call(routine: str, queue, a):
    """The call timed: the factorization of ``a`` in place, its info read skipped (no
    command runs, so none may be waited for)."""
    n = a.shape[0]
    info = cl_array.zeros(queue, 2, np.int32)
    if routine == "getrf":
        piv = cl_array.to_device(queue, np.arange(n, dtype=np.int32))

        def factor():
            with index_width(a.size):                       # as lu_factor's
                lu_blocked.factor_blocked(queue, a, n, piv, info, False)
        return factor
    block = cholesky.block_size(queue, a.dtype, n)
    return lambda: cholesky.factor_blocked(queue, view_of(a), n, lower=True, dtype=a.dtype,
                                           info=info, block=block)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routine", choices=("getrf", "potrf"), default="getrf")
    ap.add_argument("--sizes", default="4096")
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--params", default=None, help="a device name in oclla/data/tuned.json")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    dtype = np.dtype(args.dtype)
    if args.params:
        for family, keys in stored_params(args.params, dtype).items():
            _params.override(family, keys)
    queue = oclla.get_queue()
    print(f"{queue.device.name.strip()}, {args.routine} {dtype.name}, parameters of "
          f"{args.params or 'this device'}: the host's Python per call, enqueues idle")
    matrices = {n: cl_array.zeros(queue, (n, n), dtype) for n in map(int, args.sizes.split(","))}
    queue.finish()
    launches = idle_enqueues(queue)
    for n, a in matrices.items():
        call = factor_call(args.routine, queue, a)
        call()                                  # builds, parameter checks
        times = []
        for _ in range(args.repeat):
            launches[0] = 0
            t = time.perf_counter()
            call()
            times.append(1e3 * (time.perf_counter() - t))
        print(f"n={n}: best {min(times):.2f} ms, median {float(np.median(times)):.2f} ms, "
              f"{launches[0]} launches")


if __name__ == "__main__":
    main()
