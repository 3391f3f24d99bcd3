"""Backward errors in units of machine epsilon, the LAPACK/MAGMA way.

All measures are computed on the host in float64 from the factors as
returned, and divided by ``n * eps`` of the *working* dtype (the dtype of the
factor), so one threshold serves float32 and float64 alike:

* LU:       ‖PA − LU‖∞ / (n ‖A‖∞ ε)
* Cholesky: ‖A − LLᵀ‖∞ / (n ‖A‖∞ ε)       (or ‖A − UᵀU‖∞ for upper)
* solve:    ‖b − Ax‖∞ / (‖A‖∞ ‖x‖∞ n ε)

A result passes when the error is below :data:`THRESHOLD` (30, as LAPACK's
and MAGMA's testers).
"""

from __future__ import annotations

import numpy as np

THRESHOLD = 30.0


def eps(dtype) -> float:
    """Machine epsilon of a floating dtype (2**-23 for float32, 2**-52 for float64)."""
    return float(np.finfo(np.dtype(dtype)).eps)


def _ratio(residual_norm: float, scale: float) -> float:
    if residual_norm == 0.0:
        return 0.0
    if scale == 0.0 or not np.isfinite(scale):
        return float("inf")
    return float(residual_norm / scale)


def _inf_norm(m: np.ndarray) -> float:
    m = np.asarray(m, dtype=np.float64)
    if m.size == 0:
        return 0.0
    if m.ndim == 1:
        return float(np.max(np.abs(m)))
    return float(np.max(np.sum(np.abs(m), axis=1)))


def permutation_from_piv(piv, n: int) -> np.ndarray:
    """Row order ``perm`` with ``(P A) = A[perm]`` from LAPACK-style 0-based swaps.

    ``piv[i] = j`` means row i was interchanged with row j, applied for
    i = 0, 1, ... in order (``scipy.linalg.lu_factor``'s convention).
    """
    perm = np.arange(n)
    for i, j in enumerate(np.asarray(piv, dtype=np.int64)[:n]):
        if not 0 <= j < n:
            raise ValueError(f"piv[{i}] = {j} is out of range for n = {n}")
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def split_lu(lu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit lower L and upper U from the packed ``lu`` of ``lu_factor``."""
    lu = np.asarray(lu, dtype=np.float64)
    n = lu.shape[0]
    return np.tril(lu, -1) + np.eye(n), np.triu(lu)


def lu_backward_error(a, lu, piv) -> float:
    """‖PA − LU‖∞ / (n ‖A‖∞ ε) for the packed factors of ``lu_factor``."""
    a64 = np.asarray(a, dtype=np.float64)
    n = a64.shape[0]
    if n == 0:
        return 0.0
    l, u = split_lu(lu)
    perm = permutation_from_piv(piv, n)
    residual = a64[perm] - l @ u
    return _ratio(_inf_norm(residual), n * _inf_norm(a64) * eps(np.asarray(lu).dtype))


def plu_backward_error(a, p, l, u) -> float:
    """‖A − PLU‖∞ / (n ‖A‖∞ ε) for the three factors of ``lu``."""
    a64 = np.asarray(a, dtype=np.float64)
    n = a64.shape[0]
    if n == 0:
        return 0.0
    residual = a64 - np.asarray(p, np.float64) @ np.asarray(l, np.float64) @ \
        np.asarray(u, np.float64)
    return _ratio(_inf_norm(residual), n * _inf_norm(a64) * eps(np.asarray(u).dtype))


def cholesky_backward_error(a, c, lower: bool) -> float:
    """‖A − LLᵀ‖∞ / (n ‖A‖∞ ε) with L = c (lower) or L = cᵀ (upper).

    Only the triangle of ``c`` named by ``lower`` is used; ``a`` is the full
    symmetric matrix.
    """
    a64 = np.asarray(a, dtype=np.float64)
    n = a64.shape[0]
    if n == 0:
        return 0.0
    c64 = np.asarray(c, dtype=np.float64)
    l = np.tril(c64) if lower else np.triu(c64).T
    residual = a64 - l @ l.T
    return _ratio(_inf_norm(residual), n * _inf_norm(a64) * eps(np.asarray(c).dtype))


def solve_backward_error(a, x, b) -> float:
    """‖b − Ax‖∞ / (‖A‖∞ ‖x‖∞ n ε), ε of ``x``'s dtype; columns of b taken together."""
    a64 = np.asarray(a, dtype=np.float64)
    n = a64.shape[0]
    if n == 0:
        return 0.0
    x64 = np.asarray(x, dtype=np.float64)
    residual = np.asarray(b, dtype=np.float64) - a64 @ x64
    return _ratio(_inf_norm(residual),
                  _inf_norm(a64) * _inf_norm(x64) * n * eps(np.asarray(x).dtype))


def _sparse_inf_norm(m) -> float:
    """‖M‖∞ of a scipy.sparse matrix (largest absolute row sum), in float64."""
    if m.shape[0] == 0 or m.nnz == 0:
        return 0.0
    return float(abs(m.astype(np.float64)).sum(axis=1).max())


def sparse_cholesky_backward_error(a, l, p) -> float:
    """‖P·A·Pᵀ − L·Lᵀ‖∞ / (n ‖A‖∞ ε), all sparse (scipy.sparse, float64 on the host).

    ``a``: the whole symmetric matrix; ``l``: the lower factor of the permuted matrix
    (its upper triangle is ignored); ``p``: the permutation with A[p][:, p] = L·Lᵀ;
    ε of ``l``'s dtype.
    """
    import scipy.sparse as sp

    n = a.shape[0]
    if n == 0:
        return 0.0
    p = np.asarray(p, dtype=np.int64)
    a64 = sp.csr_array(a, dtype=np.float64)[p][:, p]
    l64 = sp.tril(sp.csc_array(l, dtype=np.float64))
    residual = a64 - l64 @ l64.T
    return _ratio(_sparse_inf_norm(residual), n * _sparse_inf_norm(a64) * eps(l.dtype))


def sparse_cholesky_probe_error(a, l, p, *, vectors: int = 4, seed: int = 0) -> float:
    """max over random sign vectors x of ‖(P·A·Pᵀ − L·Lᵀ)·x‖∞ / (n ‖A‖∞ ε): matrix-vector
    products only (no L·Lᵀ), for factors too large for
    :func:`sparse_cholesky_backward_error`, which it bounds from below (‖x‖∞ = 1) up
    to the rounding of its own products.

    ``a``, ``l``, ``p`` and ε as there; ``vectors`` sign vectors drawn from ``seed``.
    """
    import scipy.sparse as sp

    n = a.shape[0]
    if n == 0:
        return 0.0
    p = np.asarray(p, dtype=np.int64)
    a64 = sp.csr_array(a, dtype=np.float64)
    l64 = sp.tril(sp.csc_array(l, dtype=np.float64))
    lt = l64.T.tocsr()
    x = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n, vectors))
    y = np.empty_like(x)
    y[p] = x
    residual = (a64 @ y)[p] - l64 @ (lt @ x)
    return _ratio(float(np.max(np.abs(residual))),
                  n * _sparse_inf_norm(a64) * eps(l.dtype))


def sparse_solve_backward_error(a, x, b) -> float:
    """‖b − Ax‖∞ / (‖A‖∞ ‖x‖∞ n ε) for a scipy.sparse A (ε of ``x``'s dtype)."""
    import scipy.sparse as sp

    n = a.shape[0]
    if n == 0:
        return 0.0
    x64 = np.asarray(x, dtype=np.float64)
    residual = np.asarray(b, dtype=np.float64) - sp.csr_array(a, dtype=np.float64) @ x64
    return _ratio(_inf_norm(residual),
                  _sparse_inf_norm(sp.csr_array(a)) * _inf_norm(x64) * n * eps(x.dtype))


def growth_factor(a, u) -> float:
    """max |u_ij| / max |a_ij|: how much elimination let the entries grow."""
    amax = float(np.max(np.abs(np.asarray(a, np.float64)))) if np.size(a) else 0.0
    umax = float(np.max(np.abs(np.triu(np.asarray(u, np.float64))))) if np.size(u) else 0.0
    return _ratio(umax, amax)


def passes(error: float) -> bool:
    """True when a backward error (in units of n·ε) is below :data:`THRESHOLD`."""
    return bool(np.isfinite(error) and error < THRESHOLD)


def product_error(c, a, b, *, alpha: float = 1.0, beta: float = 0.0, c0=None) -> float:
    """‖C − (αAB + βC₀)‖∞ / (k ‖|α||A||B| + |β||C₀|‖∞ ε): a product's error, units of kε.

    ``a`` is m x k and ``b`` k x n as multiplied (transpose them first for
    op(A), op(B)); ε is that of ``c``'s dtype.  This is the normwise form of
    the standard bound |fl(AB) − AB| ≤ kε|A||B|, so a correct GEMM passes the
    same :data:`THRESHOLD` as the factorizations.
    """
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    c64 = np.asarray(c, np.float64)
    k = max(1, a64.shape[1])
    exact = alpha * (a64 @ b64)
    scale = abs(alpha) * (np.abs(a64) @ np.abs(b64))
    if c0 is not None and beta != 0.0:
        exact = exact + beta * np.asarray(c0, np.float64)
        scale = scale + abs(beta) * np.abs(np.asarray(c0, np.float64))
    if c64.size == 0:
        return 0.0
    return _ratio(_inf_norm(c64 - exact), k * _inf_norm(scale) * eps(np.asarray(c).dtype))


def inverse_error(a, a_inv) -> float:
    """‖A·X − I‖∞ / (n ‖A‖∞ ‖X‖∞ ε) for a computed inverse X of A, ε of X's dtype.

    LAPACK's ``?pot03``/``?get03`` measure: a backward-stable inverse makes it
    O(1) whatever the condition number, since ‖A·X − I‖ ≲ n ε ‖A‖ ‖X‖.
    """
    a64 = np.asarray(a, dtype=np.float64)
    n = a64.shape[0]
    if n == 0:
        return 0.0
    x64 = np.asarray(a_inv, dtype=np.float64)
    residual = a64 @ x64 - np.eye(n)
    return _ratio(_inf_norm(residual),
                  n * _inf_norm(a64) * _inf_norm(x64) * eps(np.asarray(a_inv).dtype))


def kahan_sum(values) -> float:
    """Σ values in float64 with Kahan's compensation (the host reference for reductions)."""
    total = 0.0
    carry = 0.0
    for x in np.asarray(values, dtype=np.float64).ravel():
        y = float(x) - carry
        t = total + y
        carry = (t - total) - y
        total = t
    return total


def logdet_reference(c) -> float:
    """log det A = 2 Σ log|cᵢᵢ| from a Cholesky factor ``c``, by :func:`kahan_sum` in float64."""
    return 2.0 * kahan_sum(np.log(np.abs(np.diagonal(np.asarray(c, dtype=np.float64)))))


def _householder(a: np.ndarray, u: np.ndarray) -> np.ndarray:
    """H·A·H for H = I − t·u·uᵀ, t = 2/(uᵀu), as Macindoe (2013) Algorithm 3 forms it:
    v = A·u, s = t²·(uᵀv)/2, w = t·v − s·u, A − u·wᵀ − w·uᵀ (the thesis's last line
    prints A − uᵀw + u·wᵀ, a typo: this form is H·A·H)."""
    v = a @ u
    t = 2.0 / (u @ u)
    s = t * t * (u @ v) / 2.0
    w = t * v - s * u
    return a - np.outer(u, w) - np.outer(w, u)


def spd_with_condition(n: int, cond: float, *, reflections: int | None = 1, rng=None,
                       dtype=np.float64) -> np.ndarray:
    """A random symmetric positive definite n x n matrix with 2-norm condition number ``cond``.

    Macindoe (2013) Algorithm 3: the eigenvalues are drawn from U[1, cond]
    with 1 and ``cond`` each present (so κ₂ = cond exactly, up to rounding),
    then the diagonal matrix is turned by ``reflections`` random Householder
    reflections H = I − 2uuᵀ/(uᵀu), u ~ U(0, 1)ⁿ (the thesis uses one; a
    single reflection with positive u leaves the matrix close to diagonal).
    ``reflections=None`` uses a Haar-distributed orthogonal Q instead (QR of a
    Gaussian matrix, signs fixed), A = Q·diag·Qᵀ: the harder test.  Built in
    float64, symmetrized, then converted to ``dtype``.
    """
    if cond < 1 or not np.isfinite(cond):
        raise ValueError(f"cond must be a finite number >= 1, got {cond}")
    if n == 1 and cond != 1:
        raise ValueError("a 1 x 1 matrix has condition number 1")
    rng = np.random.default_rng(rng)
    d = rng.uniform(1.0, cond, n)
    if n:
        d[:2] = (1.0, cond)[:n]
        d = rng.permutation(d)
    if reflections is None:
        q, r = np.linalg.qr(rng.standard_normal((n, n)))
        a = (q * np.sign(np.diagonal(r))) * d @ (q * np.sign(np.diagonal(r))).T
    else:
        a = np.diag(d)
        for _ in range(reflections if n else 0):
            a = _householder(a, rng.uniform(0.0, 1.0, n))
    return ((a + a.T) / 2.0).astype(dtype)
