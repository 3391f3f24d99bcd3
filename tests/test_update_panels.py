"""cholesky_update's blocked method across panel boundaries: run under a recorder (the
profiling queue, a trace step per kernel) and without (the launch queue) it gives the
same factor bitwise, accurate, at odd orders past two and four panels, both signs and
dtypes; a downdate that fails in the third panel names the same order either way and
leaves the caller's factor alone."""

import numpy as np
import pytest
import scipy.linalg as sl
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy, update


def _problem(n, k, sign, dtype, seed):
    """(Ã, R, V): A = X·Xᵀ/n + I (+ V·Vᵀ for a downdate, so that Ã = A ± V·Vᵀ stays
    well conditioned), R its upper factor in ``dtype``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    v = (0.5 * rng.standard_normal((n, k))).astype(dtype)
    v64 = v.astype(np.float64)
    a = x @ x.T / n + np.eye(n) + (v64 @ v64.T if sign < 0 else 0)
    return a + sign * v64 @ v64.T, sl.cholesky(a).astype(dtype), v


@pytest.mark.parametrize("sign", [1, -1])
def test_recorded_and_plain_runs_agree(queue, dtype, sign):
    rows = update.panel_rows(queue, dtype)
    for n, k in ((2 * rows + 3, 5), (4 * rows - 1, 1)):
        at, c, v = _problem(n, k, sign, dtype, n)
        plain = oclla.cholesky_update(c, v, sign=sign, queue=queue)
        with oclla.record():
            recorded = oclla.cholesky_update(c, v, sign=sign, queue=queue)
        np.testing.assert_array_equal(plain, recorded)
        assert accuracy.passes(accuracy.cholesky_backward_error(at, plain, False))


def test_failure_in_a_later_panel_names_the_order(queue, dtype):
    """V = 1.5·R(j, :)ᵀ: A − V·Vᵀ keeps its leading minors up to order j and loses
    positive definiteness at order j + 1, in the third panel."""
    rows = update.panel_rows(queue, dtype)
    n, j = 3 * rows + 5, 2 * rows + 3
    _, c, _ = _problem(n, 1, 1, dtype, 7)
    v = (1.5 * c[j]).reshape(n, 1)
    before = c.copy()
    for recorded in (False, True):
        with pytest.raises(LinAlgError, match=f"leading minor of order {j + 1}$"):
            if recorded:
                with oclla.record():
                    oclla.cholesky_update(c, v, sign=-1, queue=queue)
            else:
                oclla.cholesky_update(c, v, sign=-1, queue=queue)
        np.testing.assert_array_equal(c, before)
