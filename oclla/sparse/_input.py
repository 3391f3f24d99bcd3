"""Validation of a scipy.sparse input and its lower triangle as CSC.

:func:`lower_triangle` is the prologue of every sparse entry point: it checks
the matrix and returns the lower triangle (diagonal included) of the
symmetric matrix it stands for, as a new canonical ``scipy.sparse.csc_array``
(row indices sorted in each column, no duplicates, int64 index arrays), in the
caller's float dtype.  The caller's matrix is never modified: every array of
the result is new.

Rules
-----
* a ``scipy.sparse`` matrix or array of any format (COO, CSR, CSC, BSR, DIA,
  LIL, DOK), 2-D and square (``ValueError`` otherwise; a dense numpy array is a
  ``TypeError`` naming the conversion); 0 x 0 is allowed;
* dtype float32 or float64 (``TypeError`` for integer, bool, complex, float16);
* index arrays of an integer kind, in range, ``indptr`` non-decreasing from 0
  to nnz (``TypeError`` / ``ValueError`` otherwise) -- checked on the caller's
  arrays without converting them (scipy's own ``check_format`` would);
* finite values (``ValueError``) unless ``check_finite=False``;
* duplicate entries are summed (COO/CSR/CSC semantics); explicit zeros stay in
  the pattern (they become entries of L, as in CHOLMOD);
* ``lower=None``: the whole matrix is given and must be symmetric, exactly
  (``ValueError`` "not symmetric; pass lower=True/False to use one triangle"
  otherwise); entries present in one triangle only are kept in the pattern
  when the other triangle's value is zero (an explicit zero);
  ``lower=True``: only the lower triangle is read (the upper is ignored);
  ``lower=False``: only the upper triangle is read, transposed.

An empty column (no entry at all, not even the diagonal) is not an error
here: the matrix is then singular, which the numeric factorization reports.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validate import NONFINITE, check_dtype

__all__ = ["lower_triangle", "Refill", "refill_map", "refill"]

NOT_SYMMETRIC = "not symmetric; pass lower=True/False to use one triangle"


def _check_index_array(arr, what: str, name: str) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}.{what} has dtype {arr.dtype}; index arrays must be integers")
    if arr.ndim != 1:
        raise ValueError(f"{name}.{what} must be 1-D, got shape {arr.shape}")
    return arr.astype(np.int64)


def _coordinates(a, name: str):
    """(rows, cols, values) of ``a`` as new int64/float arrays, duplicates not yet summed."""
    n = a.shape[0]
    fmt = a.format
    if fmt in ("csr", "csc"):
        indptr = _check_index_array(a.indptr, "indptr", name)
        indices = _check_index_array(a.indices, "indices", name)
        data = np.asarray(a.data)
        if indptr.size != n + 1 or (n >= 0 and indptr.size and indptr[0] != 0):
            raise ValueError(f"{name}.indptr must have {n + 1} entries starting at 0")
        if np.any(np.diff(indptr) < 0):
            raise ValueError(f"{name}.indptr must be non-decreasing")
        nnz = int(indptr[-1])
        if indices.size < nnz or data.size < nnz:
            raise ValueError(f"{name}.indptr ends at {nnz}, beyond its {min(indices.size, data.size)} "
                             "stored entries")
        indices, data = indices[:nnz], data[:nnz]
        major = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        rows, cols = (major, indices) if fmt == "csr" else (indices, major)
    elif fmt == "coo":
        rows = _check_index_array(a.row, "row", name)
        cols = _check_index_array(a.col, "col", name)
        data = np.asarray(a.data)
        if not rows.size == cols.size == data.size:
            raise ValueError(f"{name}.row, .col and .data must have the same length")
    else:
        coo = a.tocoo()          # BSR, DIA, LIL, DOK: new arrays, validated by scipy itself
        rows, cols, data = (coo.row.astype(np.int64), coo.col.astype(np.int64),
                            np.array(coo.data))
    for idx in (rows, cols):
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ValueError(f"{name} has an index out of range 0..{n - 1}")
    return rows, cols, np.array(data, copy=True)


def _csc(rows, cols, vals, n: int, dtype) -> sp.csc_array:
    """Canonical CSC (duplicates summed, explicit zeros kept) with int64 indices."""
    key = cols * max(n, 1) + rows
    if key.size and np.any(key[1:] < key[:-1]):          # canonical input is sorted already
        order = np.argsort(key)
        rows, cols, vals, key = rows[order], cols[order], vals[order], key[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    summed = np.add.reduceat(vals, starts) if vals.size else vals
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols[starts], minlength=n), out=indptr[1:])
    out = sp.csc_array((summed.astype(dtype, copy=False), rows[starts], indptr), shape=(n, n))
    # scipy may narrow the index arrays to int32 on construction; the contract is int64
    out.indices = out.indices.astype(np.int64, copy=False)
    out.indptr = out.indptr.astype(np.int64, copy=False)
    out.has_sorted_indices = True
    return out


def _symmetric(r, c, v) -> bool:
    """Whether the summed entries (r, c, v) (canonical: sorted by column, then row) equal
    their transpose exactly, absent entries counting as zeros (NaN equal to NaN)."""
    nz = v != 0                      # NaN included
    r, c, v = r[nz], c[nz], v[nz]
    # the transpose in the same (column, row) order
    by = np.argsort(r * (int(max(r.max(initial=0), c.max(initial=0))) + 1) + c)
    return (np.array_equal(r, c[by]) and np.array_equal(c, r[by])
            and np.array_equal(v, v[by], equal_nan=True))


def lower_triangle(a, *, lower: bool | None = None, check_finite: bool = True,
                   name: str = "A") -> sp.csc_array:
    """Validate the sparse symmetric matrix ``a`` and return its lower triangle as CSC.

    Parameters
    ----------
    a : scipy.sparse matrix or array, n x n, float32 or float64
    lower : None, True or False
        None: ``a`` holds the whole symmetric matrix (checked exactly);
        True / False: read only the lower / upper triangle (the other is ignored).
    check_finite : bool
        Refuse NaN and Inf values (``ValueError``).
    name : str
        The argument's name in error messages.

    Returns
    -------
    scipy.sparse.csc_array
        n x n, the lower triangle (diagonal included) of the symmetric matrix, in ``a``'s
        dtype, canonical (sorted rows, duplicates summed), int64 index arrays, explicit
        zeros kept; new arrays throughout.
    """
    if not sp.issparse(a):
        if isinstance(a, np.ndarray):
            raise TypeError(f"{name} must be a scipy.sparse matrix; convert a dense array with "
                            "scipy.sparse.csc_array(a)")
        raise TypeError(f"{name} must be a scipy.sparse matrix, got {type(a).__name__}")
    if len(a.shape) != 2:
        raise ValueError(f"{name} must be 2-D, got shape {a.shape}")
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be square, got shape {a.shape}")
    if lower not in (None, True, False):
        raise ValueError(f"lower must be None, True or False, got {lower!r}")
    dtype = check_dtype(a.dtype, name)
    n = int(a.shape[0])
    rows, cols, vals = _coordinates(a, name)
    if check_finite and not np.all(np.isfinite(vals)):
        raise ValueError(f"{name}: {NONFINITE}")
    if lower is True:
        keep = rows >= cols
        return _csc(rows[keep], cols[keep], vals[keep], n, dtype)
    if lower is False:
        keep = rows <= cols
        return _csc(cols[keep], rows[keep], vals[keep], n, dtype)
    full = _csc(rows, cols, vals, n, dtype)
    coo = full.tocoo()
    r, c, v = coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data
    if not _symmetric(r, c, v):
        raise ValueError(f"{name} is {NOT_SYMMETRIC}")
    # union of the lower pattern and the mirrored upper pattern; values from the lower
    # triangle (the mirrored upper entries add zeros: equal values by the check above)
    low, up = r >= c, r < c
    return _csc(np.concatenate([r[low], c[up]]), np.concatenate([c[low], r[up]]),
                np.concatenate([v[low], np.zeros(int(up.sum()), dtype=v.dtype)]), n, dtype)


class Refill:
    """Where the lower-triangle values of a matrix of one stored pattern come from: for a
    canonical CSC or CSR ``a`` (sorted indices, no duplicates) of that pattern,
    ``lower_triangle(a, lower=lower).data`` is ``a.data[take]`` (and for ``lower=None``
    the matrix is symmetric exactly when ``a.data == a.data[mirror]``, the pattern
    being structurally symmetric).  Built once by :func:`refill_map`; a refactorization
    then validates and gathers the values without sorting anything (:func:`refill`)."""

    def __init__(self, fmt, indptr, indices, lower, take, mirror):
        self.fmt, self.indptr, self.indices, self.lower = fmt, indptr, indices, lower
        self.take, self.mirror = take, mirror


def refill_map(a, *, lower: bool | None = None) -> Refill | None:
    """The :class:`Refill` of a valid ``a`` (one :func:`lower_triangle` accepted), or None
    where ``a`` is not canonical CSC/CSR, or (``lower=None``) its stored pattern is not
    structurally symmetric."""
    if not sp.issparse(a) or a.format not in ("csc", "csr") or not a.has_canonical_format:
        return None
    n = int(a.shape[0])
    major = np.repeat(np.arange(n, dtype=np.int64), np.diff(a.indptr))
    minor = a.indices.astype(np.int64)
    rows, cols = (minor, major) if a.format == "csc" else (major, minor)
    if lower is False:
        rows, cols = cols, rows              # the upper triangle, transposed
    key = cols * max(n, 1) + rows            # the result's (column, row) order
    mirror = None
    if lower is None:
        order = np.argsort(key, kind="stable")
        pos = np.searchsorted(key[order], rows * max(n, 1) + cols)
        pos = np.minimum(pos, max(key.size - 1, 0))
        if key.size and not np.array_equal(key[order][pos], rows * max(n, 1) + cols):
            return None                      # an entry without its mirror
        mirror = order[pos]
    keep = np.flatnonzero(rows >= cols)
    take = keep[np.argsort(key[keep], kind="stable")]
    return Refill(a.format, a.indptr.copy(), a.indices.copy(), lower, take, mirror)


def refill(a, m: Refill, *, lower: bool | None, check_finite: bool, dtype,
           name: str = "A") -> np.ndarray | None:
    """The lower-triangle values of ``a`` (a new array, in the order of
    :func:`lower_triangle`'s result) if ``a`` has ``m``'s stored pattern, format and
    ``lower``, is canonical and of ``dtype``; None otherwise (the caller then takes
    :func:`lower_triangle`).  Raises ValueError for NaN/Inf (``check_finite``) and,
    for ``lower=None``, a matrix that is not symmetric."""
    if (not sp.issparse(a) or a.format != m.fmt or lower is not m.lower
            or a.dtype != dtype or not a.has_canonical_format
            or a.indptr.shape != m.indptr.shape or a.indices.shape != m.indices.shape
            or not np.array_equal(a.indptr, m.indptr)
            or not np.array_equal(a.indices, m.indices)):
        return None
    data = a.data
    if check_finite and not np.all(np.isfinite(data)):
        raise ValueError(f"{name}: {NONFINITE}")
    if m.mirror is not None and not np.array_equal(data, data[m.mirror], equal_nan=True):
        raise ValueError(f"{name} is {NOT_SYMMETRIC}")
    return data[m.take]
