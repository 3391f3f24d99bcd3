"""Helpers the test modules share (seeded inputs, the LU and Cholesky checks, buildable
vector widths, the small-memory profile).

Test modules import them from here, never from ``conftest``: tests/ and tests/viewer/ each
have a conftest.py, both imported as the module ``conftest``, so ``from conftest import``
finds whichever was imported last.
"""

import dataclasses

import numpy as np
import pytest
import scipy.linalg as sl
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy


def random_matrix(rng, n, dtype, m=None):
    """Seeded standard-normal matrix (n x n, or n x m)."""
    return rng.standard_normal((n, n if m is None else m)).astype(dtype)


def spd(n, dtype, seed=0):
    """Seeded symmetric positive definite matrix with condition number below ~10."""
    x = np.random.default_rng(seed + 7 * n).standard_normal((n, n))
    return (x @ x.T / max(n, 1) + np.eye(n)).astype(dtype)


def forward_units(c, ref):
    """max |c − ref| / (n max|ref| ε): the factor's distance from scipy's in units of nε."""
    n = ref.shape[0]
    return float(np.abs(c.astype(np.float64) - ref).max()
                 / (n * np.abs(ref).max() * accuracy.eps(c.dtype)))


def assert_fails_at_order(queue, n, order, dtype=np.float64, routine=None):
    """``routine(a, lower=, queue=)`` (default oclla.cholesky) on both triangles of an
    n x n SPD matrix with a_kk < 0, k = order - 1: LinAlgError naming ``order``, and the
    matrix left as it was.  Returns that matrix."""
    routine = oclla.cholesky if routine is None else routine
    a = spd(n, dtype)
    a[order - 1, order - 1] = -100.0
    before = a.copy()
    for lower in (True, False):
        with pytest.raises(LinAlgError, match=f"leading minor of order {order} is not"):
            routine(a, lower=lower, queue=queue)
        np.testing.assert_array_equal(a, before)
    return a


LU_SIZES = (1, 2, 15, 16, 17, 41, 64, 97)


def check_lu_sizes(queue, dtype, **kw):
    """lu_factor(**kw) on seeded random matrices of LU_SIZES: backward error within
    the threshold and SciPy's pivots (random matrices have no ties)."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    for n in LU_SIZES:
        a = np.random.default_rng(n).standard_normal((n, n)).astype(dtype)
        lu, piv = oclla.lu_factor(a, queue=queue, **kw)
        err = accuracy.lu_backward_error(a, lu, piv)
        assert accuracy.passes(err), f"n={n}: backward error {err:.3g}"
        np.testing.assert_array_equal(piv, sl.lu_factor(a)[1], err_msg=f"n={n}")


def buildable_width(queue, dtype, width: int) -> int:
    """``width`` or the widest smaller power of two whose vectors of ``dtype`` the device
    compiles natively (a parameter set asking for more is refused with DeviceError)."""
    from oclla import _device
    itemsize = np.dtype(dtype).itemsize
    while width > 1 and not _device.vectors_build(queue, itemsize, width):
        width //= 2
    return width


def roomy(queue):
    """The queue's device limits with 64 KiB of local memory: room for the 64-wide blocks
    of a stored parameter set (a profile's 16 KiB has none), so that a test of a rule
    checks that rule and not the local memory."""
    return dataclasses.replace(oclla.device_info(queue), local_mem_size=64 * 1024)


def buildable(queue, dtype, p: dict, key: str = "VW") -> dict:
    """The parameter set ``p`` with its vector width ``key`` narrowed by
    :func:`buildable_width`."""
    if key not in p:
        return p
    width = buildable_width(queue, dtype, p[key])
    return {**p, key: 1 if key == "LEAF_W" and width == 2 else width}   # no 2-wide leaves


#: 1 MiB buffers and 2 MiB of device memory: matrices of a few hundred rows take the tiled
#: and out-of-core routes (tests/test_tiled.py, tests/test_out_of_core.py).
SMALL_MEMORY = oclla.Profile(name="tiled-tests", max_alloc_size=1 << 20,
                             global_mem_size=2 << 20)
