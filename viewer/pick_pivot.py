"""Gaussian elimination where the student picks every pivot, as in Moler's ``lugui``.

At step k the pivot may be any nonzero entry of the trailing matrix (rows and
columns k … n−1).  Picking (r, c) interchanges rows k and r and columns k and
c, then eliminates below it.  Rules pick for the student:

* ``"partial"``  — the largest |a_ik| in column k (rows only: LAPACK's choice);
* ``"complete"`` — the largest |a_ij| of the whole trailing matrix;
* ``"diagonal"`` — a_kk, no interchange at all;
* ``"click"``    — none: the picks come from :meth:`PivotGame.pick`.

The elimination is oclla's own: each pick reruns the per-pivot LU *without*
pivoting on P·A·Q (the rows and columns in the order picked so far) on the
OpenCL device, recorded with a snapshot per step, and the game shows its
first k steps.  Step k of an elimination only depends on which rows and
columns came first, so those k steps are exactly what the picks did.  The
growth factor max |a_ij^(k)| / max |a_ij| is the viewer's
(:func:`viewer.analysis.growth_by_position`).

Headless, for a lesson::

    from oclla.viewer.pick_pivot import play
    result = play(a, "complete")          # or "partial", "diagonal", or [(r, c), ...]
    result.growth                         # growth factor of the whole elimination
    result.growth_by_step, result.states  # after each step, and the matrices (P·A·Q)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.linalg import LinAlgError

import oclla

from . import analysis

RULES = ("partial", "complete", "diagonal", "click")


class PickError(ValueError):
    """A pick the elimination cannot take (outside the trailing matrix, or a zero pivot)."""


class PivotGame:
    """One elimination with pivots picked step by step (see the module docstring)."""

    def __init__(self, a, rule: str = "click", queue=None):
        a = np.asarray(a)
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
            raise PickError(f"the matrix must be square, got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise PickError("the matrix holds Inf or NaN")
        if rule not in RULES:
            raise PickError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
        self.a = a if a.dtype in (np.float32, np.float64) else a.astype(np.float64)
        self.rule = rule
        self.queue = queue
        self.rows = list(range(self.n))
        self.cols = list(range(self.n))
        self.k = 0
        self._history: list = []
        self.run = self._eliminate()

    @property
    def n(self) -> int:
        return self.a.shape[0]

    @property
    def done(self) -> bool:
        """Every pivot picked (the last one, a_{n-1,n-1}, needs no choice)."""
        return self.k >= self.n - 1

    @property
    def matrix(self) -> np.ndarray:
        """The working matrix (P·A·Q after k elimination steps)."""
        return analysis.matrix_at(self.run, self.k)

    @property
    def growth(self) -> float:
        """Growth factor of the steps taken so far."""
        growth = analysis.growth_by_position(self.run)
        return float(growth[min(self.k, growth.size - 1)]) if growth is not None else 1.0

    def suggestion(self, rule: str | None = None) -> tuple[int, int]:
        """The (row, col) that ``rule`` (default: the game's) would pick at this step."""
        rule = rule or self.rule
        k, trailing = self.k, np.abs(np.asarray(self.matrix, np.float64))[self.k:, self.k:]
        if rule == "partial":
            return k + int(np.argmax(trailing[:, 0])), k
        if rule == "complete":
            r, c = np.unravel_index(int(np.argmax(trailing)), trailing.shape)
            return k + int(r), k + int(c)
        if rule == "diagonal":
            return k, k
        raise PickError(f"rule {rule!r} does not pick by itself; click a pivot")

    def pick(self, row: int, col: int) -> None:
        """Take (row, col) of the current matrix as pivot k and eliminate below it."""
        if self.done:
            raise PickError("every pivot is already picked")
        k = self.k
        if not (k <= row < self.n and k <= col < self.n):
            raise PickError(f"pick a pivot in rows and columns {k}…{self.n - 1}, "
                            f"got ({row}, {col})")
        if self.matrix[row, col] == 0:
            raise PickError(f"a[{row}, {col}] is zero: it cannot be a pivot")
        self._history.append((list(self.rows), list(self.cols), self.run))
        self.rows[k], self.rows[row] = self.rows[row], self.rows[k]
        self.cols[k], self.cols[col] = self.cols[col], self.cols[k]
        self.k += 1
        self.run = self._eliminate()

    def undo(self) -> None:
        """Take the last pick back (nothing to undo: no change)."""
        if self._history:
            self.rows, self.cols, self.run = self._history.pop()
            self.k -= 1

    def step(self) -> None:
        """Pick by the game's rule."""
        self.pick(*self.suggestion())

    def finish(self) -> None:
        """Pick by the game's rule until every pivot is picked."""
        self.finish_by(self.rule)

    def finish_by(self, rule: str) -> None:
        """Pick by ``rule`` until every pivot is picked."""
        while not self.done:
            self.pick(*self.suggestion(rule))

    def recording(self) -> oclla.Recording:
        """The elimination so far as a recording the viewer shows."""
        rec = oclla.Recording()
        rec.runs.append(self.run)
        return rec

    def _eliminate(self):
        """oclla's per-pivot LU without pivoting on P·A·Q, its first k steps."""
        paq = np.ascontiguousarray(self.a[np.ix_(self.rows, self.cols)])
        with oclla.record(snapshots=True) as rec:
            try:
                oclla.lu_factor(paq, method="pivot", variant="inplace", pivoting="none",
                                queue=self.queue)
            except LinAlgError:     # a zero pivot later in this order: not reached yet
                pass
        run = [r for r in rec.runs if r.algorithm == "lu"][-1]
        return dataclasses.replace(
            run, variant="pick", steps=run.steps[:self.k], result=None, error=None,
            params={**run.params, "pivoting": self.rule, "rows": list(self.rows),
                    "cols": list(self.cols)})


@dataclass
class GameResult:
    """What :func:`play` returns."""

    growth: float                 # growth factor of the whole elimination
    growth_by_step: list          # after 0, 1, …, n−1 steps
    states: list                  # the matrix (P·A·Q) after 0, 1, …, n−1 steps
    rows: list                    # row order picked: P·A = A[rows]
    cols: list                    # column order picked: A·Q = A[:, cols]
    game: PivotGame


def play(a, rule="partial", queue=None) -> GameResult:
    """Eliminate ``a`` with pivots picked by ``rule`` ("partial", "complete", "diagonal")
    or given as a list of (row, col) picks in the current matrix's coordinates."""
    picks = None if isinstance(rule, str) else [tuple(p) for p in rule]
    game = PivotGame(a, "click" if picks is not None else rule, queue)
    if picks is None:
        game.finish()
    else:
        for row, col in picks:
            game.pick(row, col)
    growth = analysis.growth_by_position(game.run)
    states = [analysis.matrix_at(game.run, p) for p in range(game.k + 1)]
    gs = [float(g) for g in growth] if growth is not None else [1.0] * len(states)
    return GameResult(gs[-1], gs, states, list(game.rows), list(game.cols), game)
