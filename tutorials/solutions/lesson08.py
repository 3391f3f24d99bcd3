"""Solutions to Lesson 8's exercises (for teachers).

Run ``python tutorials/solutions/lesson08.py`` to see every checker accept them.
"""

# Exercise 1: the per-pivot LU has n − 1 steps, one snapshot each.
answer_1 = 9

# Exercise 2: n − 1 copies of n² float64 values.
answer_2 = 511 * 512 ** 2 * 8


# Exercise 3: the step with the largest device time.
def answer_3(run):
    return max(run.steps, key=lambda s: s.device_ns).index


# Exercise 4: total flops over total device time, per phase (flops / ns = GFLOP/s).
def answer_4(run):
    totals = {}
    for s in run.steps:
        flops, ns = totals.get(s.phase, (0.0, 0))
        totals[s.phase] = (flops + s.flops, ns + s.device_ns)
    return {phase: flops / ns for phase, (flops, ns) in totals.items() if flops > 0}


if __name__ == "__main__":
    import _run
    _run.check_all(__file__)
