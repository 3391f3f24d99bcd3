"""Supernode merging (relaxed supernodes): pairs J, p(J) adding the least fill first.

A supernode with c columns and m off-diagonal rows stores c(c+1)/2 + c·m entries of L.  A
child J's off-diagonal rows lie in its parent P's columns and rows, so merging J into P
gives one supernode of c_J + c_P columns and m_P off-diagonal rows; the storage grows by

    cost(J, P) = c_J · (c_P + m_P - m_J)

(J's columns get every row of P).  The greedy loop (Karsavuran, Ng & Peyton; Ashcraft &
Grimes) takes the pair of least cost, merges it, and stops before the total growth exceeds
``max_fill_ratio`` times the storage of the fundamental supernodes.  A pair's cost never
decreases as merging goes on (the parent only gains columns, or is replaced by its own
parent, whose rows hold its rows), so a heap with lazily refreshed costs pops pairs in the
true order.
"""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["merge_supernodes"]


def merge_supernodes(ncols: np.ndarray, noff: np.ndarray, parent: np.ndarray,
                     max_fill_ratio: float) -> tuple[np.ndarray, int]:
    """Groups of supernodes to merge.

    Parameters
    ----------
    ncols, noff : (ns,) columns and off-diagonal rows of each supernode.
    parent : (ns,) supernodal tree (-1 at roots), parent[s] > s.
    max_fill_ratio : bound on the storage growth, relative to the current storage.

    Returns
    -------
    group : (ns,) the top supernode (the ancestor-most one) of the group holding each one.
    extra : the storage added (entries).
    """
    ns = ncols.size
    nc = ncols.astype(np.int64).tolist()
    m = noff.astype(np.int64).tolist()
    par = parent.tolist()
    base = int(np.sum(ncols * (ncols + 1) // 2 + ncols * noff))
    budget = max_fill_ratio * base
    rep = list(range(ns))                     # union-find: group representative = its top

    def find(s):
        root = s
        while rep[root] != root:
            root = rep[root]
        while rep[s] != root:
            rep[s], s = root, rep[s]
        return root

    # heap keys cost·ns + j: one integer compares faster than a (cost, j) tuple
    heap = [nc[j] * (nc[p] + m[p] - m[j]) * ns + j for j, p in enumerate(par) if p >= 0]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    extra = 0
    while heap:
        cost, j = divmod(pop(heap), ns)
        if rep[j] != j:
            continue                          # j was merged into its parent already
        p = par[j]
        if rep[p] != p:
            p = find(p)
        now = nc[j] * (nc[p] + m[p] - m[j])
        if now != cost:
            push(heap, now * ns + j)
            continue
        if extra + cost > budget:
            break
        extra += cost
        rep[j] = p
        nc[p] += nc[j]
    group = np.fromiter((find(s) for s in range(ns)), dtype=np.int64, count=ns)
    return group, extra
