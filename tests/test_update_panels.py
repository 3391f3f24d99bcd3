"""cholesky_update's blocked method across panel boundaries: run under a recorder (the
profiling queue, a trace step per kernel) and without (the launch queue) it gives the
same factor bitwise, accurate, at odd orders past two and four panels, both signs and
dtypes; a downdate that fails in the third panel names the same order either way and
leaves the caller's factor alone."""

import numpy as np
import pyopencl as cl
import pytest
import scipy.linalg as sl
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy, update
from oclla._params import params, trial


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


@pytest.mark.parametrize("reflect", [0, 1])
def test_fused_launches_equal_separate_ones(queue, dtype, reflect):
    """The knob FUSE (a panel applied and the next one factored in one launch,
    step_panel_local / step_panel_reflect) against each panel's two kernels in launches
    of their own: bitwise the same factor with rotations; with reflectors (GPUs only,
    the FUSE + REFLECT constraint) within rounding of it; accurate either way, past
    one, two and four panels, odd orders, ranks over two passes of KF columns; recorded
    as the panel, then an ``apply`` step per panel whose pivot is the next panel's."""
    if reflect and not queue.device.type & cl.device_type.GPU:
        pytest.skip("FUSE with reflectors runs on GPUs only")
    dtype = np.dtype(dtype)
    base = dict(params(queue, "update", dtype), PANEL=16, LOCAL_PANEL=1, KF=4,
                REFLECT=reflect)                 # one program: KB = 8 for k = 5 .. 7
    cases = (((17, 3, 1), (4 * 16 - 1, 4, 1)) if reflect else       # k <= KF, KB = 4
             ((17, 5, 1), (2 * 16 + 3, 6, -1), (4 * 16 - 1, 7, 1)))
    for n, k, sign in cases:
        at, c, v = _problem(n, k, sign, dtype, n + k)
        results = []
        for fuse in (0, 1):
            with trial(queue, "update", dtype, dict(base, FUSE=fuse)):
                assert update.reflects(queue, dtype, k, sign) == bool(reflect)
                with oclla.record() as rec:
                    results.append(oclla.cholesky_update(c, v, sign=sign, queue=queue))
            assert accuracy.passes(accuracy.cholesky_backward_error(at, results[-1], False))
        panels = -(-n // 16)
        assert [s.phase for s in rec.steps] == ["panel"] + ["apply"] * (panels - 1)
        assert rec.steps[1].pivot == (16, 16) and rec.steps[1].region == (0, 16, 16, n)
        if reflect:
            np.testing.assert_allclose(results[1], results[0], rtol=0,
                                       atol=50 * n * np.finfo(dtype).eps)
        else:
            np.testing.assert_array_equal(results[1], results[0])
