"""Checkers for Lesson 8 (recordings and the viewer in class)."""

from __future__ import annotations

import numpy as np

import oclla
from oclla import trace

from . import Wrong, callable_, close, equal, exercise

REQUIRES = ("oclla.viewer",)


@exercise(1, correct="One snapshot per step, and the per-pivot LU has n − 1 steps.")
def check_exercise_1(answer):
    """n - 1 = 9."""
    equal(answer, 10 - 1, what="the number of snapshots",
          hint="One step per pivot column; the last column has nothing below its pivot.")


@exercise(2, correct="511 · 512² · 8 bytes ≈ 1.07 GB: keep snapshots for small n.")
def check_exercise_2(answer):
    """(n - 1) n² 8 for n = 512."""
    n = 512
    equal(answer, (n - 1) * n * n * 8, what="the byte count",
          hint="Count exactly: n − 1 snapshots of n² float64 values (8 bytes each).")


def _recorded_run():
    rng = np.random.default_rng(11)
    with oclla.record() as rec:
        oclla.lu_factor(rng.standard_normal((96, 96)), block=32)
    return rec.runs[-1]


def _kernel(name, queued, start, end):
    return trace.KernelRecord(name=name, queued=queued, submit=queued, start=start, end=end)


def _synthetic_run():
    """Three steps where the slowest step (device time summed over its kernels) is
    neither the one with the longest single kernel nor the longest queued -> end."""
    run = trace.Run(algorithm="lu", variant="made up", shape=(3, 3), dtype="float32",
                    device="none")
    kernels = {
        0: [_kernel("long", 0, 10, 70)],                                  # 60 ns, longest one
        1: [_kernel(f"short{i}", 100, 100 + 30 * i, 130 + 30 * i) for i in range(3)],  # 90
        2: [_kernel("waited", 0, 900, 950)],                              # 50 ns, queued early
    }
    for index, ks in kernels.items():
        run.steps.append(trace.Step(algorithm="lu", index=index, phase="eliminate",
                                    region=(0, 3, 0, 3), kernels=ks))
    return run


@exercise(3, correct="max over steps of step.device_ns (the sum of its kernels' end − start).")
def check_exercise_3(answer):
    """slowest_step(run) -> index of the step with the largest device time."""
    callable_(answer)
    made_up = _synthetic_run()
    got = answer(made_up)
    if got != 1:
        why = {0: "it has the longest single kernel, but a step's device time is the sum "
                  "over all its kernels",
               2: "it waited longest from queued to end, but waiting is not device time "
                  "(end − start)"}.get(got, "")
        raise Wrong(f"in a made-up run of three steps you chose step {got}, not the slowest "
                    f"step 1" + (f": {why}." if why else "."))
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
