"""Checkers for Lesson 2 (Gaussian elimination on a GPU)."""

from __future__ import annotations

import numpy as np
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy

from . import Wrong, callable_, close, exercise, number

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


@exercise(1, correct="Row 2 (|6| is the largest) became the pivot row; the multipliers "
                     "-2/3, 1/3, 2/3 went to L, all of size at most 1.")
def check_exercise_1(answer):
    """U after the first step of partial pivoting on the post's A (rows 0 and 2 swapped)."""
    u = _matrix(answer, (4, 4), "U")
    pivot_row = int(np.argmax(np.abs(POST_A[:, 0])))
    swapped = POST_A[[pivot_row, 1, 0, 3]]
    expected = _eliminate(swapped, 1)
    if np.allclose(u, _eliminate(POST_A, 1)):
        raise Wrong("that is the step without pivoting (section 3). Which row has the "
                    "largest |a[r, 0]|? Interchange it with row 0 first.")
    if np.allclose(u[1:, 0], swapped[1:, 0] / swapped[0, 0]):
        raise Wrong("column 0 below the pivot holds the multipliers: that is L's job, "
                    "U has zeros there.")
    if not np.allclose(u, expected):
        bad = np.argwhere(~np.isclose(u, expected))[0]
        raise Wrong(f"entry {tuple(int(i) for i in bad)} is off. Interchange rows 0 and "
                    f"{pivot_row}, then row r becomes row r - (a[r,0] / a[0,0]) * row 0.")


def _det_cases():
    """(packed lu, piv, det(A)) for matrices the student does not see."""
    rng = np.random.default_rng(12)
    cases = []
    lu, piv = oclla.lu_factor(POST_A, method="pivot", variant="faithful")
    cases.append((lu, piv, 1272.0))                  # no interchanges
    for n in (2, 5, 8):
        a = rng.uniform(-1, 1, (n, n))
        lu, piv = oclla.lu_factor(a)                   # partial pivoting: interchanges
        cases.append((lu, piv, float(np.linalg.det(a))))
    swap = np.array([[0.0, 2.0], [3.0, 0.0]])          # one interchange: det = -6
    lu, piv = oclla.lu_factor(swap)
    cases.append((lu, piv, -6.0))
    return cases


@exercise(2, correct="det(A) = (-1)^(number of interchanges) · u_00 u_11 ... u_(n-1)(n-1).")
def check_exercise_2(answer):
    """det_from_lu(lu, piv): the determinant from packed factors and interchanges."""
    callable_(answer)
    for lu, piv, det in _det_cases():
        n = lu.shape[0]
        got = number(answer(lu.copy(), piv.copy()), "det_from_lu(lu, piv)")
        if abs(got + det) <= 1e-9 * abs(det) and det != 0:
            raise Wrong(f"for a {n} x {n} matrix with piv = {piv.tolist()} the sign is wrong: "
                        f"every row interchange (piv[k] != k) flips the sign of det.")
        close(got, det, rtol=1e-5, what=f"det_from_lu for the {n} x {n} matrix with "
              f"piv = {piv.tolist()}",
              hint="det(L) = 1 (unit diagonal); det(U) is the product of its diagonal; "
                   "each interchange multiplies det by -1.")


class _NoFullSolve(np.ndarray):
    """An array that refuses to be handed to a general solver (the exercise forbids it)."""

    _FORBIDDEN = {np.linalg.solve, np.linalg.inv, np.linalg.lstsq, np.linalg.pinv}

    def __array_function__(self, func, types, args, kwargs):
        if func in self._FORBIDDEN:
            raise Wrong(f"np.linalg.{func.__name__} solves a general system; the exercise "
                        f"asks for the two triangular substitutions.")
        result = super().__array_function__(func, types, args, kwargs)
        if type(result) is np.ndarray:          # np.tril, np.where, ... keep the mark
            result = result.view(_NoFullSolve)
        return result


@exercise(3, correct="Forward substitution, then back substitution: O(n²) each.")
def check_exercise_3(answer):
    """solve_with_lu(L, U, b): two triangular solves, reading only the triangles."""
    callable_(answer)
    rng = np.random.default_rng(2)
    for n in (1, 3, 17):
        l = np.tril(rng.uniform(-1, 1, (n, n)), -1) + np.eye(n)
        u = np.triu(rng.uniform(-1, 1, (n, n))) + n * np.eye(n)
        b = rng.standard_normal(n)
        # junk where the factors are known to be 0 or 1: as in the packed lu, only
        # L's strict lower triangle and U's upper triangle are data
        l_given = l + np.triu(rng.uniform(5, 9, (n, n)))
        u_given = u + np.tril(rng.uniform(5, 9, (n, n)), -1)
        x = np.asarray(answer(l_given.view(_NoFullSolve), u_given.view(_NoFullSolve),
                              b.copy()), dtype=np.float64)
        if x.shape != (n,):
            raise Wrong(f"for n = {n} the result should have shape ({n},), got {x.shape}.")
        err = accuracy.solve_backward_error(l @ u, x, b)
        if not accuracy.passes(err):
            raise Wrong(f"for n = {n}, L U x is not b (backward error {err:.3g} n·ε). "
                        f"Read only L's strict lower triangle (its diagonal is 1) and U's "
                        f"upper triangle: the checker puts junk everywhere else. "
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
