"""oclla.sparse._input.lower_triangle: validation and the lower triangle of every accepted
input (formats, dtypes, triangles), every bad input, the caller's matrix untouched."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from oclla.sparse import gallery
from oclla.sparse._input import lower_triangle


def _sym(n=6, seed=0, dtype=np.float64):
    a = gallery.random_spd(n, 0.4, seed).astype(dtype)
    return a


def _same(out, ref):
    """out equals the dense reference ref (lower triangle), canonical, int64 indices."""
    assert isinstance(out, sp.csc_array)
    assert out.indices.dtype == np.int64 and out.indptr.dtype == np.int64
    assert out.has_canonical_format
    np.testing.assert_array_equal(out.toarray(), np.tril(ref))


FORMATS = ["coo", "csr", "csc", "bsr", "dia", "lil", "dok"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["array", "matrix"])
def test_every_format_gives_the_lower_triangle(fmt, kind):
    a = _sym(7, 1)
    src = (sp.csc_array(a) if kind == "array" else sp.csc_matrix(a)).asformat(fmt)
    out = lower_triangle(src)
    _same(out, a.toarray())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_kept(dtype):
    a = _sym(5, 2, dtype)
    out = lower_triangle(a)
    assert out.dtype == dtype
    _same(out, a.toarray())


def test_one_triangle_with_lower_flag():
    a = _sym(8, 3).toarray()
    low, up = sp.csc_array(np.tril(a)), sp.csr_array(np.triu(a))
    _same(lower_triangle(low, lower=True), a)
    _same(lower_triangle(up, lower=False), a)
    # the other triangle is ignored, whatever it holds
    junk = sp.csc_array(np.tril(a) + np.triu(np.full_like(a, 7.0), 1))
    _same(lower_triangle(junk, lower=True), a)
    junk_up = sp.csc_array(np.triu(a) + np.tril(np.full_like(a, -3.0), -1))
    _same(lower_triangle(junk_up, lower=False), a)


def test_not_symmetric_says_so():
    a = _sym(6, 4).toarray()
    a[4, 1] += 1.0
    with pytest.raises(ValueError, match=r"not symmetric; pass lower=True/False"):
        lower_triangle(sp.csc_array(a))
    # one triangle only, lower=None: not symmetric either
    with pytest.raises(ValueError, match="not symmetric"):
        lower_triangle(sp.csc_array(np.tril(_sym(6, 4).toarray())))


@pytest.mark.parametrize("bad", [np.int64, np.int32, np.bool_, np.complex128, np.longdouble])
def test_bad_dtypes(bad):
    a = sp.csc_array(np.eye(3).astype(bad))
    with pytest.raises(TypeError, match="float32 or float64"):
        lower_triangle(a)


def test_not_sparse_not_square_not_2d():
    with pytest.raises(TypeError, match="csc_array"):
        lower_triangle(np.eye(3))
    with pytest.raises(TypeError, match="scipy.sparse"):
        lower_triangle([[1.0]])
    with pytest.raises(ValueError, match="square"):
        lower_triangle(sp.csc_array(np.ones((3, 4))))
    with pytest.raises(ValueError, match="2-D"):
        lower_triangle(sp.coo_array(np.ones(3)))
    with pytest.raises(ValueError, match="lower must be"):
        lower_triangle(sp.csc_array(np.eye(2)), lower="yes")


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nonfinite(value):
    a = _sym(5, 5).toarray()
    a[2, 2] = value
    with pytest.raises(ValueError, match="infs or NaNs"):
        lower_triangle(sp.csc_array(a))
    out = lower_triangle(sp.csc_array(a), check_finite=False)
    assert out.nnz == np.count_nonzero(np.tril(a))


def test_empty_column_is_not_an_input_error():
    a = np.diag([1.0, 0.0, 2.0])
    out = lower_triangle(sp.csc_array(a))       # (1, 1) absent: singular, numeric says so
    assert out.nnz == 2 and np.diff(out.indptr)[1] == 0


def test_explicit_zeros_stay_in_the_pattern():
    rows, cols = np.array([0, 1, 2, 1, 2, 1]), np.array([0, 1, 2, 0, 1, 2])
    vals = np.array([2.0, 2.0, 2.0, 0.0, -1.0, -1.0])
    a = sp.coo_array((vals, (rows, cols)), shape=(3, 3))
    out = lower_triangle(a)                     # (1, 0) is an explicit zero, no (0, 1)
    assert out.nnz == 5
    assert out[1, 0] == 0 and out[2, 1] == -1.0
    pattern = set(zip(out.tocoo().row.tolist(), out.tocoo().col.tolist()))
    assert (1, 0) in pattern
    # an explicit zero in the upper triangle only shows up mirrored
    b = sp.coo_array(([1.0, 1.0, 0.0], ([0, 1, 0], [0, 1, 1])), shape=(2, 2))
    pattern = set(zip(*[x.tolist() for x in lower_triangle(b).tocoo().coords]))
    assert pattern == {(0, 0), (1, 1), (1, 0)}


def test_duplicates_are_summed():
    rows = np.array([0, 1, 1, 1, 0])
    cols = np.array([0, 1, 0, 0, 1])
    vals = np.array([4.0, 5.0, 1.0, 0.5, 1.5])
    out = lower_triangle(sp.coo_array((vals, (rows, cols)), shape=(2, 2)))
    np.testing.assert_array_equal(out.toarray(), [[4.0, 0.0], [1.5, 5.0]])
    # CSR with a repeated column index in one row
    csr = sp.csr_array((np.array([1.0, 1.0, 3.0]), np.array([0, 0, 1]), np.array([0, 2, 3])),
                       shape=(2, 2))
    np.testing.assert_array_equal(lower_triangle(csr).toarray(), [[2.0, 0.0], [0.0, 3.0]])


def test_bad_index_arrays_leave_the_matrix_alone():
    a = sp.csr_array(_sym(5, 6))
    a.indices = a.indices.astype(np.float64)
    before = a.indices.copy()
    with pytest.raises(TypeError, match="index arrays must be integers"):
        lower_triangle(a)
    assert a.indices.dtype == np.float64 and np.array_equal(a.indices, before)
    b = sp.csc_array(_sym(5, 6))
    b.indices = b.indices.copy()
    b.indices[0] = 9
    with pytest.raises(ValueError, match="out of range"):
        lower_triangle(b)
    c = sp.csc_array(_sym(5, 6))
    c.indptr = c.indptr.copy()
    c.indptr[2], c.indptr[3] = c.indptr[3], c.indptr[2]
    with pytest.raises(ValueError, match="non-decreasing"):
        lower_triangle(c)
    d = sp.coo_array(_sym(4, 6))
    d.coords = (d.coords[0].astype(np.float32), d.coords[1])
    with pytest.raises(TypeError, match="integers"):
        lower_triangle(d)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint32])
def test_integer_index_kinds_accepted(index_dtype):
    a = sp.csc_array(_sym(6, 7))
    a.indices = a.indices.astype(index_dtype)
    a.indptr = a.indptr.astype(index_dtype)
    _same(lower_triangle(a), _sym(6, 7).toarray())


def test_caller_matrix_untouched_and_not_shared():
    a = sp.csc_array(_sym(9, 8))
    a.indices = a.indices.astype(np.int64)       # the result's index dtype: no cast copies
    a.indptr = a.indptr.astype(np.int64)
    copies = [a.data.copy(), a.indices.copy(), a.indptr.copy()]
    out = lower_triangle(a)
    for arr, ref in zip((a.data, a.indices, a.indptr), copies):
        np.testing.assert_array_equal(arr, ref)
        for res in (out.data, out.indices, out.indptr):
            assert not np.shares_memory(arr, res)
    out.data[:] = -1.0
    np.testing.assert_array_equal(a.data, copies[0])


def test_dense_in_a_sparse_type_and_empty():
    a = _sym(6, 9).toarray() + 10 * np.eye(6) + 0.01    # every entry stored
    a = (a + a.T) / 2
    _same(lower_triangle(sp.csr_matrix(a)), a)
    out = lower_triangle(sp.csc_array((0, 0)))
    assert out.shape == (0, 0) and out.nnz == 0 and out.indptr.tolist() == [0]


@given(n=st.integers(1, 12), k=st.integers(0, 40), seed=st.integers(0, 10**6),
       fmt=st.sampled_from(FORMATS), lower=st.sampled_from([None, True, False]))
def test_random_coordinates_against_dense(n, k, seed, fmt, lower):
    """Random entries with repeats (summed), mirrored for the full matrix, in any format:
    the result is the dense sum's lower triangle, explicit zeros of A's entries kept."""
    rng = np.random.default_rng(seed)
    r, c = rng.integers(0, n, k), rng.integers(0, n, k)
    v = rng.choice([0.0, 1.0, -2.5, 3.0], k)
    if lower is None:
        r, c, v = np.concatenate([r, c]), np.concatenate([c, r]), np.concatenate([v, v])
    a = sp.coo_array((v, (r, c)), shape=(n, n))
    dense = np.zeros((n, n))
    np.add.at(dense, (r, c), v)
    out = lower_triangle(a.asformat(fmt), lower=lower)
    ref = dense if lower is not False else dense.T
    np.testing.assert_array_equal(out.toarray(), np.tril(ref) if lower is not None
                                  else np.tril(dense))
    if fmt in ("coo", "csr", "csc"):           # formats that keep explicit zeros as given
        side = (r >= c) if lower is not False else (r <= c)
        cells = {(max(i, j), min(i, j)) for i, j in zip(r[side], c[side])}
        got = set(zip(out.tocoo().row.tolist(), out.tocoo().col.tolist()))
        assert got == cells
