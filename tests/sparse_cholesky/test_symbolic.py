"""oclla.sparse.symbolic.analyze against a brute-force reference (the pattern of the dense
Cholesky factor of a random SPD matrix with the given pattern), the storage invariants of
the contract, merging, partition refinement; the tree tools of _etree and _refine."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from oclla.sparse import Symbolic, analyze, gallery
from oclla.sparse import _etree, _merge, _refine
from oclla.sparse._merge import DEFAULT_NRELAX, NRELAX, ZRELAX, relaxed_supernodes
from oclla.sparse._input import lower_triangle


def _random_spd(n, density, seed):
    """A random SPD matrix whose pattern is random (values uniform, diagonally dominant)."""
    return gallery.random_spd(n, density, seed)


def _dense_factor_pattern(a, perm):
    """Pattern of L for A[perm][:, perm] from numpy's dense Cholesky (no cancellation for
    random values), and its elimination tree."""
    d = a.toarray()[np.ix_(perm, perm)]
    l = np.linalg.cholesky(d)
    pat = np.abs(l) > 1e-300
    n = d.shape[0]
    parent = np.full(n, -1)
    for j in range(n):
        below = np.flatnonzero(pat[j + 1:, j])
        if below.size:
            parent[j] = j + 1 + below[0]
    return pat, parent


def _check_storage(sym: Symbolic, a):
    """Every invariant the numeric factorization relies on."""
    n, ns = sym.n, sym.n_supernodes
    assert isinstance(sym, Symbolic)
    for arr in (sym.perm, sym.iperm, sym.super_ptr, sym.row_ptr, sym.row_idx, sym.parent,
                sym.l_ptr, sym.col_super, sym.a_map):
        assert arr.dtype == np.int64
    np.testing.assert_array_equal(np.sort(sym.perm), np.arange(n))
    np.testing.assert_array_equal(sym.iperm[sym.perm], np.arange(n))
    assert sym.super_ptr[0] == 0 and sym.super_ptr[-1] == n and np.all(np.diff(sym.super_ptr) > 0)
    np.testing.assert_array_equal(sym.col_super, np.repeat(np.arange(ns), sym.ncols()))
    ncols, nrows = sym.ncols(), sym.nrows()
    assert np.all(nrows >= ncols)
    np.testing.assert_array_equal(sym.l_ptr, np.concatenate([[0], np.cumsum(ncols * nrows)]))
    for s in range(ns):
        rows = sym.row_idx[sym.row_ptr[s]:sym.row_ptr[s + 1]]
        c0, c1 = sym.super_ptr[s], sym.super_ptr[s + 1]
        np.testing.assert_array_equal(rows[:c1 - c0], np.arange(c0, c1))
        assert np.all(np.diff(rows) > 0) and rows[-1] < n
        off = rows[c1 - c0:]
        # the parent is the supernode of the first off-diagonal row, numbered later
        assert sym.parent[s] == (sym.col_super[off[0]] if off.size else -1)
        assert sym.parent[s] == -1 or sym.parent[s] > s
        # the structure of a child lies in its parent's
        if off.size:
            p = sym.parent[s]
            prow = sym.row_idx[sym.row_ptr[p]:sym.row_ptr[p + 1]]
            assert np.isin(off, prow).all()
    # a_map: every entry of A's lower triangle lands in the lower part of its block
    low = lower_triangle(a)
    assert sym.a_map.shape == (low.nnz,)
    assert np.unique(sym.a_map).size == low.nnz
    storage = np.zeros(int(sym.l_ptr[-1]))
    storage[sym.a_map] = low.data
    m = np.zeros((n, n))
    for s in range(ns):
        rows = sym.row_idx[sym.row_ptr[s]:sym.row_ptr[s + 1]]
        cols = np.arange(sym.super_ptr[s], sym.super_ptr[s + 1])
        block = storage[sym.l_ptr[s]:sym.l_ptr[s + 1]].reshape(cols.size, rows.size).T
        assert not np.triu(block[:cols.size], 1).any()     # strict upper part unused
        m[np.ix_(rows, cols)] = block
    ad = a.toarray()[np.ix_(sym.perm, sym.perm)]
    np.testing.assert_array_equal(m, np.tril(ad))
    counts = nrows[sym.col_super] - (np.arange(n) - sym.super_ptr[sym.col_super])
    assert sym.nnz_l == counts.sum() == sym.pattern().nnz
    assert sym.flops == float(np.sum(counts.astype(float) ** 2))


@settings(max_examples=80)
@given(n=st.integers(1, 40), density=st.floats(0.0, 0.25), seed=st.integers(0, 10**6),
       ordering=st.sampled_from(["natural", "rcm", "amd", "metis"]),
       merge=st.sampled_from([False, "fill", "relaxed", True]), refine=st.booleans())
def test_against_dense_cholesky(n, density, seed, ordering, merge, refine):
    a = _random_spd(n, density, seed)
    sym = analyze(a, ordering=ordering, merge=merge, refine=refine)
    assert sym.ordering == ordering and sym.n == n
    _check_storage(sym, a)
    pat, _ = _dense_factor_pattern(a, sym.perm)
    supernodal = sym.pattern().toarray() != 0
    assert not (pat & ~supernodal).any()                # L's pattern inside the supernodes
    if not merge:
        # the supernodes of the etree hold exactly L's pattern; refinement reorders columns
        # inside them (the factor may then have zeros in a dense diagonal block)
        assert sym.nnz_l == sym.nnz_l_exact
        if not refine:
            np.testing.assert_array_equal(pat, supernodal)
    else:
        extra = sym.nnz_l - sym.nnz_l_exact
        assert extra == sym.stats["merge_extra"] >= 0
        assert sym.stats["merge"] == ("relaxed" if merge is True else merge)
        if merge == "fill":
            assert extra <= 0.25 * sym.nnz_l_exact


@settings(max_examples=60)
@given(n=st.integers(1, 40), density=st.floats(0.0, 0.25), seed=st.integers(0, 10**6))
def test_etree_postorder_and_counts(n, density, seed):
    a = _random_spd(n, density, seed)
    low = lower_triangle(a)
    perm = np.random.default_rng(seed).permutation(n)
    rows, cols = _etree.permuted_lower(low, perm)
    parent = _etree.etree(n, rows, cols)
    _, ref_parent = _dense_factor_pattern(a, perm)
    np.testing.assert_array_equal(parent, ref_parent)
    post = _etree.postorder(parent)
    np.testing.assert_array_equal(np.sort(post), np.arange(n))
    p2 = _etree.relabel_parent(parent, post)
    assert np.all((p2 == -1) | (p2 > np.arange(n)))
    first = _etree.first_descendants(p2)
    depth = _etree.depths(p2)
    for x in range(n):              # the subtree of x is first[x]..x; depth by walking up
        d, y = 0, x
        while p2[y] >= 0:
            y = p2[y]
            d += 1
        assert depth[x] == d
        desc = [y for y in range(n) if _is_ancestor(p2, x, y)]
        assert desc == list(range(first[x], x + 1))
    pat, _ = _dense_factor_pattern(a, perm[post])
    rows, cols = _etree.permuted_lower(low, perm[post])
    np.testing.assert_array_equal(_etree.column_counts(p2, rows, cols), pat.sum(axis=0))


def _is_ancestor(parent, x, y):
    while y >= 0:
        if y == x:
            return True
        y = parent[y]
    return False


def test_postorder_keeps_a_postordered_tree():
    parent = np.array([2, 2, 5, 4, 5, -1, -1])
    np.testing.assert_array_equal(_etree.postorder(parent), np.arange(7))
    # a chain given in reverse: 3 -> 2 -> 1 -> 0
    np.testing.assert_array_equal(_etree.postorder(np.array([-1, 0, 1, 2])), [3, 2, 1, 0])


def test_lca_by_sparse_table():
    #        6
    #      /   \
    #     2     5
    #    / \   / \
    #   0   1 3   4
    parent = np.array([2, 2, 6, 5, 5, 6, -1])
    first = _etree.first_descendants(parent)
    np.testing.assert_array_equal(first, [0, 1, 0, 3, 4, 3, 0])
    table = _etree._sparse_table(first)
    u = np.array([0, 0, 1, 3, 0, 2])
    v = np.array([1, 3, 2, 4, 6, 5])
    np.testing.assert_array_equal(_etree._lca(table, u, v), [2, 6, 2, 5, 6, 6])


def test_grid_against_known_counts():
    a = gallery.laplacian_2d(30)
    sym = analyze(a, ordering="natural", merge=False, refine=False)
    assert sym.nnz_l == sym.nnz_l_exact == 27029
    np.testing.assert_array_equal(sym.perm, np.arange(900))     # already a postorder
    # a tridiagonal matrix: counts 2, ..., 2, 1: the last two columns form one supernode;
    # each merge of a chain link costs one entry, so none at ratio 0, all at a large one
    t = sp.csc_array(sp.diags_array([-np.ones(9), 2 * np.ones(10), -np.ones(9)],
                                    offsets=[-1, 0, 1]))
    assert analyze(t, ordering="natural", merge=False).n_supernodes == 9
    assert analyze(t, ordering="natural", merge="fill", max_fill_ratio=0.0).n_supernodes == 9
    full = analyze(t, ordering="natural", merge="fill", max_fill_ratio=10.0)
    assert full.n_supernodes == 1 and full.nnz_l == 55
    # the relaxed rule merges the chain link by link from the top: 3 and 4 columns (at
    # most nrelax₀), then 5 to 10 columns with zero shares 3/15, 7/21, ..., 33/55 < 0.8
    relaxed = analyze(t, ordering="natural")
    assert relaxed.n_supernodes == 1 and relaxed.stats["merge_extra"] == 36


def test_relaxed_rule_by_hand():
    # a chain of 30 one-column supernodes (1 off-diagonal row each) under a 2-column root,
    # merged from the top: up to 4 columns freely (CHOLMOD counts no zeros there), then
    # the zero share z of c columns is 3/15, 7/21, ..., 102/136 = 0.75 at c = 16 (< 0.8);
    # 17 columns are above nrelax₁ and 117/153 is not < 0.1, so the root takes 14 links;
    # the 16 links below merge the same way into one supernode of 16 columns
    ncols = np.array([1] * 30 + [2])
    noff = np.array([1] * 30 + [0])
    parent = np.append(np.arange(1, 31), -1)
    group, extra = relaxed_supernodes(ncols, noff, parent, NRELAX)
    np.testing.assert_array_equal(group, [15] * 16 + [30] * 15)
    before = int(np.sum(ncols * (ncols + 1) // 2 + ncols * noff))
    assert extra == (16 * 17 // 2 + 16) + 16 * 17 // 2 - before
    # s merges only into s+1: supernode 0's parent 2 is not 1, and 1 (30 columns, whose
    # merge with 2 would make 900 of 1830 entries zeros) stays apart, so nothing merges
    group, extra = relaxed_supernodes(np.array([1, 30, 30]), np.array([30, 0, 0]),
                                      np.array([2, 2, -1]))
    np.testing.assert_array_equal(group, [0, 1, 2])
    assert extra == 0
    # once 1 has merged into 2 (few columns), 0's parent is the merged supernode 1..2
    group, extra = relaxed_supernodes(np.array([1, 1, 1]), np.array([1, 1, 0]),
                                      np.array([2, 2, -1]))
    np.testing.assert_array_equal(group, [2, 2, 2])
    # up to NRELAX[0] columns merge whatever zeros they add; beyond NRELAX[2], only with
    # a zero share below ZRELAX[2] (here 20·29 = 580 of 1275 entries: no), or no zero
    few = relaxed_supernodes(np.array([2, 2]), np.array([1, 0]), np.array([1, -1]))
    assert few[0].tolist() == [1, 1] and few[1] == 2
    wide = relaxed_supernodes(np.array([20, 30]), np.array([1, 0]), np.array([1, -1]))
    assert wide[0].tolist() == [0, 1] and wide[1] == 0
    nested = relaxed_supernodes(np.array([20, 30]), np.array([30, 0]), np.array([1, -1]))
    assert nested[0].tolist() == [1, 1] and nested[1] == 0
    assert NRELAX == (4, 16, 48) and ZRELAX == (0.8, 0.1, 0.05)
    # the default bounds: nrelax₁ = 14, so the root takes 12 links (14 columns), the 18
    # links below merge into one of 14 and one of 4
    group, _ = relaxed_supernodes(ncols, noff, parent)
    np.testing.assert_array_equal(group, [3] * 4 + [17] * 14 + [30] * 13)
    assert DEFAULT_NRELAX == (4, 14, 48)


@pytest.mark.parametrize("ordering", ["amd", "metis"])
def test_relaxed_merging_against_cholmod(ordering, monkeypatch):
    cholmod = pytest.importorskip("sksparse.cholmod")
    monkeypatch.setattr(_merge, "DEFAULT_NRELAX", NRELAX)      # CHOLMOD's own bounds
    for a in (gallery.laplacian_2d(24), gallery.laplacian_3d(8)):
        f = cholmod.cholesky(sp.csc_matrix(a), ordering_method=ordering, mode="supernodal")
        p = f.P()
        sym = analyze(sp.csc_array(a)[p][:, p], ordering="natural", refine=False)
        np.testing.assert_array_equal(sym.perm, np.arange(a.shape[0]))
        stored = f.L().nnz                        # CHOLMOD's supernodal pattern, zeros too
        assert sym.nnz_l_exact == np.count_nonzero(f.L().data)
        # the same rule; our fundamental supernodes may be wider (a column joins its
        # child's even where it has other children), never adding entries
        assert 0.97 * stored <= sym.nnz_l <= stored
        if ordering == "amd":
            assert sym.nnz_l == stored


def test_merging_is_bounded_and_reduces_supernodes():
    a = gallery.laplacian_2d(30)
    base = analyze(a, ordering="metis", merge=False, refine=False)
    prev = base.n_supernodes
    for ratio in (0.0, 0.1, 0.25, 1.0):
        sym = analyze(a, ordering="metis", merge="fill", refine=False, max_fill_ratio=ratio)
        assert sym.nnz_l_exact == base.nnz_l
        assert sym.nnz_l - base.nnz_l == sym.stats["merge_extra"] <= ratio * base.nnz_l
        assert sym.n_supernodes <= prev
        prev = sym.n_supernodes
    assert prev < base.n_supernodes / 4
    with pytest.raises(ValueError, match="max_fill_ratio"):
        analyze(a, max_fill_ratio=-1)
    for bad in ("greedy", 1, "Relaxed"):
        with pytest.raises(ValueError, match="merge must be"):
            analyze(a, merge=bad)


def test_refinement_reduces_blocks():
    a = gallery.laplacian_3d(8)
    plain = analyze(a, ordering="metis", refine=False)
    sym = analyze(a, ordering="metis", refine=True)
    assert sym.stats["blocks_before_refine"] == plain.stats["blocks"]
    assert sym.stats["blocks"] < 0.8 * plain.stats["blocks"]      # 696 against 973
    assert sym.nnz_l == plain.nnz_l                 # same supernodes, same storage
    np.testing.assert_array_equal(sym.super_ptr, plain.super_ptr)


def test_refine_one_makes_chained_sets_contiguous():
    # sets {0, 1} then {1, 2}: both runs after refinement
    order = _refine._refine_one(4, [np.array([0, 1]), np.array([1, 2])])
    pos = np.empty(4, dtype=int)
    pos[order] = np.arange(4)
    for s in ([0, 1], [1, 2]):
        p = np.sort(pos[s])
        assert p[-1] - p[0] == len(s) - 1


def test_count_blocks():
    # supernode 0: columns 0..1, rows 0 1 2 3 5; supernode 1: column 2..3; 2: 4..5
    super_ptr = np.array([0, 2, 4, 6])
    col_super = np.array([0, 0, 1, 1, 2, 2])
    row_ptr = np.array([0, 5, 8, 10])
    row_idx = np.array([0, 1, 2, 3, 5, 2, 3, 4, 4, 5])
    # off-diagonal runs: (2, 3) in 1, (5) in 2 | (4) in 2 | none
    assert _refine.count_blocks(row_ptr, row_idx, super_ptr, col_super) == 3


def test_edge_cases():
    empty = analyze(sp.csc_array((0, 0)))
    assert empty.n == 0 and empty.n_supernodes == 0 and empty.nnz_l == 0
    one = analyze(sp.csc_array(np.array([[2.0]])))
    assert one.n_supernodes == 1 and one.nnz_l == 1 and one.a_map.tolist() == [0]
    diag = sp.csc_array(np.diag(np.arange(1.0, 6.0)))
    sym = analyze(diag, ordering="amd", merge=False)
    assert sym.nnz_l == 5 and np.all(sym.parent == -1)
    _check_storage(sym, diag)
    # an empty column (singular: the numeric factorization reports it) still gets its
    # diagonal entry in L; an explicit zero stays an entry
    holey = sp.csc_array(sp.coo_array(([2.0, 1.0, 1.0, 3.0, 0.0, 0.0],
                                       ([0, 0, 2, 2, 1, 0], [0, 2, 0, 2, 0, 1])),
                                      shape=(3, 3)))
    sym = analyze(holey, ordering="natural", merge=False)
    assert sym.nnz_l == 6 and sym.a_map.size == 4
    _check_storage(sym, holey)
    with pytest.raises(ValueError, match="ordering"):
        analyze(diag, ordering="nope")
    with pytest.raises(ValueError, match="not symmetric"):
        analyze(sp.csc_array(np.array([[1.0, 2.0], [0.0, 1.0]])))


@pytest.mark.parametrize("ordering", ["metis", "amd", "best"])
def test_gallery_matrices(ordering):
    for a in (gallery.laplacian_2d(9, 7), gallery.laplacian_3d(5, 27),
              gallery.ad2at_lp(40, 90, 0.05, 1), gallery.random_spd(60, 0.05, 2)):
        sym = analyze(a, ordering=ordering)
        _check_storage(sym, a)
        pat, _ = _dense_factor_pattern(a, sym.perm)
        assert not (pat & ~(sym.pattern().toarray() != 0)).any()


@settings(max_examples=40)
@given(nk=st.integers(3, 140), seed=st.integers(0, 10**6))
def test_refine_list_and_array_forms_agree(nk, seed):
    rng = np.random.default_rng(seed)
    sets = [np.sort(rng.choice(nk, size=int(rng.integers(2, nk)), replace=False))
            for _ in range(int(rng.integers(1, 10)))]
    small = _refine._refine_small(nk, sets)
    np.testing.assert_array_equal(np.sort(small), np.arange(nk))
    saved = _refine.SMALL
    try:
        _refine.SMALL = 0
        np.testing.assert_array_equal(_refine._refine_one(nk, sets), small)
    finally:
        _refine.SMALL = saved
