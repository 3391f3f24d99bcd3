"""Elimination tree, postorder and column counts of a symmetric pattern (vectorised graph work).

Elimination tree
----------------
parent(j) = min{ i > j : L_ij ≠ 0 }.  Liu's algorithm visits the edges (k, i), k < i, in
increasing i and links the root of k's current subtree to i (a union-find whose roots are
the largest vertices of their components).  Only the component structure of the graphs
G_{<=i} (vertices 0..i) matters, so the edges are first thinned to a spanning forest with
the same components at every threshold: a minimum spanning forest with edge weights
max(k, i) (scipy's compiled Kruskal).  The union-find then runs over n - 1 edges at most.

Column counts
-------------
|L_{*j}| = #{ i : j ∈ T_i }, T_i the row subtree of row i (the union of the tree paths from
every k with A_ik ≠ 0, k <= i, up to i).  With the tree in postorder, the subtree of x is the
range first[x]..x; for the nonzeros k_1 < ... < k_m = i of row i, the union of the paths is
counted by +1 at each k_t, -1 at each lca(k_{t-1}, k_t) and -1 at parent(i); the column count
of x is then the sum of these weights over x's subtree, a difference of prefix sums.  The
lca of u < v (postorder) is the first x >= v with first[x] <= u, found for all pairs at once
by a binary search over a sparse table of range minima of ``first``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import depth_first_order, minimum_spanning_tree

__all__ = ["permuted_lower", "etree", "postorder", "relabel_parent", "depths",
           "first_descendants", "column_counts"]


def permuted_lower(a_low: sp.csc_array, perm: np.ndarray):
    """(rows, cols) of the lower triangle of P·A·Pᵀ (rows >= cols), diagonal included,
    for the lower triangle ``a_low`` of A and pivot order ``perm``."""
    n = a_low.shape[0]
    iperm = np.empty(n, dtype=np.int64)
    iperm[perm] = np.arange(n)
    cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(a_low.indptr))
    pi, pj = iperm[a_low.indices.astype(np.int64)], iperm[cols]
    return np.maximum(pi, pj), np.minimum(pi, pj)


def etree(n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Elimination tree (parent array, -1 at roots) of the symmetric pattern whose lower
    triangle holds the entries (rows, cols), rows >= cols."""
    off = rows > cols
    hi, lo = rows[off], cols[off]
    parent = np.full(n, -1, dtype=np.int64)
    if hi.size == 0:
        return parent
    # weights hi + 1 > 0 (scipy drops zero weights); the (hi, lo) pairs are distinct
    g = sp.csr_array((hi.astype(np.float64) + 1.0, (hi, lo)), shape=(n, n))
    f = minimum_spanning_tree(g).tocoo()
    fr, fc = f.row.astype(np.int64), f.col.astype(np.int64)
    fh, fl = np.maximum(fr, fc), np.minimum(fr, fc)
    by = np.lexsort((fl, fh))
    anc = list(range(n))
    par = [-1] * n
    for k, i in zip(fl[by].tolist(), fh[by].tolist()):
        r = k
        while anc[r] != r:
            r = anc[r]
        while anc[k] != r:                      # path compression to the new root i
            anc[k], k = i, anc[k]
        anc[k] = i
        anc[r] = i
        par[r] = i
    parent[:] = par
    return parent


def postorder(parent: np.ndarray) -> np.ndarray:
    """A postorder of the forest: post[k] is the k-th vertex; children before parents,
    every subtree contiguous, children in increasing order (a tree already in postorder
    keeps its labels)."""
    n = parent.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    # reversed labels so that the preorder visits children in decreasing order; a virtual
    # root n joins the trees of the forest
    child = np.arange(n)
    up = np.where(parent >= 0, parent, n)
    g = sp.csr_array((np.ones(n), (_flip(up, n), _flip(child, n))), shape=(n + 1, n + 1))
    g.sort_indices()
    pre = depth_first_order(g, n, directed=True, return_predecessors=False)
    pre = _flip(pre[1:], n)           # drop the virtual root
    return pre[::-1].astype(np.int64)


def _flip(x, n):
    """Labels reversed in 0..n-1, n (the virtual root) kept at n."""
    x = np.asarray(x, dtype=np.int64)
    return np.where(x < n, n - 1 - x, n)


def relabel_parent(parent: np.ndarray, post: np.ndarray) -> np.ndarray:
    """The parent array in the new labels k (vertex post[k])."""
    n = parent.size
    new = np.empty(n, dtype=np.int64)
    new[post] = np.arange(n)
    p = parent[post]
    return np.where(p >= 0, new[np.maximum(p, 0)], -1)


def depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every vertex (roots 0), by pointer doubling: dist[x] is the distance from x
    to anc[x]; each round adds the distance of anc[x] and jumps to its ancestor."""
    dist = (parent >= 0).astype(np.int64)
    anc = parent.astype(np.int64, copy=True)
    live = np.flatnonzero(anc >= 0)
    while live.size:
        a = anc[live]
        dist[live] += dist[a]
        anc[live] = anc[a]
        live = live[anc[live] >= 0]
    return dist


def first_descendants(parent: np.ndarray) -> np.ndarray:
    """first[x]: the smallest vertex of x's subtree (tree in postorder: the subtree of x is
    first[x]..x).  Following the smallest child down to a leaf, by pointer doubling."""
    n = parent.size
    first = np.arange(n, dtype=np.int64)
    has = parent >= 0
    np.minimum.at(first, parent[has], np.flatnonzero(has))
    while True:
        nxt = first[first]
        if np.array_equal(nxt, first):
            return first
        first = nxt


def _sparse_table(values: np.ndarray) -> list:
    """table[k][i] = min(values[i : i + 2**k]) (shorter at the end)."""
    table = [values]
    step = 1
    while step < values.size:
        prev = table[-1]
        nxt = prev.copy()
        nxt[:-step] = np.minimum(prev[:-step], prev[step:])
        table.append(nxt)
        step *= 2
    return table


def _lca(table: list, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Lowest common ancestors of the pairs u <= v in a postordered tree (same tree): the
    first x >= v with first[x] <= u."""
    x = v.copy()
    n = table[0].size
    for k in range(len(table) - 1, -1, -1):
        step = 1 << k
        ok = x + step <= n
        idx = np.flatnonzero(ok)
        skip = table[k][x[idx]] > u[idx]
        x[idx[skip]] += step
    return x


def column_counts(parent: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """|L_{*j}| (diagonal included) for the pattern with lower entries (rows, cols), tree in
    postorder (parent[x] > x)."""
    n = parent.size
    if n == 0:
        return np.empty(0, dtype=np.int64)
    first = first_descendants(parent)
    off = rows > cols
    # nonzeros of each row i: its k < i plus i itself, in increasing k
    r = np.concatenate([rows[off], np.arange(n)])
    k = np.concatenate([cols[off], np.arange(n)])
    by = np.lexsort((k, r))
    r, k = r[by], k[by]
    keep = np.ones(r.size, dtype=bool)
    keep[1:] = (r[1:] != r[:-1]) | (k[1:] != k[:-1])      # duplicates
    r, k = r[keep], k[keep]
    w = np.bincount(k, minlength=n + 1).astype(np.int64)
    same = np.flatnonzero(r[1:] == r[:-1])
    u, v = k[same], k[same + 1]
    # v's subtree holds u: the lca is v itself; otherwise search
    inside = first[v] <= u
    lca = v.copy()
    out = np.flatnonzero(~inside)
    if out.size:
        lca[out] = _lca(_sparse_table(first.astype(np.int32 if n < 2**31 else np.int64)),
                        u[out], v[out])
    w -= np.bincount(lca, minlength=n + 1)
    roots = parent >= 0
    w -= np.bincount(parent[roots], minlength=n + 1)
    prefix = np.concatenate([[0], np.cumsum(w[:n])])
    return prefix[np.arange(1, n + 1)] - prefix[first]
