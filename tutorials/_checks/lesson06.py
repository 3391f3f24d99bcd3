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


@exercise(3, correct="Square root, normalize, subtract the outer product: Algorithm 4.")
def check_exercise_3(answer):
    """cholesky_host(a) -> L, reading only the lower triangle."""
    callable_(answer)
    rng = np.random.default_rng(6)
    for n in (1, 2, 9):
        m = rng.standard_normal((n, n))
        a = m @ m.T + n * np.eye(n)
        given = np.tril(a) + np.triu(rng.standard_normal((n, n)), 1)   # junk above
        l = np.asarray(answer(given.copy()), dtype=np.float64)
        if l.shape != (n, n):
            raise Wrong(f"for n = {n} the result should be {n} x {n}, got {l.shape}.")
        if np.any(np.triu(l, 1) != 0):
            raise Wrong("L must have zeros above the diagonal.")
        err = accuracy.cholesky_backward_error(a, l, True)
        if not accuracy.passes(err):
            raise Wrong(f"for n = {n}, L Lᵀ is not A (backward error {err:.3g} nε). "
                        f"Did you read only the lower triangle of a?")


@exercise(4, correct="4·(n² − n(n+1)/2) = 4·n(n−1)/2 bytes: just under half.")
def check_exercise_4(answer):
    """4 * (n*n - n*(n+1)/2) for n = 4096."""
    n = 4096
    equal(answer, 4 * (n * n - n * (n + 1) // 2), what="the bytes saved",
          hint="Full: n² floats; packed: n(n+1)/2 floats; 4 bytes each.")
