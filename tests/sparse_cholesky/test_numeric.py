"""The numeric supernodal factorization (oclla.sparse.numeric) on structures built by hand
(tests/sparse_cholesky/_handmade.py, independent of the symbolic analysis): both routes (batched
and BLAS-3), RL and RLB, the relative indices, the failure flag."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp
from numpy.linalg import LinAlgError

from oclla import accuracy, record
from oclla.sparse import numeric

from _handmade import handmade_symbolic


def _matrix(n, seed, density=0.1, shift=None):
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=density, random_state=rng)
    a = a + a.T
    d = np.asarray(abs(a).sum(axis=1)).ravel() + 1.0
    a = sp.csc_array(a + sp.diags(d if shift is None else shift))
    a.sort_indices()
    return a


def _lower(a, dtype):
    low = sp.csc_array(sp.tril(a), dtype=dtype)
    low.sort_indices()
    return low


def _dense_l(queue, sym, lbuf, dtype):
    """L (permuted ordering) as a dense host array, read from L storage."""
    values = np.empty(int(sym.l_ptr[-1]), dtype)
    cl.enqueue_copy(queue, values, lbuf)
    l = np.zeros((sym.n, sym.n))
    for s in range(sym.super_ptr.size - 1):
        c0, c1 = sym.super_ptr[s], sym.super_ptr[s + 1]
        rows = sym.row_idx[sym.row_ptr[s]:sym.row_ptr[s + 1]]
        block = values[sym.l_ptr[s]:sym.l_ptr[s + 1]].reshape(c1 - c0, rows.size).T
        l[np.ix_(rows, np.arange(c0, c1))] = block
    return l


def _factor(queue, a, dtype, perm, *, method, large, max_cols=3):
    low = _lower(a, dtype)
    sym = handmade_symbolic(low, perm, max_cols=max_cols)
    plan = numeric.make_plan(sym, large=large)
    lbuf = numeric.factor(queue, sym, plan, cl_array.to_device(queue, low.data), dtype=dtype,
                          method=method)
    return sym, plan, _dense_l(queue, sym, lbuf, dtype)


@pytest.mark.parametrize("large", [np.inf, 0.0, 200.0], ids=["batched", "blas", "mixed"])
def test_backward_error_every_route(queue, dtype, large):
    n = 37                                           # odd, straddles the batch work-group
    _routes_agree(queue, dtype, large, n)


@pytest.mark.parametrize("chunked", [False, True], ids=["strided", "chunked"])
def test_both_row_mappings_of_the_batched_factor(queue, monkeypatch, chunked):
    """The GPUs' batched kernels (rows strided, one work-group per update matrix:
    syrk_batch) and the CPUs' (rows chunked, the update matrices in gemm_direct's
    register blocks where the device's gemm is direct: syrk_direct_batch)."""
    monkeypatch.setattr(numeric, "rows_chunked", lambda queue, dtype: chunked)
    if not chunked:
        monkeypatch.setattr(numeric, "syrk_launch", lambda *args: None)
    _routes_agree(queue, np.float64, np.inf, 150, max_cols=40)   # more rows than WG items


def _routes_agree(queue, dtype, large, n, max_cols=3):
    a = _matrix(n, seed=3)
    perm = np.random.default_rng(5).permutation(n)
    results = {}
    for method in numeric.METHODS:
        sym, plan, l = _factor(queue, a, dtype, perm, method=method, large=large,
                               max_cols=max_cols)
        if large == 200.0:
            assert 0 < plan.large.sum() < plan.ns       # both routes really taken
        # the strict upper part of each diagonal block stays zero
        assert np.all(np.triu(l, 1) == 0)
        err = accuracy.sparse_cholesky_backward_error(a, sp.csc_array(l).astype(dtype), perm)
        assert err < accuracy.THRESHOLD, (method, err)
        results[method] = l
    tol = 50 * n * accuracy.eps(dtype) * np.abs(results["rl"]).max()
    assert np.abs(results["rl"] - results["rlb"]).max() <= tol


def test_packed_large_supernodes_in_small_blocks(queue, dtype, monkeypatch):
    """The CPUs' packed route of the large supernodes (gemm_packed) with blocks smaller
    than the supernodes: own columns in blocks of 7 (several potrf + trsm + update
    rounds), the inner dimension in blocks of 5, work-groups of 2 x 3 register blocks
    over the edges; then a failing pivot inside a later block names its column."""
    monkeypatch.setitem(numeric.PACKED, "NB", 7)
    monkeypatch.setitem(numeric.PACKED, "KC", 5)
    monkeypatch.setitem(numeric.PACKED, "LX", 2)
    monkeypatch.setitem(numeric.PACKED, "LY", 3)
    n = 61
    a = _matrix(n, seed=13, density=0.08)
    perm = np.random.default_rng(14).permutation(n)
    sym, plan, l = _factor(queue, a, dtype, perm, method="rl", large=0.0, max_cols=30)
    if plan.blocks[("packed", queue.context, np.dtype(dtype).name)] is None:
        pytest.skip("the device's gemm is not the direct one: no packed route")
    nc = np.diff(sym.super_ptr)
    assert nc.max() > 2 * 7 and np.any((nc > 7) & (plan.m > 0))
    assert np.all(np.triu(l, 1) == 0)
    err = accuracy.sparse_cholesky_backward_error(a, sp.csc_array(l).astype(dtype), perm)
    assert err < accuracy.THRESHOLD
    s = int(np.argmax(nc))
    k = int(sym.super_ptr[s]) + 9                  # the second block of the widest supernode
    bad = a.tolil()
    bad[perm[k], perm[k]] = -1e3
    with pytest.raises(LinAlgError, match=rf"column {perm[k]} \(original ordering\)"):
        _factor(queue, sp.csc_array(bad), dtype, perm, method="rlb", large=0.0, max_cols=30)


def test_matches_dense_cholesky(queue):
    a = _matrix(24, seed=11, density=0.2)
    perm = np.arange(24)[::-1].copy()
    _, _, l = _factor(queue, a, np.float64, perm, method="rl", large=100.0, max_cols=5)
    ref = np.linalg.cholesky(a.toarray()[perm][:, perm])
    assert np.abs(l - ref).max() < 1e-12 * np.abs(ref).max() * 24


def test_schedule_levels_respect_the_tree(queue):
    a = _matrix(50, seed=2, density=0.06)
    sym = handmade_symbolic(_lower(a, np.float64), np.random.default_rng(1).permutation(50))
    plan = numeric.make_plan(sym, large=300.0)
    level_of = np.empty(plan.ns, int)
    for h, lev in enumerate(plan.levels):
        level_of[np.concatenate([lev.small, lev.large]).astype(int)] = h
    has_parent = sym.parent >= 0
    assert np.all(level_of[sym.parent[has_parent]] > level_of[has_parent])
    # every off-diagonal row is in exactly one pair, and its relative indices point
    # at the same row in the target
    assert (plan.pair_j1 - plan.pair_j0).sum() == (plan.nr - plan.nc).sum()
    for q in range(plan.pair_src.size):
        s, t = plan.pair_src[q], plan.pair_tgt[q]
        off = sym.row_idx[sym.row_ptr[s] + plan.nc[s]:sym.row_ptr[s + 1]]
        rel = plan.rel[plan.rel_ptr[q]:plan.rel_ptr[q + 1]]
        assert np.array_equal(sym.row_idx[sym.row_ptr[t] + rel], off[plan.pair_j0[q]:])
        assert np.all(sym.col_super[off[plan.pair_j0[q]:plan.pair_j1[q]]] == t)


def test_structure_not_closed_is_refused():
    a = _matrix(20, seed=4, density=0.2)
    sym = handmade_symbolic(_lower(a, np.float64))
    # drop a row that a descendant needs from the last supernode's structure
    s = sym.super_ptr.size - 2
    if sym.row_ptr[s + 1] - sym.row_ptr[s] < 2:
        s -= 1
    rows = sym.row_idx.copy()
    keep = np.ones(rows.size, bool)
    keep[sym.row_ptr[s + 1] - 1] = False
    bad = type(sym)(**{**vars(sym), "row_idx": rows[keep],
                       "row_ptr": np.concatenate([sym.row_ptr[:s + 1],
                                                  sym.row_ptr[s + 1:] - 1])})
    with pytest.raises(ValueError, match="not closed"):
        numeric.make_plan(bad, large=np.inf)


@pytest.mark.parametrize("large", [np.inf, 0.0], ids=["batched", "blas"])
def test_not_positive_definite_names_first_failing_column(queue, large):
    n = 30
    a = _matrix(n, seed=7).tolil()
    perm = np.random.default_rng(8).permutation(n)
    # make the leading minor of order k+1 of the permuted matrix indefinite at pivot k
    k = 17
    a[perm[k], perm[k]] = -1e3
    a = sp.csc_array(a)
    with pytest.raises(LinAlgError, match=rf"column {perm[k]} \(original ordering\)"):
        _factor(queue, a, np.float64, perm, method="rl", large=large)


def test_trace_steps_per_supernode(queue):
    a = _matrix(30, seed=9)
    with record() as rec:
        sym, plan, _ = _factor(queue, a, np.float32, None, method="rlb", large=150.0)
    run = rec.runs[-1]
    assert run.algorithm == "sparse_cholesky"
    phases = {s.phase for s in run.steps}
    assert {"scatter", "potrf", "assemble"} <= phases
    big = [s for s in run.steps if s.info.get("route") == "large"]
    assert {s.info["supernode"] for s in big} == set(np.flatnonzero(plan.large).tolist())
    batched = set()
    for s in run.steps:
        if s.info.get("route") == "batched" and s.phase == "potrf":
            batched |= set(s.info["supernodes"])
    assert batched == set(np.flatnonzero(~plan.large).tolist())
    assert all(k.end >= k.start > 0 for s in run.steps for k in s.kernels)


def test_rlb_batched_gemms_two_launches_per_large_supernode(queue):
    """RLB's large supernodes: each pair of row blocks is one GEMM, all of a supernode's
    GEMMs in at most two launches (diagonal pairs, the others); the factor equals RL's."""
    a = _matrix(40, seed=12, density=0.08)
    perm = np.random.default_rng(2).permutation(40)
    _, _, ref = _factor(queue, a, np.float64, perm, method="rl", large=0.0)
    with record() as rec:
        sym, plan, l = _factor(queue, a, np.float64, perm, method="rlb", large=0.0)
    assert np.abs(l - ref).max() <= 50 * 40 * accuracy.eps(np.float64) * np.abs(ref).max()
    steps = [st for st in rec.runs[-1].steps if st.phase == "syrk"]
    assert steps and all(st.info["route"] == "large" for st in steps)
    for st in steps:
        s = st.info["supernode"]
        desc, target, diagonal = numeric.rlb_gemms(sym, plan, s)
        nb = int(diagonal.sum())                  # row blocks
        assert st.info["gemms"] == desc.shape[0] == nb * (nb + 1) // 2
        assert len(st.kernels) == (1 if nb == 1 else 2)
    assert max(st.info["gemms"] for st in steps) > 2


def test_rlb_gemms_cover_every_update_once():
    """Every (column, row) entry an RLB supernode updates lies in exactly one GEMM's block,
    at the position the relative indices give (numpy only)."""
    a = _matrix(60, seed=5, density=0.06)
    low = _lower(a, np.float64)
    sym = handmade_symbolic(low, np.random.default_rng(4).permutation(60))
    plan = numeric.make_plan(sym, large=0.0)
    for s in range(plan.ns):
        if plan.m[s] == 0:
            continue
        desc, target, _ = numeric.rlb_gemms(sym, plan, s)
        hit = []
        for (rj, ri, j0, i0, ldt), t0 in zip(desc.tolist(), target.tolist()):
            for r in range(rj):
                for c in range(ri):
                    if i0 + c >= j0 + r:
                        hit.append(t0 + r * ldt + c)
        want = []
        for q in np.flatnonzero(plan.pair_src == s):
            t = plan.pair_tgt[q]
            rows = sym.row_idx[sym.row_ptr[s] + plan.nc[s]:sym.row_ptr[s + 1]]
            for j in range(plan.pair_j0[q], plan.pair_j1[q]):
                col = rows[j] - sym.super_ptr[t]
                for i in range(j, plan.m[s]):
                    pos = plan.rel[plan.rel_ptr[q] + i - plan.pair_j0[q]]
                    want.append(int(sym.l_ptr[t] + col * plan.nr[t] + pos))
        assert sorted(hit) == sorted(want)


def test_rlb_batched_gemms_on_tiles(queue, monkeypatch):
    """The GPUs' form of RLB's batched GEMMs (work-groups over gemm_tile.h's tiles, here
    16 x 16 tiles of interleaved 2 x 2 blocks given by hand): a backward error below the
    limit, launches of several tiles."""
    from oclla._knobs import complete_gemm
    shape = complete_gemm(dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2,
                               WPT_N=2, VEC=2, INTERLEAVE=1, VEC_LOCAL=2))
    monkeypatch.setattr(numeric, "gemm_shape", lambda queue, k, dtype: shape)
    n = 70
    a = _matrix(n, seed=21, density=0.06)
    perm = np.random.default_rng(6).permutation(n)
    _, plan, l = _factor(queue, a, np.float64, perm, method="rlb", large=0.0, max_cols=20)
    assert plan.blocks[("packed", queue.context, "float64")] is None     # tiles: no packing
    assert any(launch[1][0] // launch[2][0] > 1 for key, launches in plan.blocks.items()
               if key[0] != "packed" for launch in launches)   # a launch of several tiles
    err = accuracy.sparse_cholesky_backward_error(a, sp.csc_array(l), perm)
    assert err < accuracy.THRESHOLD
