"""A Symbolic built by hand for small matrices (dense pattern of L), independent of
oclla.sparse.symbolic: the numeric tests' own reference structure."""

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp


def handmade_symbolic(a_lower: sp.csc_matrix, perm=None, *, max_cols: int = 4):
    """Supernodes of at most ``max_cols`` consecutive columns whose patterns nest
    (fundamental, split), from the exact pattern of L of A[perm][:, perm]."""
    n = a_lower.shape[0]
    perm = np.arange(n) if perm is None else np.asarray(perm, np.int64)
    iperm = np.empty(n, np.int64)
    iperm[perm] = np.arange(n)
    full = (a_lower + sp.tril(a_lower, -1).T).tocsr()
    b = full[perm][:, perm].toarray() != 0
    # symbolic Cholesky on the boolean pattern (dense, small n)
    pat = np.tril(b | np.eye(n, dtype=bool))
    for k in range(n):
        rows = np.flatnonzero(pat[k + 1:, k]) + k + 1
        if rows.size:
            pat[np.ix_(rows, rows)] |= np.tril(np.ones((rows.size, rows.size), bool))
    starts = [0]
    for j in range(1, n):
        prev = set(np.flatnonzero(pat[:, j - 1]).tolist()) - {j - 1}
        cur = set(np.flatnonzero(pat[:, j]).tolist())
        if prev != cur or j - starts[-1] >= max_cols:
            starts.append(j)
    super_ptr = np.array(starts + [n], np.int64)
    ns = super_ptr.size - 1
    col_super = np.repeat(np.arange(ns), np.diff(super_ptr))
    rows = [np.flatnonzero(pat[:, super_ptr[s]]) for s in range(ns)]
    # rows of the first column include the supernode's own columns (nested patterns)
    rows = [np.union1d(np.arange(super_ptr[s], super_ptr[s + 1]), r) for s, r in enumerate(rows)]
    row_ptr = np.concatenate(([0], np.cumsum([r.size for r in rows]))).astype(np.int64)
    row_idx = np.concatenate(rows).astype(np.int64)
    parent = np.array([col_super[r[super_ptr[s + 1] - super_ptr[s]]]
                       if r.size > super_ptr[s + 1] - super_ptr[s] else -1
                       for s, r in enumerate(rows)], np.int64)
    nc = np.diff(super_ptr)
    nr = np.diff(row_ptr)
    l_ptr = np.concatenate(([0], np.cumsum(nc * nr))).astype(np.int64)
    low = sp.csc_matrix(a_lower)
    coo = low.tocoo()
    # CSC order of the lower triangle
    order = np.lexsort((coo.row, coo.col))
    i, j = coo.row[order], coo.col[order]
    pi, pj = iperm[i], iperm[j]
    r, c = np.maximum(pi, pj), np.minimum(pi, pj)
    s = col_super[c]
    pos = np.array([np.searchsorted(rows[s_], r_) for s_, r_ in zip(s, r)], np.int64)
    a_map = l_ptr[s] + (c - super_ptr[s]) * nr[s] + pos
    nnz_l = int(pat.sum())
    counts = pat.sum(axis=0).astype(np.float64)
    return SimpleNamespace(n=n, perm=perm, iperm=iperm, ordering="natural",
                           super_ptr=super_ptr, row_ptr=row_ptr, row_idx=row_idx,
                           parent=parent, l_ptr=l_ptr, col_super=col_super.astype(np.int64),
                           a_map=a_map, nnz_l=nnz_l, flops=float((counts ** 2).sum()))
