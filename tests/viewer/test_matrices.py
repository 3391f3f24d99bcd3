"""Matrix families and matrix input (typed text, .npy, Matrix Market)."""

import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from oclla.viewer import matrices
from oclla.viewer.matrices import MatrixError


@pytest.mark.parametrize("family", matrices.GENERATED)
def test_families_are_reproducible_float64_squares(family):
    a = matrices.generate(family, 6, seed=4)
    b = matrices.generate(family, 6, seed=4)
    n = 4 if family == "sycl4" else 6
    assert a.shape == (n, n) and a.dtype == np.float64 and a.flags.c_contiguous
    assert np.array_equal(a, b)
    if family not in ("sycl4",):
        assert not np.array_equal(a, matrices.generate(family, 6, seed=5))


def test_spd_is_symmetric_positive_definite():
    a = matrices.spd(9, seed=1)
    assert np.array_equal(a, a.T)
    assert np.linalg.eigvalsh(a).min() > 0


@pytest.mark.parametrize("symmetric", [False, True])
def test_cond_has_the_prescribed_condition_number(symmetric):
    a = matrices.cond(12, kappa=1e4, seed=2, symmetric=symmetric)
    assert np.linalg.cond(a) == pytest.approx(1e4, rel=1e-8)
    if symmetric:
        assert np.array_equal(a, a.T) and np.linalg.eigvalsh(a).min() > 0


def test_diagdom_is_strictly_diagonally_dominant():
    a = matrices.diagdom(10, seed=3)
    off = np.abs(a).sum(axis=1) - np.abs(np.diag(a))
    assert np.all(np.abs(np.diag(a)) > off)


def test_sycl4_is_the_posts_example_and_its_factors():
    low = np.array([[1, 0, 0, 0], [-2, 1, 0, 0], [3, -4, 1, 0], [2, 1, 3, 1]])
    up = np.array([[2, 4, 3, 5], [0, 1, 1, 18], [0, 0, -3, 66], [0, 0, 0, -212]])
    assert np.array_equal(matrices.sycl4(), low @ up)
    m = matrices.sycl4()
    m[0, 0] = 99
    assert matrices.SYCL4[0, 0] == 2          # callers get a copy


@pytest.mark.parametrize("bad, match", [
    (0, "at least 1"), (-3, "at least 1"), (2.5, "integer"), (True, "integer")])
def test_bad_orders_are_refused(bad, match):
    with pytest.raises(MatrixError, match=match):
        matrices.random(bad)


def test_bad_family_and_condition_number():
    with pytest.raises(MatrixError, match="unknown matrix family 'hilbert'"):
        matrices.generate("hilbert", 4)
    with pytest.raises(MatrixError, match="condition number"):
        matrices.cond(4, kappa=0.5)


@pytest.mark.parametrize("text", ["1 2; 3 4", "[[1, 2], [3, 4]]", "1,2\n3,4\n", " 1 2 ;3 4;"])
def test_parse_matrix_accepts_common_spellings(text):
    assert np.array_equal(matrices.parse_matrix(text), [[1.0, 2.0], [3.0, 4.0]])


@pytest.mark.parametrize("text, match", [
    ("", "no numbers"), ("1 2; 3", "different lengths"), ("1 2 3; 4 5 6", "2x3"),
    ("1 x; 2 3", "row 1"), ("1 nan; 2 3", "NaN"), ("1 2; 3 4", "too large")])
def test_parse_matrix_explains_bad_text(text, match):
    with pytest.raises(MatrixError, match=match):
        matrices.parse_matrix(text, max_n=1 if match == "too large" else 512)


def test_load_npy_and_mtx(tmp_path):
    a = matrices.random(5, seed=7)
    np.save(tmp_path / "a.npy", a)
    assert np.array_equal(matrices.load_matrix(tmp_path / "a.npy"), a)
    scipy.io.mmwrite(tmp_path / "a.mtx", a)
    assert np.allclose(matrices.load_matrix(tmp_path / "a.mtx"), a, rtol=1e-15, atol=0)
    sparse = scipy.sparse.coo_array(np.diag([1.0, 2.0, 3.0]))
    scipy.io.mmwrite(tmp_path / "s.mtx", sparse)
    assert np.array_equal(matrices.load_matrix(tmp_path / "s.mtx"), np.diag([1.0, 2.0, 3.0]))


def test_bad_files_are_explained(tmp_path):
    (tmp_path / "junk.mtx").write_text("this is not a matrix market file\n")
    with pytest.raises(MatrixError, match="not a Matrix Market file"):
        matrices.load_matrix(tmp_path / "junk.mtx")
    (tmp_path / "junk.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(MatrixError, match="cannot read junk.npy"):
        matrices.load_matrix(tmp_path / "junk.npy")
    np.save(tmp_path / "vec.npy", np.ones(4))
    with pytest.raises(MatrixError, match="1-dimensional"):
        matrices.load_matrix(tmp_path / "vec.npy")
    np.save(tmp_path / "rect.npy", np.ones((2, 3)))
    with pytest.raises(MatrixError, match="2x3; a square matrix"):
        matrices.load_matrix(tmp_path / "rect.npy")
    np.save(tmp_path / "z.npy", np.ones((2, 2), dtype=complex))
    with pytest.raises(MatrixError, match="complex"):
        matrices.load_matrix(tmp_path / "z.npy")
    with pytest.raises(MatrixError, match="unknown file type .txt"):
        matrices.load_matrix(tmp_path / "a.txt")


def test_a_huge_mtx_is_refused_from_its_header(tmp_path):
    path = tmp_path / "big.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n100000 100000 1\n1 1 1.0\n")
    with pytest.raises(MatrixError, match="100000x100000, too large for a step view"):
        matrices.load_matrix(path)
    path.write_text("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n")
    with pytest.raises(MatrixError, match="complex entries"):
        matrices.load_matrix(path)


def test_hostile_matrix_files_are_refused_at_once(tmp_path):
    huge = tmp_path / "huge.npy"
    huge.write_bytes(b"\x93NUMPY\x01\x00\x76\x00"
                     + b"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, "
                       b"1000000000), }".ljust(117) + b"\n" + bytes(64))
    with pytest.raises(matrices.MatrixError, match="huge.npy"):
        matrices.load_matrix(huge)
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    with pytest.raises(matrices.MatrixError, match="not a regular file"):
        matrices.load_matrix(fifo)
