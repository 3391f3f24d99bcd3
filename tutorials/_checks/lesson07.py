"""Checkers for Lesson 7 (weighted least squares, mixed-precision refinement)."""

from __future__ import annotations

import numpy as np

from . import Wrong, callable_, close, equal, exercise

REQUIRES = ("oclla:wls_solve", "oclla:assemble_ad2at")


@exercise(1, correct="Each step gains two digits: eight digits take four steps.")
def check_exercise_1(answer):
    """log(1e-12 / 1e-4) / log(0.01) = 4."""
    equal(answer, 4, what="the number of steps",
          hint="Solve 1e-4 * 0.01**k = 1e-12 for k.")


@exercise(2, correct="κ(C) = κ(DAᵀ)²: the normal equations square the condition number.")
def check_exercise_2(answer):
    """(1e3)**2."""
    close(answer, 1e6, rtol=1e-9, what="κ(C)",
          hint="C = (DAᵀ)ᵀ(DAᵀ); its singular values are the squares of DAᵀ's.")


def _problem(kappa: float, m: int = 40, seed: int = 7):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    c = q @ np.diag(np.logspace(0, -np.log10(kappa), m)) @ q.T
    c = (c + c.T) / 2
    x = rng.standard_normal(m)
    return c, c @ x


@exercise(3, correct="float32 factor once, float64 residuals: float64 accuracy for "
                     "float32 work.")
def check_exercise_3(answer):
    """mixed_refine(C, g, tol) reaches float64 accuracy where float32 cannot."""
    callable_(answer)
    for kappa in (1e2, 1e5):
        c, g = _problem(kappa)
        x_ref = np.linalg.solve(c, g)
        x = np.asarray(answer(c.copy(), g.copy(), 1e-12), dtype=np.float64)
        if x.shape != g.shape:
            raise Wrong(f"the result should have shape {g.shape}, got {x.shape}.")
        if x.dtype != np.float64:
            raise Wrong("return the refined x in float64.")
        err = np.linalg.norm(x - x_ref) / np.linalg.norm(x_ref)
        bound = 100 * kappa * np.finfo(np.float64).eps
        if not err <= bound:
            raise Wrong(f"for κ = {kappa:.0e} the relative error is {err:.1e}, more than "
                        f"float64 allows ({bound:.0e}). Are the residuals g - Cx in float64, "
                        f"and do you add the corrections to x?")


@exercise(4, correct="10⁶ · 2.2e-16 ≈ 2e-10, like the paper's Table 2.")
def check_exercise_4(answer):
    """kappa * eps64 for kappa = 1e6."""
    close(answer, 1e6 * np.finfo(np.float64).eps, rtol=0.1, what="the estimate",
          hint="ε(float64) = 2^-52 ≈ 2.2e-16.")
