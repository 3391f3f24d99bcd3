"""Checkers for Lesson 10 (inverse, log-determinant, the hybrid schedule)."""

from __future__ import annotations

import numpy as np

from . import Wrong, callable_, close, exercise

REQUIRES = ("oclla:cho_inverse", "oclla:cho_logdet", "oclla:cholesky", "oclla:cho_solve",
            "oclla:record", "oclla.hybrid:cholesky", "oclla.hybrid:block_schedule")


@exercise(1, correct="2n³/3 = twice the factorization: the inverse triples the work of "
                     "the factor alone.")
def check_exercise_1(answer):
    """(n³/3 + n³/3) / (n³/3) = 2."""
    close(answer, 2.0, rtol=0.02, what="the ratio",
          hint="Add trtri's and lauum's flops and divide by the factorization's.")


def _spd(n, scale, seed):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    return scale * (m @ m.T / n + np.eye(n))


@exercise(2, correct="2 Σ log cᵢᵢ: a sum of a few hundred moderate numbers instead of a "
                     "product of hundreds of factors.")
def check_exercise_2(answer):
    """logdet_spd(a) -> log det a, finite where det over- or underflows."""
    callable_(answer)
    for n, scale, seed in ((4, 1.0, 0), (60, 2.0, 1), (400, 20.0, 2), (400, 1e-3, 3)):
        a = _spd(n, scale, seed)
        expected = np.linalg.slogdet(a)[1]
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            got = answer(a.copy())
        try:
            value = float(np.asarray(got, dtype=np.float64).reshape(()))
        except (TypeError, ValueError):
            raise Wrong("return log det A as one number.") from None
        if not np.isfinite(value):
            raise Wrong(f"for an order-{n} matrix scaled by {scale:g} you returned {value}: "
                        f"det itself is out of float64's range there; sum logarithms "
                        f"instead of taking the logarithm of a product.")
        if abs(value - expected) > 1e-9 * max(1.0, abs(expected)):
            hint = (" Did you forget the factor 2 (det A = (Π cᵢᵢ)²)?"
                    if abs(2 * value - expected) < 1e-6 * max(1.0, abs(expected)) else "")
            raise Wrong(f"for an order-{n} matrix log det is {expected:.6g}, you returned "
                        f"{value:.6g}.{hint}")


def _regression(m, p, seed):
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(m), rng.standard_normal((m, p - 1))])
    x[:, -1] += 0.8 * x[:, 1]
    y = x @ rng.standard_normal(p) + 0.3 * rng.standard_normal(m)
    return x, y


@exercise(3, correct="σ̂²·(XᵀX)⁻¹ is the covariance of β̂: one of the few places where "
                     "the inverse itself is wanted.")
def check_exercise_3(answer):
    """standard_errors(X, y) -> sqrt(diag(s² (XᵀX)⁻¹)), s² = ‖y − Xβ̂‖²/(m − p)."""
    callable_(answer)
    for m, p, seed in ((12, 3, 0), (200, 5, 1)):
        x, y = _regression(m, p, seed)
        beta = np.linalg.lstsq(x, y, rcond=None)[0]
        s2 = np.sum((y - x @ beta) ** 2) / (m - p)
        expected = np.sqrt(s2 * np.diag(np.linalg.inv(x.T @ x)))
        got = np.asarray(answer(x.copy(), y.copy()), dtype=np.float64).ravel()
        if got.shape != (p,):
            raise Wrong(f"return one standard error per coefficient ({p} numbers), got "
                        f"shape {got.shape}.")
        if np.allclose(got, expected, rtol=1e-8):
            continue
        if np.allclose(got, expected ** 2, rtol=1e-8):
            raise Wrong("those are variances: take the square root.")
        if np.allclose(got, expected * np.sqrt((m - p) / m), rtol=1e-8):
            raise Wrong("divide the sum of squared residuals by m − p, not m (p "
                        "coefficients were fitted).")
        if np.allclose(got, np.sqrt(s2 / np.diag(x.T @ x)), rtol=1e-8):
            raise Wrong("the diagonal of the inverse is not the inverse of the diagonal: "
                        "you need diag((XᵀX)⁻¹).")
        raise Wrong(f"for m = {m}, p = {p} the standard errors are "
                    f"{np.array2string(expected, precision=4)}, you returned "
                    f"{np.array2string(got, precision=4)}.")


def _run(intervals, host=()):
    """A recorded run whose device kernels ran over ``intervals`` (start, end) in ns, and
    host work over ``host``."""
    from oclla.trace import KernelRecord, Run, Step

    step = Step("test", 0, "test", (0, 1, 0, 1))
    for i, (start, end) in enumerate(intervals):
        step.kernels.append(KernelRecord(f"k{i}", queued=max(0, start - 5000),
                                         submit=max(0, start - 200), start=start, end=end,
                                         step=0))
    for start, end in host:
        step.kernels.append(KernelRecord("potrf (host LAPACK)", queued=start, submit=start,
                                         start=start, end=end, step=0, device="host"))
    return Run("test", "", (1, 1), "float64", "", steps=[step])


def _idle(intervals):
    idle, reach = 0, None
    for start, end in sorted(intervals):
        if reach is not None and start > reach:
            idle += start - reach
        reach = end if reach is None else max(reach, end)
    return idle


@exercise(4, correct="Merge the kernels' [start, end) intervals, then add up the gaps "
                     "between them.")
def check_exercise_4(answer):
    """device_idle_ns(run) -> ns of [first start, last end] covered by no kernel."""
    callable_(answer)
    cases = [([(1000, 2000), (2500, 4000)], ()),                  # one gap
             ([(1000, 2000), (2000, 3000)], ()),                  # back to back
             ([(5000, 6000), (1000, 2000), (2500, 3000)], ()),    # not in order
             ([(1000, 5000), (2000, 3000), (6000, 7000)], ()),    # one inside another
             ([(1000, 3000), (2000, 4000), (4500, 5000), (4600, 4700)], ()),   # overlaps
             ([(1000, 2000), (3000, 4000)], [(2000, 2500), (100, 900), (4000, 9000)])]
    for intervals, host in cases:
        expected = _idle(intervals)
        got = answer(_run(intervals, host))
        try:
            value = float(got)
        except (TypeError, ValueError):
            raise Wrong("return a number of nanoseconds.") from None
        if value != expected:
            shown = ", ".join(f"[{s}, {e})" for s, e in intervals)
            raise Wrong(f"for kernels running over {shown} the device was idle "
                        f"{expected} ns, you returned {value:g}. Count from the kernels' "
                        f"start and end (not queued), and do not count the same time "
                        f"twice when kernels overlap; records with device \"host\" are "
                        f"the host's work, not the device's.")
