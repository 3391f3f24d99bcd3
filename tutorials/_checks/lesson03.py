"""Checkers for Lesson 3 (idle work-items, copies, launch overhead)."""

from __future__ import annotations

import numpy as np

import oclla

from . import Wrong, callable_, close, exercise, number


@exercise(1, correct="(n-k-1)(n-k) active entries out of n².")
def check_exercise_1(answer):
    """active_fraction(n, k) = (n-k-1)(n-k)/n²."""
    callable_(answer)
    for n, k in ((4, 0), (4, 1), (4, 2), (100, 0), (100, 37), (1024, 1022)):
        close(answer(n, k), (n - k - 1) * (n - k) / n ** 2, rtol=1e-9,
              what=f"active_fraction({n}, {k})",
              hint="Rows r > k and columns c >= k are active: count both.")


@exercise(2, correct="(n+1)/(3n) -> 1/3: two work-items in three idle.")
def check_exercise_2(answer):
    """lim (n+1)/(3n) = 1/3 (not the value at a finite n)."""
    value = number(answer, "the limit")
    if abs(value - 1 / 3) > 5e-4:
        hint = ""
        for n in (64, 128, 256, 512, 1024):
            if abs(value - (n + 1) / (3 * n)) < 5e-5:
                hint = (f" That is the share at n = {n}, not the limit: what does "
                        f"(n+1)/(3n) tend to?")
        raise Wrong(f"the limit = {value:.6g} is not right.{hint or ' '}"
                    + ("" if hint else "Sum (n-k-1)(n-k) over the steps (about n³/3) and "
                       "divide by (n-1)·n²."))


@exercise(3, correct="n - 1 = 1023 copies of 1024² floats of 4 bytes: about 4.3 GB.")
def check_exercise_3(answer):
    """(n-1)·n²·4 bytes for n = 1024."""
    n = 1024
    close(answer, (n - 1) * n * n * 4, rtol=1e-6, what="the byte count",
          hint="One copy per step (how many steps?), each of the whole n x n float32 matrix.")


@exercise(4, correct="Device time of the copies over the device time of everything.")
def check_exercise_4(answer):
    """copy_share(run): copy U->A device time / all device time."""
    callable_(answer)
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((64, 64)) + 64 * np.eye(64)).astype(np.float32)
    with oclla.record() as rec:
        oclla.lu_factor(a, method="pivot", variant="faithful")
    run = rec.runs[-1]
    copies = sum(k.duration_ns for k in run.kernels if k.name == "copy U->A")
    total = sum(k.duration_ns for k in run.kernels)
    if total == 0:
        raise Wrong("the device reported no kernel times for this run; run the checker again.")
    close(answer(run), copies / total, rtol=1e-6, what="copy_share(run)",
          hint="Sum duration_ns of the kernels named 'copy U->A', divide by the sum over "
               "all kernels.")
