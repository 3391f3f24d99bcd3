"""Solving A·x = b after an LU: forward and back substitution as steps of the same run.

The runner solves on the device with :func:`oclla.lu_solve` and keeps, in
the run's metrics (``"solve"``), the permuted right-hand side P·b, the
forward solution y (L·y = P·b) and x (U·x = y).  :func:`append_steps` adds
one step per row after the factorization's last step::

    forward i = 0 … n−1:   y_i = (Pb)_i − Σ_{j<i} l_ij y_j       (row i of L)
    back    i = n−1 … 0:   x_i = (y_i − Σ_{j>i} u_ij x_j) / u_ii  (row i of U)

They carry no kernels (one device solve did them all: its kernels are in
the recording's "lu_solve" run); :func:`vectors_at` reveals y and x entry
by entry as the steps go, so the matrix keeps showing the factors L and U
that the substitution reads.
"""

from __future__ import annotations

import numpy as np

from oclla.trace import Step

from . import analysis

FORMULAS = {
    "forward": "forward substitution, L·y = P·b: y_{i} = (Pb)_{i} − Σ_{{j<{i}}} l_{i}j y_j",
    "back": "back substitution, U·x = y: x_{i} = (y_{i} − Σ_{{j>{i}}} u_{i}j x_j) / u_{i}{i}",
}


def append_steps(run, pb, y, x) -> None:
    """Add the substitution steps to an LU ``run`` and keep P·b, y and x in its metrics."""
    n = len(pb)
    base = len(run.steps)
    rows = [("forward", i) for i in range(n)] + [("back", i) for i in reversed(range(n))]
    for k, (phase, i) in enumerate(rows):
        region = (i, i + 1, 0, i) if phase == "forward" else (i, i + 1, i, n)
        flops = 2.0 * i if phase == "forward" else 2.0 * (n - 1 - i) + 1.0
        run.steps.append(Step(run.algorithm, base + k, phase, region, None, flops, 0.0,
                              {"solve": phase, "row": i}))
    run.metrics["solve"] = {"pb": np.asarray(pb, np.float64).tolist(),
                            "y": np.asarray(y, np.float64).tolist(),
                            "x": np.asarray(x, np.float64).tolist()}


def kept(run) -> dict | None:
    """{"pb", "y", "x"} as float64 vectors of one length, or None (no solve kept)."""
    solve = run.metrics.get("solve") if isinstance(run.metrics, dict) else None
    if not isinstance(solve, dict):
        return None
    try:
        out = {k: np.asarray(solve[k], dtype=np.float64) for k in ("pb", "y", "x")}
    except (KeyError, TypeError, ValueError):
        return None
    sizes = {v.shape for v in out.values()}
    return out if len(sizes) == 1 and next(iter(sizes))[0] > 0 and \
        len(next(iter(sizes))) == 1 else None


def vectors_at(run, position: int):
    """(n × 3 array [P·b | y | x] with entries not computed yet NaN, the cell being
    computed or None) at ``position``; None for a run without a kept solve."""
    vec = kept(run)
    if vec is None:
        return None
    n = vec["pb"].size
    out = np.full((n, 3), np.nan)
    out[:, 0] = vec["pb"]
    done = [s for s in run.steps[:position] if "solve" in s.info]
    forward = [s.info["row"] for s in done if s.info["solve"] == "forward"]
    back = [s.info["row"] for s in done if s.info["solve"] == "back"]
    out[forward, 1] = vec["y"][forward]
    out[back, 2] = vec["x"][back]
    step = analysis.step_at(run, position)
    cell = None
    if step is not None and "solve" in step.info:
        cell = (step.info["row"], 1 if step.info["solve"] == "forward" else 2)
    return out, cell


def formula(step) -> str | None:
    """The substitution formula of ``step`` (None for a factorization step)."""
    if step is None or "solve" not in step.info:
        return None
    return FORMULAS[step.info["solve"]].format(i=step.info["row"])
