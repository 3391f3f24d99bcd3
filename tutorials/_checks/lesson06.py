"""Checkers for Lesson 6 (Cholesky and packed storage)."""

from __future__ import annotations

import numpy as np

from oclla import accuracy

from . import Wrong, callable_, equal, exercise

REQUIRES = ("oclla:cholesky", "oclla.rfp:pack", "oclla.rfp:unpack", "oclla.rfp:cholesky",
            "oclla.rfp:picture")


@exercise(1, correct="t = m - k - 1 = 6 and t(t+1)/2 = 21: no idle upper half.")
def check_exercise_1(answer):
    """t(t+1)/2 with t = 10 - 3 - 1."""
    t = 10 - 3 - 1
    equal(answer, t * (t + 1) // 2, what="the number of work-items",
          hint="The trailing triangle has order t = m - k - 1 and t(t+1)/2 entries "
               "(diagonal included).")


@exercise(2, correct="Odd n: n rows and (n+1)/2 columns; even n: n+1 rows and n/2 columns.")
def check_exercise_2(answer):
    """(7, 4)."""
    try:
        rows, cols = (int(x) for x in answer)
    except (TypeError, ValueError):
        raise Wrong("give the shape as a pair (rows, columns).") from None
    if (rows, cols) == (4, 7):
        raise Wrong("rows and columns are swapped: the rectangle is tall.")
    if (rows, cols) != (7, 4):
        raise Wrong(f"({rows}, {cols}) is not right: rows x columns must be n(n+1)/2 = 28.")


def _partial_cholesky(a, steps):
    """Lower triangle after ``steps`` pivots of Algorithm 4: L's first columns, then S."""
    w = np.tril(np.array(a, dtype=np.float64))
    n = w.shape[0]
    for k in range(steps):
        w[k, k] = np.sqrt(w[k, k])
        w[k + 1:, k] /= w[k, k]
        w[k + 1:, k + 1:] -= np.tril(np.outer(w[k + 1:, k], w[k + 1:, k]))
    return w


@exercise(3, correct="Square root, normalize, subtract the outer product: Algorithm 4. "
                     "After k steps the trailing triangle holds the Schur complement.")
def check_exercise_3(answer):
    """cholesky_host(a, steps=None) -> lower triangle after `steps` pivots (all if None)."""
    callable_(answer)
    rng = np.random.default_rng(6)
    for n, steps in ((1, None), (2, None), (9, None), (9, 1), (9, 4), (6, 5)):
        m = rng.standard_normal((n, n))
        a = m @ m.T + n * np.eye(n)
        given = np.tril(a) + np.triu(rng.standard_normal((n, n)), 1)   # junk above
        got = np.asarray(answer(given.copy()) if steps is None else
                         answer(given.copy(), steps), dtype=np.float64)
        if got.shape != (n, n):
            raise Wrong(f"for n = {n} the result should be {n} x {n}, got {got.shape}.")
        if np.any(np.triu(got, 1) != 0):
            raise Wrong("the result must have zeros above the diagonal.")
        if steps is None:
            err = accuracy.cholesky_backward_error(a, got, True)
            if not accuracy.passes(err):
                raise Wrong(f"for n = {n}, L Lᵀ is not A (backward error {err:.3g} nε). "
                            f"Did you read only the lower triangle of a?")
            continue
        expected = _partial_cholesky(a, steps)
        if not np.allclose(got, expected, rtol=1e-10, atol=1e-12):
            bad = tuple(int(i) for i in np.argwhere(~np.isclose(got, expected))[0])
            where = "L's columns" if bad[1] < steps else "the trailing triangle"
            raise Wrong(f"after {steps} of {n} steps entry {bad} ({where}) is off. "
                        f"Stop after `steps` pivots: the columns done hold L, the rest of "
                        f"the lower triangle holds the updated (Schur complement) entries.")


@exercise(4, correct="4·(n² − n(n+1)/2) = 4·n(n−1)/2 bytes: just under half.")
def check_exercise_4(answer):
    """4 * (n*n - n*(n+1)/2) for n = 4096."""
    n = 4096
    equal(answer, 4 * (n * n - n * (n + 1) // 2), what="the bytes saved",
          hint="Full: n² floats; packed: n(n+1)/2 floats; 4 bytes each.")
