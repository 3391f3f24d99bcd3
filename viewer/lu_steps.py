"""LU elimination in sub-steps, and the factors L, U and P as they grow (pure numpy, no Qt).

A per-pivot LU records one step per column k: the matrix before it and after
it, and the rows it interchanged (``info["swaps"]``).  That is enough to show
the step as the four moves a student does by hand, every value taken from
the recording (the viewer does no arithmetic of the factorization)::

    search       the column below the pivot, its largest |a_ik| marked ("pivot"
                 without partial pivoting: a_kk as it is)
    swap         rows k and p interchanged            (skipped when p = k)
    multipliers  l_ik = a_ik / a_kk written below the pivot
    update       a_ij <- a_ij - l_ik u_kj: the recorded matrix after the step

The sub-steps are finer positions of the same recorded step: its kernels,
its time and its place on the scrub bar stay those of the step.  Only the
right-looking variants (:data:`RIGHT_LOOKING`) update the whole trailing
matrix in step k; a Crout-order step computes one column of L and one row of
U instead, and the faithful variant keeps L apart, so their steps have no
sub-steps, nor has a step whose recorded matrices do not fit the picture.

:func:`factors` splits any intermediate matrix into L (unit lower, the
finished columns), U (the finished rows) and P, and checks PA = L·Ũ, where
Ũ is U with the not yet factored trailing matrix below it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oclla import accuracy

from . import analysis, registry

FORMULAS = {
    "pivot": "pivot: a_{k}{k} = {v}, taken as it is ({how}: no search, no swap)",
    "search": "pivot search: p = argmax_{{i ≥ {k}}} |a_i{k}| → row {p}: a_{p}{k} = {v}",
    "swap": "swap rows {k} ↔ {p}: P ← P_{k} P, the whole rows (L part included)",
    "multipliers": "multipliers: l_i{k} = a_i{k} / a_{k}{k} for i > {k}  (a_{k}{k} = {v})",
    "update": "update: a_ij ← a_ij − l_i{k} · u_{k}j for i, j > {k}",
}


RIGHT_LOOKING = ("inplace", "pick")
"""Trace variants of the LU whose step k is the textbook elimination of column k."""


@dataclass(frozen=True)
class Frame:
    """One sub-step: what the matrix holds and what to point at.

    ``k`` is the column eliminated and ``pivot_row`` the row its pivot comes
    from; ``finished`` the L columns complete in ``matrix``; ``perm`` the row order so far (PA is
    ``A[perm]``); ``check`` the matrix and finished count for which PA = L·Ũ
    holds exactly (the multipliers frame checks against the one before it).
    """

    name: str
    k: int
    pivot_row: int
    matrix: np.ndarray
    formula: str
    finished: int
    perm: np.ndarray
    check: tuple


def perm_before(run, position: int) -> np.ndarray:
    """Row order after the swaps of the steps before ``position`` (PA = A[perm])."""
    perm = np.arange(analysis.order(run))
    for s in run.steps[:max(position, 0)]:
        for a, b in s.info.get("swaps", ()):
            perm[[a, b]] = perm[[b, a]]
    return perm


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def substeps(run, position: int) -> list:
    """The frames leading to ``position`` (the last is the recorded matrix), or []."""
    step = analysis.step_at(run, position)
    if (step is None or run.algorithm != "lu" or run.variant not in RIGHT_LOOKING
            or step.phase != "eliminate" or step.pivot is None):
        return []
    before = analysis.matrix_at(run, position - 1)
    after = analysis.matrix_at(run, position)
    if not (analysis.is_square(before) and analysis.is_square(after)) \
            or before is after:
        return []
    k = int(step.pivot[1])
    n = before.shape[0]
    swaps = step.info.get("swaps", [])
    p = int(swaps[0][1]) if swaps else k
    if not (0 <= k < n and k <= p < n):
        return []
    swapped = before.copy()
    swapped[[k, p]] = swapped[[p, k]]
    # the recording must show an in-place right-looking step: rows up to k and the
    # columns left of k are the swapped matrix's, nothing else moved
    if not (np.array_equal(swapped[:k + 1], after[:k + 1])
            and np.array_equal(swapped[:, :k], after[:, :k])):
        return []
    perm0 = perm_before(run, position - 1)
    perm1 = perm0.copy()
    perm1[[k, p]] = perm1[[p, k]]
    mult = swapped.copy()
    mult[k + 1:, k] = after[k + 1:, k]
    pivoting = str(run.params.get("pivoting", "partial"))
    words = dict(k=k, p=p, v=_fmt(float(swapped[k, k])),
                 how=registry.PIVOTING_NAMES.get(pivoting, pivoting))
    text = {name: f.format(**words) for name, f in FORMULAS.items()}
    first = "search" if pivoting == "partial" else "pivot"
    frames = [Frame(first, k, p, before, text[first], k, perm0, (before, k))]
    if p != k:
        frames.append(Frame("swap", k, p, swapped, text["swap"], k, perm1, (swapped, k)))
    frames += [Frame("multipliers", k, p, mult, text["multipliers"], k + 1, perm1,
                     (swapped, k)),
               Frame("update", k, p, after, text["update"], k + 1, perm1, (after, k + 1))]
    return frames


def frame_overlays(run, position: int, frame: Frame) -> analysis.Overlays:
    """The overlays of one sub-step (the recorded step's for the update frame)."""
    ov = analysis.overlays(run, position)
    n = frame.matrix.shape[0]
    k, p = frame.k, frame.pivot_row
    ov.finished = k
    ov.multipliers = None
    if frame.name in ("search", "pivot"):
        ov.active = (k, n, k, k + 1) if frame.name == "search" else None
        ov.pivot = (p, k)
        ov.swapped_rows = []
    elif frame.name == "swap":
        ov.active = (k, n, k, k + 1)
        ov.pivot = (k, k)
        ov.swapped_rows = sorted({k, p})
    elif frame.name == "multipliers":
        ov.swapped_rows = []
        ov.finished = k + 1
        ov.multipliers = (k + 1, n, k, k + 1) if k + 1 < n else None
    return ov


@dataclass(frozen=True)
class Factors:
    """L, U and P of an intermediate matrix; NaN marks what is not known yet."""

    lower: np.ndarray
    upper: np.ndarray
    perm: np.ndarray
    check: float          # ‖PA − L·Ũ‖∞ / (n ‖A‖∞ ε)

    @property
    def p_matrix(self) -> np.ndarray:
        n = self.perm.size
        p = np.zeros((n, n))
        p[np.arange(n), self.perm] = 1.0
        return p


def factors(run, matrix, finished: int, perm, check=None) -> Factors | None:
    """Split ``matrix`` (a per-pivot LU's working array) into L, U, P and check PA = L·Ũ.

    ``finished`` columns of L (and rows of U) are complete; ``check`` is
    (matrix, finished) to check with when ``matrix`` itself is half-way through
    a step.  None when the run has no initial matrix or is not an LU.
    """
    a = run.initial
    if registry.display(run.algorithm).storage != "lu" or not analysis.is_square(a) \
            or not analysis.is_square(matrix) or matrix.shape != a.shape:
        return None
    n = a.shape[0]
    t = min(int(finished), n)
    m = np.asarray(matrix, dtype=np.float64)
    rows, cols = np.indices((n, n))
    below = np.where(rows > cols, m, (rows == cols).astype(np.float64))
    lower = np.where(cols < t, below, np.nan)
    upper = np.where(rows < t, np.where(rows <= cols, m, 0.0), np.nan)
    cm, ct = check if check is not None else (m, t)
    return Factors(lower, upper, np.asarray(perm), _check(a, np.asarray(cm), int(ct), perm,
                                                          run.dtype))


def _check(a, m, t: int, perm, dtype) -> float:
    """‖PA − L·Ũ‖∞ / (n‖A‖∞ε) with L from the first t columns and Ũ the rest of ``m``."""
    n = a.shape[0]
    m = np.asarray(m, dtype=np.float64)
    lo = np.eye(n)
    lo[:, :t] += np.tril(m[:, :t], -1)
    up = np.triu(m)
    up[t:, t:] = m[t:, t:]
    with np.errstate(over="ignore", invalid="ignore"):
        return accuracy.plu_backward_error(np.asarray(a, np.float64)[perm], np.eye(n), lo,
                                           up.astype(dtype))


def factors_at(run, position: int) -> Factors | None:
    """L, U, P of the recorded matrix at ``position`` (all of U at the end of the run)."""
    m = analysis.matrix_at(run, position)
    if m is None:
        return None
    t = analysis.finished_columns(run, position)
    if position == analysis.n_positions(run) - 1 and not run.error:
        t = analysis.order(run)
    return factors(run, m, t, perm_before(run, position))
