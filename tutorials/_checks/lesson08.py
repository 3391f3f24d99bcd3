"""Checkers for Lesson 8 (recordings and the viewer in class)."""

from __future__ import annotations

import numpy as np

import oclla

from . import Wrong, callable_, close, equal, exercise

REQUIRES = ("viewer",)


@exercise(1, correct="One snapshot per step, and the per-pivot LU has n − 1 steps.")
def check_exercise_1(answer):
    """n - 1 = 9."""
    equal(answer, 10 - 1, what="the number of snapshots",
          hint="One step per pivot column; the last column has nothing below its pivot.")


@exercise(2, correct="511 · 512² · 8 bytes ≈ 1.07 GB: keep snapshots for small n.")
def check_exercise_2(answer):
    """(n - 1) n² 8 for n = 512."""
    n = 512
    close(answer, (n - 1) * n * n * 8, rtol=0.01, what="the byte count",
          hint="n − 1 snapshots of n² float64 values (8 bytes each).")


def _recorded_run():
    rng = np.random.default_rng(11)
    with oclla.record() as rec:
        oclla.lu_factor(rng.standard_normal((96, 96)), block=32)
    return rec.runs[-1]


@exercise(3, correct="max over steps of step.device_ns.")
def check_exercise_3(answer):
    """slowest_step(run) -> index of the step with the largest device time."""
    callable_(answer)
    run = _recorded_run()
    expected = max(run.steps, key=lambda s: s.device_ns).index
    got = answer(run)
    if got != expected and run.steps[int(got)].device_ns != run.steps[expected].device_ns:
        raise Wrong(f"step {got} is not the slowest: step {expected} took "
                    f"{run.steps[expected].device_ns / 1e3:.1f} µs of device time.")


@exercise(4, correct="Flops over device time, phase by phase: where the speed is.")
def check_exercise_4(answer):
    """gflops_by_phase(run) -> {phase: flops / device ns} for phases with flops."""
    callable_(answer)
    run = _recorded_run()
    totals = {}
    for s in run.steps:
        flops, ns = totals.get(s.phase, (0.0, 0))
        totals[s.phase] = (flops + s.flops, ns + s.device_ns)
    expected = {p: f / ns for p, (f, ns) in totals.items() if f > 0}
    got = answer(run)
    if not isinstance(got, dict) or set(got) != set(expected):
        raise Wrong(f"expected a dict with the phases {sorted(expected)}, got "
                    f"{sorted(got) if isinstance(got, dict) else type(got).__name__}.")
    for phase, value in expected.items():
        close(got[phase], value, rtol=1e-6, what=f"GFLOP/s of {phase!r}",
              hint="Sum the flops and the device_ns of all steps of the phase first, "
                   "then divide (flops per ns = GFLOP/s).")
