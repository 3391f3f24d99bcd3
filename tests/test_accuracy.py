"""The accuracy module checks itself: exact factors pass, perturbed ones fail."""

import numpy as np
import pytest
import scipy.linalg as sl

from oclla import accuracy

from linalg_helpers import random_matrix


def test_eps_values():
    assert accuracy.eps(np.float32) == 2.0 ** -23
    assert accuracy.eps(np.float64) == 2.0 ** -52


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_scipy_lu_passes_and_perturbed_fails(rng, dtype, n):
    a = random_matrix(rng, n, dtype)
    lu, piv = sl.lu_factor(a)
    assert accuracy.passes(accuracy.lu_backward_error(a, lu, piv))
    bad = lu.copy()
    bad[n // 2, n // 2] *= 1.05
    assert not accuracy.passes(accuracy.lu_backward_error(a, bad, piv))


def test_lu_error_uses_the_permutation(rng):
    a = random_matrix(rng, 6, np.float64)
    lu, piv = sl.lu_factor(a)
    assert (piv != np.arange(6)).any()
    assert not accuracy.passes(accuracy.lu_backward_error(a, lu, np.arange(6)))


def test_lu_error_known_value():
    # A = LU exactly except one entry off by δ: error = δ / (n ‖A‖∞ ε)
    a = np.array([[4.0, 2.0], [2.0, 3.0]])
    lu = np.array([[4.0, 2.0], [0.5, 2.0]])
    assert accuracy.lu_backward_error(a, lu, [0, 1]) == 0.0
    lu_off = lu.copy()
    lu_off[1, 1] += 1e-12
    expected = 1e-12 / (2 * 6.0 * accuracy.eps(np.float64))
    assert accuracy.lu_backward_error(a, lu_off, [0, 1]) == pytest.approx(expected, rel=1e-3)


def test_permutation_from_piv_matches_scipy(rng):
    a = random_matrix(rng, 9, np.float64)
    lu, piv = sl.lu_factor(a)
    p, l, u = sl.lu(a)
    perm = accuracy.permutation_from_piv(piv, 9)
    np.testing.assert_allclose(a[perm], l @ u, atol=1e-12)
    with pytest.raises(ValueError, match="out of range"):
        accuracy.permutation_from_piv([0, 5], 2)


def test_plu_error(rng, dtype):
    a = random_matrix(rng, 12, dtype)
    p, l, u = sl.lu(a)
    assert accuracy.passes(accuracy.plu_backward_error(a, p, l, u))
    assert not accuracy.passes(accuracy.plu_backward_error(a, p, l, u * 1.01))


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_error(rng, dtype, lower):
    m = random_matrix(rng, 20, np.float64)
    a = (m @ m.T + 20 * np.eye(20)).astype(dtype)
    c = sl.cholesky(a, lower=lower)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower))
    garbage = c + (np.triu(np.ones_like(c), 1) if lower else np.tril(np.ones_like(c), -1))
    assert accuracy.passes(accuracy.cholesky_backward_error(a, garbage, lower))
    bad = c.copy()
    bad[5, 5] *= 1.0001
    assert not accuracy.passes(accuracy.cholesky_backward_error(a, bad, lower))


def test_solve_error(rng, dtype):
    a = random_matrix(rng, 15, dtype) + 15 * np.eye(15, dtype=dtype)
    b = random_matrix(rng, 15, dtype, 3)
    x = np.linalg.solve(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    assert accuracy.passes(accuracy.solve_backward_error(a, x, b))
    assert not accuracy.passes(accuracy.solve_backward_error(a, x * 1.001, b))


def test_growth_factor():
    a = np.array([[1e-4, 1.0], [1.0, 1.0]])
    _, l, u = sl.lu(a)
    assert accuracy.growth_factor(a, u) == pytest.approx(1.0)
    u_nopivot = np.array([[1e-4, 1.0], [0.0, 1.0 - 1e4]])
    assert accuracy.growth_factor(a, u_nopivot) == pytest.approx(1e4 - 1)


def test_edge_cases():
    assert accuracy.lu_backward_error(np.zeros((0, 0)), np.zeros((0, 0)), []) == 0.0
    z = np.zeros((3, 3))
    assert accuracy.lu_backward_error(z, z, [0, 1, 2]) == 0.0
    assert accuracy.lu_backward_error(z, np.eye(3), [0, 1, 2]) == float("inf")
    assert not accuracy.passes(float("nan"))
    assert not accuracy.passes(accuracy.THRESHOLD)
