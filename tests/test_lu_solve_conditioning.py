"""lu_solve with ill-conditioned triangular factors: the backward error of the solve
(oclla.accuracy.solve_backward_error, units of nε) against scipy's, on factors whose
U has diagonal blocks of condition 1e6-1e11 (Kahan matrices), orders straddling the
trsm block.  Multiplying by inverted diagonal blocks gave 50-1e5 nε in float64 here
(scipy: below 0.01); substitution stays within a decimal digit of scipy in both dtypes."""

import numpy as np
import pytest
import scipy.linalg as sl

import oclla
from oclla import _params, accuracy


def kahan(n: int, theta: float) -> np.ndarray:
    """Kahan's upper triangle diag(sⁱ)·(I − c·strict upper ones), s = sin θ, c = cos θ:
    ill-conditioned (κ ≈ 1e11 at n = 63, θ = 1.2) with no small pivot to warn of it."""
    s, c = np.sin(theta), np.cos(theta)
    return s ** np.arange(n)[:, None] * (np.eye(n) - c * np.triu(np.ones((n, n)), 1))


def block_kahan(n: int, nb: int, theta: float, rng) -> np.ndarray:
    """U with a Kahan triangle of order <= nb in every diagonal block of the trsm, and
    small random entries above the blocks."""
    u = np.triu(rng.uniform(-0.1, 0.1, (n, n)), 1)
    for k0 in range(0, n, nb):
        kb = min(nb, n - k0)
        u[k0:k0 + kb, k0:k0 + kb] = kahan(kb, theta)
    return u


def factors(n, nb, theta, dtype):
    """(lu, piv) of A = L·U: unit L with multipliers in [-1, 1], U block-Kahan,
    no interchanges; and A in float64."""
    rng = np.random.default_rng(n)
    l = np.tril(rng.uniform(-1, 1, (n, n)), -1)
    lu = (l + block_kahan(n, nb, theta, rng)).astype(dtype)
    low, up = accuracy.split_lu(lu)
    return lu, np.arange(n, dtype=np.int32), low.astype(np.float64) @ up.astype(np.float64)


@pytest.fixture(params=[None, "rows", "columns", "chain"],
                ids=["device", "rows", "columns", "chain"])
def few_rhs(request, queue, dtype):
    """The device's trsm parameters, or FEW_RHS = 2 with each FEW_ROUTE: the two
    right-hand sides below go to trsm_rows or trsm_chain, whose blocks the LU's solve
    substitutes too, or to trsm_columns.  (Two, not more: work-groups as wide as the
    right-hand sides; PoCL takes about two minutes to compile trsm_chain for
    TRSM_NB x 16 items, five seconds for TRSM_NB x 2.)"""
    if request.param is not None:
        _params.override("trsm", dict(_params.params(queue, "trsm", dtype), FEW_RHS=2,
                                      FEW_ROUTE=request.param))
    yield request.param
    _params.override("trsm", None)


@pytest.mark.parametrize("theta", [1.2, 1.35])
@pytest.mark.parametrize("extra", [-1, 1, 67])
def test_ill_conditioned_u_backward_error(queue, dtype, extra, theta, few_rhs):
    nb = _params.params(queue, "trsm", dtype)["TRSM_NB"]
    n = nb + extra
    lu, piv, a = factors(n, nb, theta, dtype)
    x_true = np.random.default_rng(1).standard_normal((n, 2))
    for trans in (0, 1):
        op = a if trans == 0 else a.T
        b = (op @ x_true).astype(dtype)          # x of moderate size: b in T's range
        x = oclla.lu_solve((lu, piv), b, trans=trans, queue=queue)
        error = accuracy.solve_backward_error(op, x, b)
        reference = accuracy.solve_backward_error(op, sl.lu_solve((lu, piv), b, trans=trans), b)
        assert accuracy.passes(error), f"n={n} trans={trans}: {error:.3g} nε"
        assert error <= 10 * reference + 0.01, \
            f"n={n} trans={trans}: {error:.3g} nε against scipy's {reference:.3g}"
