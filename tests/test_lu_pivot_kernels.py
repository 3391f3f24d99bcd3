"""Per-pivot LU kernels over a grid of parameter sets (the tuner may pick any of them).

The in-place kernels with one and several row blocks per launch, scalar and
vector columns; the Crout-order kernel with its sums in one and in several
chunks.  Each factorization must pass the backward-error threshold and
choose SciPy's pivots (random matrices have no ties).
"""

import numpy as np
import pytest
import scipy.linalg as sl

import oclla
from oclla import _params

from conftest import check_lu_sizes

DTYPES = (np.float32, np.float64)
PIVOT_SETS = [
    dict(VW=16, NV=4, WX=2, WY=1, RB=1024, UNR=1, FUSED=1),  # one row block, vectors (CPU)
    dict(VW=4, NV=2, WX=2, WY=4, RB=16, UNR=3, FUSED=1),     # row blocks, rows shared
    dict(VW=1, NV=1, WX=8, WY=2, RB=7, UNR=4, FUSED=0),      # GPU shape, ragged, unfused
    dict(VW=4, NV=1, WX=8, WY=4, RB=5, UNR=2, FUSED=1),
    dict(VW=1, NV=1, WX=32, WY=4, RB=9, UNR=2, FUSED=1),      # candidates folded, then scanned
]
CROUT_SETS = [
    dict(WG=64, RJ=64, MB=1024, CL=4, RR=2, KC=4096),    # one chunk per product (CPU shape)
    dict(WG=256, RJ=32, MB=128, CL=32, RR=2, KC=1024),   # GPU shape
    dict(WG=16, RJ=4, MB=5, CL=4, RR=1, KC=8),           # many chunks, ragged: split sums
    dict(WG=8, RJ=8, MB=3, CL=8, RR=3, KC=4),            # one row per sub-group
]

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("p", PIVOT_SETS, ids=lambda p: "-".join(map(str, p.values())))
def test_per_pivot_kernel_shapes(queue, p, dtype):
    _params.override("pivot", p)
    check_lu_sizes(queue, dtype, method="pivot")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("p", CROUT_SETS, ids=lambda p: "-".join(map(str, p.values())))
def test_crout_kernel_shapes(queue, p, dtype):
    _params.override("crout", p)
    check_lu_sizes(queue, dtype, method="pivot", variant="crout")


@pytest.mark.parametrize("p", CROUT_SETS[2:], ids=lambda p: "-".join(map(str, p.values())))
def test_crout_without_pivoting_matches_the_post_example(queue, p):
    _params.override("crout", p)
    a = np.array([[2, 4, 3, 5], [-4, -7, -5, 8], [6, 8, 2, 9], [4, 9, -2, 14]], np.float32)
    lu, piv = oclla.lu_factor(a, method="pivot", variant="crout", pivoting="none", queue=queue)
    expected = np.array([[2, 4, 3, 5], [-2, 1, 1, 18], [3, -4, -3, 66], [2, 1, 3, -212]])
    np.testing.assert_allclose(lu, expected, atol=1e-4)
    np.testing.assert_array_equal(piv, np.arange(4))


def test_crout_shapes_that_cannot_run_are_refused(queue):
    info = oclla.device_info(queue)
    base = dict(_params.params(queue, "crout", np.float32))
    assert "local memory" in _params.check("crout", dict(base, KC=1 << 22), info, 4)
    assert "powers of two" in _params.check("crout", dict(base, CL=2 * base["WG"]), info, 4)
    assert "multiple of 4" in _params.check("crout", dict(base, KC=6), info, 4)
    assert _params.check("crout", base, info, 4) is None


def test_crout_singular_and_zero_pivot(queue):
    _params.override("crout", CROUT_SETS[2])
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 5.0, 2.0]], np.float32)
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 3 is exactly zero"):
        _, piv = oclla.lu_factor(a, method="pivot", variant="crout", queue=queue)
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 3 is exactly zero"):
        _, ref_piv = sl.lu_factor(a)
    np.testing.assert_array_equal(piv, ref_piv)
    b = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 1.0], [1.0, 5.0, 2.0]], np.float32)
    with pytest.raises(np.linalg.LinAlgError, match="zero pivot in column 1"):
        oclla.lu_factor(b, method="pivot", variant="crout", pivoting="none", queue=queue)


def test_per_pivot_zero_pivot_without_pivoting(queue):
    _params.override("pivot", PIVOT_SETS[1])
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 1.0], [1.0, 5.0, 2.0]], np.float32)
    with pytest.raises(np.linalg.LinAlgError, match="zero pivot in column 1"):
        oclla.lu_factor(a, method="pivot", pivoting="none", queue=queue)


def test_per_pivot_singular_matrix_warns_like_scipy(queue):
    _params.override("pivot", PIVOT_SETS[2])
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 5.0, 2.0]], np.float64)
    if not oclla.device_info(queue).fp64:
        a = a.astype(np.float32)
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 3 is exactly zero"):
        lu, piv = oclla.lu_factor(a, method="pivot", queue=queue)
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 3 is exactly zero"):
        _, ref_piv = sl.lu_factor(a)
    np.testing.assert_array_equal(piv, ref_piv)
