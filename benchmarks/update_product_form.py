"""The product form of a rank-k Cholesky update, in NumPy: which of its forms is stable.

    python benchmarks/update_product_form.py [--n 150] [--k 16]

An update needs no chain of n·k dependent rotations.  With A = L·Lᵀ and
W = L⁻¹V (one triangular solve), A + V·Vᵀ = L·(I + W·Wᵀ)·Lᵀ, and the factor of
I + W·Wᵀ is D + tril(W·Bᵀ, −1) (Gill, Golub, Murray and Saunders' product form,
here for k columns at once).  Row j needs only the k × k matrix
M_j = I + Σ_{l<j} w_l·w_lᵀ:

    u_j = M_j⁻¹·w_j,  d_j = √(1 + w_jᵀ·u_j),  b_j = u_j / d_j,
    L̃(i, j) = d_j·L(i, j) + (Σ_{j<l≤i} L(i, l)·w_l)ᵀ·b_j,

so the rows' M_j are a prefix sum, the last line is a suffix sum along each
row of L (both parallel), and the only sequential work is on k × k matrices.

Two ways to get at M_j, compared here on the backward error
‖Ã − L̃·L̃ᵀ‖₁/(n‖Ã‖₁ε) (oclla.accuracy's measure) for updates:

* ``gram``: M_j formed as an explicit prefix sum and solved.  Unstable:
  where V is large against A (‖W‖ ≫ 1) the early M_j (rank of the sum below
  k) are I plus a huge matrix of low rank, and the I is lost in rounding;
  errors of thousands of units in both dtypes.
* ``sqrt``: the Cholesky factor R_j of M_j (R_{j+1} = the R of QR([R_j; w_jᵀ]),
  an orthogonal update), then z = R_j⁻ᵀ·w_j, d_j = √(1 + zᵀz),
  b_j = R_j⁻¹·z / d_j.  Within a few units wherever ‖W‖ stays below ~10⁵;
  beyond (V thousands of times A's scale, A ill-conditioned) the suffix sums
  of L(i, l)·w_l cancel, and one float64 case below reached ~290 units (the
  rotation sweep stays backward stable there).  The R_j are a prefix under an
  associative, stable combination (the R of two stacked R's), so on a device
  they could be formed by a tree of small QRs instead of a chain of n.

On this machine (``--n 150 --k 16``; gram / sqrt, units of n‖Ã‖ε): float32
cond 1e2 scale 1: 0.20 / 0.03; cond 1e6 scale 100: 9425 / 0.11; cond 1e3
scale 1e4: gram fails (an M_j singular), sqrt 0.07; float64 cond 1e6 scale
100: 16865 / 6.6; cond 1e3 scale 1e4: 5.6e7 / 287.

Downdates (A − V·Vᵀ) are not covered: their M_j = I − Σ w·wᵀ would need
hyperbolic steps, which is what the rotation sweep of oclla.update does.
"""

import argparse

import numpy as np
import scipy.linalg as sla


def _rows_from_scan(lower, w, d, b):
    """L̃ = L·diag(d) + the suffix sums of L(i, l)·w_l along each row, times b_j."""
    terms = lower[:, :, None] * w[None, :, :]                     # (i, l, :)
    after = np.cumsum(terms[:, ::-1], axis=1)[:, ::-1] - terms     # Σ over l > j
    return np.tril(lower * d[None, :] + np.einsum("ijk,jk->ij", after, b))


def product_form_gram(lower, v):
    """The update with M_j formed explicitly (prefix sums of w·wᵀ) and solved."""
    w = sla.solve_triangular(lower, v, lower=True)
    outer = w[:, :, None] * w[:, None, :]
    m = np.eye(w.shape[1], dtype=w.dtype)[None] + np.cumsum(outer, axis=0) - outer
    try:
        u = np.linalg.solve(m, w[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:              # an M_j singular in the working precision
        return None
    radicand = 1 + np.einsum("ij,ij->i", w, u)
    if not np.all(radicand > 0):
        return None
    d = np.sqrt(radicand).astype(w.dtype)
    return _rows_from_scan(lower, w, d, (u / d[:, None]).astype(w.dtype))


def product_form_sqrt(lower, v):
    """The update with the Cholesky factor R_j of M_j, updated by one QR per row."""
    w = sla.solve_triangular(lower, v, lower=True)
    n, k = w.shape
    r = np.eye(k, dtype=w.dtype)
    d, b = np.empty(n, w.dtype), np.empty((n, k), w.dtype)
    for j in range(n):          # the reference's sequential prefix (a device would use a tree)
        z = sla.solve_triangular(r, w[j], trans="T")
        d[j] = np.sqrt(1 + z @ z)
        b[j] = sla.solve_triangular(r, z) / d[j]
        r = np.linalg.qr(np.vstack([r, w[j][None]]), mode="r").astype(w.dtype)
    return _rows_from_scan(lower, w, d, b)


def backward_error(factor, target, dtype) -> float:
    f = factor.astype(np.float64)
    return (np.linalg.norm(target - f @ f.T, 1)
            / (len(target) * np.linalg.norm(target, 1) * np.finfo(dtype).eps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--k", type=int, default=16)
    args = ap.parse_args()
    n, k = args.n, args.k
    rng = np.random.default_rng(0)
    print(f"n = {n}, k = {k}; A = Q·diag(logspace(0, -log10 cond))·Qᵀ, V = scale·randn; "
          "backward error in units of n‖Ã‖ε")
    print(f"{'dtype':8} {'cond(A)':>8} {'scale':>6} {'max|W|':>9} {'gram':>9} {'sqrt':>7}")
    for dtype in (np.float32, np.float64):
        for cond, scale in ((1e2, 1), (1e6, 1), (1e6, 100), (1e3, 1e4), (1e3, 1e-3)):
            q, _ = np.linalg.qr(rng.standard_normal((n, n)))
            a = (q * np.logspace(0, -np.log10(cond), n)) @ q.T
            a = (a + a.T) / 2
            v = rng.standard_normal((n, k)) * scale
            target = a + v @ v.T
            lower = np.linalg.cholesky(a).astype(dtype)
            vd = v.astype(dtype)
            w_max = np.abs(sla.solve_triangular(lower, vd, lower=True)).max()
            gram = product_form_gram(lower, vd)
            gram_err = "failed" if gram is None else f"{backward_error(gram, target, dtype):.2f}"
            sqrt_err = backward_error(product_form_sqrt(lower, vd), target, dtype)
            print(f"{np.dtype(dtype).name:8} {cond:8.0e} {scale:6g} {w_max:9.3g} "
                  f"{gram_err:>9} {sqrt_err:7.2f}")


if __name__ == "__main__":
    main()
