"""Seeded sparse symmetric positive definite test matrices (float64 ``scipy.sparse.csc_array``).

* :func:`laplacian_2d` -- 5-point finite differences on an nx x ny grid (Dirichlet),
  order nx·ny, diagonal 4, off-diagonals -1;
* :func:`laplacian_3d` -- 7-point (diagonal 6, neighbours -1) or 27-point (diagonal 26,
  every one of the 26 neighbours -1) stencil on an n x n x n grid, order n³;
* :func:`random_spd` -- a random symmetric pattern with values, made diagonally dominant;
* :func:`ad2at_lp` -- A·D²·Aᵀ + δI of a random sparse LP-like A (m x n, m < n), the
  normal-equations matrix of an interior-point step.

Grid points are numbered x fastest, then y, then z (natural ordering).  Every generator
returns the full symmetric matrix, canonical CSC.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["laplacian_2d", "laplacian_3d", "random_spd", "ad2at_lp"]


def _csc(m) -> sp.csc_array:
    out = sp.csc_array(m, dtype=np.float64)
    out.sum_duplicates()
    out.sort_indices()
    return out


def _path(k: int) -> sp.csc_array:
    """The k x k adjacency matrix of a path (ones on the first sub- and superdiagonals)."""
    if k < 2:
        return sp.csc_array((k, k))
    return sp.diags_array([np.ones(k - 1)] * 2, offsets=[-1, 1], shape=(k, k))


def laplacian_2d(nx: int, ny: int | None = None) -> sp.csc_array:
    """5-point Laplacian on an nx x ny grid: 4 on the diagonal, -1 per grid neighbour."""
    ny = nx if ny is None else ny
    if nx < 0 or ny < 0:
        raise ValueError(f"grid sizes must be >= 0, got {nx} x {ny}")
    adj = sp.kron(sp.eye_array(ny), _path(nx)) + sp.kron(_path(ny), sp.eye_array(nx))
    return _csc(4.0 * sp.eye_array(nx * ny) - adj)


def laplacian_3d(n: int, points: int = 7) -> sp.csc_array:
    """3-D Laplacian on an n x n x n grid, 7-point (diagonal 6) or 27-point (diagonal 26)."""
    if n < 0:
        raise ValueError(f"grid size must be >= 0, got {n}")
    eye, path = sp.eye_array(n), _path(n)
    if points == 7:
        adj = (sp.kron(sp.kron(eye, eye), path) + sp.kron(sp.kron(eye, path), eye)
               + sp.kron(sp.kron(path, eye), eye))
        return _csc(6.0 * sp.eye_array(n ** 3) - adj)
    if points == 27:
        box = path + eye                      # the point and its neighbours along one axis
        adj = sp.kron(sp.kron(box, box), box) - sp.eye_array(n ** 3)
        return _csc(26.0 * sp.eye_array(n ** 3) - adj)
    raise ValueError(f"points must be 7 or 27, got {points}")


def random_spd(n: int, density: float = 0.01, seed: int = 0) -> sp.csc_array:
    """Random symmetric pattern (about density·n² entries), values uniform in [-1, 1),
    diagonal 1 + the absolute row sum (strictly diagonally dominant, hence SPD)."""
    if n < 0 or not 0 <= density <= 1:
        raise ValueError(f"need n >= 0 and 0 <= density <= 1, got {n}, {density}")
    rng = np.random.default_rng(seed)
    b = sp.random_array((n, n), density=density / 2, rng=rng, format="coo",
                        data_sampler=lambda size: rng.uniform(-1, 1, size))
    off = sp.triu(b, 1)
    off = off + off.T
    diag = 1.0 + np.asarray(abs(off).sum(axis=1)).ravel()
    return _csc(off + sp.diags_array(diag))


def ad2at_lp(m: int, n: int, density: float = 0.05, seed: int = 0,
             delta: float = 1e-8) -> sp.csc_array:
    """A·D²·Aᵀ + δ·I for a random sparse m x n A (about density·m·n entries, values uniform
    in [-1, 1), every column with at least one entry) and weights d² uniform in [1e-3, 1e3)
    (log-uniform, as in the last steps of an interior-point method); δ keeps it definite
    when a row of A is empty."""
    if not 0 <= m <= n or not 0 <= density <= 1:
        raise ValueError(f"need 0 <= m <= n and 0 <= density <= 1, got {m}, {n}, {density}")
    rng = np.random.default_rng(seed)
    a = sp.random_array((m, n), density=density, rng=rng, format="coo",
                        data_sampler=lambda size: rng.uniform(-1, 1, size))
    if m:
        extra = sp.coo_array((rng.uniform(-1, 1, n), (rng.integers(0, m, n), np.arange(n))),
                             shape=(m, n))
        a = a + extra
    d2 = 10.0 ** rng.uniform(-3, 3, n)
    a = sp.csr_array(a)
    c = a @ sp.diags_array(d2) @ a.T
    return _csc((c + c.T) / 2 + delta * sp.eye_array(m))   # exactly symmetric
