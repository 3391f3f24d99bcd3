"""Fill-reducing orderings of a symmetric sparse matrix.

Each ordering takes the lower triangle of A (CSC, :func:`._input.lower_triangle`) and returns
``perm`` (int64, a permutation of 0..n-1): pivot k is the original column perm[k], and
A[perm][:, perm] is factored.

* ``"natural"``: the identity (the analysis then postorders the elimination tree, which
  keeps the fill);
* ``"rcm"``: reverse Cuthill-McKee (scipy.sparse.csgraph), a small profile, not small fill;
* ``"amd"``: approximate minimum degree (:mod:`._amd`, pure Python: ~1.5 s of CPU for the
  3-D 30³ Laplacian, ~35 s for 60³, ~2.5 min for 100³, n = 10⁶, where METIS takes 37 s);
* ``"metis"``: METIS nested dissection (``pymetis.nested_dissection``);
* ``"best"``: each of metis, amd and rcm, keeping the one of least nnz(L) (column counts of
  the symbolic factorization; ties go to the earlier name).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

__all__ = ["ORDERINGS", "order", "natural", "rcm", "amd", "metis", "fill"]

ORDERINGS = ("metis", "amd", "rcm", "natural", "best")
BEST_CANDIDATES = ("metis", "amd", "rcm")


def _graph(a_low: sp.csc_array) -> sp.csr_array:
    """The adjacency of A's graph (both triangles, no diagonal), CSR with int32 indices."""
    g = sp.csr_array(a_low, copy=True)
    g.data = np.ones_like(g.data)
    g.setdiag(0)
    g.eliminate_zeros()
    g = g + g.T
    g.sort_indices()
    return g


def natural(a_low: sp.csc_array) -> np.ndarray:
    """The identity permutation."""
    return np.arange(a_low.shape[0], dtype=np.int64)


def rcm(a_low: sp.csc_array) -> np.ndarray:
    """Reverse Cuthill-McKee (scipy.sparse.csgraph.reverse_cuthill_mckee) of A's graph."""
    n = a_low.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int64)
    g = _graph(a_low)
    return np.asarray(reverse_cuthill_mckee(g, symmetric_mode=True), dtype=np.int64)


def metis(a_low: sp.csc_array) -> np.ndarray:
    """METIS nested dissection (pymetis).  METIS returns (perm, iperm) with perm[k] the
    vertex placed at position k -- the same convention as here."""
    import pymetis

    n = a_low.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int64)
    g = _graph(a_low)
    if g.nnz == 0:
        return np.arange(n, dtype=np.int64)
    adjacency = pymetis.CSRAdjacency(g.indptr.astype(np.int32), g.indices.astype(np.int32))
    perm, _ = pymetis.nested_dissection(adjacency)
    return np.asarray(perm, dtype=np.int64)


def amd(a_low: sp.csc_array) -> np.ndarray:
    """Approximate minimum degree of A's graph (:func:`._amd.amd_order`)."""
    from ._amd import amd_order

    return amd_order(_graph(a_low))


_METHODS = {"natural": natural, "rcm": rcm, "amd": amd, "metis": metis}


def fill(a_low: sp.csc_array, perm: np.ndarray) -> int:
    """nnz(L) (lower triangle, diagonal included) of A[perm][:, perm], by column counts."""
    from . import _etree

    rows, cols = _etree.permuted_lower(a_low, perm)
    parent = _etree.etree(a_low.shape[0], rows, cols)
    post = _etree.postorder(parent)
    rows, cols = _etree.permuted_lower(a_low, perm[post])
    counts = _etree.column_counts(_etree.relabel_parent(parent, post), rows, cols)
    return int(counts.sum())


def order(a_low: sp.csc_array, ordering: str) -> tuple[np.ndarray, str]:
    """(perm, name used) for the named ordering."""
    if not isinstance(ordering, str) or ordering not in ORDERINGS:
        raise ValueError(f"ordering must be one of {', '.join(map(repr, ORDERINGS))}, "
                         f"got {ordering!r}")
    if ordering != "best":
        return _METHODS[ordering](a_low), ordering
    best = None
    for name in BEST_CANDIDATES:
        perm = _METHODS[name](a_low)
        nnz = fill(a_low, perm)
        if best is None or nnz < best[0]:
            best = (nnz, perm, name)
    return best[1], best[2]
