"""The welcome page's first runs: three small runs that show what the viewer is for.

Each is a list of run requests (the first is shown, the others compared with
it) and whether to step through LU sub-steps.  The matrices are typed in
here, so every classroom gets the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .runner import RunRequest

TINY_PIVOT = np.array([[1e-8, 1.0, 2.0, -1.0, 0.5],
                       [1.0, 2.0, -1.0, 0.5, 1.0],
                       [2.0, -1.0, 1.0, 1.0, -0.5],
                       [-1.0, 0.5, 1.0, 3.0, 1.0],
                       [0.5, 1.0, -0.5, 1.0, 2.0]])
"""A well-conditioned 5 × 5 whose (0, 0) entry is 1e-8: without pivoting it is the
first pivot, the multipliers are 1e8 and the growth ruins the factors."""

NOT_SPD = np.array([[4.0, 2.0, 2.0, 0.0],
                    [2.0, 5.0, 3.0, 1.0],
                    [2.0, 3.0, 1.5, 1.0],
                    [0.0, 1.0, 1.0, 3.0]])
"""Symmetric, with leading minors 4, 16, −8: Cholesky meets the pivot −0.5 at (2, 2)."""


@dataclass(frozen=True)
class FirstRun:
    title: str
    text: str
    requests: tuple
    substeps: bool = False


def _lu(pivoting: str, matrix=TINY_PIVOT, **kw) -> RunRequest:
    return RunRequest(algorithm="lu", variant="pivot", pivoting=pivoting, family="typed",
                      matrix=matrix, n=matrix.shape[0], **kw)


FIRST_RUNS = (
    FirstRun("Why pivot?",
             "LU with partial pivoting beside LU without, on a 5 × 5 whose first entry is "
             "1e-8: compare the growth and the backward error.",
             (_lu("partial"), _lu("none"))),
    FirstRun("LU by hand",
             "Partial pivoting on a 6 × 6, one sub-step at a time: pivot search, swap, "
             "multipliers, update, with L, U and P growing; then Ax = b by substitution.",
             (RunRequest(algorithm="lu", variant="pivot", pivoting="partial", n=6, seed=1,
                         solve=True),),
             substeps=True),
    FirstRun("When Cholesky fails",
             "A symmetric matrix that is not positive definite: the run stops at the first "
             "pivot that is not positive.",
             (RunRequest(algorithm="cholesky", variant="pivot", family="typed", matrix=NOT_SPD,
                         n=NOT_SPD.shape[0]),)),
)
