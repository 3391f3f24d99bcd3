"""Checkers for Lesson 1 (the OpenCL model)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pyopencl as cl

import oclla

from . import Wrong, callable_, close, equal, exercise


@exercise(1, correct="(12/4) x (8/4) = 3 x 2 work-groups of 16 work-items each.")
def check_exercise_1(answer):
    """Number of work-groups for global (12, 8), local (4, 4)."""
    equal(answer, 6, what="the number of work-groups",
          hint="Divide the global size by the local size in each dimension, then multiply.")


@exercise(2, correct="Rows 2..3 (below the pivot) times columns 1..3 (from the pivot on).")
def check_exercise_2(answer):
    """Work-items of `eliminate` that write U for n = 4, col = 1."""
    equal(answer, 2 * 3, what="the number of writing work-items",
          hint="Only r > col and c >= col pass the test; count the rows and the columns.")


def _run_axpy(source: str, n: int, pad: int):
    queue = oclla.get_queue()
    ctx = queue.context
    try:
        program = cl.Program(ctx, source).build()
        kernel = cl.Kernel(program, "axpy")
    except (cl.Error, cl.RuntimeError, cl.LogicError) as exc:
        raise Wrong(f"the kernel does not build or has no function named axpy:\n{exc}") from exc
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n + pad).astype(np.float32)
    y = rng.standard_normal(n + pad).astype(np.float32)
    alpha = np.float32(-2.5)
    mf = cl.mem_flags
    xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    yb = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=y)
    kernel.set_args(alpha, xb, yb, np.int32(n))
    cl.enqueue_nd_range_kernel(queue, kernel, (-(-n // 64) * 64,), (64,))
    out = np.empty_like(y)
    cl.enqueue_copy(queue, out, yb)
    return x, y, alpha, out


@exercise(3, correct="One work-item per entry, and the `if (i < n)` guard keeps the extra "
                     "work-items of the rounded-up NDRange away from memory they do not own.")
def check_exercise_3(answer):
    """An OpenCL C `axpy` kernel with a bounds check."""
    if not isinstance(answer, str):
        raise Wrong("give the kernel's OpenCL C source as a Python string.")
    n, pad = 1000, 24          # 1000 is not a multiple of 64: 24 extra work-items
    x, y, alpha, out = _run_axpy(answer, n, pad)
    if not np.allclose(out[:n], alpha * x[:n] + y[:n], rtol=1e-6, atol=1e-6):
        raise Wrong("y is not alpha * x + y. Check the index (get_global_id(0)) and the formula.")
    if not np.array_equal(out[n:], y[n:]):
        raise Wrong("entries past n were changed: the work-items with i >= n must do nothing.")


@exercise(4, correct="end - start is device time; the ns -> µs factor is 1000.")
def check_exercise_4(answer):
    """device_time_us(event): (end - start) / 1000."""
    callable_(answer)
    fake = SimpleNamespace(profile=SimpleNamespace(queued=1_000, submit=5_000,
                                                    start=40_000, end=52_500))
    close(answer(fake), 12.5, rtol=1e-9, what="device_time_us(event)",
          hint="Use the start and end timestamps (nanoseconds) and convert to microseconds.")
