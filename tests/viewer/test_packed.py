"""The RFP map the packed view draws, checked against LAPACK's ?trttf itself."""

import numpy as np
import pytest
from scipy.linalg.lapack import dtrttf

from oclla.viewer import packed


@pytest.mark.parametrize("n", range(1, 10))
@pytest.mark.parametrize("lower", [True, False])
def test_layout_is_lapacks_rfp(n, lower):
    a = np.arange(1.0, n * n + 1).reshape(n, n)
    arf, info = dtrttf(a, transr="N", uplo="L" if lower else "U")
    assert info == 0
    rfp, transposed = packed.orient(arf)
    assert not transposed and rfp.shape == packed.shape(n)
    lay = packed.Layout(n, lower)
    for r in range(lay.lda):
        for c in range(lay.cols):
            i, j = lay.twin_of_rfp(r, c)
            assert rfp[r, c] == a[i, j]
            assert (i >= j) == lower or i == j
            assert lay.twin_of_full(i, j) == (r, c)
            assert lay.twin_of_full(j, i) == (r, c)       # the mirror lives there too
    full = lay.unpack(rfp)
    stored = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
    assert np.array_equal(full[stored], a[stored]) and np.isnan(full[~stored]).all()


def test_orient_accepts_the_row_major_transpose():
    arf, _ = dtrttf(np.arange(36.0).reshape(6, 6), transr="N", uplo="L")
    picture, _ = packed.orient(arf)
    again, transposed = packed.orient(np.ascontiguousarray(picture.T))
    assert transposed and np.array_equal(again, picture)
    with pytest.raises(ValueError, match="not an RFP buffer"):
        packed.orient(np.zeros((1, 21)))
    with pytest.raises(ValueError, match="do not hold a packed triangle"):
        packed.orient(np.zeros(5))


def test_formula_names_the_index_and_the_rule():
    text = packed.formula(0, 1, 6, True)
    assert "arf[7]" in text and "A[4, 3]" in text and "k = 3" in text
    text = packed.formula(3, 0, 5, False)
    assert "A[0, 0]" in text and "r > n1+c" in text


def test_out_of_range_twins_are_none():
    lay = packed.Layout(4, True)
    assert lay.twin_of_full(4, 0) is None and lay.twin_of_rfp(0, 2) is None
