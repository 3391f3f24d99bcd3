"""Checkers for Lesson 7 (weighted least squares, mixed-precision refinement)."""

from __future__ import annotations

import numpy as np

from . import Wrong, callable_, close, equal, exercise, magnitude

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


def _refine_result(answer, c, g, tol):
    """Call ``answer`` and check the shape of what it returns: (x, corrections)."""
    out = answer(c.copy(), g.copy(), tol)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise Wrong("return a pair (x, corrections): the float64 solution and the list of "
                    "‖dx‖/‖x‖ of every refinement step.")
    x, corrections = np.asarray(out[0]), np.asarray(out[1], dtype=np.float64).ravel()
    if x.shape != g.shape:
        raise Wrong(f"x should have shape {g.shape}, got {x.shape}.")
    if x.dtype != np.float64:
        raise Wrong("return the refined x in float64.")
    if corrections.size == 0 or not np.all(np.isfinite(corrections)):
        raise Wrong("corrections should list ‖dx‖₂/‖x‖₂ (finite numbers) of every "
                    "refinement step; yours is empty or not finite.")
    return x, corrections


@exercise(3, correct="float32 factor once, float64 residuals, a stopping test on the "
                     "correction: float64 accuracy for float32 work, whatever the scaling.")
def check_exercise_3(answer):
    """mixed_refine(C, g, tol) -> (x, corrections): Algorithm 1, scale-free stopping."""
    callable_(answer)
    tol = 1e-12
    for kappa in (1e2, 1e5):
        c, g = _problem(kappa)
        x_ref = np.linalg.solve(c, g)
        steps = None
        # 2^±26 scales C and g exactly (in float32 too, and its square root is 2^±13):
        # a scale-free method does exactly the same steps on all three problems
        for scale in (1.0, 2.0 ** -26, 2.0 ** 26):
            x, corrections = _refine_result(answer, c * scale, g * scale, tol)
            err = np.linalg.norm(x - x_ref) / np.linalg.norm(x_ref)
            bound = 100 * kappa * np.finfo(np.float64).eps
            if not err <= bound:
                raise Wrong(f"for κ = {kappa:.0e} (C and g scaled by {scale:.1e}) the relative "
                            f"error is {err:.1e}, more than float64 allows ({bound:.0e}). Are "
                            f"the residuals g - Cx in float64, do you add the corrections to "
                            f"x, and does your stopping test depend on the scaling of C?")
            if not corrections[0] > 1e-9:
                raise Wrong(f"the first correction is only {corrections[0]:.1e}: x0 must come "
                            f"from the float32 factor (its error is about κ·ε32), and the "
                            f"corrections from the same float32 factor.")
            if not corrections[-1] <= tol or len(corrections) > 100:
                raise Wrong(f"stop as soon as ‖dx‖/‖x‖ <= tol (at most 100 steps); the last "
                            f"of your {len(corrections)} corrections is {corrections[-1]:.1e}.")
            if steps is None:
                steps = len(corrections)
            elif len(corrections) != steps:
                raise Wrong(f"scaling C and g by {scale:.1e} changed the number of steps "
                            f"({steps} -> {len(corrections)}): the stopping test is not "
                            f"scale-free. ‖r‖/‖x‖ has the units of C; ‖dx‖/‖x‖ has none.")


@exercise(4, correct="10⁶ · 2.2e-16 ≈ 2e-10 (1e-10 with ε = 2⁻⁵³), like the paper's Table 2.")
def check_exercise_4(answer):
    """kappa * eps64 for kappa = 1e6, to within a factor 3 (an estimate)."""
    magnitude(answer, 1e6 * np.finfo(np.float64).eps, factor=3.0, what="the estimate",
              hint="The residual is float64: multiply κ(C) by ε of float64 (≈ 2.2e-16).")
