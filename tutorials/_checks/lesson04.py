"""Checkers for Lesson 4 (pivoting and stability)."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.linalg import LinAlgError
from scipy.linalg import LinAlgWarning

import oclla
from oclla import accuracy

from . import Wrong, close, equal, exercise, magnitude


@exercise(1, correct="|-3| is the largest magnitude in the column.")
def check_exercise_1(answer):
    """argmax |column| for (0.5, -3, 2, 1)."""
    equal(answer, int(np.argmax(np.abs([0.5, -3.0, 2.0, 1.0]))), what="the pivot row",
          hint="Partial pivoting takes the largest *absolute* value, rows counted from 0.")


@exercise(2, correct="ρ = 2^(n-1): the last column doubles at every step.")
def check_exercise_2(answer):
    """2**59 for Wilkinson's matrix of order 60."""
    close(answer, 2.0 ** 59, rtol=1e-12, what="the growth factor",
          hint="Factor wilkinson(4) by hand, or read the table for n = 10, 20, 40: how "
               "many times does the last column of U double?")


@exercise(3, correct="A tiny pivot makes a huge multiplier; pivoting swaps it away.")
def check_exercise_3(answer):
    """3x3, no-pivot backward error > 1000 n·ε, partial pivoting passes."""
    try:
        m = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise Wrong(f"give a 3x3 matrix of numbers ({exc}).") from exc
    if m.shape != (3, 3) or not np.all(np.isfinite(m)):
        raise Wrong(f"give a 3x3 matrix of finite numbers, got shape {m.shape}.")
    if np.linalg.matrix_rank(m) < 3:
        raise Wrong("the matrix is singular; it must be invertible.")
    try:
        with warnings.catch_warnings():       # a zero u_nn only makes the error larger
            warnings.simplefilter("ignore", LinAlgWarning)
            lu, piv = oclla.lu_factor(m, method="pivot", pivoting="none")
    except LinAlgError:
        raise Wrong("elimination without pivoting stopped at an exact zero pivot; "
                    "make that pivot tiny instead of zero.") from None
    unpivoted = accuracy.lu_backward_error(m, lu, piv)
    if not unpivoted > 1000:
        raise Wrong(f"without pivoting the backward error is only {unpivoted:.3g} nε. "
                    f"Make a pivot much smaller than the entries below it "
                    f"(think 1e-20 next to 1).")
    lu, piv = oclla.lu_factor(m, method="pivot", pivoting="partial")
    pivoted = accuracy.lu_backward_error(m, lu, piv)
    if not accuracy.passes(pivoted):
        raise Wrong(f"with partial pivoting the backward error is {pivoted:.3g} nε, "
                    f"above the threshold; choose a tamer matrix.")


@exercise(4, correct="10⁴ · 2⁻²³ ≈ 1.2e-3 (or 6e-4 with ε = 2⁻²⁴): about three correct "
                     "digits.")
def check_exercise_4(answer):
    """kappa * eps32 for kappa = 1e4, to within a factor 3 (an estimate)."""
    magnitude(answer, 1e4 * accuracy.eps(np.float32), factor=3.0, what="the estimate",
              hint="Multiply κ by ε of float32 (2^-23 ≈ 1.2e-7), not of float64.")


def _wilkinson(n: int) -> np.ndarray:
    w = np.eye(n) - np.tril(np.ones((n, n)), -1)
    w[:, -1] = 1.0
    return w


@exercise(5, correct="Complete pivoting's choice, or any other that keeps every entry at "
                     "most twice its start: the exponential growth was a choice of pivots.")
def check_exercise_5(answer):
    """Picks (row, col) for wilkinson(8) whose growth factor is at most 2."""
    try:
        from oclla.viewer.pick_pivot import PickError, play
    except ImportError:
        raise Wrong("this exercise needs the viewer (`pip install oclla[viewer]`).") from None
    if isinstance(answer, str):
        raise Wrong("give the picks themselves, a list of (row, col) pairs, not a rule's name.")
    try:
        picks = [(int(r), int(c)) for r, c in answer]
    except (TypeError, ValueError) as exc:
        raise Wrong(f"give a list of (row, col) pairs ({exc}).") from None
    n = 8
    if len(picks) != n - 1:
        raise Wrong(f"an elimination of order {n} takes {n - 1} picks, got {len(picks)}.")
    try:
        growth = play(_wilkinson(n), picks).growth
    except PickError as exc:
        raise Wrong(f"that pick cannot be taken: {exc}.") from None
    if not growth <= 2 * (1 + 1e-12):
        raise Wrong(f"the growth factor is {growth:.3g}. Look at the last column: which "
                    f"entries could be pivots without doubling it?")
