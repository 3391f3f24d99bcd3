"""Per-pivot LU kernels over a grid of parameter sets (the tuner may pick any of them).

The in-place kernels with one and several row blocks per launch, scalar and
vector columns; the Crout-order kernel with its sums in one and in several
chunks; the delayed-update kernel with windows of one pivot up to a whole
work-group.  Each factorization must pass the backward-error threshold and
choose SciPy's pivots (random matrices have no ties).
"""

import dataclasses

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings, strategies as st

import oclla
from oclla import _params, accuracy

from linalg_helpers import buildable, check_lu_sizes

DTYPES = (np.float32, np.float64)
PIVOT_SETS = [
    dict(VW=16, NV=4, WX=2, WY=1, RB=1024, UNR=1),  # one row block, vectors (CPU)
    dict(VW=4, NV=2, WX=2, WY=4, RB=16, UNR=3),     # row blocks, rows shared
    dict(VW=1, NV=1, WX=8, WY=2, RB=7, UNR=4),      # GPU shape, ragged
    dict(VW=4, NV=1, WX=8, WY=4, RB=5, UNR=2),
    dict(VW=1, NV=1, WX=32, WY=4, RB=9, UNR=2),      # candidates folded, then scanned
]
CROUT_SETS = [
    dict(WG=64, RJ=64, MB=1024, CL=4, RR=2, KC=4096),    # one chunk per product (CPU shape)
    dict(WG=256, RJ=32, MB=128, CL=32, RR=2, KC=1024),   # GPU shape
    dict(WG=16, RJ=4, MB=5, CL=4, RR=1, KC=8),           # many chunks, ragged: split sums
    dict(WG=8, RJ=8, MB=3, CL=8, RR=3, KC=4),            # one row per sub-group
]
WINDOW_SETS = [
    dict(W=1, WG=1),        # a GEMM after every pivot: right-looking order
    dict(W=3, WG=4),        # ragged windows, several work-groups per part
    dict(W=8, WG=8),        # window as wide as the work-group
    dict(W=32, WG=64),      # GPU shape: one window for the smaller orders
]

@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("p", PIVOT_SETS, ids=lambda p: "-".join(map(str, p.values())))
def test_per_pivot_kernel_shapes(queue, p, dtype):
    _params.override("pivot", buildable(queue, dtype, p))
    check_lu_sizes(queue, dtype, method="pivot")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("variant, p", [("crout", p) for p in CROUT_SETS]
                         + [("window", p) for p in WINDOW_SETS],
                         ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_left_looking_kernel_shapes(queue, variant, p, dtype):
    _params.override(variant, p)
    check_lu_sizes(queue, dtype, method="pivot", variant=variant)


def test_crout_shapes_that_cannot_run_are_refused(queue):
    info = oclla.device_info(queue)
    base = dict(_params.params(queue, "crout", np.float32))
    assert "local memory" in _params.check("crout", dict(base, KC=1 << 22), info, 4)
    assert "CL <= WG" in _params.check("crout", dict(base, CL=2 * base["WG"]), info, 4)
    assert "CL must be" in _params.check("crout", dict(base, CL=3), info, 4)
    assert "multiple of 4" in _params.check("crout", dict(base, KC=6), info, 4)
    assert _params.check("crout", base, info, 4) is None


LEFT_LOOKING = [("crout", p) for p in CROUT_SETS[2:]] + [("window", p) for p in WINDOW_SETS[:2]]


@pytest.mark.parametrize("variant, p", LEFT_LOOKING,
                         ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_without_pivoting_matches_the_post_example(queue, variant, p):
    _params.override(variant, p)
    a = np.array([[2, 4, 3, 5], [-4, -7, -5, 8], [6, 8, 2, 9], [4, 9, -2, 14]], np.float32)
    lu, piv = oclla.lu_factor(a, method="pivot", variant=variant, pivoting="none", queue=queue)
    expected = np.array([[2, 4, 3, 5], [-2, 1, 1, 18], [3, -4, -3, 66], [2, 1, 3, -212]])
    np.testing.assert_allclose(lu, expected, atol=1e-4)
    np.testing.assert_array_equal(piv, np.arange(4))


@pytest.mark.parametrize("variant, p", [LEFT_LOOKING[0], LEFT_LOOKING[-1]],
                         ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_singular_and_zero_pivot(queue, variant, p):
    _params.override(variant, p)
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 5.0, 2.0]], np.float32)
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 3 is exactly zero"):
        _, piv = oclla.lu_factor(a, method="pivot", variant=variant, queue=queue)
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 3 is exactly zero"):
        _, ref_piv = sl.lu_factor(a)
    np.testing.assert_array_equal(piv, ref_piv)
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 1 is exactly zero"):
        oclla.lu_factor(np.zeros((7, 7), np.float32), method="pivot", variant=variant,
                        queue=queue)
    b = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 1.0], [1.0, 5.0, 2.0]], np.float32)
    with pytest.raises(np.linalg.LinAlgError, match="zero pivot in column 1"):
        oclla.lu_factor(b, method="pivot", variant=variant, pivoting="none", queue=queue)


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


# ---- the per-pivot LU with delayed updates (variant="window") --------------------------

def test_window_shapes_that_cannot_run_are_refused(queue):
    info = oclla.device_info(queue)
    base = dict(_params.params(queue, "window", np.float32))
    assert "[1, WG]" in _params.check("window", dict(base, W=2 * base["WG"]), info, 4)
    assert "W must be an integer >= 1" in _params.check("window", dict(base, W=0), info, 4)
    assert "power of two" in _params.check("window", dict(base, WG=3), info, 4)
    huge = dataclasses.replace(info, max_work_group_size=1 << 20, max_work_item_sizes=(1 << 20,))
    assert "local memory" in _params.check("window", dict(W=1 << 20, WG=1 << 20), huge, 4)
    assert _params.check("window", base, info, 4) is None


def test_window_launch_sequence(queue):
    """One window_step per pivot; after each full window (and after the last pivot)
    its interchanges, then the rank-W update of the trailing matrix unless none is
    left (at the end, piv and info copied out of the state): n = 10, W = 4 gives
    windows [0, 4), [4, 8), [8, 10)."""
    _params.override("window", dict(W=4, WG=4))
    n = 10
    a = np.random.default_rng(5).standard_normal((n, n)).astype(np.float32)
    with oclla.record() as rec:
        lu, piv = oclla.lu_factor(a, method="pivot", variant="window", queue=queue)
    names = [k.name.split("_")[0] for s in rec.runs[-1].steps for k in s.kernels]
    window = ["window"] * 4
    assert names == (["window"] + window + ["laswp", "gemm"] + window + ["laswp", "gemm"]
                     + ["window"] * 2 + ["laswp", "piv", "info"])
    assert accuracy_passes(a, lu, piv)


def test_window_snapshots_are_the_elimination_so_far(queue):
    """After pivot k the recorded matrix, in logical row order, holds the final rows
    0..k of U and columns 0..k of L, up to the later interchanges (the delayed
    updates show only in the rest)."""
    _params.override("window", dict(W=3, WG=4))
    n = 11
    a = np.random.default_rng(6).standard_normal((n, n)).astype(np.float64)
    if not oclla.device_info(queue).fp64:
        a = a.astype(np.float32)
    with oclla.record(snapshots=True) as rec:
        lu, piv = oclla.lu_factor(a, method="pivot", variant="window", queue=queue)
    run = rec.runs[-1]
    steps = [i for i, s in enumerate(run.steps) if s.phase == "eliminate"]
    assert len(steps) == n - 1
    for k, i in enumerate(steps):
        snap = run.snapshot_at(i)
        np.testing.assert_allclose(np.triu(snap)[:k + 1], np.triu(lu)[:k + 1], rtol=1e-5,
                                   err_msg=f"U after pivot {k}")
        for j in range(k + 1, n):                    # the interchanges still to come
            snap[[j, piv[j]]] = snap[[piv[j], j]]
        np.testing.assert_allclose(np.tril(snap, -1)[:, :k + 1], np.tril(lu, -1)[:, :k + 1],
                                   rtol=1e-5, err_msg=f"L after pivot {k}")


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 70), seed=st.integers(0, 2**32 - 1),
       shape=st.sampled_from([(1, 2), (2, 2), (5, 8), (16, 16), (13, 32)]),
       double=st.booleans())
def test_property_window(queue, n, seed, shape, double):
    """Any window and work-group on random orders: LAPACK's pivots, small backward
    error; the input is left alone."""
    dtype = np.float64 if double and oclla.device_info(queue).fp64 else np.float32
    _params.override("window", dict(W=shape[0], WG=shape[1]))
    a = np.random.default_rng(seed).uniform(-1, 1, (n, n)).astype(dtype)
    before = a.copy()
    lu, piv = oclla.lu_factor(a, method="pivot", variant="window", queue=queue)
    np.testing.assert_array_equal(a, before)
    assert accuracy_passes(a, lu, piv)
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])


def accuracy_passes(a, lu, piv) -> bool:
    return accuracy.passes(accuracy.lu_backward_error(a, lu, piv))
