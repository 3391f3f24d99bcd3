"""The blocked Cholesky's trailing update that also factors the next leaf (syrk_leaf.cl)."""

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
import scipy.linalg as sla

import oclla
from oclla import _params, accuracy, rfp
from oclla.cholesky import sweeps_fused

from linalg_helpers import assert_fails_at_order, forward_units, spd

# the trailing update factors the next leaf in its own launch (syrk_leaf.cl): tiled
# gemm tiles of 16 x 32 with 64 items; leaves equal to the block and larger than it
# (identity padding), 64 items for leaves of 8 and 16 rows.  One program serves both
# triangles and every order: the panels of odd orders take the tiles' scalar loads, those of
# orders that are multiples of 4 their vector loads (tested per launch, gemm_tile.h).
FUSED_GEMM = dict(KERNEL="tiled", TILE_M=16, TILE_N=32, TILE_K=8, WPT_M=2, WPT_N=4, VEC=4)
FUSED_SETS = (dict(NB=8, LEAF=8, WG=16, ROW_LEAF=1, FUSE_LEAF=1, TRSM_INVERSE=1, SMALL_N=0),
              dict(NB=8, LEAF=16, WG=16, ROW_LEAF=1, FUSE_LEAF=1, TRSM_INVERSE=0,
                   SMALL_N=200))


def fused(p):
    _params.override("gemm", FUSED_GEMM)
    _params.override("chol", p)


@pytest.mark.parametrize("dtype, p", [(np.float32, FUSED_SETS[0]), (np.float64, FUSED_SETS[0]),
                                      (np.float32, FUSED_SETS[1])],
                         ids=lambda v: f"LEAF{v['LEAF']}" if isinstance(v, dict) else None)
def test_fused_leaf(queue, dtype, p):
    fused(p)
    for n in (1, 7, 9, 16, 17, 40, 41):
        a = spd(n, dtype, seed=7)
        for lower in (True, False):
            c = oclla.cholesky(a, lower=lower, queue=queue)
            err = accuracy.cholesky_backward_error(a, c, lower)
            assert accuracy.passes(err), f"n={n} lower={lower}: backward error {err:.3g}"
            assert accuracy.passes(forward_units(c, sla.cholesky(a.astype(np.float64),
                                                                 lower=lower)))
    if dtype == np.float64 and p["LEAF"] == 8:        # packed storage, strided halves
        packed = rfp.cholesky(rfp.pack(a, queue=queue), n, queue=queue)
        err = accuracy.cholesky_backward_error(a, rfp.unpack(packed, n, queue=queue), True)
        assert accuracy.passes(err), f"packed: {err:.3g}"


@pytest.mark.parametrize("p, k", [(FUSED_SETS[0], k) for k in (0, 7, 8, 9, 30)]
                         + [(FUSED_SETS[1], k) for k in (15, 16, 40)],
                         ids=lambda v: f"LEAF{v['LEAF']}" if isinstance(v, dict) else str(v))
def test_failing_order_inside_a_fused_leaf(queue, p, k):
    fused(p)              # the dtype whose kernels test_fused_leaf builds for the set
    assert_fails_at_order(queue, 41, k + 1, np.float64 if p["LEAF"] == 8 else np.float32)


def test_fused_leaf_trace(queue):
    fused(FUSED_SETS[0])
    with oclla.record() as rec:
        oclla.cholesky(spd(21, np.float32), lower=True, queue=queue)
    steps = rec.runs[0].steps
    assert [s.phase for s in steps] == ["panel", "trsm", "syrk", "trsm", "syrk", "zero"]
    assert [k.name for k in steps[0].kernels] == ["syrk_leaf"]     # the first leaf too
    assert [k.name for k in steps[2].kernels] == ["syrk_leaf"]
    assert steps[2].region == (8, 21, 8, 21) and steps[4].region == (16, 21, 16, 21)
    assert steps[2].info["leaf"] == (8, 16, 8, 16) and steps[2].pivot == (8, 8)
    assert steps[4].info["leaf"] == (16, 21, 16, 21)


def test_fused_leaf_shapes(queue):
    rule = _params.chol_fused_leaf
    p = dict(FUSE_LEAF=1, ROW_LEAF=1, LEAF=16)
    assert rule(p, FUSED_GEMM)
    assert not rule(dict(p, FUSE_LEAF=0), FUSED_GEMM)
    assert not rule(dict(p, ROW_LEAF=0), FUSED_GEMM)           # spread leaves: not fused
    assert not rule(dict(p, LEAF=24), FUSED_GEMM)              # a leaf larger than a tile
    assert not rule(p, dict(FUSED_GEMM, WPT_M=8, WPT_N=8))     # 8 items for 16 rows
    assert not rule(p, dict(KERNEL="direct", RM=8, VW=8, NV=2, LX=1))
    info = oclla.device_info(queue)
    q = dict(NB=8, LEAF=8, WG=16, ROW_LEAF=1, TRSM_INVERSE=1, RFP_TRSM_INVERSE=0,
             RFP_T2_DEPTH=0, SMALL_N=0)
    assert _params.check("chol", dict(q, FUSE_LEAF=1), info, 4) is None
    assert "FUSE_LEAF" in _params.check("chol", dict(q, FUSE_LEAF=2), info, 4)


@pytest.mark.parametrize("fuse", [1, 0], ids=["fused", "unfused"])
@pytest.mark.parametrize("lower", [True, False], ids=["lower", "upper"])
def test_trapezoid_is_a_full_factor_s_first_rows(queue, fuse, lower):
    """factor_blocked's ``width``: the first n block columns of a potrf of order width
    (the packed Cholesky's T1 and S in one sweep) match the full factor there, and
    A22 is left as it was (not read: NaN there would spread)."""
    import pyopencl.array as cl_array
    from oclla._programs import int_zeros
    from oclla.blas import view_of
    from oclla.cholesky import factor_blocked
    fused(dict(FUSED_SETS[0], FUSE_LEAF=fuse))
    dtype = np.float64
    for n, width in ((9, 20), (16, 17), (17, 41), (24, 24)):
        a = spd(width, dtype, seed=3)
        full = sla.cholesky(a, lower=lower)
        work = a.copy()
        work[n:, n:] = np.nan                      # A22: never touched
        d = cl_array.to_device(queue, work)
        info = int_zeros(queue)
        factor_blocked(queue, view_of(d), n, lower=lower, dtype=dtype, info=info,
                       width=width)
        out = d.get()
        assert info.get()[0] == 0
        part = (np.tril(out[:, :n]) if lower else np.triu(out[:n, :]))
        want = (np.tril(full[:, :n]) if lower else np.triu(full[:n, :]))
        np.testing.assert_allclose(part, want, rtol=0, atol=1e-12 * width)
        assert np.isnan(out[n:, n:]).all()


def test_every_leaf_in_the_fused_kernel(queue):
    """Where leaves are fused, syrk_leaf.cl factors every one (an update of rank 0 before
    the first leaf; the whole matrix below LEAF; the leaves of the recursive split that
    write no inverse): cholesky.cl is built without its leaf kernel, and syrk_leaf.cl
    once per triangle (a build option: the tiles' transposes literals), so the row
    leaf's code is compiled once per triangle."""
    fused(dict(FUSED_SETS[0], SMALL_N=16, TRSM_INVERSE=0))   # n = 30: NB 8 blocks, TRSM
    for n, lower in ((5, True), (8, False), (13, True), (30, True), (30, False)):
        a = spd(n, np.float32, seed=n)
        with oclla.record() as rec:
            c = oclla.cholesky(a, lower=lower, queue=queue)
        assert accuracy.passes(accuracy.cholesky_backward_error(a, c, lower)), (n, lower)
        names = {k.name for s in rec.runs[0].steps for k in s.kernels}
        assert "syrk_leaf" in names and not names & {"potf2_rows", "potf2_block"}, names
    fused_programs = [options for (_, source, options) in oclla._programs._programs
                      if source == "syrk_leaf.cl" and "-DLEAF=8" in options
                      and "-DPRECISION=32" in options]
    assert sorted("-DLOWER=1" in options for options in fused_programs) == [False, True], \
        fused_programs
    without_leaf = [prg for (_, source, options), prg in oclla._programs._programs.items()
                    if source == "cholesky.cl" and "-DLEAF_KERNEL=0" in options]
    assert without_leaf          # apply_inverse's, for the inverted leaves at n <= 16
    for prg in without_leaf:
        kernels = prg.get_info(cl.program_info.KERNEL_NAMES).split(";")
        assert "apply_inverse" in kernels and not any(k.startswith("potf2") for k in kernels)


# above SMALL_N (20) blocks of NB = 16, each a trapezoid of fused leaves of 8 (two
# levels), then one SYRK of rank 16: no TRSM at all
TWO_LEVEL = dict(NB=16, LEAF=8, WG=16, ROW_LEAF=1, FUSE_LEAF=1, TRSM_INVERSE=0,
                 RFP_TRSM_INVERSE=0, SMALL_N=20)


@pytest.mark.parametrize("dtype, nb, copy_k", [(np.float32, 16, 0), (np.float64, 16, 0),
                                               (np.float64, 48, 0), (np.float64, 16, 8)],
                         ids=("float32-NB16", "float64-NB16", "float64-NB48",
                              "float64-NB16-copied"))
def test_two_level_blocks(queue, dtype, nb, copy_k):
    """Blocks of two and of six leaves (the H200's are sixteen); a block's leaves invert
    where its order is up to SMALL_N, which is therefore at least NB.  With TN_COPY_K
    the upper factor's updates AᵀA (the packed lower layout's too, trapezoids over T1
    and S) go through transposed copies, in slabs of 8 rows."""
    small = max(TWO_LEVEL["SMALL_N"], nb)
    fused(dict(TWO_LEVEL, NB=nb, SMALL_N=small))
    _params.override("gemm", dict(FUSED_GEMM, TN_COPY_K=copy_k))
    _params.override("gemm_thin", dict(FUSED_GEMM, MAX_K=0))   # every product by that set
    for n in [n for n in (21, 23, 24, 25, 32, 33, 49, 73, 97, 100) if n > small][:8]:
        a = spd(n, dtype, seed=11)
        for lower in (True, False):
            arf = rfp.pack(a, lower=lower, queue=queue)
            with oclla.record() as rec:
                c = oclla.cholesky(a, lower=lower, queue=queue)
                packed = rfp.cholesky(arf, n, lower=lower, queue=queue)
            # the packed upper layout's S lies apart from T1: a TRSM of its own there
            names = {k.name for r in rec.runs[:1 + lower] for k in r.kernels}
            assert not names & {"trsm_block", "trtri_blocks"}, (n, lower, names)
            if lower and copy_k:          # T2's SYRK, then each T1 block column's trapezoid
                n1 = rfp.layout(n, True).n1
                slabs = -(-n1 // copy_k) + 2 * (-(-n1 // nb) - 1)
                slabs *= 2                # the packed array's odd leading dimension: each
                                          # slab also copied as it is (blas.syrk)
                gathers = [k.name for k in rec.runs[1].kernels].count("gather")
                assert gathers == slabs, (n, gathers, slabs)
            err = accuracy.cholesky_backward_error(a, c, lower)
            assert accuracy.passes(err), f"n={n} lower={lower}: backward error {err:.3g}"
            assert accuracy.passes(forward_units(c, sla.cholesky(a.astype(np.float64),
                                                                 lower=lower)))
            err = accuracy.cholesky_backward_error(
                a, rfp.unpack(packed, n, lower=lower, queue=queue), lower)
            assert accuracy.passes(err), f"packed n={n} lower={lower}: {err:.3g}"


@pytest.mark.parametrize("depth, ranks", [(0, ([1], [9], [21], [20], [37])),
                                          (1, ([1], [8, 1], [8, 8, 5], [8, 8, 4],
                                               [8, 8, 8, 8, 5])),
                                          (16, ([1], [9], [21], [20], [16, 21]))],
                         ids=lambda v: f"depth{v}" if isinstance(v, int) else None)
@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=lambda d: np.dtype(d).name)
def test_packed_t2_updates_beside_the_sweep(queue, dtype, depth, ranks):
    """Where the 'L' layout sweeps T1 and S by block rows (blocks of 8 here), T2 -= SᵀS
    is made in parts on a second queue as the block rows of S become final: at least
    RFP_T2_DEPTH rows a part (0: one part after the sweep), and fewer than that left
    after a part are the last part's too (n = 73, n1 = 37: 16 and 21, not 16, 16, 5);
    the factor as LAPACK's, at even and odd orders."""
    fused(dict(FUSED_SETS[0], RFP_T2_DEPTH=depth))
    for n, expected in zip((2, 17, 41, 40, 73), ranks):
        a = spd(n, dtype, seed=5)
        lay = rfp.layout(n, True)
        with oclla.record() as rec:
            packed = rfp.cholesky(rfp.pack(a, queue=queue), n, queue=queue)
        p0, q0 = lay.t2 % lay.lda, lay.t2 // lay.lda
        t2 = (p0, p0 + lay.n2, q0, q0 + lay.n2)
        got = [round(s.flops / (lay.n2 * (lay.n2 + 1))) for s in rec.runs[-1].steps
               if s.phase == "syrk" and s.region == t2]
        assert got == expected, (n, got)
        err = accuracy.cholesky_backward_error(a, rfp.unpack(packed, n, queue=queue), True)
        assert accuracy.passes(err), f"n={n}: {err:.3g}"
        assert accuracy.passes(forward_units(rfp.unpack(packed, n, queue=queue),
                                             sla.cholesky(a.astype(np.float64), lower=True)))


@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=lambda d: np.dtype(d).name)
def test_packed_upper_through_the_lower_sweep(queue, dtype, monkeypatch):
    """Where the 'L' layout's T1 and S are one fused sweep, the 'U' layout is factored
    through it (A copied into the 'L' arrangement transposed, the factor copied back as
    U = Lᵀ): LAPACK's factor at even and odd orders, from one leaf to several blocks of
    T1, the caller's device array factored in place; a recording keeps the 'U'
    layout's own route (its steps are boxes of the array the caller holds)."""
    fused(FUSED_SETS[0])
    through = []
    transposed = rfp._pftrf_transposed

    def counted(queue, buf, off, lay, **kw):
        through.append(lay.n)
        transposed(queue, buf, off, lay, **kw)

    monkeypatch.setattr(rfp, "_pftrf_transposed", counted)
    copies, copy = [], rfp._transpose_packed

    def copied(*args, **kw):                 # which copies take T2 along: odd orders only
        copies.append((args[5], kw.get("t2_too", True)))
        copy(*args, **kw)

    monkeypatch.setattr(rfp, "_transpose_packed", copied)
    orders = (2, 3, 8, 9, 17, 40, 41)
    for n in orders:
        a = spd(n, dtype, seed=3)
        arf = rfp.pack(a, lower=False, queue=queue)
        dev = cl_array.to_device(queue, arf)
        packed = rfp.cholesky(dev, n, lower=False, overwrite_a=True, queue=queue)
        assert packed.data.int_ptr == dev.data.int_ptr
        packed = packed.get()
        reference, info = sla.lapack.get_lapack_funcs("pftrf", dtype=dtype)(
            n, arf.copy(), transr="N", uplo="U")
        assert info == 0
        ours = rfp.unpack(packed, n, lower=False, queue=queue)
        err = accuracy.cholesky_backward_error(a, ours, False)
        assert accuracy.passes(err), f"n={n}: backward error {err:.3g}"
        assert accuracy.passes(forward_units(ours, rfp.unpack(reference, n, lower=False,
                                                              queue=queue).astype(np.float64)))
    assert through == list(orders)
    assert copies == [(n, n % 2 == 1) for n in orders for _ in range(2)]
    with oclla.record() as rec:
        packed = rfp.cholesky(rfp.pack(a, lower=False, queue=queue), 41, lower=False,
                              queue=queue)
    assert through == list(orders)
    assert "transpose" not in {k.name for k in rec.runs[-1].kernels}
    assert accuracy.passes(forward_units(rfp.unpack(packed, 41, lower=False, queue=queue),
                                         sla.cholesky(a.astype(np.float64))))


@pytest.mark.parametrize("n, k", [(41, k) for k in (0, 5, 16, 20, 21, 30, 40)]
                         + [(40, k) for k in (0, 19, 20, 39)])
def test_failing_order_with_packed_t2_parts(queue, n, k):
    """LAPACK's order where a pivot fails in T1 (k < n1), in T2 after its parts, or at
    its first leaf (the packed order 41: n1 = 21; 40: n1 = 20), the T2 update in parts
    of one block row; in the 'U' layout through the 'L' layout's sweep (at the even
    order with T2 left in the caller's array)."""
    fused(dict(FUSED_SETS[0], RFP_T2_DEPTH=1))

    def packed(a, *, lower, queue):
        return rfp.cholesky(rfp.pack(a, lower=lower, queue=queue), n, lower=lower,
                            queue=queue)

    assert_fails_at_order(queue, n, k + 1, np.float64, routine=packed)


def test_packed_t2_parts_in_snapshots(queue):
    """A recording with snapshots of the packed factorization whose T2 update comes in
    parts: T2's entries change at each part's step and at no other step of T1's sweep,
    and the last snapshot is the packed factor."""
    fused(dict(FUSED_SETS[0], RFP_T2_DEPTH=1))
    n = 33
    a = spd(n, np.float64, seed=9)
    lay = rfp.layout(n, True)
    with oclla.record(snapshots=True) as rec:
        packed = rfp.cholesky(rfp.pack(a, queue=queue), n, queue=queue)
    run = rec.runs[-1]
    p0, q0 = lay.t2 % lay.lda, lay.t2 // lay.lda
    t2 = (p0, p0 + lay.n2, q0, q0 + lay.n2)
    r, c = np.tril_indices(lay.n2)                         # T2: logical rows >= n1
    where = rfp._offsets(r + lay.n1, c + lay.n1, n, True)
    in_t2 = np.zeros(run.initial.shape, bool)               # its entries in the picture
    in_t2[where % lay.lda, where // lay.lda] = True
    parts = 0
    before = run.initial
    for k, step in enumerate(run.steps):
        after = run.snapshot_at(k)
        if step.region == t2 and step.phase == "syrk":
            parts += 1
            assert not np.array_equal(after[in_t2], before[in_t2]), k
        elif parts < 3:                  # T1's sweep: T2 untouched outside its parts
            assert np.array_equal(after[in_t2], before[in_t2]), (k, step.phase)
        before = after
    assert parts == 3                    # block rows of 8, 8 and 1 (n1 = 17)
    np.testing.assert_array_equal(run.snapshot_at(len(run.steps) - 1),
                                  rfp.picture(packed, n))


@pytest.mark.parametrize("k", (0, 7, 8, 15, 16, 23, 24, 31, 40))
def test_failing_order_inside_two_level_blocks(queue, k):
    fused(TWO_LEVEL)
    assert_fails_at_order(queue, 41, k + 1, np.float32)


def test_two_level_trace(queue):
    """Each block column's first leaf is a panel step at its place in the whole matrix
    (the inner sweep's regions shifted by the block's corner), the later leaves ride in
    the inner updates, and the trailing update is one step per block column."""
    fused(TWO_LEVEL)
    with oclla.record() as rec:
        oclla.cholesky(spd(30, np.float64), lower=True, queue=queue)
    steps = rec.runs[0].steps
    assert [s.region for s in steps if s.phase == "panel"] == [(0, 8, 0, 8), (16, 24, 16, 24)]
    outer = [s for s in steps if s.phase == "syrk" and "leaf" not in s.info]
    assert [s.region for s in outer] == [(16, 30, 16, 30)]


def _t2_triangles(monkeypatch) -> list:
    """The ``lower`` of each factor_blocked call the packed Cholesky makes, from now on."""
    triangles, factor = [], rfp.factor_blocked

    def spy(*args, **kwargs):
        triangles.append(kwargs["lower"])
        return factor(*args, **kwargs)

    monkeypatch.setattr(rfp, "factor_blocked", spy)
    return triangles


@pytest.mark.parametrize("dtype, p, swept",
                         [(np.float32, FUSED_SETS[1], True), (np.float64, FUSED_SETS[0], True),
                          (np.float64, dict(FUSED_SETS[0], TRSM_INVERSE=0), False)],
                         ids=["float32-LEAF16", "float64-LEAF8", "float64-LEAF8-trsm"])
def test_packed_t2_through_an_upper_copy(queue, dtype, p, swept, monkeypatch):
    """Where syrk_leaf.cl factors the leaves (its triangle a build option), the packed
    Cholesky factors T2 as an upper triangle in scratch and copies it back: both layouts
    take the upper factor's programs alone, whether T1 and S are one fused sweep or T1,
    a TRSM and a SYRK (leaves that do not invert).  A recording factors T2 in place
    (lower).  The factors are LAPACK's, at orders whose T2 is one leaf and several."""
    fused(p)
    assert sweeps_fused(queue, dtype, rfp.layout(41, True).n1) == swept
    triangles = _t2_triangles(monkeypatch)
    for n in (1, 2, 9, 33, 40, 41):
        a = spd(n, dtype, seed=2)
        for lower in (True, False):
            uplo, n2 = "L" if lower else "U", rfp.layout(n, lower).n2
            arf = rfp.pack(a, lower=lower, queue=queue)
            del triangles[:]
            packed = rfp.cholesky(arf, n, lower=lower, queue=queue)
            assert triangles and not any(triangles), (n, uplo, triangles)
            ref, info = getattr(sla.lapack, ("s" if dtype == np.float32 else "d") + "pftrf")(
                n, arf, uplo=uplo)
            assert info == 0
            tol = 30 * n * np.finfo(dtype).eps * np.abs(ref).max()
            np.testing.assert_allclose(packed, ref, rtol=0, atol=tol, err_msg=f"{n} {uplo}")
            del triangles[:]
            with oclla.record():
                rfp.cholesky(arf, n, lower=lower, queue=queue)
            assert triangles[-1] == (n2 > 0), (n, uplo, triangles)


def test_failing_order_inside_a_copied_t2(queue):
    """A failing pivot of T2 factored in its upper copy: LAPACK's order (n1 + its order
    in T2), in both layouts."""
    fused(FUSED_SETS[1])

    def packed(a, lower, queue):
        n = a.shape[0]
        return rfp.cholesky(rfp.pack(a, lower=lower, queue=queue), n, lower=lower,
                            queue=queue)

    for order in (21, 22, 30, 41):              # n1 = 21 ('L') or 20 ('U')
        assert_fails_at_order(queue, 41, order, np.float32, routine=packed)


def test_warmup_builds_the_recorded_packed_route(queue):
    """The recorded packed Cholesky factors T2 in place, on programs the unrecorded one
    does not build: the warm-up records a packed call too (where it runs the teaching
    methods), so that a recorded run after it builds nothing.  Tiles of their own here
    (2-wide loads): programs no other test builds."""
    from oclla import _programs, _warmup
    fused(FUSED_SETS[1])
    _params.override("gemm", dict(FUSED_GEMM, VEC=2))
    _warmup.call_every_routine(queue, np.float32, 41, np.random.default_rng(0),
                               families=("rfp",))
    count = _programs.build_count()
    for n in (40, 41):
        for lower in (True, False):
            with oclla.record():
                rfp.cholesky(rfp.pack(spd(n, np.float32), lower=lower, queue=queue), n,
                             lower=lower, queue=queue)
    assert _programs.builds()[count:] == []
