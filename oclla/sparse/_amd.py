"""Approximate minimum degree ordering (Amestoy, Davis & Duff 1996), on the quotient graph.

The graph of the partly eliminated matrix is kept implicitly: a variable i has variable
neighbours A[i] (original edges not yet covered by an element) and adjacent elements E[i];
an element e (an eliminated pivot) stands for the clique L[e] of the variables it reaches.
Eliminating the variable p of least degree forms the element

    L[p] = (A[p] ∪ ⋃_{e ∈ E[p]} L[e]) ∖ {p},

absorbs the elements of E[p] (their cliques lie inside L[p]), and for every i in L[p]
prunes A[i] of L[p] and replaces E[p] by p in E[i].  Degrees of the variables of L[p] are
then the approximate external degrees

    d(i) = min( n_left - |i|,  d_old(i) + |L[p] ∖ i|,
                |A[i] ∖ i| + |L[p] ∖ i| + Σ_{e ∈ E[i], e ≠ p} |L[e] ∖ L[p]| ),

with |L[e] ∖ L[p]| computed once per element by one scan of L[p]; an element with
L[e] ⊆ L[p] is absorbed into p (aggressive absorption).  Variables of L[p] with the same
A and E are indistinguishable: they are merged into one supervariable (hashed, then
compared) and eliminated together (mass elimination).  |.| counts variables, each
supervariable weighing the number it stands for.

This is graph work on Python sets, one pivot at a time (minimum degree is sequential):
fine for n up to ~10⁵; METIS is the ordering for larger matrices.  Doing one pivot's work
as numpy calls on index arrays (the lists of L[p] in one pool, pruned, summed and hashed by
segment) does not pay: with supervariables L[p] holds only 4-127 variables on the 3-D
grids, and ~40 numpy calls a pivot cost ~0.4 ms against ~0.05 ms for the set operations
(measured slower on 2-D 100² and 3-D 30³/40³ than this code).
"""

from __future__ import annotations

import heapq
from itertools import repeat

import numpy as np
import scipy.sparse as sp

__all__ = ["amd_order"]


def amd_order(graph: sp.csr_array) -> np.ndarray:
    """AMD permutation (perm[k] = the k-th pivot) of the symmetric graph ``graph`` (CSR
    adjacency, both triangles, no diagonal)."""
    n = graph.shape[0]
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    adj = [set(indices[indptr[i]:indptr[i + 1]]) for i in range(n)]
    for i in range(n):
        adj[i].discard(i)
    elems = [set() for _ in range(n)]          # E[i]
    clique = {}                                # L[e] for live elements
    clique_weight = {}                         # |L[e]| (weighted) for live elements
    weight = [1] * n                           # supervariable weights (0: absorbed)
    members = [[i] for i in range(n)]          # the variables a supervariable stands for
    degree = [len(a) for a in adj]
    heap = [(d, i) for i, d in enumerate(degree)]
    heapq.heapify(heap)
    done = [False] * n
    order = []
    left = n
    zeros = repeat(0)
    while heap:
        d, p = heapq.heappop(heap)
        if done[p] or weight[p] == 0:
            continue
        if d != degree[p]:
            # every live variable keeps an entry at or below its degree (raised degrees
            # are re-entered only when their low entry comes up), so the first exact
            # entry popped is the least (degree, index)
            if d < degree[p]:
                heapq.heappush(heap, (degree[p], p))
            continue
        # the new element
        lp = set(adj[p])
        for e in elems[p]:
            lp |= clique.pop(e)
            del clique_weight[e]
        lp.discard(p)
        lp = {i for i in lp if weight[i] and not done[i]}
        absorbed = elems[p]
        done[p] = True
        order.extend(members[p])
        left -= weight[p]
        adj[p] = set()
        elems[p] = set()
        clique[p] = lp
        # |L[p]| never changes while p lives: variables leave a clique only when merged
        # into a supervariable of the same cliques, which takes over their weight
        # prune A and E of the variables of L[p]
        for i in lp:
            ai = adj[i]
            if ai:
                ai = adj[i] = ai - lp   # (not -=: that walks all of L[p] for every i)
                ai.discard(p)
            ei = elems[i]
            if absorbed:
                ei -= absorbed
            ei.add(p)
        # |L[e] \ L[p]| for every element met, weighted
        wlp = clique_weight[p] = sum(map(weight.__getitem__, lp))
        ext = {}
        ext_get = ext.get
        for i in lp:
            wi = weight[i]
            for e in elems[i]:
                if e != p:
                    ext[e] = ext_get(e, clique_weight[e]) - wi
        for e, x in ext.items():
            if x == 0:                      # L[e] ⊆ L[p]: aggressive absorption
                del clique_weight[e]
                for i in clique.pop(e):
                    elems[i].discard(e)
        # supervariables: equal A and E (bucketed by sizes and sums, then compared)
        buckets = {}
        for i in lp:
            ai, ei = adj[i], elems[i]
            key = (len(ai), len(ei), sum(ai), sum(ei))
            bucket = buckets.get(key)
            if bucket is None:
                buckets[key] = [i]
            else:
                bucket.append(i)
        for group in buckets.values():
            while len(group) > 1:
                i = group.pop()
                rest = []
                for j in group:
                    if adj[j] == adj[i] and elems[j] == elems[i]:
                        weight[i] += weight[j]
                        weight[j] = 0
                        members[i].extend(members[j])
                        members[j] = []
                        lp.discard(j)
                        for k in adj[j]:
                            adj[k].discard(j)
                        for e in elems[j]:
                            if e in clique:
                                clique[e].discard(j)
                        adj[j] = set()
                        elems[j] = set()
                    else:
                        rest.append(j)
                group = rest
        # approximate degrees
        # (ext holds every element of E[i] but p; absorbed ones are gone from E[i])
        weight_of, ext_of = weight.__getitem__, ext.get
        for i in lp:
            wi = weight[i]
            d = min(left - wi, degree[i] + wlp - wi,
                    sum(map(weight_of, adj[i])) + sum(map(ext_of, elems[i], zeros)) + wlp - wi)
            d = max(d, 0)
            if d < degree[i]:
                heapq.heappush(heap, (d, i))
            degree[i] = d
    return np.asarray(order, dtype=np.int64)
