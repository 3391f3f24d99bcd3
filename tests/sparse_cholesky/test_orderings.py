"""oclla.sparse.orderings: valid permutations, known small cases, fill against natural order
and against brute force, "best", bad names."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st
from scipy.sparse.csgraph import reverse_cuthill_mckee

from oclla.sparse import gallery, orderings
from oclla.sparse._input import lower_triangle

NAMES = ["natural", "rcm", "amd", "metis"]


def _dense_fill(a_low, perm):
    """nnz of the lower triangle of L by dense symbolic elimination (boolean)."""
    n = a_low.shape[0]
    pat = a_low.toarray() != 0
    pat = (pat | pat.T | np.eye(n, dtype=bool))[np.ix_(perm, perm)]
    for k in range(n):
        below = np.flatnonzero(pat[k + 1:, k]) + k + 1
        pat[np.ix_(below, below)] = True
    return int(np.tril(pat).sum())


def _pattern(n, density, seed):
    rng = np.random.default_rng(seed)
    m = sp.random_array((n, n), density=density, rng=rng, format="csc")
    m = m + m.T + sp.eye_array(n)
    return lower_triangle(sp.csc_array(m))


@given(n=st.integers(0, 30), density=st.floats(0, 0.3), seed=st.integers(0, 10**6),
       name=st.sampled_from(NAMES))
def test_permutation_valid_and_fill_exact(n, density, seed, name):
    a = _pattern(n, density, seed)
    perm, used = orderings.order(a, name)
    assert used == name and perm.dtype == np.int64
    np.testing.assert_array_equal(np.sort(perm), np.arange(n))
    assert orderings.fill(a, perm) == _dense_fill(a, perm)


def test_natural_and_rcm_known():
    a = lower_triangle(gallery.laplacian_2d(7, 5))
    np.testing.assert_array_equal(orderings.natural(a), np.arange(35))
    ref = reverse_cuthill_mckee(sp.csr_array(gallery.laplacian_2d(7, 5)), symmetric_mode=True)
    np.testing.assert_array_equal(orderings.rcm(a), ref)


def test_tree_orderings_have_no_fill():
    # a star: the centre last gives no fill; minimum degree and dissection find that
    n = 12
    rows, cols = np.arange(1, n), np.zeros(n - 1, dtype=int)
    star = sp.coo_array((np.ones(n - 1), (rows, cols)), shape=(n, n))
    a = lower_triangle(sp.csc_array(star + star.T + sp.eye_array(n)))
    assert orderings.fill(a, orderings.natural(a)) == n * (n + 1) // 2     # centre first: full
    for name in ("amd", "metis"):
        assert orderings.fill(a, orderings.order(a, name)[0]) == 2 * n - 1


def test_fill_reducing_orderings_beat_natural_on_a_grid():
    a = lower_triangle(gallery.laplacian_2d(30))
    fills = {name: orderings.fill(a, orderings.order(a, name)[0]) for name in NAMES}
    assert fills["natural"] == 27029              # the band: 30 rows below each pivot
    assert fills["rcm"] < fills["natural"]
    # nested dissection and minimum degree: O(n log n) against the band's O(n^1.5)
    assert fills["metis"] < 0.45 * fills["natural"]
    assert fills["amd"] < 0.40 * fills["natural"]


def test_best_keeps_the_least_fill():
    a = lower_triangle(gallery.random_spd(120, 0.03, 4))
    perm, used = orderings.order(a, "best")
    fills = {name: orderings.fill(a, orderings.order(a, name)[0])
             for name in orderings.BEST_CANDIDATES}
    assert used in orderings.BEST_CANDIDATES
    assert orderings.fill(a, perm) == min(fills.values()) == fills[used]


@pytest.mark.parametrize("name", NAMES + ["best"])
def test_edge_sizes(name):
    for a in (sp.csc_array((0, 0)), sp.csc_array(np.eye(1)), sp.csc_array(np.eye(4))):
        perm, _ = orderings.order(lower_triangle(a), name)
        np.testing.assert_array_equal(np.sort(perm), np.arange(a.shape[0]))


def test_unknown_ordering():
    a = lower_triangle(sp.csc_array(np.eye(2)))
    with pytest.raises(ValueError, match="ordering must be one of"):
        orderings.order(a, "colamd")
    with pytest.raises(ValueError, match="ordering must be one of"):
        orderings.order(a, None)


def _amd_fill(a):
    perm = orderings.amd(a)
    np.testing.assert_array_equal(np.sort(perm), np.arange(a.shape[0]))
    return perm, orderings.fill(a, perm)


def test_amd_dense_row_goes_last():
    # a 6 x 6 grid plus one variable coupled to all: minimum degree keeps it for the final
    # clique (one supervariable, eliminated together), and it adds at most one row to L
    grid = gallery.laplacian_2d(6)
    n = grid.shape[0] + 1
    m = sp.lil_array((n, n))
    m[:n - 1, :n - 1] = grid
    m[n - 1, :] = 1.0
    m[:, n - 1] = 1.0
    a = lower_triangle(sp.csc_array(m))
    perm, nnz = _amd_fill(a)
    assert n - 1 in perm[-6:]
    assert nnz == _dense_fill(a, perm)
    assert nnz <= _amd_fill(lower_triangle(grid))[1] + n


def test_amd_disconnected_components_and_isolated_variables():
    # a 5 x 5 grid, three isolated variables and a 4 x 4 grid: the isolated ones (degree 0)
    # come first, and each grid keeps about the fill it has alone
    g1, g2 = gallery.laplacian_2d(5), gallery.laplacian_2d(4)
    m = sp.block_diag([g1, sp.eye_array(3), g2], format="csc")
    a = lower_triangle(m)
    perm, nnz = _amd_fill(a)
    np.testing.assert_array_equal(np.sort(perm[:3]), [25, 26, 27])
    assert nnz == _dense_fill(a, perm)
    alone = _amd_fill(lower_triangle(g1))[1] + _amd_fill(lower_triangle(g2))[1] + 3
    assert alone <= nnz <= 1.05 * alone


def test_amd_tiny_graphs():
    from oclla.sparse._amd import amd_order

    assert amd_order(sp.csr_array((0, 0))).shape == (0,)
    np.testing.assert_array_equal(amd_order(sp.csr_array((1, 1))), [0])
    np.testing.assert_array_equal(np.sort(amd_order(sp.csr_array((5, 5)))), np.arange(5))
    # a self loop in the graph is ignored
    np.testing.assert_array_equal(amd_order(sp.csr_array(np.eye(2))), [0, 1])
