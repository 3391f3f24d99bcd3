"""The correctness core, run under one device-limit profile per test module.

Each ``test_profile_<name>.py`` imports these tests and names its profile in
``PROFILE``; the module-scoped fixture imposes it on the device for the
module's tests (:func:`oclla.set_profile`) and lifts it afterwards.  The
sizes straddle the block sizes that the profile's parameters choose, both
dtypes run where the profile has fp64, and the kernels launched are checked
against the profile's limits.
"""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
import scipy.linalg as sl
from numpy.linalg import LinAlgError

import oclla
from oclla import _params, accuracy, rfp


@pytest.fixture(scope="module")
def profiled(request):
    """The profile of the importing module, in force on the default queue.

    The parameters derived for it are used as they are, without the self-checks
    that would fall back to safer ones: a failure here is a failure of the derived
    set, not hidden by a fallback (tests/test_fallback.py tests the fallback).
    """
    name = request.module.PROFILE
    checking = _params.selfcheck[0]
    _params.selfcheck[0] = False
    previous = oclla.set_profile(name)
    try:
        yield oclla.PROFILES[name]
    finally:
        oclla.set_profile(previous)
        _params.selfcheck[0] = checking


@pytest.fixture(params=["float32", "float64"])
def pdtype(request, profiled, queue):
    if request.param == "float64" and not oclla.device_info(queue).fp64:
        pytest.skip(f"profile {profiled.name} has no fp64")
    return np.dtype(request.param)


def _straddle(first, *others):
    """1, 17, both sides of the first block size, just past the others (at most 301:
    each order is its own set of kernel builds, the bulk of this module's time)."""
    sizes = {1, 17} | ({first - 1, first + 1} if 1 < first <= 300 else set())
    sizes |= {b + 1 for b in others if 1 < b <= 300}
    return sorted(sizes)


def _random(n, dtype, seed=0, m=None):
    return np.random.default_rng(seed + n).standard_normal((n, m or n)).astype(dtype)


def _spd(n, dtype, seed=0):
    x = np.random.default_rng(seed + 3 * n).standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


def test_device_reports_the_profile(profiled, queue):
    info = oclla.device_info(queue)
    assert info.profile == profiled.name
    assert info.kind == profiled.kind
    assert info.max_work_group_size <= profiled.max_work_group_size
    assert info.local_mem_size <= profiled.local_mem_size
    if not profiled.fp64:
        assert not info.fp64


def test_blocked_lu(profiled, queue, pdtype):
    p = _params.params(queue, "lu", pdtype)
    for n in _straddle(p["NB"], p["SMALL_N"]):
        a = _random(n, pdtype)
        lu, piv = oclla.lu_factor(a, queue=queue)
        assert accuracy.passes(accuracy.lu_backward_error(a, lu, piv)), n
        np.testing.assert_array_equal(piv, sl.lu_factor(a)[1], err_msg=f"n={n}")
        b = _random(n, pdtype, seed=1, m=3)
        x = oclla.lu_solve((lu, piv), b, queue=queue)
        assert accuracy.passes(accuracy.solve_backward_error(a, x, b)), n


@pytest.mark.parametrize("variant", ["faithful", "inplace", "crout", "window"])
def test_per_pivot_lu(profiled, queue, pdtype, variant):
    w = _params.params(queue, "window", pdtype)["W"]
    for n in _straddle(w, 64):   # one window, several
        a = _random(n, pdtype, seed=5)
        if variant == "faithful":       # the post's algorithm: no pivoting
            a += n * np.eye(n, dtype=pdtype)
        lu, piv = oclla.lu_factor(a, method="pivot", variant=variant, queue=queue,
                                  pivoting="none" if variant == "faithful" else "partial")
        assert accuracy.passes(accuracy.lu_backward_error(a, lu, piv)), (variant, n)


def test_lu_three_factors(profiled, queue, pdtype):
    a = _random(37, pdtype, seed=2)
    p, l, u = oclla.lu(a, queue=queue)
    assert accuracy.passes(accuracy.plu_backward_error(a, p, l, u))


@pytest.mark.parametrize("method", ["blocked", "pivot"])
def test_cholesky(profiled, queue, pdtype, method):
    p = _params.params(queue, "chol", pdtype)
    for n in _straddle(p["LEAF"], p["NB"] if p["NB"] < p["SMALL_N"] else 0):
        a = _spd(n, pdtype)
        for lower in (True, False):
            c = oclla.cholesky(a, lower=lower, method=method, queue=queue)
            assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower)), (n, lower)
        b = _random(n, pdtype, seed=4, m=2)
        x = oclla.cho_solve(oclla.cho_factor(a, queue=queue), b, queue=queue)
        assert accuracy.passes(accuracy.solve_backward_error(a, x, b)), n


def test_blocked_cholesky_above_small_n(profiled, queue, pdtype):
    """The block-column path, which a GPU profile's SMALL_N keeps from small orders."""
    p = _params.params(queue, "chol", pdtype)
    with _params.trial(queue, "chol", pdtype, {**p, "SMALL_N": 0}):
        for n in _straddle(p["NB"]):
            a = _spd(n, pdtype, seed=9)
            c = oclla.cholesky(a, lower=True, queue=queue)
            assert accuracy.passes(accuracy.cholesky_backward_error(a, c, True)), n


def test_packed_cholesky(profiled, queue, pdtype):
    for n in (1, 2, 31, 64, 97):
        a = _spd(n, pdtype, seed=6)
        for lower in (True, False):
            arf = rfp.pack(a, lower=lower, queue=queue)
            np.testing.assert_array_equal(rfp.unpack(arf, n, lower=lower, queue=queue),
                                          np.tril(a) if lower else np.triu(a))
            c = rfp.cholesky(arf, n, lower=lower, queue=queue)
            full = rfp.unpack(c, n, lower=lower, queue=queue)
            assert accuracy.passes(accuracy.cholesky_backward_error(a, full, lower)), n
            b = _random(n, pdtype, seed=8, m=2)
            x = rfp.cho_solve((c, lower), b, queue=queue)
            assert accuracy.passes(accuracy.solve_backward_error(a, x, b)), n


def test_packed_transpose(profiled, queue, pdtype, monkeypatch):
    """rfp.cl's transpose (the packed upper Cholesky's copies on GPUs whose leaves fuse)
    with work-groups and a tile sized by the profile's limits: each launch within its
    work-group and local-memory limits, the packed triangle of xᵀ in the other layout."""
    launches = []
    enqueue = rfp.enqueue

    def recorded(queue, kernel, global_size, local_size, *args):
        local = [a.size for a in args if isinstance(a, cl.LocalMemory)]
        launches.append((int(np.prod(local_size)), sum(local)))
        return enqueue(queue, kernel, global_size, local_size, *args)

    monkeypatch.setattr(rfp, "enqueue", recorded)
    for n in (1, 31, 64, 97):
        x = _random(n, pdtype, seed=4)
        for lower in (True, False):
            src = cl_array.to_device(queue, rfp.pack(x, lower=lower))
            dst = cl_array.to_device(queue, np.zeros(rfp.packed_length(n), pdtype))
            rfp._transpose_packed(queue, src.data, 0, dst.data, 0, n, lower=lower,
                                  dtype=pdtype)
            np.testing.assert_array_equal(dst.get(), rfp.pack(x.T, lower=not lower))
    info = oclla.device_info(queue)
    assert launches and all(items <= profiled.max_work_group_size
                            and local <= info.local_mem_size for items, local in launches)


def test_gemm_and_ad2at(profiled, queue, pdtype):
    for m, n, k in ((1, 1, 1), (33, 65, 17), (130, 70, 129)):
        a, b = _random(m, pdtype, m=k), _random(k, pdtype, seed=3, m=n)
        c = oclla.blas.matmul(a, b, queue=queue)
        assert accuracy.passes(accuracy.product_error(c, a, b)), (m, n, k)
    a = _random(40, pdtype, m=90)
    d2 = np.random.default_rng(1).uniform(0.5, 2.0, 90).astype(pdtype)
    for packed in (False, True):
        c = oclla.assemble_ad2at(a, d2, packed=packed, queue=queue)
        lower = rfp.unpack(c, 40, queue=queue) if packed else c
        symmetric = lower + np.tril(lower, -1).T
        assert accuracy.passes(accuracy.product_error(symmetric, a * d2, a.T)), packed


def test_wls(profiled, queue):
    rng = np.random.default_rng(12)
    a, d2, b = rng.standard_normal((8, 30)), rng.uniform(0.5, 2.0, 30), rng.standard_normal(30)
    result = oclla.wls_solve(a, d2, b, queue=queue)
    want = np.linalg.solve((a * d2) @ a.T, (a * d2) @ b)
    assert np.linalg.norm(result.x - want) <= 1e-8 * np.linalg.norm(want)


def test_bad_inputs(profiled, queue):
    with pytest.raises(LinAlgError, match="order 3 is not positive definite"):
        a = _spd(9, np.float32)
        a[2, 2] = -1.0
        oclla.cholesky(a, queue=queue)
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.lu_factor(np.full((5, 5), np.nan, np.float32), queue=queue)
    with pytest.raises(ValueError):
        oclla.lu_factor(np.ones((3, 4), np.float32), queue=queue)
    if not oclla.device_info(queue).fp64:
        with pytest.raises(oclla.DeviceError, match="fp64"):
            oclla.lu_factor(np.eye(4), queue=queue)


def test_launches_respect_the_profile(profiled, queue):
    """Every kernel launched under the profile fits its work-group limit, and the launches
    differ from those of the device's own parameters (the profile changes the kernels)."""
    a = _random(150, np.float32, seed=7)
    s = _spd(150, np.float32)

    def launches():
        with oclla.record() as rec:
            oclla.lu_factor(a, queue=queue)
            oclla.lu_factor(a[:40, :40], method="pivot", queue=queue)
            oclla.cholesky(s, queue=queue)
        return {(k.name, tuple(k.local_size or ())) for k in rec.kernels}

    under_profile = launches()
    for name, local in under_profile:
        assert int(np.prod(local or (1,))) <= profiled.max_work_group_size, (name, local)
    previous = oclla.set_profile(None)
    try:
        own = launches()
    finally:
        oclla.set_profile(previous)
    assert under_profile != own
