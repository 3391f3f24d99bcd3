"""The device-side NaN/Inf count behind ``check_finite`` for device arrays."""

import numpy as np
import pyopencl.array as cl_array
import pytest

from oclla import _params, _validate
from oclla._programs import int_zeros


@pytest.mark.parametrize("runs", [0, 1])
def test_count_nonfinite_counts_every_nan_and_inf(queue, dtype, runs):
    """Both access patterns (wg1d RUNS: contiguous runs per work-item, or entries a
    launch's width apart), sizes below, at and past the launch's 64 Ki items with ragged
    ends: NaN, +Inf and -Inf at the first, the last and inner entries are each counted,
    the largest finite numbers, subnormals and zeros not, into the slot asked for."""
    _params.override("wg1d", {"RUNS": runs})
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    rng = np.random.default_rng(4)
    for n in (1, 7, 1000, 65536, 3 * 65536 + 5):
        x = rng.standard_normal(n).astype(dtype)
        x[rng.integers(0, n, 3)] = (info.max, -info.max, info.smallest_subnormal)
        bad = np.unique(np.r_[0, n - 1, rng.integers(0, n, 5)])
        x[bad] = np.resize(np.array([np.nan, np.inf, -np.inf], dtype), bad.size)
        count = int_zeros(queue, 2)
        _validate.count_nonfinite(queue, cl_array.to_device(queue, x), count, slot=1)
        assert count.get().tolist() == [0, bad.size], (n, runs)
        finite = np.where(np.isfinite(x), x, dtype.type(0))
        count = int_zeros(queue, 1)
        _validate.count_nonfinite(queue, cl_array.to_device(queue, finite), count)
        assert count.get()[0] == 0, (n, runs)
