"""Checkers for Lesson 2 (Gaussian elimination on a GPU)."""

from __future__ import annotations

import numpy as np
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy

from . import Wrong, callable_, close, exercise

POST_A = np.array([[2, 4, 3, 5], [-4, -7, -5, 8], [6, 8, 2, 9], [4, 9, -2, 14]], float)


def _matrix(answer, shape=None, what="your matrix") -> np.ndarray:
    try:
        m = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise Wrong(f"{what} should be a matrix of numbers ({exc}).") from exc
    if m.ndim != 2 or (shape is not None and m.shape != shape):
        raise Wrong(f"{what} should have shape {shape or '(n, n)'}, got {m.shape}.")
    if not np.all(np.isfinite(m)):
        raise Wrong(f"{what} has NaN or Inf entries.")
    return m


def _eliminate(a, columns):
    """U after eliminating the first ``columns`` pivot columns, without pivoting."""
    u = np.array(a, dtype=np.float64)
    for k in range(columns):
        u[k + 1:] -= np.outer(u[k + 1:, k] / u[k, k], u[k])
    return u


@exercise(1, correct="Rows 1..3 lost their first entry; the multipliers -2, 3, 2 went to L.")
def check_exercise_1(answer):
    """U after eliminating column 0 of the post's A."""
    u = _matrix(answer, (4, 4), "U")
    expected = _eliminate(POST_A, 1)
    if np.allclose(u[1:, 0], POST_A[1:, 0] / POST_A[0, 0]):
        raise Wrong("column 0 below the pivot holds the multipliers: that is L's job, "
                    "U has zeros there.")
    if not np.allclose(u, expected):
        bad = np.argwhere(~np.isclose(u, expected))[0]
        raise Wrong(f"entry {tuple(int(i) for i in bad)} is off. Row r becomes "
                    f"row r - (a[r,0] / a[0,0]) * row 0.")


@exercise(2, correct="det(A) = det(L) det(U) = 2 * 1 * (-3) * (-212).")
def check_exercise_2(answer):
    """det(A) from U's diagonal."""
    close(answer, float(np.prod(np.diag(_eliminate(POST_A, 3)))), rtol=1e-9,
          what="det(A)", hint="Multiply the diagonal entries of U (mind the signs).")


@exercise(3, correct="Forward substitution, then back substitution: O(n²) each.")
def check_exercise_3(answer):
    """solve_with_lu(L, U, b): two triangular solves."""
    callable_(answer)
    rng = np.random.default_rng(2)
    for n in (1, 3, 17):
        l = np.tril(rng.uniform(-1, 1, (n, n)), -1) + np.eye(n)
        u = np.triu(rng.uniform(-1, 1, (n, n))) + n * np.eye(n)
        b = rng.standard_normal(n)
        x = np.asarray(answer(l.copy(), u.copy(), b.copy()), dtype=np.float64)
        if x.shape != (n,):
            raise Wrong(f"for n = {n} the result should have shape ({n},), got {x.shape}.")
        err = accuracy.solve_backward_error(l @ u, x, b)
        if not accuracy.passes(err):
            raise Wrong(f"for n = {n}, L U x is not b (backward error {err:.3g} n·ε). "
                        f"Forward: y_i = b_i - sum_j<i L_ij y_j; "
                        f"back: x_i = (y_i - sum_j>i U_ij x_j) / U_ii, i from n-1 down.")


@exercise(4, correct="Invertible, yet elimination without row interchanges meets a zero "
                     "pivot: the reason for pivoting.")
def check_exercise_4(answer):
    """An invertible 3x3 matrix with a non-zero diagonal on which the faithful LU fails."""
    m = _matrix(answer, (3, 3))
    if np.any(np.diag(m) == 0):
        raise Wrong("no zero on the diagonal, please: make the zero pivot appear during "
                    "elimination.")
    if np.linalg.matrix_rank(m) < 3:
        raise Wrong("this matrix is singular: every method fails on it. Find an invertible one.")
    try:
        oclla.lu_factor(m, method="pivot", variant="faithful")
    except LinAlgError:
        return
    raise Wrong("the faithful variant factored it without trouble. Make the (1, 1) entry "
                "zero *after* the first elimination step.")
