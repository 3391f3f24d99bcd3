"""oclla.hybrid: the Cholesky with its diagonal blocks on the host's LAPACK."""

import numpy as np
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError
from scipy.linalg import lapack

import oclla
from oclla import accuracy, hybrid

from test_views import Layout, assert_same, device_view


@given(n=st.integers(0, 5000), block=st.integers(1, 600),
       schedule=st.sampled_from(hybrid.SCHEDULES))
@settings(max_examples=60, deadline=None)
def test_block_schedule_covers_the_matrix(n, block, schedule):
    widths = hybrid.block_schedule(n, schedule, block)
    assert sum(widths) == n and all(w > 0 for w in widths)
    if schedule == "static":
        assert all(w == block for w in widths[:-1])
    else:
        half = len(widths) // 2
        assert widths[:half] == widths[::-1][:half]                # mirrored
        first = widths[:half]
        assert all(x >= y for x, y in zip(first, first[1:]))       # halving to the centre


def test_dynamic_schedule_example():
    assert hybrid.block_schedule(1024, "dynamic", 64) == [256, 128, 64, 64, 64, 64, 128, 256]
    assert hybrid.block_schedule(1000, "dynamic", 32) == [224, 96, 32, 32, 32, 32, 32, 20,
                                                          20, 32, 32, 32, 32, 32, 96, 224]
    with pytest.raises(ValueError, match="schedule"):
        hybrid.block_schedule(10, "tuned")
    with pytest.raises(ValueError, match="block"):
        hybrid.block_schedule(10, "static", 0)


@pytest.mark.parametrize("schedule", hybrid.SCHEDULES)
@pytest.mark.parametrize("lower", [False, True])
def test_factor(queue, dtype, lower, schedule):
    for n in (1, 2, 31, 32, 33, 97, 200):
        a = accuracy.spd_with_condition(n, 1e3 if n > 1 else 1.0, reflections=None, rng=n,
                                        dtype=dtype)
        c = hybrid.cholesky(a, lower=lower, schedule=schedule, block=32, queue=queue)
        assert c.dtype == dtype
        assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower)), n
        np.testing.assert_array_equal(c, np.tril(c) if lower else np.triu(c))


@pytest.mark.parametrize("lower", [False, True])
def test_not_positive_definite_names_lapacks_order(queue, lower):
    a = accuracy.spd_with_condition(100, 10.0, rng=1)
    a[70, 70] = -1.0
    _, info = lapack.dpotrf(a, lower=int(lower))
    assert info == 71
    before = a.copy()
    with pytest.raises(LinAlgError, match="order 71 is not positive definite"):
        hybrid.cholesky(a, lower=lower, schedule="dynamic", block=16, queue=queue)
    np.testing.assert_array_equal(a, before)


def test_trace_overlaps_host_and_device_steps(queue):
    a = accuracy.spd_with_condition(160, 10.0, rng=2)
    with oclla.record() as rec:
        hybrid.cholesky(a, lower=True, block=32, queue=queue)
    run = rec.runs[-1]
    assert run.variant == "hybrid-static" and run.params["widths"] == [32] * 5
    phases = [s.phase for s in run.steps]
    # per block column after the first: syrk, gemm (device) | potf2 (host), then trsm
    assert phases[:2] == ["potf2", "trsm"] and phases[2:6] == ["syrk", "gemm", "potf2", "trsm"]
    host = [s for s in run.steps if s.phase == "potf2"]
    # the host's POTRF is the step's one record: device "host", on the device's clock
    assert all(s.info["host"] and [k.device for k in s.kernels] == ["host"] for s in host)
    assert all(s.device_ns == 0 and s.kernels[0].end >= s.kernels[0].start for s in host)
    assert {k.device for s in run.steps if not s.info.get("host") for k in s.kernels} == {""}
    assert sum(s.flops for s in run.steps) == pytest.approx(
        160 ** 3 / 3, rel=0.02)


def test_device_arrays_and_views(queue):
    a = accuracy.spd_with_condition(50, 10.0, rng=3, dtype=np.float32)
    ref = hybrid.cholesky(a, block=16, queue=queue)
    d = cl_array.to_device(queue, a)
    c = hybrid.cholesky(d, block=16, queue=queue)
    assert isinstance(c, cl_array.Array) and c is not d
    assert_same(c, ref)
    np.testing.assert_array_equal(d.get(), a)
    every_other_column = Layout((52, 104), (slice(1, 51), slice(2, 102, 2)), True)
    v = device_view(queue, every_other_column, a)
    out = hybrid.cholesky(v.view, block=16, overwrite_a=True, queue=queue)
    assert out is v.view
    assert_same(out, ref)
    v.check(written=ref)


def test_bad_input(queue):
    with pytest.raises(ValueError, match="schedule"):
        hybrid.cholesky(np.eye(3), schedule="tuned", queue=queue)
    with pytest.raises(ValueError, match="square"):
        hybrid.cholesky(np.ones((2, 3)), queue=queue)
    with pytest.raises(TypeError, match="int64"):
        hybrid.cholesky(np.eye(3, dtype=np.int64), queue=queue)
    x = np.eye(3)
    x[0, 2] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        hybrid.cholesky(x, queue=queue)
    assert hybrid.cholesky(np.empty((0, 0)), queue=queue).shape == (0, 0)
