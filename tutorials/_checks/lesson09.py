"""Checkers for Lesson 9 (Cholesky update and downdate)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from . import Wrong, callable_, close, equal, exercise, integer, number

REQUIRES = ("oclla:cholesky_update", "oclla:cholesky", "oclla:cho_solve", "oclla:record")


@exercise(1, correct="3kn² = n³/3 + kn² gives k = n/6 = 100: below that, update.")
def check_exercise_1(answer):
    """k with 3k n² = n³/3 + k n² for n = 600, i.e. n/6 = 100 (within 10 %)."""
    value = number(answer, "k")
    if abs(value - 600 / 9) < 2:
        raise Wrong("that is n/9: refactoring also has to form A + VVᵀ (k·n² flops).")
    close(value, 100.0, rtol=0.1, what="k",
          hint="Set 3k·n² equal to n³/3 + k·n² and solve for k.")


def _slide_cases():
    """(r, enter, leave, G after) cases; the last one fails if the downdate goes first."""
    rng = np.random.default_rng(9)
    cases = []
    for n, w, k1, k2 in ((7, 20, 3, 3), (7, 20, 1, 2), (5, 12, 4, 1)):
        x = rng.standard_normal((w, n))
        enter = rng.standard_normal((k1, n))
        leave = x[:k2]
        cases.append((scipy.linalg.cholesky(x.T @ x), enter, leave,
                      x.T @ x + enter.T @ enter - leave.T @ leave))
    # a large row leaves and a similar one enters: G − leaveᵀleave alone is indefinite
    n = 6
    g = np.eye(n)
    big = np.zeros((1, n))
    big[0, 2] = 10.0
    enter = big + 0.01 * rng.standard_normal((1, n))
    cases.append((np.eye(n), enter, big, g + enter.T @ enter - big.T @ big))
    return cases


@exercise(2, correct="Update first, then downdate: the matrix in between is the larger one, "
                     "so it stays positive definite.")
def check_exercise_2(answer):
    """slide(r, enter, leave) -> upper factor of G + enterᵀenter − leaveᵀleave, by updates."""
    import oclla

    callable_(answer)
    for i, (r, enter, leave, g_after) in enumerate(_slide_cases()):
        r_in = r.copy()
        with oclla.record() as rec:
            try:
                got = answer(r_in, enter.copy(), leave.copy())
            except np.linalg.LinAlgError as err:
                raise Wrong(f"a modification failed ({err}) although the window after the "
                            f"move is positive definite. Which matrix did it meet on the "
                            f"way? Try the other order of your two calls.") from None
        got = np.asarray(got, dtype=np.float64)
        algorithms = [run.algorithm for run in rec.runs]
        if "cholesky_update" not in algorithms:
            raise Wrong("use oclla.cholesky_update (the recorder saw no update).")
        if any(a != "cholesky_update" for a in algorithms):
            raise Wrong(f"the recorder saw {sorted(set(algorithms))}: update the factor, "
                        f"do not refactor.")
        signs = {run.params.get("sign") for run in rec.runs}
        if signs != {1, -1}:
            raise Wrong("one update (sign=+1) for the rows that enter and one downdate "
                        "(sign=-1) for those that leave.")
        n = r.shape[0]
        if got.shape != (n, n):
            raise Wrong(f"the factor should be {n} x {n}, got {got.shape}.")
        expected = scipy.linalg.cholesky(g_after)
        if not np.allclose(got, expected, rtol=1e-8, atol=1e-10):
            raise Wrong("the result is not the upper factor of G + enterᵀ·enter − "
                        "leaveᵀ·leave. Rows are measurements: V holds them as columns "
                        "(enter.T).")
        if not np.array_equal(r_in, r):
            raise Wrong("your function changed the caller's r.")


@exercise(3, correct="The minors of 4I − vvᵀ are 4ʲ(1 − Σᵢ≤ⱼ vᵢ²/4): 1, 2, 4.25 ≥ 4 at "
                     "order 3. LAPACK counts orders from 1.")
def check_exercise_3(answer):
    """The order of the first non-positive leading minor of 4I − vvᵀ: 3."""
    if integer(answer, "the order") == 2:
        raise Wrong("2 is the 0-based row; the error names the *order* of the leading "
                    "minor, counted from 1 as LAPACK's info.")
    equal(answer, 3, what="the order",
          hint="Leading minor of order j of 4I − vvᵀ: 4ʲ·(1 − (v₁² + … + vⱼ²)/4).")


@exercise(4, correct="log10(10⁶) = 6 digits: the error is relative to ‖A‖, the result is "
                     "10⁶ times smaller.")
def check_exercise_4(answer):
    """log10(1e6) = 6 digits (5 to 7 accepted)."""
    close(answer, 6.0, rtol=0.2, what="the digits lost",
          hint="The backward error is of order ε‖A‖; measured against ‖A − VVᵀ‖ it is "
               "‖A‖/‖A − VVᵀ‖ times larger. How many digits is that factor?")
