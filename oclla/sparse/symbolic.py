"""Symbolic analysis of a sparse Cholesky factorization: :func:`analyze` -> :class:`Symbolic`.

Given the lower triangle of a symmetric matrix A (CSC, from :mod:`._input`) and a fill-reducing
ordering, the analysis finds the pattern of L in P·A·Pᵀ = L·Lᵀ, grouped into supernodes:

1. the elimination tree of P·A·Pᵀ (:mod:`._etree`) and a postorder of it, folded into P;
2. column counts |L_{*j}| from the row subtrees (:mod:`._etree`);
3. fundamental supernodes: column j+1 joins j's supernode when it is j's parent and
   count(j) = count(j+1) + 1 (the two columns then have nested, equal structures);
4. supernode merging (:mod:`._merge`): a child supernode J and its parent P are merged,
   by CHOLMOD's relaxed amalgamation (``merge="relaxed"``, the default, CHOLMOD's bounds
   but nrelax₁ = 14) or pairs adding
   the least fill first until the storage of L has grown by ``max_fill_ratio``
   (``merge="fill"``, the paper's rule);
5. the row structure of every supernode, bottom-up: its own columns, the rows of A below
   its last column and the rows of its children's structures below its last column;
6. partition refinement (:mod:`._refine`): the columns of each supernode are reordered so that
   the rows that each descendant updates fall into few runs of consecutive indices.

L storage (the contract with the numeric factorization)::

    supernode s: columns c0 = super_ptr[s] .. c1 = super_ptr[s+1]-1 (ncols = c1-c0+1),
                 rows r = row_idx[row_ptr[s]:row_ptr[s+1]] (nrows of them, ascending,
                 r[:ncols] = c0..c1), values in L[l_ptr[s] : l_ptr[s] + nrows*ncols],
                 column-major with leading dimension nrows.

    e.g. ncols = 2, rows (4, 5, 7, 9):   L[l_ptr[s] + ...]
                                          col 4   col 5
                                  row 4 [  0       .  ]   . = unused (kept 0)
                                  row 5 [  1       5  ]
                                  row 7 [  2       6  ]
                                  row 9 [  3       7  ]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from . import _etree
from ._input import lower_triangle
from ._merge import merge_supernodes, relaxed_supernodes
from ._refine import count_blocks, refine as refine_columns
from .orderings import order

__all__ = ["Symbolic", "analyze"]

REFINE_MIN_COLS = 2      # supernodes narrower than this keep their column order

#: The supernode merging rules (:mod:`._merge`) and the one ``merge=True`` picks.
MERGE_RULES = ("relaxed", "fill")
DEFAULT_MERGE = "relaxed"


def merge_rule(merge) -> str | None:
    """The merging rule that ``merge`` names: None (False), :data:`DEFAULT_MERGE` (True)
    or one of :data:`MERGE_RULES`; a ValueError for anything else."""
    if merge is False or merge is None:
        return None
    if merge is True:
        return DEFAULT_MERGE
    if isinstance(merge, str) and merge in MERGE_RULES:
        return merge
    raise ValueError(f"merge must be True, False or one of {', '.join(MERGE_RULES)}; "
                     f"got {merge!r}")


@dataclass(frozen=True)
class Symbolic:
    """The pattern of L in P·A·Pᵀ = L·Lᵀ, by supernodes, and where each supernode's
    dense block lives in the flat L storage.  All arrays int64.

    Attributes
    ----------
    n : order of A.
    perm : (n,) pivot k is original column perm[k]: A[perm][:, perm] = L·Lᵀ.
    iperm : (n,) inverse permutation (iperm[perm[k]] = k).
    ordering : the ordering used ("metis", "amd", "rcm", "natural").
    super_ptr : (ns+1,) supernode s owns permuted columns super_ptr[s] : super_ptr[s+1].
    row_ptr, row_idx : rows of supernode s are row_idx[row_ptr[s]:row_ptr[s+1]], ascending,
        its own columns first.
    parent : (ns,) supernodal elimination-tree parent, -1 at roots; parent[s] > s.
    l_ptr : (ns+1,) supernode s's dense column-major nrows x ncols block in L storage.
    col_super : (n,) the supernode of each permuted column.
    a_map : (nnz of A's lower triangle,) the position in L storage of each entry of the
        lower triangle (CSC order of :func:`._input.lower_triangle`'s result).
    nnz_l : entries of L's lower triangle in the supernodal pattern (relaxed zeros included).
    flops : flops of the numeric factorization, Σ_j |L_{*j}|².
    nnz_l_exact : entries of L without merging (the fill of the ordering itself).
    """

    n: int
    perm: np.ndarray
    iperm: np.ndarray
    ordering: str
    super_ptr: np.ndarray
    row_ptr: np.ndarray
    row_idx: np.ndarray
    parent: np.ndarray
    l_ptr: np.ndarray
    col_super: np.ndarray
    a_map: np.ndarray
    nnz_l: int
    flops: float
    nnz_l_exact: int = 0
    stats: dict = field(default_factory=dict, compare=False)

    @property
    def n_supernodes(self) -> int:
        return int(self.super_ptr.size - 1)

    def ncols(self) -> np.ndarray:
        """(ns,) columns per supernode."""
        return np.diff(self.super_ptr)

    def nrows(self) -> np.ndarray:
        """(ns,) rows per supernode (its own columns included)."""
        return np.diff(self.row_ptr)

    def pattern(self) -> sp.csc_array:
        """The pattern of L (permuted ordering) as a CSC matrix of ones, lower triangle
        (``nnz_l`` entries: for inspection and tests of small matrices)."""
        ns, n = self.n_supernodes, self.n
        ncols, nrows = self.ncols(), self.nrows()
        sup = np.repeat(np.arange(ns), ncols)                 # supernode of each column
        local = np.arange(n) - self.super_ptr[sup]            # column within its supernode
        counts = nrows[sup] - local
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        col = np.repeat(np.arange(n), counts)
        offset = np.arange(indptr[-1]) - indptr[col]          # 0.. within the column
        rows = self.row_idx[self.row_ptr[sup[col]] + local[col] + offset]
        return sp.csc_array((np.ones(rows.size), rows, indptr), shape=(n, n))


def _supernodal_rows(n, a_rows, a_cols, super_ptr, parent):
    """Row structures of the supernodes (columns c0..c1 each): bottom-up by depth, the
    supernode's own columns ∪ rows of A (permuted, lower: a_rows >= a_cols) below c1 in its
    columns ∪ rows of its children's structures below c1.  Returns (row_ptr, row_idx)."""
    ns = super_ptr.size - 1
    col_super = np.repeat(np.arange(ns, dtype=np.int64), np.diff(super_ptr))
    last = super_ptr[1:] - 1
    depth = _etree.depths(parent)
    # A's contributions (supernode, row below its last column), deepest supernodes first
    s_a = col_super[a_cols]
    keep = a_rows > last[s_a]
    s_a, r_a = s_a[keep], a_rows[keep]
    by = np.argsort(-depth[s_a], kind="stable")
    s_a, r_a = s_a[by], r_a[by]
    a_depth = -depth[s_a]
    out_s, out_r = [col_super], [np.arange(n, dtype=np.int64)]
    carry_s = carry_r = np.empty(0, dtype=np.int64)    # children's rows handed to parents
    for d in range(int(depth.max(initial=-1)), -1, -1):
        lo, hi = np.searchsorted(a_depth, [-d, -d + 1])
        s_l = np.concatenate([s_a[lo:hi], carry_s])
        r_l = np.concatenate([r_a[lo:hi], carry_r])
        keep = r_l > last[s_l]
        key = _unique_sorted(s_l[keep] * n + r_l[keep])
        s_l, r_l = key // n, key % n
        out_s.append(s_l)
        out_r.append(r_l)
        up = parent[s_l]
        has = up >= 0
        carry_s, carry_r = up[has], r_l[has]
    s_all = np.concatenate(out_s)
    key = np.concatenate([s * n + r for s, r in zip(out_s, out_r)])
    key.sort()
    row_ptr = np.zeros(ns + 1, dtype=np.int64)
    np.cumsum(np.bincount(s_all, minlength=ns), out=row_ptr[1:])
    return row_ptr, key % max(n, 1)


def _unique_sorted(key: np.ndarray) -> np.ndarray:
    """The distinct values of ``key``, ascending (a sort and a mask: faster than np.unique
    on large int64 arrays)."""
    key = np.sort(key)
    keep = np.ones(key.size, dtype=bool)
    keep[1:] = key[1:] != key[:-1]
    return key[keep]


def _fundamental(parent, counts):
    """super_ptr of the supernodes: j+1 joins j's when parent[j] = j+1 and
    counts[j] = counts[j+1] + 1 (columns in postorder)."""
    n = parent.size
    joins = np.zeros(n, dtype=bool)
    if n > 1:
        joins[1:] = (parent[:-1] == np.arange(1, n)) & (counts[:-1] == counts[1:] + 1)
    starts = np.flatnonzero(~joins)
    return np.append(starts, n).astype(np.int64)


def _super_parent(parent, super_ptr):
    """Supernodal tree: the supernode holding the etree parent of each one's last column."""
    ns = super_ptr.size - 1
    col_super = np.repeat(np.arange(ns), np.diff(super_ptr))
    p = parent[super_ptr[1:] - 1]
    return np.where(p >= 0, col_super[np.maximum(p, 0)], -1).astype(np.int64)


def _storage(row_ptr, super_ptr):
    nrows, ncols = np.diff(row_ptr), np.diff(super_ptr)
    l_ptr = np.zeros(nrows.size + 1, dtype=np.int64)
    np.cumsum(nrows * ncols, out=l_ptr[1:])
    return l_ptr


def _column_counts_of(row_ptr, super_ptr):
    """|L_{*j}| of every column in the supernodal pattern."""
    nrows, ncols = np.diff(row_ptr), np.diff(super_ptr)
    sup = np.repeat(np.arange(ncols.size), ncols)
    local = np.arange(sup.size) - super_ptr[sup]
    return nrows[sup] - local


def _a_map(a_low, iperm, row_ptr, row_idx, super_ptr, l_ptr, col_super):
    """Position in L storage of each entry of A's lower triangle (CSC order)."""
    n = iperm.size
    cols = np.repeat(np.arange(n, dtype=np.int64), np.diff(a_low.indptr))
    rows = a_low.indices.astype(np.int64)
    pi, pj = iperm[rows], iperm[cols]
    i, j = np.maximum(pi, pj), np.minimum(pi, pj)
    s = col_super[j]
    seg = np.repeat(np.arange(row_ptr.size - 1, dtype=np.int64), np.diff(row_ptr))
    keys = seg * n + row_idx
    local_row = np.searchsorted(keys, s * n + i) - row_ptr[s]
    nrows = np.diff(row_ptr)
    return l_ptr[s] + (j - super_ptr[s]) * nrows[s] + local_row


def analyze(a, *, ordering: str = "metis", lower: bool | None = None,
            merge: bool | str = True,
            refine: bool = True, max_fill_ratio: float = 0.25,
            refine_min_cols: int = REFINE_MIN_COLS, check_finite: bool = True) -> Symbolic:
    """Symbolic Cholesky factorization of the sparse symmetric matrix ``a``.

    Parameters
    ----------
    a : scipy.sparse, n x n
        The symmetric matrix, float32 or float64, any format.  Only its pattern matters
        here; ``a_map`` refers to the entries of its lower triangle.
    lower : None, True or False
        None: ``a`` holds the whole symmetric matrix (checked); True / False: only its
        lower / upper triangle is read.
    ordering : "metis", "amd", "rcm", "natural" or "best"
        The fill-reducing ordering (:mod:`.orderings`); "best" keeps the one of least fill.
    merge : bool or str
        Merge supernodes (relaxed supernodes, :mod:`._merge`): "relaxed" (CHOLMOD's relaxed
        amalgamation; what True means), "fill" (least fill first until L's storage grew
        by ``max_fill_ratio``, the paper's rule) or False (the fundamental supernodes).
    refine : bool
        Reorder the columns inside supernodes by partition refinement.
    max_fill_ratio : float
        With ``merge="fill"``: bound on the extra storage that merging may add, relative
        to the fundamental supernodes' storage (0.25: 25 %, the paper's choice).
    refine_min_cols : int
        Supernodes with fewer columns keep their column order.
    check_finite : bool
        Refuse NaN and Inf values (``ValueError``).

    Returns
    -------
    Symbolic

    Raises
    ------
    TypeError
        ``a`` is not a scipy.sparse matrix, its dtype is not float32/float64, or its index
        arrays are not integers.
    ValueError
        ``a`` is not square or not symmetric (``lower=None``), holds NaN or Inf, has an
        index out of range; an unknown ordering or merging rule; ``max_fill_ratio`` < 0.
    """
    a_low = lower_triangle(a, lower=lower, check_finite=check_finite)
    return analyze_lower(a_low, ordering=ordering, merge=merge, refine=refine,
                         max_fill_ratio=max_fill_ratio, refine_min_cols=refine_min_cols)


def _merged_order(group, super_ptr, sparent):
    """Column order, super_ptr and supernodal parent after merging the supernodes of each
    group (``group[s]``: the group's top supernode): the groups in a postorder of their
    tree, each group's columns in their previous (topological) order."""
    tops, gid = np.unique(group, return_inverse=True)          # groups labelled by top
    gparent = np.where(sparent[tops] >= 0, gid[np.maximum(sparent[tops], 0)], -1)
    gpost = _etree.postorder(gparent)
    rank = np.empty(tops.size, dtype=np.int64)
    rank[gpost] = np.arange(tops.size)
    by = np.lexsort((np.arange(group.size), rank[gid]))      # supernodes, group by group
    ncols = np.diff(super_ptr)
    cols = np.repeat(super_ptr[:-1][by], ncols[by]) + (
        np.arange(int(ncols.sum())) - np.repeat(np.cumsum(ncols[by]) - ncols[by], ncols[by]))
    gcols = np.bincount(rank[gid], weights=ncols, minlength=tops.size).astype(np.int64)
    new_ptr = np.zeros(tops.size + 1, dtype=np.int64)
    np.cumsum(gcols, out=new_ptr[1:])
    return cols, new_ptr, _etree.relabel_parent(gparent, gpost)


def analyze_lower(a_low: sp.csc_array, *, ordering: str = "metis", merge: bool | str = True,
                  refine: bool = True, max_fill_ratio: float = 0.25,
                  refine_min_cols: int = REFINE_MIN_COLS) -> Symbolic:
    """:func:`analyze` on an already validated lower triangle (``_input.lower_triangle``)."""
    if not max_fill_ratio >= 0:
        raise ValueError(f"max_fill_ratio must be >= 0, got {max_fill_ratio}")
    rule = merge_rule(merge)
    n = int(a_low.shape[0])
    stats = {}
    perm, used = order(a_low, ordering)
    rows, cols = _etree.permuted_lower(a_low, perm)
    parent = _etree.etree(n, rows, cols)
    post = _etree.postorder(parent)
    perm = perm[post]
    rows, cols = _etree.permuted_lower(a_low, perm)
    parent = _etree.relabel_parent(parent, post)
    counts = _etree.column_counts(parent, rows, cols)
    nnz_exact = int(counts.sum())
    super_ptr = _fundamental(parent, counts)
    sparent = _super_parent(parent, super_ptr)
    stats["fundamental_supernodes"] = int(super_ptr.size - 1)
    if rule and n:
        ncols = np.diff(super_ptr)
        noff = counts[super_ptr[:-1]] - ncols
        if rule == "fill":
            group, extra = merge_supernodes(ncols, noff, sparent, max_fill_ratio)
        else:
            group, extra = relaxed_supernodes(ncols, noff, sparent)
        stats["merge"] = rule
        stats["merge_extra"] = extra
        order_cols, super_ptr, sparent = _merged_order(group, super_ptr, sparent)
        perm = perm[order_cols]
        rows, cols = _etree.permuted_lower(a_low, perm)
    col_super = np.repeat(np.arange(super_ptr.size - 1, dtype=np.int64), np.diff(super_ptr))
    row_ptr, row_idx = _supernodal_rows(n, rows, cols, super_ptr, sparent)
    if refine and n:
        stats["blocks_before_refine"] = count_blocks(row_ptr, row_idx, super_ptr, col_super)
        new = refine_columns(row_ptr, row_idx, super_ptr, col_super, refine_min_cols)
        inv = np.empty(n, dtype=np.int64)
        inv[new] = np.arange(n)
        perm = perm[inv]
        seg = np.repeat(np.arange(super_ptr.size - 1, dtype=np.int64), np.diff(row_ptr))
        row_idx = np.sort(seg * n + new[row_idx]) - seg * n
    stats["blocks"] = count_blocks(row_ptr, row_idx, super_ptr, col_super) if n else 0
    iperm = np.empty(n, dtype=np.int64)
    iperm[perm] = np.arange(n)
    l_ptr = _storage(row_ptr, super_ptr)
    cc = _column_counts_of(row_ptr, super_ptr)
    a_map = _a_map(a_low, iperm, row_ptr, row_idx, super_ptr, l_ptr, col_super)
    return Symbolic(n=n, perm=perm.astype(np.int64), iperm=iperm, ordering=used,
                    super_ptr=super_ptr, row_ptr=row_ptr, row_idx=row_idx, parent=sparent,
                    l_ptr=l_ptr, col_super=col_super, a_map=a_map,
                    nnz_l=int(cc.sum()), flops=float(np.sum(cc.astype(np.float64) ** 2)),
                    nnz_l_exact=nnz_exact, stats=stats)
