"""Supernode merging (relaxed supernodes): two rules, both on the fundamental supernodes.

A supernode with c columns and m off-diagonal rows stores c(c+1)/2 + c·m entries of L.  A
child J's off-diagonal rows lie in its parent P's columns and rows, so merging J into P
gives one supernode of c_J + c_P columns and m_P off-diagonal rows; the storage grows by

    cost(J, P) = c_J · (c_P + m_P - m_J)

(J's columns get every row of P: explicit zeros where J had none).

:func:`merge_supernodes` ("fill", Karsavuran, Ng & Peyton; Ashcraft & Grimes)
    The greedy loop takes the pair of least cost, merges it, and stops before the total
    growth exceeds ``max_fill_ratio`` times the storage of the fundamental supernodes.  A
    pair's cost never decreases as merging goes on (the parent only gains columns, or is
    replaced by its own parent, whose rows hold its rows), so a heap with lazily refreshed
    costs pops pairs in the true order.
:func:`relaxed_supernodes` ("relaxed", CHOLMOD's relaxed amalgamation)
    Supernodes in postorder, from the last to the first: s merges into s+1 when s+1 is
    its (current) parent and the merged supernode of c columns, z of whose entries would
    be explicit zeros (the share of its storage), satisfies c <= nrelax₀, or no new zero,
    or (c <= nrelax₁ and z < zrelax₀) or (c <= nrelax₂ and z < zrelax₁) or z < zrelax₂
    (CHOLMOD's defaults: nrelax 4, 16, 48; zrelax 0.8, 0.1, 0.05; ours nrelax₁ = 14,
    :data:`DEFAULT_NRELAX`).  No global budget: small supernodes merge freely, large
    ones only where they add few zeros.
"""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["merge_supernodes", "relaxed_supernodes", "NRELAX", "ZRELAX", "DEFAULT_NRELAX"]

#: CHOLMOD's default column bounds and zero shares of the relaxed rule.
NRELAX = (4, 16, 48)
ZRELAX = (0.8, 0.1, 0.05)
#: The column bounds that ``relaxed_supernodes`` uses by default: CHOLMOD's with
#: nrelax₁ = 14.  With the METIS of pymetis the 2-D Laplacians' exact fill is lower
#: than with CHOLMOD's own METIS call (1000²: 36.5 M entries against 44.1 M stored by
#: CHOLMOD), but CHOLMOD's bounds add more zeros to it: stored entries over CHOLMOD's
#: L().nnz, nrelax₁ = 16 / 15 / 14 / 12: 2-D 500² 0.954 / 0.939 / 0.921 / 0.881, 1000²
#: 1.064 / 1.050 / 1.034 / 0.998; 3-D 30³ 0.985 / 0.979 / 0.973 / 0.961, 50³ 0.971 /
#: 0.968 / 0.964 / 0.958, supernodes +9 % (2-D 1000², 3-D 50³) at 14, +29 % / +17 % at
#: 12.  Factor times with 16 and 14 were the same within the noise of PoCL on 2 loaded
#: cores (RL, best of 4: 3-D 40³ 2.30 / 2.14 s, 50³ 3.93 / 4.01 s, 2-D 1000² 3.63 /
#: 3.83 s).  Lowering zrelax₀ instead (0.8 -> 0.5) leaves more supernodes for the same
#: fill (2-D 1000² 1.012 with 254565 supernodes against 1.034 with 202450).
DEFAULT_NRELAX = (4, 14, 48)


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


def relaxed_supernodes(ncols: np.ndarray, noff: np.ndarray, parent: np.ndarray,
                       nrelax: tuple | None = None, zrelax: tuple = ZRELAX
                       ) -> tuple[np.ndarray, int]:
    """Groups of supernodes merged by CHOLMOD's relaxed amalgamation (module docstring).

    Parameters
    ----------
    ncols, noff : (ns,) columns and off-diagonal rows of each supernode.
    parent : (ns,) supernodal tree (-1 at roots) of supernodes in postorder.
    nrelax, zrelax : the rule's three column bounds (default :data:`DEFAULT_NRELAX`) and
        three zero shares (CHOLMOD's, :data:`ZRELAX`).

    Returns
    -------
    group : (ns,) the top supernode of the group holding each one (a group is a run
        s..t of consecutive supernodes, each the last child of the next).
    extra : the storage added (entries).
    """
    ns = ncols.size
    n0_, n1_, n2_ = DEFAULT_NRELAX if nrelax is None else nrelax
    z0_, z1_, z2_ = zrelax
    nscol = ncols.astype(np.int64).tolist()
    snz = (ncols + noff).astype(np.int64).tolist()   # entries of the leading column
    zeros = [0] * ns
    merged = [-1] * ns                                # s+1 -> s once merged
    par = parent.tolist()
    extra = 0
    for s in range(ns - 2, -1, -1):
        p = par[s]
        if p < 0:
            continue
        root = p
        while merged[root] != -1:
            root = merged[root]
        while merged[p] != -1:                        # path compression
            merged[p], p = root, merged[p]
        if root != s + 1:
            continue
        c0, c1 = nscol[s], nscol[s + 1]
        c = c0 + c1
        new = c0 * (snz[s + 1] + c0 - snz[s])
        total = zeros[s + 1]
        if c <= n0_ or new == 0:
            merge = True
        else:
            total += new
            z = total / (c * (c + 1) / 2 + c * (snz[s + 1] - c1))
            merge = ((c <= n1_ and z < z0_) or (c <= n2_ and z < z1_) or z < z2_)
        if merge:
            zeros[s] = total
            merged[s + 1] = s
            snz[s] = c0 + snz[s + 1]
            nscol[s] = c
            extra += new
    alive = np.asarray(merged) == -1
    starts = np.flatnonzero(alive)
    tops = np.append(starts[1:], ns) - 1
    return tops[np.cumsum(alive) - 1].astype(np.int64), extra
