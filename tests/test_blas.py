"""The device BLAS-3 layer over a grid of kernel parameters and awkward sizes.

Every parameter set the tuner may pick must be correct, so gemm, syrk, trsm
and laswp run here with several sets per kernel shape (not only the
defaults), at sizes 1, tile − 1, tile + 1 and primes, both dtypes, every
transpose, side, triangle and unit flag.  Errors are measured with
:mod:`oclla.accuracy` (products in units of kε, solves by backward error).
"""

import itertools
import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import oclla
from oclla import _params, _programs, blas
from oclla.accuracy import THRESHOLD, passes, product_error, solve_backward_error
from oclla._knobs import LOCAL_RESERVE, rows_width
from oclla.blas import View, gemm, laswp, matmul, syrk, trsm, view_of

from linalg_helpers import buildable, buildable_width, roomy

DTYPES = (np.float32, np.float64)

# (kernel shape, its "tile": rows x columns of C one work-item or work-group covers)
GEMM_SETS = [
    dict(KERNEL="direct", RM=8, VW=16, NV=2, LX=4),
    dict(KERNEL="direct", RM=3, VW=4, NV=3, LX=2),
    dict(KERNEL="tiled", TILE_M=32, TILE_N=32, TILE_K=8, WPT_M=4, WPT_N=4, VEC=4),
    dict(KERNEL="tiled", TILE_M=16, TILE_N=8, TILE_K=16, WPT_M=2, WPT_N=1, VEC=2),
    # interleaved register blocks, 4-wide local reads down the rows and 2-wide across
    dict(KERNEL="tiled", TILE_M=32, TILE_N=16, TILE_K=8, WPT_M=4, WPT_N=2, VEC=2,
         VEC_LOCAL=4, INTERLEAVE=1),
    # the transposes built in: a program per product shape
    dict(KERNEL="tiled", TILE_M=32, TILE_N=16, TILE_K=8, WPT_M=4, WPT_N=2, VEC=2,
         VEC_LOCAL=2, INTERLEAVE=1, PER_SHAPE=1),
]


def _tile(p):
    if p["KERNEL"] == "direct":
        return p["RM"], p["VW"] * p["NV"], 5
    return p["TILE_M"], p["TILE_N"], p["TILE_K"]


def _sizes(p):
    """(m, n, k) triples: 1, tile − 1, tile + 1 and primes in each dimension."""
    tm, tn, tk = _tile(p)
    return [(1, 1, 1), (tm - 1 or 1, tn + 1, tk + 1), (tm + 1, max(tn - 1, 1), 2 * tk - 1),
            (37, 53, 29)]


def _skip_fp64(queue, dtype):
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")


def _run_gemm(queue, a, b, c0, *, alpha, beta, trans_a, trans_b, triangle=None, tile=None):
    m, n = c0.shape
    k = a.shape[0] if trans_a else a.shape[1]
    da, db, dc = (cl_array.to_device(queue, x) for x in (a, b, c0))
    tile = tile and buildable(queue, a.dtype, tile)
    gemm(queue, m, n, k, alpha, view_of(da), view_of(db), beta, view_of(dc), dtype=a.dtype,
         trans_a=trans_a, trans_b=trans_b, triangle=triangle, tile=tile)
    return dc.get()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("p", GEMM_SETS, ids=lambda p: "-".join(str(v) for v in p.values()))
def test_gemm_grid(queue, p, dtype):
    _skip_fp64(queue, dtype)
    rng = np.random.default_rng(11)
    for (m, n, k), (ta, tb) in itertools.product(_sizes(p), itertools.product((0, 1), repeat=2)):
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
        c0 = rng.standard_normal((m, n)).astype(dtype)
        c = _run_gemm(queue, a, b, c0, alpha=-0.75, beta=1.5, trans_a=ta, trans_b=tb, tile=p)
        err = product_error(c, a.T if ta else a, b.T if tb else b, alpha=-0.75, beta=1.5,
                            c0=c0)
        assert passes(err), f"{m}x{n}x{k} trans_a={ta} trans_b={tb}: error {err:.3g}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_direct_gemm_makes_a_deep_transposed_a_contiguous_first(queue, dtype):
    """The direct GEMM takes a transposed A whose k reals fill PACK_A_MIN_BYTES or more,
    for a C of PACK_A_MIN_STRIPS strips of columns or more, through pack_a (Aᵀ copied to
    a contiguous m x k matrix, then multiplied as an A that is not transposed), a
    shallower A or a narrower C as they are: both transposes of B, every triangle, orders
    off the work-item's block, A a block inside a larger array; C's entries outside the
    triangle untouched."""
    _skip_fp64(queue, dtype)
    p = buildable(queue, dtype, GEMM_SETS[1])
    rng = np.random.default_rng(21)
    deep = blas.PACK_A_MIN_BYTES // np.dtype(dtype).itemsize
    wide = blas.PACK_A_MIN_STRIPS * p["VW"] * p["NV"] - 3      # still that many strips
    for k, n in ((deep - 1, wide), (deep + 3, wide), (deep + 3, wide - p["VW"] * p["NV"])):
        whole = rng.standard_normal((k + 4, n + 7)).astype(dtype)   # A = whole[2:, 3:][:k, :n]
        a = whole[2:2 + k, 3:3 + n]
        d_whole = cl_array.to_device(queue, whole)
        for tb, triangle in itertools.product((0, 1), (None, "lower", "upper")):
            b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
            c0 = rng.standard_normal((n, n)).astype(dtype)
            db, dc = cl_array.to_device(queue, b), cl_array.to_device(queue, c0)
            with oclla.record() as rec:
                gemm(queue, n, n, k, -0.75, View(d_whole.data, 2 * (n + 7) + 3, n + 7),
                     view_of(db), 1.5, view_of(dc), dtype=dtype, trans_a=True,
                     trans_b=bool(tb), triangle=triangle, tile=p)
            where = f"k={k} trans_b={tb} triangle={triangle}"
            assert ("pack_a" in [kk.name for kk in rec.kernels]) == \
                (k >= deep and n == wide), where
            c, op_b = dc.get(), b.T if tb else b
            inside = {None: np.ones((n, n), bool), "lower": np.tri(n, dtype=bool),
                      "upper": np.tri(n, dtype=bool).T}[triangle]
            np.testing.assert_array_equal(c[~inside], c0[~inside], err_msg=where)
            want = (-0.75 * (a.T.astype(np.float64) @ op_b) + 1.5 * c0).astype(dtype)
            err = product_error(np.where(inside, c, want), a.T, op_b, alpha=-0.75, beta=1.5,
                                c0=c0)
            assert passes(err), f"{where}: error {err:.3g}"


@pytest.mark.parametrize("p", GEMM_SETS[::2], ids=lambda p: p["KERNEL"])
def test_gemm_beta_zero_ignores_nan_in_c(queue, p):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 7)).astype(np.float32)
    b = rng.standard_normal((7, 33)).astype(np.float32)
    c0 = np.full((9, 33), np.nan, np.float32)
    c = _run_gemm(queue, a, b, c0, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, tile=p)
    assert passes(product_error(c, a, b))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_thin_products_take_the_gemm_thin_shape(queue, dtype):
    """Products with 0 < k <= MAX_K use the ``gemm_thin`` shape (its work-groups),
    longer ones the ``gemm`` shape; both correct on either side of MAX_K."""
    _skip_fp64(queue, dtype)
    thin = dict(GEMM_SETS[3], WPT_N=2, MAX_K=16)     # work-groups 4 x 8, the gemm set's 8 x 8
    _params.override("gemm", GEMM_SETS[2])
    _params.override("gemm_thin", thin)
    rng = np.random.default_rng(12)
    for k in (1, 15, 16, 17, 40):
        a = rng.standard_normal((45, k)).astype(dtype)
        b = rng.standard_normal((k, 39)).astype(dtype)
        c0 = rng.standard_normal((45, 39)).astype(dtype)
        with oclla.record() as rec:
            c = _run_gemm(queue, a, b, c0, alpha=-1.0, beta=1.0, trans_a=False, trans_b=False)
        local = rec.kernels[-1].local_size
        shape = thin if k <= 16 else GEMM_SETS[2]
        assert local == (shape["TILE_N"] // shape["WPT_N"], shape["TILE_M"] // shape["WPT_M"]), k
        assert passes(product_error(c, a, b, alpha=-1.0, beta=1.0, c0=c0)), k


def test_remembered_values_last_until_the_parameters_change(queue):
    """What the host loops derive from the parameters is made once per queue and thread
    and made again after any override (and so after oclla tune's reload)."""
    made = []

    def make():
        made.append(len(made) + 1)
        return made[-1]
    key = ("remembered test", object())
    assert _params.remembered(queue, key, make) == 1
    assert _params.remembered(queue, key, make) == 1
    _params.override("laswp", None)
    assert _params.remembered(queue, key, make) == 2
    other = []
    thread = threading.Thread(target=lambda: other.append(_params.remembered(queue, key, make)))
    thread.start()
    thread.join()
    assert other == [3]
    assert _params.remembered(queue, key, make) == 2
    twin = cl.CommandQueue(queue.context, queue.device)
    assert _params.remembered(twin, key, make) == 4


def test_gemm_takes_the_parameters_chosen_since_its_last_call(queue):
    """gemm's remembered kernel and work-group give way to an override made between two
    calls, and to a trial (the tuner's) around one, and come back after it."""
    rng = np.random.default_rng(13)
    a = rng.standard_normal((45, 17)).astype(np.float32)
    b = rng.standard_normal((17, 39)).astype(np.float32)
    c0 = rng.standard_normal((45, 39)).astype(np.float32)
    first, second = (buildable(queue, np.float32, p) for p in (
        GEMM_SETS[2], dict(KERNEL="tiled", TILE_M=16, TILE_N=8, TILE_K=16, WPT_M=2, WPT_N=2,
                           VEC=2)))

    def work_group_of_a_call():
        with oclla.record() as rec:
            c = _run_gemm(queue, a, b, c0, alpha=-1.0, beta=1.0, trans_a=False, trans_b=False)
        assert passes(product_error(c, a, b, alpha=-1.0, beta=1.0, c0=c0))
        return rec.kernels[-1].local_size

    def work_group(p):
        return p["TILE_N"] // p["WPT_N"], p["TILE_M"] // p["WPT_M"]
    assert work_group(first) != work_group(second)
    _params.override("gemm_thin", dict(MAX_K=0))
    _params.override("gemm", first)
    assert work_group_of_a_call() == work_group(first)
    _params.override("gemm", second)
    assert work_group_of_a_call() == work_group(second)
    with _params.trial(queue, "gemm", np.float32, first):
        assert work_group_of_a_call() == work_group(first)
    assert work_group_of_a_call() == work_group(second)


def test_gemm_thin_parameters_are_checked(queue):
    info = oclla.device_info(queue)
    assert _params.check("gemm_thin", dict(MAX_K=0), info, 4) is None
    assert "MAX_K" in _params.check("gemm_thin", dict(MAX_K=-1), info, 4)
    assert "multiples" in _params.check("gemm_thin", dict(GEMM_SETS[2], WPT_M=5, MAX_K=8),
                                        info, 4)
    assert _params.check("gemm_thin", dict(GEMM_SETS[2], MAX_K=8), info, 4) is None


def test_gemm_k_zero_scales_c(queue):
    c0 = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = cl_array.to_device(queue, c0)
    a = cl_array.zeros(queue, (3, 1), np.float32)
    b = cl_array.zeros(queue, (1, 4), np.float32)
    gemm(queue, 3, 4, 0, 1.0, view_of(a), view_of(b), 2.0, view_of(d), dtype=np.float32)
    np.testing.assert_array_equal(d.get(), 2 * c0)


def test_gemm_subviews_with_offsets(queue):
    """Operands inside larger buffers (offsets not multiples of the vector width)."""
    rng = np.random.default_rng(5)
    big = rng.standard_normal((70, 71)).astype(np.float32)
    d = cl_array.to_device(queue, big)
    out = cl_array.to_device(queue, np.zeros((40, 45), np.float32))
    A, C = view_of(d), view_of(out)
    for p in GEMM_SETS:
        gemm(queue, 33, 29, 17, 1.0, A.at(1, 3), A.at(20, 5), 0.0, C.at(2, 1),
             dtype=np.float32, tile=buildable(queue, np.float32, p))
        c = out.get()[2:35, 1:30]
        assert passes(product_error(c, big[1:34, 3:20], big[20:37, 5:34])), p


def test_one_tiled_program_for_every_alignment(queue):
    """The tiled kernel takes vector loads where an operand's offset and leading dimension
    allow them and scalar loads elsewhere, decided per launch: one program per (tiles,
    transposes, triangle) serves every offset and leading dimension, and both routes
    give the product."""
    rng = np.random.default_rng(6)
    p = buildable(queue, np.float32, GEMM_SETS[2])          # tiles with VEC=4
    big = rng.standard_normal((80, 84)).astype(np.float32)
    d = cl_array.to_device(queue, big)
    A = view_of(d)
    out = cl_array.to_device(queue, np.zeros((40, 44), np.float32))
    gemm(queue, 1, 1, 1, 1.0, A, A, 0.0, view_of(out), dtype=np.float32, tile=p)
    built = _programs.build_count()
    # offsets 0..3 (mod 4) and leading dimensions 84 (a multiple of 4) and 83, 82
    for (r, c), ld in itertools.product([(0, 0), (4, 1), (8, 2), (12, 3)], (84, 83, 82)):
        a = View(A.buf, A.off + r * ld + c, ld)
        host = big.ravel()[:ld * (80 - r)].reshape(-1, ld)[r:, c:c + 40]
        gemm(queue, 33, 37, 35, 1.0, a, a.at(0, 1), 0.0, view_of(out), dtype=np.float32,
             tile=p)
        ref_a, ref_b = host[:33, :35], host[:35, 1:38]
        err = product_error(out.get()[:33, :37], ref_a, ref_b)
        assert passes(err), f"offset ({r}, {c}), ld {ld}: {err:.3g}"
    assert _programs.build_count() == built


# the interleaved tiles in float64 only, where a shipped set uses them
SYRK_CASES = [(GEMM_SETS[i], d) for i in (1, 3) for d in DTYPES] + [(GEMM_SETS[4], np.float64)]


@pytest.mark.parametrize("p, dtype", SYRK_CASES, ids=[
    f"{'interleaved' if p.get('INTERLEAVE') else p['KERNEL']}-{np.dtype(d).name}"
    for p, d in SYRK_CASES])
def test_syrk_one_triangle(queue, p, dtype):
    _skip_fp64(queue, dtype)
    rng = np.random.default_rng(13)
    tm, tn, _ = _tile(p)
    for n, k in [(1, 1), (tm + 1, 7), (tn - 1 or 2, 31), (41, 23)]:
        for lower, trans in itertools.product((True, False), repeat=2):
            a = rng.standard_normal((k, n) if trans else (n, k)).astype(dtype)
            c0 = rng.standard_normal((n, n)).astype(dtype)
            da, dc = cl_array.to_device(queue, a), cl_array.to_device(queue, c0)
            syrk(queue, n, k, 2.0, view_of(da), 0.5, view_of(dc), dtype=dtype, lower=lower,
                 trans=trans, tile=p)
            c = dc.get()
            keep = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
            np.testing.assert_array_equal(c[~keep], c0[~keep])
            op = a.T if trans else a
            full = np.where(keep, c, 2.0 * (op @ op.T) + 0.5 * c0)
            err = product_error(full, op, op.T, alpha=2.0, beta=0.5, c0=c0)
            assert passes(err), f"n={n} k={k} lower={lower} trans={trans}: {err:.3g}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def _tn_copies(p: dict, ld: int, k: int) -> int:
    """The gathers of a SYRK AᵀA of depth k through TN_COPY_K copies, A's rows ``ld``
    apart: per slab the transposed copy, and a plain one of the slab where ld is not a
    multiple of the width of the product's vector loads of B."""
    slabs = -(-k // p["TN_COPY_K"])
    return slabs * (2 if ld % blas._load_widths(p)[1] else 1)


def test_syrk_of_a_transposed_panel_through_its_copy(queue, dtype):
    """With TN_COPY_K, AᵀA of inner dimension k up to it is taken as A'·A of a copy
    A' = Aᵀ (one gather; two where A's rows lie a distance apart that is not a multiple of
    the vector loads' width), beyond it as the sum of such products over slabs of equal depth, at most
    TN_COPY_K rows of A (k = 19: 7, 7, 5; beta applied once): both triangles, A a block
    of a larger array (offset, leading dimension), orders off the tile; C outside its
    triangle untouched."""
    _skip_fp64(queue, dtype)
    p = dict(GEMM_SETS[3], TN_COPY_K=9)
    rng = np.random.default_rng(23)
    for n, k in [(1, 1), (17, 9), (33, 10), (8, 3), (20, 19)]:
        whole = rng.standard_normal((k + 3, n + 5)).astype(dtype)      # A = whole[1:, 2:][:k, :n]
        a = whole[1:1 + k, 2:2 + n]
        d_whole = cl_array.to_device(queue, whole)
        for lower in (True, False):
            c0 = rng.standard_normal((n, n)).astype(dtype)
            dc = cl_array.to_device(queue, c0)
            with oclla.record() as rec:
                syrk(queue, n, k, -1.5, View(d_whole.data, (n + 5) + 2, n + 5), 0.5,
                     view_of(dc), dtype=dtype, lower=lower, trans=True, tile=p)
            names = [kk.name for kk in rec.kernels]
            assert names.count("gather") == _tn_copies(p, n + 5, k), (n, k, names)
            c = dc.get()
            keep = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
            np.testing.assert_array_equal(c[~keep], c0[~keep])
            full = np.where(keep, c, -1.5 * (a.T @ a) + 0.5 * c0)
            err = product_error(full, a.T, a, alpha=-1.5, beta=0.5, c0=c0)
            assert passes(err), f"n={n} k={k} lower={lower}: {err:.3g}"


@pytest.mark.parametrize("copy_k", (0, 9), ids=("direct", "copied"))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_syrk_of_a_trapezoid(queue, dtype, copy_k):
    """``width`` > n: the stored triangle of order n and the rectangle beside it (rows
    below it for ``lower``, columns right of it otherwise), A width long (the blocked
    Cholesky's trailing update where its panel reaches past the triangle); AᵀA through
    the transposed copies where TN_COPY_K asks (k = 19: three slabs), as A·Aᵀ directly;
    every other entry of C untouched."""
    _skip_fp64(queue, dtype)
    p = dict(GEMM_SETS[3], TN_COPY_K=copy_k)
    rng = np.random.default_rng(29)
    for n, width, k in [(1, 2, 1), (17, 40, 9), (33, 34, 19), (5, 37, 4)]:
        for lower, trans in itertools.product((True, False), repeat=2):
            a = rng.standard_normal((k, width) if trans else (width, k)).astype(dtype)
            shape = (width, n) if lower else (n, width)
            c0 = rng.standard_normal(shape).astype(dtype)
            da, dc = cl_array.to_device(queue, a), cl_array.to_device(queue, c0)
            with oclla.record() as rec:
                syrk(queue, n, k, -1.5, view_of(da), 0.5, view_of(dc), dtype=dtype,
                     lower=lower, trans=trans, tile=p, width=width)
            gathers = [kk.name for kk in rec.kernels].count("gather")
            assert gathers == (_tn_copies(p, width, k) if trans and copy_k else 0), \
                (n, k, gathers)
            op = a.T if trans else a                       # width x k
            left, right = (op, op[:n].T) if lower else (op[:n], op.T)
            r, c = np.indices(shape)
            keep = c <= r if lower else r <= c
            got = dc.get()
            np.testing.assert_array_equal(got[~keep], c0[~keep])
            full = np.where(keep, got, -1.5 * (left @ right) + 0.5 * c0)
            err = product_error(full, left, right, alpha=-1.5, beta=0.5, c0=c0)
            assert passes(err), f"n={n} width={width} k={k} lower={lower} trans={trans}"
    with pytest.raises(ValueError, match="width must be at least n = 5, got 4"):
        syrk(queue, 5, 2, 1.0, view_of(da), 0.0, view_of(dc), dtype=dtype, width=4)


def _triangle(rng, m, lower, unit, dtype):
    """A well-conditioned triangle (diagonal dominant), garbage in the other half."""
    t = rng.uniform(-1, 1, (m, m))
    t[np.diag_indices(m)] = rng.uniform(1, 2, m) * np.sign(rng.uniform(-1, 1, m)) + 0.0
    tri = np.tril(t) if lower else np.triu(t)
    stored = tri + (np.triu(rng.standard_normal((m, m)), 1) if lower
                    else np.tril(rng.standard_normal((m, m)), -1))
    if unit:
        stored[np.diag_indices(m)] = 7.0          # must not be read
        tri[np.diag_indices(m)] = 1.0
    return stored.astype(dtype), tri


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("nb, doubling", [(1, 0), (8, 0), (64, 0), (16, 1), (64, 1), (24, 1)])
def test_invert_blocks_inverts_each_diagonal_block(queue, nb, dtype, doubling):
    """trtri_blocks: block i of the result (rows i·nb.., nb wide) is the inverse of the
    i-th diagonal block of the triangle (the last one smaller), zeros outside its
    triangle, for each triangle and diagonal, a column at a time or by doubling (one
    level of pairs at order 16, three at 64; order 24, not 8 times a power of two, a
    column at a time); the other half of the input, garbage, is not read, and the
    input is not written."""
    _skip_fp64(queue, dtype)
    rng = np.random.default_rng(nb)
    m = 2 * nb + (nb // 2 or 1)
    eps = np.finfo(dtype).eps
    knobs = {**_params.params(queue, "trsm", dtype), "DOUBLING": doubling}
    with _params.trial(queue, "trsm", dtype, knobs):
        for lower, unit in itertools.product((True, False), repeat=2):
            stored, tri = _triangle(rng, m, lower, unit, dtype)
            dt = cl_array.to_device(queue, stored)
            inv = cl_array.to_device(queue, np.full((m, nb), np.nan, dtype))
            blas.invert_blocks(queue, m, nb, view_of(dt), inv.data, dtype=dtype, lower=lower,
                               unit=unit)
            got = inv.get()
            assert np.array_equal(dt.get(), stored)
            for k0 in range(0, m, nb):
                kb = min(nb, m - k0)
                block = tri[k0:k0 + kb, k0:k0 + kb].astype(np.float64)
                w = got[k0:k0 + kb, :kb].astype(np.float64)
                outside = np.triu(w, 1) if lower else np.tril(w, -1)
                assert not outside.any(), (lower, unit, k0)
                residual = np.abs(w @ block - np.eye(kb)).max()
                bound = THRESHOLD * kb * eps * np.abs(w).max() * np.abs(block).max()
                assert residual <= bound, (lower, unit, k0, residual / bound)


#: FEW_RHS 0 sends every solve through the GEMMs; 16 and 64 send the left-side solves of
#: up to that many right-hand sides to FEW_ROUTE (64 by rows: 19 columns in two chunks of
#: up to 16); 4 splits the cases below between the two.  TRSM_NB 20 substitutes its blocks
#: in steps of trsm.cl's SUBSTEP (4) rows, the last blocks of 1, 19, 17 and 3 rows ending
#: in a shorter step
TRSM_SETS = [dict(TRSM_NB=64, INVERSE=1, REGISTER=0, FEW_RHS=0, FEW_ROUTE="rows"),
             dict(TRSM_NB=16, INVERSE=1, REGISTER=0, FEW_RHS=64, FEW_ROUTE="rows"),
             dict(TRSM_NB=8, INVERSE=0, REGISTER=0, FEW_RHS=0, FEW_ROUTE="rows"),
             dict(TRSM_NB=16, INVERSE=0, REGISTER=1, FEW_RHS=4, FEW_ROUTE="columns"),
             dict(TRSM_NB=8, INVERSE=1, REGISTER=0, FEW_RHS=16, FEW_ROUTE="rows"),
             dict(TRSM_NB=8, INVERSE=1, REGISTER=0, FEW_RHS=16, FEW_ROUTE="columns"),
             dict(TRSM_NB=16, INVERSE=1, REGISTER=0, FEW_RHS=64, FEW_ROUTE="chain"),
             dict(TRSM_NB=8, INVERSE=0, REGISTER=0, FEW_RHS=16, FEW_ROUTE="chain"),
             dict(TRSM_NB=20, INVERSE=0, REGISTER=0, FEW_RHS=16, FEW_ROUTE="rows")]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("tp", TRSM_SETS, ids=lambda p: f"nb{p['TRSM_NB']}-inv{p['INVERSE']}"
                                                         f"-reg{p['REGISTER']}"
                                                         f"-few{p['FEW_RHS']}"
                                                         f"-{p['FEW_ROUTE']}")
def test_trsm_all_cases(queue, tp, dtype):
    _skip_fp64(queue, dtype)
    if dtype == np.float64 and tp["INVERSE"] == 0:
        pytest.skip("substitution kernels: float32 covers the code path")
    _params.override("trsm", tp)
    rng = np.random.default_rng(17)
    nb = tp["TRSM_NB"]
    for (m, nrhs), left, lower, trans, unit in itertools.product(
            [(1, 3), (nb + 1, 5), (2 * nb - 1, 1), (37, 19), (5 * nb + 3, 7)],
            *[(True, False)] * 4):
        stored, tri = _triangle(rng, m, lower, unit, dtype)
        op = tri.T if trans else tri
        b = rng.standard_normal((m, nrhs) if left else (nrhs, m)).astype(dtype)
        dt, db = cl_array.to_device(queue, stored), cl_array.to_device(queue, b)
        trsm(queue, m, nrhs, view_of(dt), view_of(db), dtype=dtype, left=left, lower=lower,
             trans=trans, unit=unit)
        x = db.get()
        if left:
            err = solve_backward_error(op, x, b)
        else:                                   # X op(T) = B  <=>  op(T)ᵀ Xᵀ = Bᵀ
            err = solve_backward_error(op.T, x.T, b.T)
        assert passes(err), (f"m={m} nrhs={nrhs} left={left} lower={lower} trans={trans} "
                             f"unit={unit}: {err:.3g}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("route, inverse", [("rows", 1), ("rows", 0), ("columns", 1),
                                            ("chain", 1), ("chain", 0)],
                         ids=["rows-inverted", "rows-substituted", "columns",
                              "chain-inverted", "chain-substituted"])
def test_few_right_hand_sides_take_few_launches(queue, dtype, route, inverse):
    """A left-side solve of m = 3·TRSM_NB + 5 with at most FEW_RHS right-hand sides is
    one trsm_rows launch per block (4), after the inversion of the diagonal blocks
    (INVERSE) or with each block solved by substitution; or one trsm_columns launch; or
    one trsm_chain launch (after the inversion where it inverts); every triangle,
    transpose and diagonal; with FEW_RHS + 1 columns it takes the GEMMs."""
    _skip_fp64(queue, dtype)
    nb = 16
    _params.override("trsm", dict(TRSM_NB=nb, INVERSE=inverse, REGISTER=0, FEW_RHS=2,
                                  FEW_ROUTE=route))
    rng = np.random.default_rng(23)
    m = 3 * nb + 5
    try:
        for nrhs, lower, trans, unit in itertools.product((1, 2, 3), *[(True, False)] * 3):
            stored, tri = _triangle(rng, m, lower, unit, dtype)
            b = rng.standard_normal((m, nrhs)).astype(dtype)
            dt, db = cl_array.to_device(queue, stored), cl_array.to_device(queue, b)
            with oclla.record() as rec:
                trsm(queue, m, nrhs, view_of(dt), view_of(db), dtype=dtype, left=True,
                     lower=lower, trans=trans, unit=unit)
            names = [k.name for k in rec.kernels]
            few = nrhs <= 2
            assert names.count("trsm_rows") == (4 if few and route == "rows" else 0), names
            assert names.count("trsm_columns") == (1 if few and route == "columns" else 0)
            assert names.count("trsm_chain") == (1 if few and route == "chain" else 0)
            assert not few or names.count("trtri_blocks") == (
                1 if route != "columns" and inverse else 0)
            assert not few or len(names) == names.count(f"trsm_{route}") + \
                names.count("trtri_blocks"), names
            op = tri.T if trans else tri
            err = solve_backward_error(op, db.get(), b)
            assert passes(err), (nrhs, lower, trans, unit, err)
    finally:
        _params.override("trsm", None)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("route", ("rows", "chain", "columns"))
def test_trsm_takes_given_inverses_of_the_diagonal_blocks(queue, dtype, route):
    """With ``inverses`` (invert_blocks of T, made beforehand) a solve launches no
    trtri_blocks and solves by them: the few-column routes by inverses (the GEMMs where
    the device's is trsm_columns, substitution) and the GEMM route, both sides, every
    triangle, transpose and diagonal, up to RECURSE_BLOCKS blocks; inverses of another
    triangle's blocks give the solution for T with those diagonal blocks (they are used,
    not made again).  More blocks, or a block size of the caller's, are a ValueError."""
    _skip_fp64(queue, dtype)
    nb = 16
    _params.override("trsm", dict(TRSM_NB=nb, INVERSE=0, REGISTER=0, FEW_RHS=3,
                                  FEW_ROUTE=route))
    rng = np.random.default_rng(41)
    try:
        for m, nrhs, left, lower, trans, unit in itertools.product(
                (nb + 3, blas.RECURSE_BLOCKS * nb), (2, 9), *[(True, False)] * 4):
            stored, tri = _triangle(rng, m, lower, unit, dtype)
            other, other_tri = _triangle(rng, m, lower, unit, dtype)
            mixed = tri.copy()                  # T with the other's diagonal blocks
            for k0 in range(0, m, nb):
                mixed[k0:k0 + nb, k0:k0 + nb] = other_tri[k0:k0 + nb, k0:k0 + nb]
            inverses = cl_array.empty(queue, -(-m // nb) * nb * nb, dtype)
            blas.invert_blocks(queue, m, nb, view_of(cl_array.to_device(queue, other)),
                               inverses.data, dtype=dtype, lower=lower, unit=unit)
            b = rng.standard_normal((m, nrhs) if left else (nrhs, m)).astype(dtype)
            dt, db = cl_array.to_device(queue, stored), cl_array.to_device(queue, b)
            with oclla.record() as rec:
                trsm(queue, m, nrhs, view_of(dt), view_of(db), dtype=dtype, left=left,
                     lower=lower, trans=trans, unit=unit, inverses=inverses.data)
            names = [k.name for k in rec.kernels]
            case = (m, nrhs, left, lower, trans, unit)
            assert "trtri_blocks" not in names and "trsm_columns" not in names, (case, names)
            few = left and nrhs <= 3 and route != "columns"
            assert (f"trsm_{route}" in names) == few, (case, names)
            assert ("gemm_direct" in names or "gemm_tiled" in names) == (not few), case
            x = db.get()
            for op, solved in ((tri.T if trans else tri, False),
                               (mixed.T if trans else mixed, True)):
                err = (solve_backward_error(op, x, b) if left
                       else solve_backward_error(op.T, x.T, b.T))
                assert passes(err) == solved, (case, solved, err)
        dt = cl_array.to_device(queue, np.eye(5 * nb, dtype=dtype))
        db = cl_array.to_device(queue, np.ones((5 * nb, 2), dtype))
        inverses = cl_array.empty(queue, 5 * nb * nb, dtype)
        for m, block in ((5 * nb, None), (2 * nb, 8)):
            with pytest.raises(ValueError, match="inverses of the diagonal blocks"):
                trsm(queue, m, 2, view_of(dt), view_of(db), dtype=dtype, block=block,
                     inverses=inverses.data)
        np.testing.assert_array_equal(db.get(), 1.0)
    finally:
        _params.override("trsm", None)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_columns_route_solves_columns_of_a_wider_matrix_in_place(queue, dtype):
    """trsm_columns solves each column in a contiguous copy (scratch) and writes it back:
    5 columns in the middle of a 9-column array (and one column of it, and a vector)
    are solved as alone, every other entry untouched, every triangle and transpose."""
    _skip_fp64(queue, dtype)
    nb = 16
    _params.override("trsm", dict(TRSM_NB=nb, INVERSE=1, REGISTER=0, FEW_RHS=8,
                                  FEW_ROUTE="columns"))
    rng = np.random.default_rng(29)
    m = 3 * nb + 5
    try:
        for lower, trans in itertools.product((True, False), repeat=2):
            stored, tri = _triangle(rng, m, lower, False, dtype)
            dt = cl_array.to_device(queue, stored)
            op = tri.T if trans else tri
            for c0, nrhs, width in ((2, 5, 9), (4, 1, 9), (0, 1, 1)):
                b = rng.standard_normal((m, width)).astype(dtype)
                db = cl_array.to_device(queue, b)
                with oclla.record() as rec:
                    trsm(queue, m, nrhs, t=view_of(dt), b=view_of(db).at(0, c0),
                         dtype=dtype, left=True, lower=lower, trans=trans)
                assert [k.name for k in rec.kernels] == ["trsm_columns"]
                out = db.get()
                rest = np.ones(width, bool)
                rest[c0:c0 + nrhs] = False
                np.testing.assert_array_equal(out[:, rest], b[:, rest])
                for c in range(c0, c0 + nrhs):
                    err = solve_backward_error(op, out[:, c:c + 1], b[:, c:c + 1])
                    assert passes(err), (lower, trans, c0, nrhs, c, err)
    finally:
        _params.override("trsm", None)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("inverse", (1, 0), ids=("inverted", "substituted"))
@pytest.mark.parametrize("route", ("rows", "chain"))
def test_right_hand_sides_past_a_work_group_take_rows_in_column_chunks(queue, dtype,
                                                                        inverse, route):
    """trsm_rows with more right-hand sides than its work-group's width (FEW_RHS 40 with
    TRSM_NB 16: 16 columns a work-group) takes them in chunks (37 columns: 16 + 16 + 5)
    in the same one launch per block (trsm_chain: in its one launch); each column is
    solved as if alone."""
    _skip_fp64(queue, dtype)
    nb, nrhs = 16, 37
    _params.override("trsm", dict(TRSM_NB=nb, INVERSE=inverse, REGISTER=0, FEW_RHS=40,
                                  FEW_ROUTE=route))
    rng = np.random.default_rng(29)
    m = 4 * nb + 3
    try:
        assert rows_width(_params.params(queue, "trsm", dtype), oclla.device_info(queue)) \
            == min(16, oclla.device_info(queue).max_work_group_size // nb)
        for lower, trans in itertools.product((True, False), repeat=2):
            stored, tri = _triangle(rng, m, lower, False, dtype)
            b = rng.standard_normal((m, nrhs)).astype(dtype)
            dt, db = cl_array.to_device(queue, stored), cl_array.to_device(queue, b)
            with oclla.record() as rec:
                trsm(queue, m, nrhs, view_of(dt), view_of(db), dtype=dtype, left=True,
                     lower=lower, trans=trans)
            names = [k.name for k in rec.kernels]
            assert names.count(f"trsm_{route}") == (5 if route == "rows" else 1), names
            assert "gemm_tiled" not in names, names
            op = tri.T if trans else tri
            x = db.get()
            assert passes(solve_backward_error(op, x, b)), (lower, trans)
            for col in (0, 16, 36):               # each chunk's first column, the last
                assert passes(solve_backward_error(op, x[:, col], b[:, col])), col
    finally:
        _params.override("trsm", None)


def test_register_substitution_needs_a_small_block(queue):
    info = oclla.device_info(queue)
    problem = _params.check("trsm", dict(TRSM_NB=65, INVERSE=0, DOUBLING=0, REGISTER=1,
                                         FEW_RHS=0, FEW_ROUTE="rows"), info, 4)
    assert "REGISTER" in problem


def _interchanged(b, piv, forward):
    """b's rows after the interchanges (i, piv[i]) in order (or reversed), on the host."""
    b = b.copy()
    for i in (range(len(piv)) if forward else reversed(range(len(piv)))):
        b[[i, piv[i]]] = b[[piv[i], i]]
    return b


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_permute_rows_is_the_interchanges_in_order(queue, dtype):
    """permute_rows leaves the rows exactly as the interchanges one after the other do,
    forward and backward, for any pivot rows (before or after their own), on the few
    columns of a view with columns past them untouched, the pivots taken a work-group
    at a time (n = 9000: many rounds); past FEW_COLS columns, and past 65536 rows (its
    16-bit row indices), it is laswp's launch, as right."""
    _skip_fp64(queue, dtype)
    rng = np.random.default_rng(5)
    few = 16
    _params.override("laswp", dict(FEW_COLS=few))
    wg = _params.params(queue, "wg1d", dtype)["WG"]
    local = oclla.device_info(queue).local_mem_size
    for n, ncols in ((1, 1), (2, 3), (37, 1), (300, few), (9000, 2), (45, few + 1),
                     (65537, 1)):
        # its local memory: n 16-bit indices and a work-group's pivots
        composed = ncols <= few and n <= 65536 and 2 * n + 4 * wg + LOCAL_RESERVE <= local
        for forward in (True, False):
            piv = rng.integers(0, n, n).astype(np.int32)
            b = rng.standard_normal((n, ncols + 2)).astype(dtype)
            db, dp = cl_array.to_device(queue, b), cl_array.to_device(queue, piv)
            with oclla.record() as rec:
                blas.permute_rows(queue, blas.View(db.data, 0, ncols + 2), n, ncols, dp.data,
                                  dtype=dtype, forward=forward)
            want = b.copy()
            want[:, :ncols] = _interchanged(b[:, :ncols], piv, forward)
            np.testing.assert_array_equal(db.get(), want, err_msg=f"n={n} {forward}")
            names = [k.name for k in rec.kernels]
            assert names == (["permute_rows"] if composed else ["laswp"]), names


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("vw,chunk", [(1, 1), (1, 16), (16, 3), (4, 5)])
@pytest.mark.parametrize("pivots", ("lapack", "any"))
def test_laswp_forward_backward_and_gap(queue, vw, chunk, pivots, dtype):
    """The interchanges in order, CHUNK at a time: pivots below their row (LAPACK's),
    or anywhere, repeated, inside and outside a chunk."""
    _skip_fp64(queue, dtype)
    _params.override("laswp", dict(VW=buildable_width(queue, dtype, vw), WG=4, CHUNK=chunk))
    rng = np.random.default_rng(19)
    n, ncols = 23, 37
    a = rng.standard_normal((n, ncols + 20)).astype(dtype)
    if pivots == "lapack":
        piv = np.array([rng.integers(i, n) for i in range(n)], np.int32)
    else:
        piv = rng.integers(0, n, n).astype(np.int32)
        piv[[4, 7, 9]] = 20                          # one row named three times
    dpiv = cl_array.to_device(queue, piv)
    for forward, gap in itertools.product((True, False), (None, (5, 11))):
        d = cl_array.to_device(queue, a)
        k1, k2 = 2, 19
        selected = 30 if gap else ncols
        laswp(queue, view_of(d), 1, selected, dpiv.data, k1, k2, dtype=dtype,
              forward=forward, gap=gap)
        cols = np.arange(1, 1 + ncols)
        if gap:
            cols = np.concatenate([np.arange(1, 1 + gap[0]),
                                   np.arange(1 + gap[0] + gap[1], 1 + gap[1] + selected)])
        expect = a.copy()
        order = range(k1, k2) if forward else range(k2 - 1, k1 - 1, -1)
        for i in order:
            expect[[i, piv[i]]] = expect[[piv[i], i]]
        want = a.copy()
        want[:, cols] = expect[:, cols]
        np.testing.assert_array_equal(d.get(), want)


def test_empty_operations_enqueue_nothing(queue):
    buf = cl_array.to_device(queue, np.ones((2, 2), np.float32))
    assert laswp(queue, view_of(buf), 0, 0, buf.data, 0, 2, dtype=np.float32) is None
    assert laswp(queue, view_of(buf), 0, 2, buf.data, 1, 1, dtype=np.float32) is None
    assert gemm(queue, 0, 2, 2, 1.0, view_of(buf), view_of(buf), 0.0, view_of(buf),
                dtype=np.float32) is None
    trsm(queue, 0, 3, view_of(buf), view_of(buf), dtype=np.float32)
    np.testing.assert_array_equal(buf.get(), 1.0)


def test_gemm_rejects_an_invalid_tile(queue):
    buf = cl_array.zeros(queue, (4, 4), np.float32)
    bad = dict(KERNEL="tiled", TILE_M=16, TILE_N=8, TILE_K=4, WPT_M=2, WPT_N=1, VEC=2)
    with pytest.raises(ValueError, match="split evenly"):
        gemm(queue, 4, 4, 4, 1.0, view_of(buf), view_of(buf), 0.0, view_of(buf),
             dtype=np.float32, tile=bad)


def test_stored_parameters_are_validated(queue):
    info = oclla.device_info(queue)
    bad = dict(KERNEL="tiled", TILE_M=64, TILE_N=64, TILE_K=16, WPT_M=3, WPT_N=4, VEC=4)
    assert "multiples" in _params.check("gemm", bad, info, 4)
    huge = dict(KERNEL="direct", RM=8, VW=16, NV=2, LX=1 << 20)
    assert "work-group" in _params.check("gemm", huge, info, 4)
    assert _params.check("gemm", _params.params(queue, "gemm", np.float32), info, 4) is None
    with pytest.raises(KeyError):
        _params.params(queue, "nonsense", np.float32)


def test_gemm_sets_stored_before_the_layout_knobs_keep_their_meaning(queue):
    """A tiled set without VEC_LOCAL and INTERLEAVE (stored, overridden or given before
    they existed) is read as contiguous register blocks read 4 wide; their local
    memory follows VEC_LOCAL."""
    from oclla import _knobs
    from oclla.blas import tile_launch
    old = dict(KERNEL="tiled", TILE_M=64, TILE_N=64, TILE_K=16, WPT_M=4, WPT_N=4, VEC=4)
    full = _knobs.complete_gemm(old)
    assert full == dict(old, VEC_LOCAL=4, INTERLEAVE=0, PER_SHAPE=0, TN_COPY_K=0)
    assert "INTERLEAVE" not in old
    assert _params._merge("gemm", {}, old) == full
    # a valid set on any device with room for its tiles (a profile's 16 KiB has none)
    assert _params.check("gemm", old, roomy(queue), 4) is None
    defines = tile_launch(old, 64, 64, (True, False))[0]
    assert (defines["VEC_LOCAL"], defines["INTERLEAVE"]) == (4, 0)
    assert "TRANS_A" not in defines and "TRANS_B" not in defines
    narrow = dict(full, WPT_M=8, WPT_N=2, VEC_LOCAL=2, INTERLEAVE=1)
    # rows padded by the read width: 2 slabs x 16 deep x (64 + 2 + 64 + 2) reals
    assert _knobs.gemm_local_bytes(narrow, 8) == 2 * 16 * 132 * 8
    assert _knobs.gemm_local_bytes(dict(narrow, VEC_LOCAL=4), 8) == 2 * 16 * 134 * 8
    direct = dict(KERNEL="direct", RM=8, VW=16, NV=2, LX=4)
    assert _knobs.complete_gemm(direct) is direct


def test_tuned_file_is_used_and_bad_entries_ignored(queue, tmp_path, monkeypatch):
    """A user's tuned file's entry for this device is used, a bad family of it ignored
    with a warning.  (Stored entries apply to a device's own limits: no profile.)"""
    import json
    previous = oclla.set_profile(None)
    try:
        info = oclla.device_info(queue)
        path = tmp_path / "tuned.json"
        good = dict(KERNEL="direct", RM=3, VW=4, NV=3, LX=2)
        bad_lu = dict(NB=64, LEAF_W=3)                   # LEAF_W must be a power of two
        path.write_text(json.dumps(dict(version=1, entries=[dict(
            device=info.name, driver=info.driver_version, dtype="float32",
            params=dict(gemm=good, lu=bad_lu))])))
        monkeypatch.setenv("OCLLA_TUNED_FILE", str(path))
        _params.reload()
        assert _params.params(queue, "gemm", np.float32) == good
        with pytest.warns(RuntimeWarning, match="ignoring stored lu parameters"):
            lu = _params.params(queue, "lu", np.float32)
        assert lu["LEAF_W"] != 3
        assert _params.params(queue, "gemm", np.float64) != good      # other dtype
    finally:
        monkeypatch.delenv("OCLLA_TUNED_FILE", raising=False)
        _params.reload()
        oclla.set_profile(previous)


def test_matmul_host_and_device(queue):
    rng = np.random.default_rng(23)
    a = rng.standard_normal((19, 7)).astype(np.float64)
    b = rng.standard_normal((11, 7)).astype(np.float64)
    if not oclla.device_info(queue).fp64:
        a, b = a.astype(np.float32), b.astype(np.float32)
    c = matmul(a, b, trans_b=True, queue=queue)
    assert isinstance(c, np.ndarray) and passes(product_error(c, a, b.T))
    dc = matmul(cl_array.to_device(queue, a), cl_array.to_device(queue, b), trans_b=True,
                queue=queue)
    assert isinstance(dc, cl_array.Array) and passes(product_error(dc.get(), a, b.T))
    with pytest.raises(ValueError, match="inner dimensions"):
        matmul(a, b, queue=queue)
    with pytest.raises(TypeError, match="same dtype"):
        matmul(a, b.astype(np.float32) if a.dtype == np.float64 else b.astype(np.float64),
               trans_b=True, queue=queue)


def test_product_error_catches_a_wrong_entry():
    rng = np.random.default_rng(29)
    a, b = rng.standard_normal((8, 5)), rng.standard_normal((5, 6))
    c = (a @ b).astype(np.float32)
    assert passes(product_error(c, a, b))
    c[3, 4] += 1e-3
    assert product_error(c, a, b) > THRESHOLD


def test_view_at_moves_the_origin():
    v = View(None, 10, 7)
    assert v.at(2, 3) == View(None, 10 + 2 * 7 + 3, 7)
