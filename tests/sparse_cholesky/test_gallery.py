"""oclla.sparse.gallery: shapes, stencils, symmetry, definiteness, seeding, bad sizes."""

import numpy as np
import pytest
import scipy.sparse as sp

from oclla.sparse import gallery


def _check(a, n):
    assert isinstance(a, sp.csc_array) and a.dtype == np.float64 and a.shape == (n, n)
    assert a.has_canonical_format
    d = a.toarray()
    np.testing.assert_array_equal(d, d.T)
    if n:
        assert np.linalg.eigvalsh(d).min() > 0
    return d


def test_laplacian_2d_stencil():
    d = _check(gallery.laplacian_2d(4, 3), 12)
    assert np.all(np.diag(d) == 4)
    # point (x=1, y=1) is 1 + 4·1 = 5: neighbours 4, 6, 1, 9
    assert sorted(np.flatnonzero(d[5]).tolist()) == [1, 4, 5, 6, 9]
    assert d[5, 4] == d[5, 6] == d[5, 1] == d[5, 9] == -1
    assert gallery.laplacian_2d(5).shape == (25, 25)
    # a corner has two neighbours; row sums: 4 - #neighbours
    np.testing.assert_array_equal(d.sum(axis=1).reshape(3, 4),
                                  [[2, 1, 1, 2], [1, 0, 0, 1], [2, 1, 1, 2]])


@pytest.mark.parametrize("points", [7, 27])
def test_laplacian_3d_stencils(points):
    n = 4
    d = _check(gallery.laplacian_3d(n, points), n ** 3)
    centre = 1 + n * 1 + n * n * 1
    assert d[centre, centre] == points - 1
    assert np.count_nonzero(d[centre]) == points
    assert np.all(d[centre][d[centre] != 0][d[centre][d[centre] != 0] < 0] == -1)


def test_random_spd_and_ad2at_seeded():
    a = gallery.random_spd(50, 0.1, seed=3)
    _check(a, 50)
    assert (a != gallery.random_spd(50, 0.1, seed=3)).nnz == 0
    assert (a != gallery.random_spd(50, 0.1, seed=4)).nnz > 0
    assert 0.05 * 2500 < a.nnz - 50 < 0.15 * 2500
    c = gallery.ad2at_lp(30, 80, 0.05, seed=1)
    _check(c, 30)
    assert (c != gallery.ad2at_lp(30, 80, 0.05, seed=1)).nnz == 0


def test_empty_and_bad_sizes():
    for a in (gallery.laplacian_2d(0), gallery.laplacian_3d(0), gallery.random_spd(0),
              gallery.ad2at_lp(0, 5)):
        assert a.shape == (0, 0)
    with pytest.raises(ValueError):
        gallery.laplacian_2d(-1)
    with pytest.raises(ValueError, match="points"):
        gallery.laplacian_3d(3, 19)
    with pytest.raises(ValueError):
        gallery.random_spd(5, 1.5)
    with pytest.raises(ValueError):
        gallery.ad2at_lp(6, 5)
