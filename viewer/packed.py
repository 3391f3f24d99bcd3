"""Where each entry of a triangle lives in LAPACK's rectangular full packed (RFP) format.

Host bookkeeping for the packed-storage view: the viewer shows the triangle
and the RFP buffer side by side, and hovering an entry lights its twin.

LAPACK's RFP with TRANSR='N' stores the n(n+1)/2 entries of one triangle of
an n×n symmetric matrix A as a column-major ``lda × cols`` array R
(``arf[r + c·lda] = R[r, c]``).  With n1 = ⌊n/2⌋, n2 = n − n1:

* n even (k = n/2): ``lda = n + 1``, ``cols = k``
    - lower:  R[r, c] = A[r−1, c]        if r > c      (the left trapezoid)
              R[r, c] = A[k+c, k+r]      if r ≤ c      (A22's lower triangle, transposed)
    - upper:  R[r, c] = A[r, k+c]        if r ≤ k+c    (the right trapezoid)
              R[r, c] = A[c, r−k−1]      if r > k+c    (A11's upper triangle, transposed)
* n odd: ``lda = n``, ``cols = n2``
    - lower:  R[r, c] = A[r, c]          if r ≥ c
              R[r, c] = A[n2+c−1, n2+r]  if r < c
    - upper:  R[r, c] = A[r, n1+c]       if r ≤ n1+c
              R[r, c] = A[c, r−n1−1]     if r > n1+c

This is exactly ``scipy.linalg.lapack.?trttf(a, transr='N', uplo=...)``
(tests check it entry by entry).  A device that stores the same buffer
row-major sees the transpose, a ``cols × lda`` array; :func:`orient` accepts
either picture (and the flat ``arf``).
"""

from __future__ import annotations

import math

import numpy as np


def order_from_size(size: int) -> int:
    """n with n(n+1)/2 = size; ValueError if size is not a triangular number."""
    n = (math.isqrt(8 * size + 1) - 1) // 2
    if n * (n + 1) // 2 != size:
        raise ValueError(f"{size} entries do not hold a packed triangle")
    return n


def shape(n: int) -> tuple[int, int]:
    """(lda, cols) of the column-major RFP array for order n."""
    if n % 2 == 0:
        return n + 1, n // 2
    return n, (n + 1) // 2


def rfp_to_full(r: int, c: int, n: int, lower: bool) -> tuple[int, int]:
    """(i, j) of A stored at RFP position (r, c) (LAPACK's column-major picture)."""
    if n % 2 == 0:
        k = n // 2
        if lower:
            return (r - 1, c) if r > c else (k + c, k + r)
        return (r, k + c) if r <= k + c else (c, r - k - 1)
    n1, n2 = n // 2, n - n // 2
    if lower:
        return (r, c) if r >= c else (n2 + c - 1, n2 + r)
    return (r, n1 + c) if r <= n1 + c else (c, r - n1 - 1)


def _rfp_to_full_arrays(r, c, n: int, lower: bool) -> tuple:
    """:func:`rfp_to_full` for arrays of positions at once: (i, j) arrays."""
    if n % 2 == 0:
        k = n // 2
        if lower:
            first = r > c
            return np.where(first, r - 1, k + c), np.where(first, c, k + r)
        first = r <= k + c
        return np.where(first, r, c), np.where(first, k + c, r - k - 1)
    n1, n2 = n // 2, n - n // 2
    if lower:
        first = r >= c
        return np.where(first, r, n2 + c - 1), np.where(first, c, n2 + r)
    first = r <= n1 + c
    return np.where(first, r, c), np.where(first, n1 + c, r - n1 - 1)


def formula(r: int, c: int, n: int, lower: bool) -> str:
    """The rule that maps RFP position (r, c) to its A entry, as text."""
    i, j = rfp_to_full(r, c, n, lower)
    lda = shape(n)[0]
    if n % 2 == 0:
        k = n // 2
        if lower:
            rule = "r > c: A[r-1, c]" if r > c else f"r <= c: A[k+c, k+r], k = {k}"
        else:
            rule = (f"r <= k+c: A[r, k+c], k = {k}" if r <= k + c
                    else f"r > k+c: A[c, r-k-1], k = {k}")
    else:
        n1, n2 = n // 2, n - n // 2
        if lower:
            rule = "r >= c: A[r, c]" if r >= c else f"r < c: A[n2+c-1, n2+r], n2 = {n2}"
        else:
            rule = (f"r <= n1+c: A[r, n1+c], n1 = {n1}" if r <= n1 + c
                    else f"r > n1+c: A[c, r-n1-1], n1 = {n1}")
    return (f"RFP[{r}, {c}] = arf[{r} + {c}·{lda}] = arf[{r + c * lda}] "
            f"holds A[{i}, {j}]  ({rule})")


class Layout:
    """Both directions of the RFP map for one order and triangle."""

    def __init__(self, n: int, lower: bool = True):
        self.n, self.lower = int(n), bool(lower)
        self.lda, self.cols = shape(self.n)
        r, c = np.indices((self.lda, self.cols), dtype=np.int32)
        self.to_full = np.stack(_rfp_to_full_arrays(r, c, self.n, self.lower), axis=-1)
        self.to_rfp = np.full((self.n, self.n, 2), -1, dtype=np.int32)
        self.to_rfp[self.to_full[..., 0], self.to_full[..., 1]] = np.stack((r, c), axis=-1)

    def twin_of_full(self, i: int, j: int):
        """RFP (r, c) holding A[i, j] (or its mirror), None outside the matrix."""
        if not (0 <= i < self.n and 0 <= j < self.n):
            return None
        if (i < j) == self.lower and i != j:
            i, j = j, i
        r, c = self.to_rfp[i, j]
        return int(r), int(c)

    def twin_of_rfp(self, r: int, c: int):
        """A (i, j) stored at RFP (r, c), None outside the array."""
        if not (0 <= r < self.lda and 0 <= c < self.cols):
            return None
        i, j = self.to_full[r, c]
        return int(i), int(j)

    def unpack(self, arf2d: np.ndarray) -> np.ndarray:
        """The n×n matrix with the stored triangle filled, the other NaN."""
        out = np.full((self.n, self.n), np.nan, dtype=np.float64)
        out[self.to_full[..., 0], self.to_full[..., 1]] = arf2d
        return out


def orient(arf) -> tuple[np.ndarray, bool]:
    """(R, transposed): the ``lda × cols`` LAPACK picture of a packed buffer.

    Accepts the flat ``arf`` (LAPACK order), the ``lda × cols`` array, or its
    transpose ``cols × lda`` (the same buffer read row-major).  ``transposed``
    says the input was the latter, so positions map back with (c, r).
    """
    a = np.asarray(arf)
    if a.ndim == 1:
        n = order_from_size(a.size)
        lda, cols = shape(n)
        return a.reshape((lda, cols), order="F"), False
    if a.ndim != 2:
        raise ValueError(f"a packed buffer is 1-D or 2-D, got {a.ndim}-D")
    n = order_from_size(a.size)
    lda, cols = shape(n)
    if a.shape == (lda, cols):
        return a, False
    if a.shape == (cols, lda):
        return a.T, True
    raise ValueError(f"a {a.shape[0]}x{a.shape[1]} array is not an RFP buffer of order {n} "
                     f"({lda}x{cols} or {cols}x{lda})")
