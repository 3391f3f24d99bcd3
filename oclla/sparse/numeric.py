"""The numeric supernodal Cholesky factorization, right-looking (RL and RLB), on the device.

Storage (the contract of :class:`oclla.sparse.symbolic.Symbolic`): one flat
device buffer holds L; supernode s owns the permuted columns
``super_ptr[s]:super_ptr[s+1]`` (nc of them) and the sorted rows
``row_idx[row_ptr[s]:row_ptr[s+1]]`` (nr of them, its own columns first), its
values a column-major nr x nc block at ``l_ptr[s]`` (leading dimension nr).
Read row-major, the same memory is the nc x nr matrix Uₛ = Lₛᵀ, which is how
the shared BLAS-3 layer (:mod:`oclla.blas`, row-major :class:`View`\\ s) sees
it: the diagonal block is an upper factor (``factor_blocked(lower=False)``)
and the off-diagonal part U₁₂ = U₁₁⁻ᵀ·A₁₂ a left, transposed TRSM.

Supernodes go level by level up the supernodal elimination tree (a level:
the supernodes whose subtrees are all done; none is an ancestor of another).
Per level, per supernode s with nc columns and m off-diagonal rows:

potrf + trsm
    L₁₁ = chol(A₁₁), L₂₁ = A₂₁·L₁₁⁻ᵀ (in place).
RL: syrk + assemble
    the whole update matrix C = L₂₁·L₂₁ᵀ (m x m, lower triangle) into
    working storage (batched supernodes on CPUs: one launch of register blocks over
    all of a level's update matrices, :func:`syrk_launch`), then scatter-subtracted
    into the ancestors' columns:
    entry (i, j) of C goes to column row_j of its supernode t, at the
    position of row_i in t's row list (the *relative indices*, computed once
    per analysis, :func:`make_plan`).
RLB: blocked updates straight into L (no working storage)
    the off-diagonal rows fall in *row blocks* (maximal runs of consecutive
    rows inside one ancestor supernode); for each pair of blocks
    (Bᵢ below or equal to Bⱼ) one GEMM (SYRK for i = j) subtracts
    L[Bᵢ,:]·L[Bⱼ,:]ᵀ from the ancestor's block at its offset.  The GEMMs of
    one supernode go in two launches of one batched kernel (``rlb_gemm``:
    the diagonal pairs, then the others), whose work-groups are the tiles of
    all of them (:func:`rlb_launches`).

Routes: supernodes whose factorization flops reach ``large`` (default
:data:`LARGE_FLOPS` of the device's kind) run one by one on :mod:`oclla.blas` / the dense
blocked potrf (on CPUs their own columns in blocks, the products on packed strips:
``gemm_packed``, :data:`PACKED`); the others of a level are batched, one work-group per
supernode per launch (``kernels_cl/sparse.cl``): factor_batch (potrf +
trsm), syrk_batch (RL) and assemble (one work-group per *target*
supernode, its sources in a fixed order: no races, no atomics, the same
result on every run).  RLB's batched assemble forms each entry of the
update from the source block instead of reading working storage.

Failure: a non-positive pivot sets a device flag (the smallest failing
column of a launch; the first launch's failure wins); every later factor
kernel returns at once; the host reads the flag once, at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl
from numpy.linalg import LinAlgError

from .. import trace
from .._device import device_info
from .._params import params
from .._programs import (enqueue, get_kernel, int_arg, int_zeros, launch_queue, real_arg,
                         round_up)
from ..blas import View, gemm_shape, strip_group, syrk, tile_launch
from ..cholesky import _solve_panel, factor_blocked

#: Flop count (potrf + trsm + syrk of one supernode) from which a supernode takes the
#: BLAS-3 route (one supernode at a time on :mod:`oclla.blas` and the dense blocked potrf)
#: instead of the batched kernels (one work-group per supernode), by device kind.
#: CPU: measured on PoCL (2 cores, float64, RL, METIS; ``oclla bench sparse --large
#: 3e7,1e8,3e8,inf``, best of 2; benchmarks/results/pocl-2core-epyc-2026-11-26-sparse-*),
#: factor seconds for thresholds 3e7 / 1e8 / 3e8 / inf with the machine otherwise quiet:
#: 3-D 25³ 0.31 / 0.28 / 0.26 / 0.29, 3-D 30³ 0.68 / 0.62 / 0.87 / 0.79, 2-D 300² 0.175 /
#: 0.169 / 0.172 / 0.181 -- 1e8 best or within 7 % (under a load of 8-10 on the two
#: cores the BLAS route, whose dense potrf spreads over both, lost more: 3-D 30³ 3.8 /
#: 3.1 / 1.9 / 1.3 s).
#: GPU (H200, NVIDIA OpenCL, float64 RL, METIS), factor seconds for thresholds 1e5 / 1e6 /
#: 1e7 / never on 3-D 40³: 0.241 / 0.109 / 0.0685 / more than 90 (every supernode batched,
#: the root's by one work-group).
LARGE_FLOPS = {"CPU": 1.0e8, "GPU": 1.0e7}


def large_threshold(queue) -> float:
    """The :data:`LARGE_FLOPS` of the queue's device kind (GPU for anything not a CPU)."""
    return LARGE_FLOPS["CPU" if device_info(queue).kind == "CPU" else "GPU"]


#: Work-group size of the batched kernels (kernels_cl/sparse.cl WG), by device kind: on
#: PoCL (2 cores, 2-D 200², RL) the batched potrf took 0.26 s with 64 items, 0.14 s
#: with 16 and 0.06 s with 8 (most supernodes have a few columns and rows: the items
#: of a CPU work-group run one after the other, idle ones too, between barriers).
BATCH_WG = {"CPU": 8, "GPU": 64}

METHODS = ("rl", "rlb")


def batch_wg(queue) -> int:
    """The batched kernels' work-group size on this device: its kind's :data:`BATCH_WG`
    or the device's largest power of two below it."""
    wg = BATCH_WG["CPU" if device_info(queue).kind == "CPU" else "GPU"]
    while wg > device_info(queue).max_work_group_size:
        wg //= 2
    return wg


def rows_chunked(queue, dtype) -> bool:
    """factor_batch's row mapping (kernels_cl/sparse.cl ROWS_CHUNKED), the ``wg1d`` knob
    RUNS: a contiguous run of rows per work-item on CPU devices (their items run as
    loops; on PoCL, 2 cores, 3-D 20³: the 556-column root supernode in 0.21 s instead of
    0.60 s), rows strided by the work-group elsewhere (neighbouring items read
    neighbouring entries)."""
    return bool(params(queue, "wg1d", dtype)["RUNS"])


def not_positive_definite(column: int) -> LinAlgError:
    """The error for a failing pivot at ``column`` of the original ordering."""
    return LinAlgError(f"the matrix is not positive definite: column {column} "
                       f"(original ordering)")


def supernode_flops(nc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """potrf (nc³/3), trsm (nc²·m) and syrk (nc·m²) flops of supernodes of nc columns
    and m off-diagonal rows."""
    nc = nc.astype(np.float64)
    m = m.astype(np.float64)
    return nc ** 3 / 3.0 + nc ** 2 * m + nc * m * (m + 1.0)


def _buffer(ctx, array: np.ndarray) -> cl.Buffer:
    """A read-only device copy of a host index array (one element at least)."""
    host = array if array.size else np.zeros(1, array.dtype)
    return cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.ascontiguousarray(host))


@dataclass
class Pairs:
    """(source, target) update pairs of a set of sources, grouped by target: the
    targets of group g get pairs ``pair_ptr[g]:pair_ptr[g+1]`` (host arrays and their
    device copies)."""

    targets: np.ndarray          # int32 (groups,)
    pair_ptr: np.ndarray         # int32 (groups+1,)
    index: np.ndarray            # int64 pair numbers (into the plan's pair arrays)
    wp: np.ndarray               # int64 (pairs,): offset in w of each pair's source
    dev: tuple = ()              # (context, device copies): pair_tables()


@dataclass
class Level:
    """One level of the schedule: its batched supernodes and its large ones."""

    small: np.ndarray            # int32 supernodes of the batched route
    large: np.ndarray            # int64 supernodes of the BLAS route
    small_pairs: Pairs | None
    small_wp: np.ndarray         # int64 (len(small),): each one's update matrix in w
    large_pairs: dict            # s -> Pairs of s alone
    potrf_flops: float = 0.0     # of the batched supernodes (potrf + trsm)
    update_flops: float = 0.0    # of the batched supernodes (syrk)


@dataclass
class Plan:
    """What the numeric factorization and the solves need beyond the Symbolic, built
    once per analysis (host numpy, vectorised) and reused by every refactorization:
    the level schedule, the update pairs and relative indices, RLB's row blocks, the
    device copies of the tables."""

    n: int
    ns: int
    nc: np.ndarray
    nr: np.ndarray
    m: np.ndarray
    large: np.ndarray            # bool (ns,)
    levels: list
    pair_src: np.ndarray         # int32
    pair_tgt: np.ndarray         # int32
    pair_j0: np.ndarray          # int32
    pair_j1: np.ndarray          # int32
    rel_ptr: np.ndarray          # int64
    rel: np.ndarray              # int32
    work: int                    # RL working storage, elements
    flops: np.ndarray            # float64 (ns,)
    dev: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=dict)    # RLB's launches: rlb_launches()


def _levels(parent: np.ndarray) -> np.ndarray:
    """Level of each supernode: 0 for leaves, 1 + the largest level of its children
    (parent[s] > s: one pass in order)."""
    ns = parent.size
    level = np.zeros(ns, np.int64)
    par = parent.tolist()
    lev = level.tolist()
    for s in range(ns):
        p = par[s]
        if p >= 0 and lev[p] < lev[s] + 1:
            lev[p] = lev[s] + 1
    return np.asarray(lev, np.int64)


def _pairs(sym) -> tuple:
    """The update pairs and relative indices of every supernode (vectorised).

    Pair q: source s, target t, the off-diagonal rows j0..j1-1 of s that lie in
    t's columns; rel[rel_ptr[q] + i - j0] is the position of s's off-diagonal row
    i >= j0 in t's row list."""
    sp, rp, ri = sym.super_ptr, sym.row_ptr, sym.row_idx
    ns = sp.size - 1
    nc = np.diff(sp)
    nr = np.diff(rp)
    seg = np.repeat(np.arange(ns), nr)
    local = np.arange(ri.size) - np.repeat(rp[:-1], nr)
    off = local >= nc[seg]
    off_rows, off_s = ri[off], seg[off]
    off_j = (local - nc[seg])[off]
    tgt = sym.col_super[off_rows]
    if off_rows.size == 0:
        e = np.zeros(0, np.int32)
        return e, e, e, e, np.zeros(1, np.int64), e
    new = np.ones(off_rows.size, bool)
    new[1:] = (off_s[1:] != off_s[:-1]) | (tgt[1:] != tgt[:-1])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], off_rows.size)
    src, tg, j0 = off_s[starts], tgt[starts], off_j[starts]
    j1 = j0 + (ends - starts)
    m = nr - nc
    length = m[src] - j0
    rel_ptr = np.zeros(src.size + 1, np.int64)
    np.cumsum(length, out=rel_ptr[1:])
    q = np.repeat(np.arange(src.size), length)
    k = np.arange(rel_ptr[-1]) - rel_ptr[q] + starts[q]
    rows = off_rows[k]
    width = np.int64(sym.n + 1)
    keys = seg.astype(np.int64) * width + ri
    want = tg[q].astype(np.int64) * width + rows
    pos = np.searchsorted(keys, want)
    if np.any(pos >= keys.size) or np.any(keys[np.minimum(pos, keys.size - 1)] != want):
        raise ValueError("the symbolic structure is not closed: a supernode's rows are "
                         "not all in its ancestor's row list")
    rel = (pos - rp[tg[q]]).astype(np.int32)
    return (src.astype(np.int32), tg.astype(np.int32), j0.astype(np.int32),
            j1.astype(np.int32), rel_ptr, rel)


def _group_pairs(pair_idx: np.ndarray, plan_src, plan_tgt, wp_of_src: dict | np.ndarray
                 ) -> Pairs:
    """Pairs ``pair_idx`` grouped by target (sources in increasing order within one)."""
    order = np.lexsort((plan_src[pair_idx], plan_tgt[pair_idx]))
    idx = pair_idx[order]
    tg = plan_tgt[idx]
    first = np.ones(idx.size, bool)
    first[1:] = tg[1:] != tg[:-1]
    starts = np.flatnonzero(first)
    ptr = np.append(starts, idx.size).astype(np.int32)
    return Pairs(tg[starts].astype(np.int32), ptr, idx, wp_of_src[plan_src[idx]])


def make_plan(sym, *, large: float) -> Plan:
    """The schedule of the numeric factorization for the analysis ``sym`` (host only).

    ``large``: the flop count from which a supernode takes the BLAS route
    (:func:`large_threshold` gives the device's default)."""
    threshold = float(large)
    nc = np.diff(sym.super_ptr)
    nr = np.diff(sym.row_ptr)
    m = nr - nc
    ns = nc.size
    flops = supernode_flops(nc, m)
    is_large = flops >= threshold
    src, tgt, j0, j1, rel_ptr, rel = _pairs(sym)
    level = _levels(np.asarray(sym.parent, np.int64))
    pair_level = level[src] if src.size else np.zeros(0, np.int64)
    order = np.argsort(level, kind="stable")
    bounds = np.searchsorted(level[order], np.arange(level.max(initial=-1) + 2))
    pair_order = np.argsort(pair_level, kind="stable")
    pbounds = np.searchsorted(pair_level[pair_order], np.arange(level.max(initial=-1) + 2))
    m2 = m.astype(np.int64) ** 2
    work = int(m2[is_large].max(initial=0))
    levels = []
    for h in range(bounds.size - 1):
        members = order[bounds[h]:bounds[h + 1]]
        small = members[~is_large[members]].astype(np.int32)
        big = members[is_large[members]]
        wp = np.zeros(ns, np.int64)
        sizes = m2[small]
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        wp[small] = offsets
        work = max(work, int(sizes.sum()))
        pidx = pair_order[pbounds[h]:pbounds[h + 1]]
        in_small = ~is_large[src[pidx]]
        small_pairs = (_group_pairs(pidx[in_small], src, tgt, wp)
                       if np.any(in_small) else None)
        large_pairs = {}
        big_idx = pidx[~in_small]
        for s in big.tolist():
            mine = big_idx[src[big_idx] == s]
            if mine.size:
                large_pairs[s] = _group_pairs(mine, src, tgt, np.zeros(ns, np.int64))
        snc, sm = nc[small].astype(float), m[small].astype(float)
        levels.append(Level(small, big.astype(np.int64), small_pairs, offsets, large_pairs,
                            float(np.sum(snc ** 3 / 3 + snc * snc * sm)),
                            float(np.sum(snc * sm * (sm + 1)))))
    return Plan(sym.n, ns, nc, nr, m, is_large, levels, src, tgt, j0, j1, rel_ptr, rel,
                work, flops)


def rlb_gemms(sym, plan: Plan, s: int) -> tuple:
    """RLB's GEMMs of supernode s, one per pair of row blocks Bᵢ at or below Bⱼ (a row
    block: a maximal run of consecutive off-diagonal rows inside one ancestor t, so
    Bⱼ is a run of t's columns and Bᵢ a run of t's rows): ``desc`` int32 (P, 5) rows
    (rows of Bⱼ, rows of Bᵢ, their first positions among s's off-diagonal rows, t's
    leading dimension), ``target`` int64 (P,) the position in L of t's entry (row of
    Bᵢ's first, column of Bⱼ's first), ``diagonal`` bool (P,) where Bᵢ = Bⱼ."""
    sp_, rp, ri = sym.super_ptr, sym.row_ptr, sym.row_idx
    nc = int(plan.nc[s])
    rows = ri[rp[s] + nc:rp[s + 1]]
    owner = sym.col_super[rows]
    cut = np.ones(rows.size, bool)
    cut[1:] = (owner[1:] != owner[:-1]) | (rows[1:] != rows[:-1] + 1)
    starts = np.flatnonzero(cut)
    ends = np.append(starts[1:], rows.size)
    lo, hi = np.searchsorted(plan.pair_src, [s, s + 1])       # s's pairs, by j0
    q = lo + np.searchsorted(plan.pair_j0[lo:hi], starts, side="right") - 1
    t = owner[starts]
    nrt = plan.nr[t].astype(np.int64)
    bj, bi = np.triu_indices(starts.size)
    qj = q[bj]
    r0 = plan.rel[plan.rel_ptr[qj] + starts[bi] - plan.pair_j0[qj]]
    desc = np.stack([ends[bj] - starts[bj], ends[bi] - starts[bi], starts[bj], starts[bi],
                     nrt[bj]], axis=1).astype(np.int32)
    target = sym.l_ptr[t[bj]] + (rows[starts[bj]] - sp_[t[bj]]) * nrt[bj] + r0
    return desc, target.astype(np.int64), bj == bi


def rlb_launches(queue, sym, plan: Plan, s: int, dtype) -> list:
    """The launches of RLB's update of the large supernode s (made once per context and
    dtype, kept in ``plan.blocks``): (kernel, global size, local size, GEMMs, tile_ptr,
    desc, target device buffers) for the diagonal pairs (upper triangle) and for the
    others."""
    key = (s, queue.context, np.dtype(dtype).name)
    if key in plan.blocks:
        return plan.blocks[key]
    desc, target, diagonal = rlb_gemms(sym, plan, s)
    nc = int(plan.nc[s])
    # the shared layer's gemm parameters: tiled on GPUs, direct on CPUs (on PoCL, 2 cores,
    # 3-D 25³ with 12 large supernodes, the tiled kernel with 16 x 16 to 64 x 64 tiles took
    # 0.63-2.5 s for these updates against 0.44 s for RL's SYRK on the direct kernel)
    p = gemm_shape(queue, nc, dtype)
    out = []
    tiled = p["KERNEL"] == "tiled"
    for tri, sel in ((2, diagonal), (0, ~diagonal)):
        if not np.any(sel):
            continue
        d = desc[sel]
        if tiled:
            defines, _, local = tile_launch(p, 1, 1)
            defines["TRIANGLE"] = tri
            bm, bn = p["TILE_M"], p["TILE_N"]
        else:
            defines = dict(TRANS_A=1, TRANS_B=0, TRIANGLE=tri, RM=p["RM"], VW=p["VW"],
                           NV=p["NV"])
            local, bm, bn = (p["LX"], 1), p["RM"], p["VW"] * p["NV"]
        units = (-(-d[:, 0] // bm)) * (-(-d[:, 1] // bn))
        ptr = np.zeros(d.shape[0] + 1, np.int64)
        np.cumsum(units, out=ptr[1:])
        total = int(ptr[-1])
        kernel = get_kernel(queue, "sparse.cl", "rlb_gemm", dtype,
                            BATCH_GEMM=1 if tiled else 2, **defines)
        size = (total * local[0], local[1]) if tiled else (round_up(total, local[0]), 1)
        ctx = queue.context
        out.append((kernel, size, local, d.shape[0],
                    _buffer(ctx, ptr.astype(np.int32)), _buffer(ctx, d.ravel()),
                    _buffer(ctx, target[sel])))
    plan.blocks[key] = out
    return out


def syrk_launch(queue, plan: Plan, h: int, dtype):
    """RL's batched update matrices of level h on the register blocks of gemm_direct.h
    (``syrk_direct_batch``: all of the level's supernodes in one launch, each C split
    into RM x RN blocks, one work-item each), where the device's gemm is the direct
    one (CPUs); None elsewhere (``syrk_batch``: one work-group per supernode).  Made once
    per context and dtype, kept in ``plan.blocks``: (kernel, global size, local size,
    supernodes, unit_ptr device buffer).

    On PoCL (2 cores, float64, 3-D 30³ with the paper's merging) the batched SYRK was
    44 % of the factorization's device time on syrk_batch."""
    key = ("syrk", h, queue.context, np.dtype(dtype).name)
    if key in plan.blocks:
        return plan.blocks[key]
    out = None
    small = plan.levels[h].small
    p = gemm_shape(queue, int(plan.nc[small].max(initial=1)), dtype)
    if p["KERNEL"] == "direct" and small.size:
        rm, rn = p["RM"], p["VW"] * p["NV"]
        m = plan.m[small].astype(np.int64)
        units = (-(-m // rm)) * (-(-m // rn))
        ptr = np.zeros(small.size + 1, np.int64)
        np.cumsum(units, out=ptr[1:])
        kernel = get_kernel(queue, "sparse.cl", "syrk_direct_batch", dtype, BATCH_GEMM=2,
                            TRANS_A=1, TRANS_B=0, TRIANGLE=2, RM=rm, VW=p["VW"], NV=p["NV"])
        total = int(ptr[-1])
        out = (kernel, (round_up(max(total, 1), p["LX"]),), (p["LX"],), small.size,
               _buffer(queue.context, ptr.astype(np.int32)))
    plan.blocks[key] = out
    return out


#: The large supernodes on CPUs (``gemm_packed`` of kernels_cl/sparse.cl): a work-group
#: of LX x LY register blocks (down the rows x across the strips), the products over the
#: inner dimension in blocks of KC, the supernode's own columns factored in blocks of NB
#: (potrf and trsm of a block, then the packed update of the columns right of it).  On
#: PoCL (2 cores, float64, the machine loaded) C = U₁₂ᵀU₁₂ of nc = 1268 and m = 2500
#: (the largest of 3-D 50³) took 0.65-1.9 s on the shared gemm_direct (op(A) read in
#: place, rows nr apart: a page per k) and 0.2-0.4 s packed, 4 x 4 or 4 x 2 blocks per
#: work-group and KC = 256 the best of LX, LY in 2-8 and KC in 128-512.
PACKED = {"LX": 4, "LY": 4, "KC": 256, "NB": 256}


def packed_gemm(queue, plan: Plan, dtype):
    """The packed kernels of the large supernodes where the device's gemm is the direct
    one (CPUs), else None: (pack kernel, gemm kernel, RM, RN, the strips' device
    buffer), made once per context and dtype, kept in ``plan.blocks``.  The buffer holds
    the strips of the largest product (it is kept: every factorization reuses memory
    already touched)."""
    key = ("packed", queue.context, np.dtype(dtype).name)
    if key in plan.blocks:
        return plan.blocks[key]
    out = None
    big = np.flatnonzero(plan.large)
    p = gemm_shape(queue, PACKED["KC"], dtype)
    if p["KERNEL"] == "direct" and big.size:
        rm, rn = p["RM"], p["VW"] * p["NV"]
        defines = dict(BATCH_GEMM=2, TRANS_A=1, TRANS_B=0, TRIANGLE=2, RM=rm, VW=p["VW"],
                       NV=p["NV"])
        nc, nr = plan.nc[big].astype(np.int64), plan.nr[big].astype(np.int64)
        m = nr - nc
        update = nc * (-(-m // rm) * rm + -(-m // rn) * rn)
        own = np.minimum(nc, PACKED["NB"]) * (nc + nr + rm + rn)
        size = int(max(np.max(update), np.max(own), 1))
        buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE,
                        size * np.dtype(dtype).itemsize)
        out = (get_kernel(queue, "sparse.cl", "pack_strips", dtype, **defines),
               get_kernel(queue, "sparse.cl", "gemm_packed", dtype, **defines), rm, rn, buf)
    plan.blocks[key] = out
    return out


def _gemm_packed(q, packed, x: View, k: int, rows: int, cols: int, alpha: float,
                 beta: float, c: View, dtype) -> None:
    """C = alpha·X[:, :rows]ᵀ·X[:, :cols] + beta·C on C's upper triangle (C rows x cols,
    row-major at ``c``; X k x cols, row-major at ``x``, rows <= cols): the columns of X
    packed into strips, then ``gemm_packed`` per block of KC rows of X."""
    pack, kernel, rm, rn, buf = packed
    sa, sb = -(-rows // rm), -(-cols // rn)
    lx, ly, kc = PACKED["LX"], PACKED["LY"], PACKED["KC"]
    off_b = sa * rm * k
    enqueue(q, pack, (rm, k, sa), strip_group(q, rm), int_arg(k), int_arg(rows), int_arg(rm),
            x.buf, np.int64(x.off), int_arg(x.ld), buf, np.int64(0))
    enqueue(q, pack, (rn, k, sb), strip_group(q, rn), int_arg(k), int_arg(cols), int_arg(rn),
            x.buf, np.int64(x.off), int_arg(x.ld), buf, np.int64(off_b))
    for k0 in range(0, k, kc):
        enqueue(q, kernel, (round_up(sa, lx), round_up(sb, ly)), (lx, ly), int_arg(rows),
                int_arg(cols), int_arg(k), int_arg(k0), int_arg(min(kc, k - k0)),
                real_arg(alpha, dtype), real_arg(beta if k0 == 0 else 1.0, dtype),
                buf, np.int64(0), buf, np.int64(off_b), c.buf, np.int64(c.off),
                int_arg(c.ld))


def device_tables(queue, sym, plan: Plan) -> dict:
    """The plan's device copies (built once per context)."""
    key = queue.context
    if key in plan.dev:
        return plan.dev[key]
    ctx = queue.context
    d = dict(sp=_buffer(ctx, sym.super_ptr.astype(np.int32)),
             rp=_buffer(ctx, sym.row_ptr.astype(np.int64)),
             lp=_buffer(ctx, sym.l_ptr.astype(np.int64)),
             ri=_buffer(ctx, sym.row_idx.astype(np.int32)),
             src=_buffer(ctx, plan.pair_src), j0=_buffer(ctx, plan.pair_j0),
             j1=_buffer(ctx, plan.pair_j1), relp=_buffer(ctx, plan.rel_ptr),
             rel=_buffer(ctx, plan.rel))
    d["a_map"] = _buffer(ctx, sym.a_map.astype(np.int64))
    d["levels"] = [(_buffer(ctx, lev.small), _buffer(ctx, lev.small_wp))
                   for lev in plan.levels]
    nc = plan.nc
    col = np.arange(sym.n) - np.repeat(sym.super_ptr[:-1], nc)
    owner = sym.col_super
    d["dpos"] = _buffer(ctx, (sym.l_ptr[owner] + col * (plan.nr[owner] + 1)).astype(np.int64))
    plan.dev[key] = d
    return d


def pair_tables(queue, plan: Plan, p: Pairs) -> tuple:
    """(targets, pair_ptr, src, j0, j1, rel_ptr, wp) device buffers of ``p`` in its order
    (made once per context, kept on ``p``)."""
    if not p.dev or p.dev[0] is not queue.context:
        ctx, idx = queue.context, p.index
        p.dev = (ctx, _buffer(ctx, p.targets), _buffer(ctx, p.pair_ptr),
                 _buffer(ctx, plan.pair_src[idx]), _buffer(ctx, plan.pair_j0[idx]),
                 _buffer(ctx, plan.pair_j1[idx]), _buffer(ctx, plan.rel_ptr[idx]),
                 _buffer(ctx, p.wp.astype(np.int64)))
    return p.dev[1:]


def _region(sym, ss) -> tuple:
    """The trace region of supernodes ``ss`` (permuted rows and columns)."""
    ss = np.atleast_1d(ss)
    c0 = int(sym.super_ptr[ss.min()])
    c1 = int(sym.super_ptr[ss.max() + 1])
    r1 = int(max(sym.row_idx[sym.row_ptr[s + 1] - 1] for s in ss.tolist())) + 1
    return (c0, r1, c0, c1)


def l_storage(queue, sym, dtype) -> cl.Buffer:
    """A device buffer for L's values (``sym.l_ptr[-1]`` entries, one at least)."""
    size = max(int(sym.l_ptr[-1]), 1) * np.dtype(dtype).itemsize
    return cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size)


def workspace(queue, plan: Plan, dtype) -> cl.Buffer | None:
    """RL's working storage (``plan.work`` entries; None when empty), made once per
    context and dtype and kept in ``plan.blocks``: every factorization reuses memory
    already touched (a fresh buffer's first touch cost 12 % of 3-D 40³ on PoCL)."""
    key = ("work", queue.context, np.dtype(dtype).name)
    if key not in plan.blocks:
        plan.blocks[key] = (cl.Buffer(queue.context, cl.mem_flags.READ_WRITE,
                                      plan.work * np.dtype(dtype).itemsize)
                            if plan.work else None)
    return plan.blocks[key]


def factor(queue, sym, plan: Plan, values, *, dtype, method: str = "rl",
           out: cl.Buffer | None = None) -> cl.Buffer:
    """L storage of A = values (device array of A's lower-triangle values in the CSC order
    of the analysis: ``a_map``'s order), written into ``out`` (a :func:`l_storage`
    buffer: every entry is overwritten) or a new buffer; raises LinAlgError if A is not
    positive definite (waits for the device once, at the end; ``out`` then holds
    garbage)."""
    dtype = np.dtype(dtype)
    item = dtype.itemsize
    size = int(sym.l_ptr[-1])
    lbuf = l_storage(queue, sym, dtype) if out is None else out
    info = int_zeros(queue, 1)
    tab = device_tables(queue, sym, plan)
    wg = batch_wg(queue)
    opts = dict(WG=wg, ROWS_CHUNKED=int(rows_chunked(queue, dtype)))
    rlb = method == "rlb"
    k_zero = get_kernel(queue, "sparse.cl", "zero", dtype, **opts)
    k_scatter = get_kernel(queue, "sparse.cl", "scatter_values", dtype, **opts)
    k_factor = get_kernel(queue, "sparse.cl", "factor_batch", dtype, **opts)
    k_syrk = get_kernel(queue, "sparse.cl", "syrk_batch", dtype, **opts)
    k_asm = get_kernel(queue, "sparse.cl", "assemble", dtype, RLB=int(rlb), **opts)
    wbuf = None if rlb else workspace(queue, plan, dtype)
    dummy_w = wbuf or lbuf
    recording = trace.recording()
    n = sym.n
    # zero's work-items: contiguous runs on CPUs (4096 runs of L's storage), else strided
    items = min(round_up(max(size, 1), 256), 1 << (12 if opts["ROWS_CHUNKED"] else 20))
    with trace.run("sparse_cholesky", method, queue, (n, n), dtype,
                   supernodes=plan.ns, nnz_l=int(sym.nnz_l), large=int(plan.large.sum())):
        with launch_queue(queue) as q:
            with trace.step("scatter", (0, n, 0, n), nbytes=float(size * item)):
                lane = batch_wg(queue)         # a fixed work-group: one compile each
                enqueue(q, k_zero, (items,), (lane,), lbuf, np.int64(size))
                count = int(values.size)
                if count:
                    enqueue(q, k_scatter, (min(round_up(count, 256), 1 << 20),), (lane,),
                            np.int64(count), values.data, tab["a_map"], lbuf)
            for h, lev in enumerate(plan.levels):
                small_buf, wp_buf = tab["levels"][h]
                if lev.small.size:
                    reg = _region(sym, lev.small) if recording else None
                    info_step = dict(level=h, route="batched",
                                     supernodes=lev.small.tolist() if recording else [])
                    with trace.step("potrf", reg, flops=lev.potrf_flops, **info_step):
                        enqueue(q, k_factor, (lev.small.size * wg,), (wg,), small_buf,
                                tab["sp"], tab["rp"], tab["lp"], lbuf, info.data)
                    if lev.small_pairs is not None:
                        update = lev.update_flops
                        if not rlb:
                            direct = syrk_launch(queue, plan, h, dtype)
                            with trace.step("syrk", reg, flops=update, **info_step):
                                if direct is not None:
                                    kernel, size, local, count, ptr = direct
                                    enqueue(q, kernel, size, local, int_arg(count), ptr,
                                            small_buf, tab["sp"], tab["rp"], tab["lp"],
                                            lbuf, wp_buf, wbuf)
                                else:
                                    enqueue(q, k_syrk, (lev.small.size * wg,), (wg,),
                                            small_buf, tab["sp"], tab["rp"], tab["lp"],
                                            lbuf, wp_buf, wbuf)
                        with trace.step("assemble", reg, flops=update if rlb else 0.0,
                                        **info_step):
                            _assemble(q, k_asm, wg, pair_tables(queue, plan, lev.small_pairs),
                                      lev.small_pairs, tab, lbuf, dummy_w)
                for s in lev.large.tolist():
                    _large(q, sym, plan, s, lbuf, wbuf, info, tab, k_asm, wg,
                           dtype=dtype, rlb=rlb, level=h, queue=queue)
        code = int(info.get()[0])
    if code:
        raise not_positive_definite(int(sym.perm[code - 1]))
    return lbuf


def slices(queue, targets: int) -> int:
    """Column slices per target of an assemble or fsolve_update launch: enough work-groups
    for about four per compute unit, at most :data:`MAX_SLICES`."""
    want = 4 * device_info(queue).compute_units
    return int(min(MAX_SLICES, max(1, -(-want // max(targets, 1)))))


#: Most work-groups that share one target's columns in a launch of assemble.
MAX_SLICES = 32


def _assemble(q, kernel, wg, tables, pairs: Pairs, tab, lbuf, wbuf) -> None:
    targets, ptr, src, j0, j1, relp, wp = tables
    count = pairs.targets.size
    z = slices(q, count)
    enqueue(q, kernel, (count * wg, z), (wg, 1), targets, ptr, src, j0, j1, relp,
            tab["rel"], wp, tab["sp"], tab["rp"], tab["lp"], tab["ri"], lbuf, wbuf)


def _large(q, sym, plan: Plan, s: int, lbuf, wbuf, info, tab, k_asm, wg, *,
           dtype, rlb: bool, level: int, queue) -> None:
    """One supernode on the BLAS route: potrf and trsm of its own columns (the shared
    layer, or in blocks with the packed updates on CPUs), then syrk + assemble (RL) or
    the row-block GEMMs into the ancestors (RLB)."""
    nc, nr, m = int(plan.nc[s]), int(plan.nr[s]), int(plan.m[s])
    c0 = int(sym.super_ptr[s])
    diag = View(lbuf, int(sym.l_ptr[s]), nr)
    extra = dict(supernode=s, level=level, route="large")
    last = int(sym.row_idx[sym.row_ptr[s + 1] - 1]) + 1

    packed = packed_gemm(queue, plan, dtype)
    if packed is None:
        _own_columns(q, diag, nc, m, c0, last, info, extra, dtype)
    else:
        _own_columns_packed(q, packed, diag, nc, nr, c0, last, info, extra, dtype)
    if m == 0:
        return
    panel = diag.at(0, nc)
    syrk_flops = float(nc) * m * (m + 1)
    if not rlb:
        with trace.step("syrk", (c0 + nc, last, c0 + nc, last), flops=syrk_flops, **extra):
            if packed is not None:
                _gemm_packed(q, packed, panel, nc, m, m, 1.0, 0.0, View(wbuf, 0, m), dtype)
            else:
                syrk(q, m, nc, 1.0, panel, 0.0, View(wbuf, 0, m), dtype=dtype, lower=False,
                     trans=True)
        pairs = plan.levels[level].large_pairs.get(s)
        if pairs is not None:
            with trace.step("assemble", (c0 + nc, last, c0 + nc, last), **extra):
                _assemble(q, k_asm, wg, pair_tables(queue, plan, pairs), pairs, tab, lbuf,
                          wbuf)
        return
    base = int(sym.l_ptr[s]) + nc
    launches = rlb_launches(queue, sym, plan, s, dtype)
    with trace.step("syrk", (c0 + nc, last, c0 + nc, last), flops=syrk_flops,
                    gemms=sum(launch[3] for launch in launches), **extra):
        for kernel, size, local, count, ptr, desc, target in launches:
            enqueue(q, kernel, size, local, int_arg(count), ptr,
                    desc, target, lbuf, np.int64(base), int_arg(nr), int_arg(nc))


def _potrf_region(c0: int, extra: dict):
    """factor_blocked's region map for a diagonal block starting at permuted column c0:
    regions of the stored upper factor in the permuted matrix's lower-triangle
    coordinates, tagged as the supernode's potrf."""
    def region(r0, r1, k0, k1):
        return (c0 + k0, c0 + k1, c0 + r0, c0 + r1), dict(extra, part="potrf")
    return region


def _own_columns(q, diag: View, nc: int, m: int, c0: int, last: int, info, extra,
                 dtype) -> None:
    """Uₛ₁₁ = chol, Uₛ₁₂ = Uₛ₁₁⁻ᵀ·Uₛ₁₂ on the shared layer (the dense blocked potrf, TRSM)."""
    factor_blocked(q, diag, nc, lower=False, dtype=dtype, info=info, base=c0,
                   region=_potrf_region(c0, extra))
    if m:
        with trace.step("trsm", (c0 + nc, last, c0, c0 + nc), flops=float(nc * nc * m),
                        **extra):
            _solve_panel(q, diag, nc, m, lower=False, dtype=dtype)


def _own_columns_packed(q, packed, diag: View, nc: int, nr: int, c0: int, last: int, info,
                        extra, dtype) -> None:
    """The supernode's own columns right-looking in blocks of NB: per block j (jb columns),
    potrf of its diagonal block, the TRSM of its rows right of it (rest = nr - j - jb
    entries of Uₛ), then the packed update of the later columns' rows,
    U[j+jb:nc, j+jb:nr] -= U[j:j+jb, j+jb:nc]ᵀ·U[j:j+jb, j+jb:nr] (upper triangle)."""
    nb = PACKED["NB"]
    for j in range(0, nc, nb):
        jb = min(nb, nc - j)
        block = diag.at(j, j)
        factor_blocked(q, block, jb, lower=False, dtype=dtype, info=info, base=c0 + j,
                       region=_potrf_region(c0 + j, extra))
        rest = nr - j - jb
        if rest == 0:
            return
        with trace.step("trsm", (c0 + j + jb, last, c0 + j, c0 + j + jb),
                        flops=float(jb * jb * rest), **extra):
            panel = _solve_panel(q, block, jb, rest, lower=False, dtype=dtype)
        later = nc - j - jb
        if later:
            with trace.step("update", (c0 + j + jb, last, c0 + j + jb, c0 + nc),
                            flops=float(jb) * later * (2 * rest - later + 1), **extra):
                _gemm_packed(q, packed, panel, jb, later, rest, -1.0, 1.0,
                             block.at(jb, jb), dtype)
