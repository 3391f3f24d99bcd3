"""Devices whose largest allocation is tiny (16 and 64 KiB): every family's self-check
fits its operands to one buffer (oclla._selfcheck.order_limit) and passes with the
derived parameters (no fallback), a matrix that fits one buffer is computed there, and
a larger one is tiled (Cholesky) or refused with DeviceError, never miscomputed."""

import numpy as np
import pytest
import scipy.linalg as sl

import oclla
from oclla import _params, _selfcheck, accuracy

from linalg_helpers import spd


@pytest.fixture(scope="module", params=[16 << 10, 64 << 10], ids=["16KiB", "64KiB"])
def tiny(request, tmp_path_factory):
    """The default queue under a profile of ``max_alloc_size`` bytes, with the self-checks
    on and a fresh verdict file (nothing remembered from a roomier device)."""
    checking = _params.selfcheck[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OCLLA_CHECKED_FILE", str(tmp_path_factory.mktemp("verdicts") / "c.json"))
        _params.selfcheck[0] = True
        previous = oclla.set_profile(oclla.Profile(name=f"alloc-{request.param}",
                                                   max_alloc_size=request.param))
        try:
            yield oclla.get_queue()
        finally:
            oclla.set_profile(previous)
            _params.selfcheck[0] = checking


@pytest.fixture(params=["float32", "float64"])
def tdtype(request, tiny):
    if request.param == "float64" and not oclla.device_info(tiny).fp64:
        pytest.skip("device has no fp64")
    return np.dtype(request.param)


def test_checks_fit_and_pass_with_the_derived_parameters(tiny, tdtype):
    limit = _selfcheck.order_limit(tiny, tdtype)
    info = oclla.device_info(tiny)
    assert 1 <= limit and limit ** 2 * tdtype.itemsize <= info.max_alloc_size
    for family in _selfcheck.CHECKS:
        chosen = _params.params(tiny, family, tdtype)       # runs the family's check
        assert chosen == _params.ladder(tiny, family, tdtype)[0], f"{family} fell back"
    _selfcheck._check_public_api(tiny, tdtype)


def test_largest_order_in_one_buffer(tiny, tdtype):
    n = _selfcheck.order_limit(tiny, tdtype)
    a = np.random.default_rng(n).standard_normal((n, n)).astype(tdtype)
    lu, piv = oclla.lu_factor(a, queue=tiny)
    assert accuracy.passes(accuracy.lu_backward_error(a, lu, piv))
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
    b = np.ones((n, 2), tdtype)
    assert accuracy.passes(accuracy.solve_backward_error(
        a, oclla.lu_solve((lu, piv), b, queue=tiny), b))
    s = spd(n, tdtype)
    c = oclla.cholesky(s, queue=tiny)
    assert accuracy.passes(accuracy.cholesky_backward_error(s, c, False))


def test_larger_orders_are_tiled_or_refused(tiny, tdtype):
    n = _selfcheck.order_limit(tiny, tdtype) + 9
    s = spd(n, tdtype)
    c = oclla.cholesky(s, lower=True, queue=tiny)           # tiled: panels that fit
    assert accuracy.passes(accuracy.cholesky_backward_error(s, c, True))
    a = np.random.default_rng(n).standard_normal((n, n)).astype(tdtype)
    try:
        lu, piv = oclla.lu_factor(a, queue=tiny)
    except oclla.DeviceError as exc:
        assert "maximum allocation" in str(exc)
    else:
        assert accuracy.passes(accuracy.lu_backward_error(a, lu, piv))
