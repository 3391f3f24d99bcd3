"""Where a call's wall time goes: host time per enqueued command, and the device's kernels.

    python benchmarks/launch_probe.py ROUTINE[,ROUTINE...] SIZES DTYPES

ROUTINE: ``update`` (the product-form rank-16 update of an upper factor,
``update.modify_device``), ``lu_solve``, ``cho_solve`` (one right-hand side, device
arrays), ``cholesky``, ``lu_factor`` (device arrays).  Per routine, order and dtype,
after three warm-up calls: the best of seven wall times (queue finished before and
after), then one more call with every kernel launch and buffer fill timed on the host
and recorded (:func:`oclla.record`): the device's span and its kernels (µs each, in
order), and the host's microseconds in each command that took over 30 µs (a command
the driver makes wait for the ones before it shows up here: on NVIDIA's OpenCL, the
update's row_coefficients waited about 0.9 ms at n = 8192 for the kernels ahead of it,
while the device was busy with them).  The default device, or OCLLA_DEVICE.
"""

import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import _programs, update
from oclla._programs import int_zeros
from oclla.bench_update import synthetic_factor

SLOW_US = 30


class HostTimes:
    """Times every kernel launch and buffer fill while active (the launch helper every
    oclla enqueue goes through, and pyopencl's fill)."""

    def __init__(self):
        self.log = []
        self._launch, self._fill = _programs.launch, cl.enqueue_fill_buffer

    def __enter__(self):
        def launch(queue, kernel, *args, **kwargs):
            t = time.perf_counter()
            event = self._launch(queue, kernel, *args, **kwargs)
            self.log.append((kernel.function_name, time.perf_counter() - t))
            return event

        def fill(queue, *args, **kwargs):
            t = time.perf_counter()
            event = self._fill(queue, *args, **kwargs)
            self.log.append(("fill", time.perf_counter() - t))
            return event
        _programs.enqueue.__globals__["launch"] = launch
        cl.enqueue_fill_buffer = fill
        return self

    def __exit__(self, *exc):
        _programs.enqueue.__globals__["launch"] = self._launch
        cl.enqueue_fill_buffer = self._fill


def calls(queue, routine: str, n: int, dtype):
    """A function making one call of ``routine`` at order n on fresh operands."""
    rng = np.random.default_rng(n)
    if routine == "update":
        c = cl_array.to_device(queue, synthetic_factor(n, dtype))
        v = cl_array.to_device(queue, (rng.standard_normal((n, 16)) / 4).astype(dtype))

        def one():
            work, vw, info = c.copy(), v.copy(), int_zeros(queue)
            queue.finish()
            return lambda: update.modify_device(queue, work.data, 0, n, n, vw, lower=False,
                                                sign=1, method="product", info=info)
        return one
    x = rng.standard_normal((n, n)).astype(dtype)
    a = cl_array.to_device(queue, (x + np.sqrt(n) * np.eye(n)).astype(dtype))
    spd = cl_array.to_device(queue, (x @ x.T / n + np.eye(n)).astype(dtype))
    b = cl_array.to_device(queue, rng.standard_normal(n).astype(dtype))
    if routine == "lu_solve":
        lu = oclla.lu_factor(a, queue=queue)
        return lambda: lambda: oclla.lu_solve(lu, b, queue=queue)
    if routine == "cho_solve":
        cf = oclla.cho_factor(spd, queue=queue)
        return lambda: lambda: oclla.cho_solve(cf, b, queue=queue)
    if routine == "cholesky":
        return lambda: lambda: oclla.cholesky(spd, queue=queue)
    if routine == "lu_factor":
        return lambda: lambda: oclla.lu_factor(a, queue=queue)
    raise SystemExit(f"unknown routine {routine!r}")


def timed(queue, prepare) -> float:
    call = prepare()
    queue.finish()
    t = time.perf_counter()
    call()
    queue.finish()
    return time.perf_counter() - t


def main(argv) -> int:
    routines = argv[0].split(",")
    sizes = [int(s) for s in argv[1].split(",")]
    dtypes = [np.dtype(d) for d in argv[2].split(",")]
    queue = oclla.get_queue()
    print(oclla.device_info(queue).name, flush=True)
    for routine in routines:
        for dtype in dtypes:
            for n in sizes:
                prepare = calls(queue, routine, n, dtype)
                for _ in range(3):
                    timed(queue, prepare)
                best = min(timed(queue, prepare) for _ in range(7))
                call = prepare()
                with HostTimes() as host, oclla.record() as rec:
                    call()
                    queue.finish()
                kernels = [(k.name, (k.end - k.start) / 1e3) for k in rec.kernels]
                span = ((max(k.end for k in rec.kernels) - min(k.start for k in rec.kernels))
                        / 1e3 if rec.kernels else 0.0)
                slow = [f"#{i} {name} {t * 1e6:.0f}" for i, (name, t) in enumerate(host.log)
                        if t * 1e6 > SLOW_US]
                print(f"{routine} {dtype.name} n={n}: best {best * 1e3:.3f} ms; device span "
                      f"{span:.0f} us, kernels {sum(t for _, t in kernels):.0f} us: "
                      + ", ".join(f"{name} {t:.0f}" for name, t in kernels)
                      + f" | {len(host.log)} commands, over {SLOW_US} us on the host: "
                      + (", ".join(slow) or "none"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
