"""Element indices of 2³¹ and more: orders n with n² >= 2³¹ (n >= 46341).

The kernels form element indices in 64 bits (kernels_cl/common.h), and every
element offset or element count that crosses from the host to a kernel is a
64-bit argument.  Such a matrix does not fit this project's test device (PoCL
on a CPU, whose largest buffer is a GiB or two), so:

* the index helpers (AT, the RFP maps and their inverses, triangle_entry)
  are run in a probe kernel built from the shipped headers, on indices past
  2³¹ and 2³²;
* every host routine that passes element offsets reaches each of its
  kernels with an offset past 2³¹: the arguments are set on the real kernels
  (pyopencl refuses an int argument for a 64-bit parameter, a 64-bit one for
  an int parameter, and a Python int past 2³¹ declared int32), and only the
  launches are left out, the buffers being small;
* where the device can hold it (a GPU with a 9 GiB buffer), lu_factor of a
  float32 device matrix of order 47000, the order that failed with 32-bit
  indices, has the backward error of sampled rows, the last ones included,
  within the threshold (benchmarks/large_order.py, which times it too).
"""

import importlib.util
import math
import pathlib
import sys
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

from oclla import kernels_cl
import oclla
from oclla import _params, _programs, _validate, accuracy, ad2at, blas, rfp
from oclla._programs import int_zeros
from oclla.cholesky import factor_blocked, factor_pivot, zero_other_triangle
from oclla.blas import View

BIG = 2 ** 31 + 2 ** 20       # an element offset past 2³¹ (a multiple of 4: vector paths stay)
F32 = np.dtype(np.float32)


@pytest.fixture(scope="module")
def queue():
    return oclla.get_queue()


# ---- the index helpers ----------------------------------------------------------------------

PROBE = """
__kernel void at_index(__global const int *rcl, __global ulong *out)
{
    const int i = get_global_id(0);
    out[i] = AT(rcl[3 * i], rcl[3 * i + 1], rcl[3 * i + 2]);
}

/* entries (r, c), r >= c: their offsets in both RFP layouts, and back */
__kernel void rfp_index(const int n, __global const int *rc, __global ulong *offsets,
                        __global int *back)
{
    const int i = get_global_id(0), r = rc[2 * i], c = rc[2 * i + 1];
    const size_t lower = rfp_lower(r, c, n), upper = rfp_upper(c, r, n);
    offsets[2 * i] = lower;
    offsets[2 * i + 1] = upper;
    vstore2(rfp_entry_lower(lower, n), 2 * i, back);
    vstore2(rfp_entry_upper(upper, n), 2 * i + 1, back);
}

__kernel void triangle_index(__global const long *ids, __global int *rc)
{
    const int i = get_global_id(0);
    vstore2(triangle_entry(ids[i]), i, rc);
}
"""


@pytest.fixture(scope="module")
def probe(queue):
    if queue.device.address_bits < 64:
        pytest.skip("a 32-bit device cannot address 2^31 elements")
    headers = "".join(kernels_cl.read_source(h) for h in ("common.h", "rfp.h", "triangle.h"))
    program = cl.Program(queue.context, headers + PROBE).build(
        options=["-cl-std=CL1.2", "-DPRECISION=32"])
    return SimpleNamespace(**{k.function_name: k for k in program.all_kernels()})


def _run(queue, kernel, count, *args):
    kernel(queue, (count,), None, *args)
    queue.finish()


def test_element_index_is_64_bit(queue, probe):
    rcl = np.array([[46999, 46999, 47000],       # the last entry of the order that failed
                    [45692, 0, 47000],           # its first row past 2³¹
                    [65535, 65535, 65536],       # 2³² − 1: an int product wraps to −1
                    [65536, 7, 65536]], np.int32)
    out = cl_array.empty(queue, len(rcl), np.uint64)
    _run(queue, probe.at_index, len(rcl), cl_array.to_device(queue, rcl).data, out.data)
    expected = rcl[:, 0].astype(np.int64) * rcl[:, 2] + rcl[:, 1]
    assert expected[1] >= 2 ** 31 and expected[2] == 2 ** 32 - 1
    np.testing.assert_array_equal(out.get(), expected)


@pytest.mark.parametrize("n", (65536, 70001))      # n(n+1)/2 >= 2³¹ from n = 65536 on
def test_rfp_offsets_are_64_bit(queue, probe, n):
    n1 = n - n // 2
    rc = np.array([(n - 1, n - 1), (n - 1, 0), (n - 1, n1 - 1), (n - 1, n1), (n // 2, n // 2),
                   (n - 2, 3), (n - 1, n // 2 - 1)], np.int32)
    offsets = cl_array.empty(queue, 2 * len(rc), np.uint64)
    back = cl_array.empty(queue, 4 * len(rc), np.int32)
    _run(queue, probe.rfp_index, len(rc), np.int32(n), cl_array.to_device(queue, rc).data,
         offsets.data, back.data)
    r, c = rc[:, 0].astype(np.int64), rc[:, 1].astype(np.int64)
    lower, upper = offsets.get().reshape(-1, 2).T
    np.testing.assert_array_equal(lower, rfp._offsets(r, c, n, True))
    np.testing.assert_array_equal(upper, rfp._offsets(c, r, n, False))
    assert max(lower.max(), upper.max()) >= 2 ** 31
    assert max(lower.max(), upper.max()) < rfp.packed_length(n)
    entries = back.get().reshape(-1, 2, 2)
    np.testing.assert_array_equal(entries[:, 0], rc)                 # lower: (r, c)
    np.testing.assert_array_equal(entries[:, 1], rc[:, ::-1])        # upper: (c, r)


def test_triangle_entry_past_2_31(queue, probe):
    ids = np.array([2 ** 31 - 1, 2 ** 31, 2 ** 32 + 12345, 46340 * 46341 // 2,
                    (70000 * 70001) // 2 - 1], np.int64)
    rc = cl_array.empty(queue, 2 * len(ids), np.int32)
    _run(queue, probe.triangle_index, len(ids), cl_array.to_device(queue, ids).data, rc.data)
    rows = np.array([(math.isqrt(8 * int(i) + 1) - 1) // 2 for i in ids])
    np.testing.assert_array_equal(rc.get().reshape(-1, 2),
                                  np.stack([rows, ids - rows * (rows + 1) // 2], axis=1))


# ---- offsets past 2³¹ reach every kernel as 64-bit arguments --------------------------------

@pytest.fixture
def arguments(monkeypatch):
    """Kernel arguments are set on the real kernels, the launches left out; yields, per
    kernel name, whether some call passed it an integer argument of 2³¹ or more.  The
    derived parameters are taken without their self-check (which runs kernels: here
    it would see none run and reject every set, whichever test comes first)."""
    big = {}
    monkeypatch.setattr(oclla._params, "selfcheck", [False])
    set_args = _programs.set_args

    def checked_set_args(kernel, *args):
        set_args(kernel, *args)
        large = any(isinstance(a, (int, np.integer)) and abs(int(a)) >= 2 ** 31 for a in args)
        big[kernel.function_name] = big.get(kernel.function_name, False) or large

    monkeypatch.setattr(_programs, "set_args", checked_set_args)
    # every module's own name for it too (blas launches trsm_rows itself, the LU its leaves):
    # a launch that ran would address past the small buffers
    launch = _programs.launch
    for module in [m for name, m in sys.modules.items() if name.split(".")[0] == "oclla"]:
        if getattr(module, "launch", None) is launch:
            monkeypatch.setattr(module, "launch", lambda queue, *a, **k: cl.enqueue_marker(queue))
    return big


def _small(queue, count=4096):
    return cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4 * count)


GEMM_DIRECT = dict(KERNEL="direct", RM=4, VW=4, NV=2, LX=4)
GEMM_TILED = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=4)
CHOLESKY = dict(NB=32, LEAF=16, WG=64, SMALL_N=0, TRSM_INVERSE=1, RFP_TRSM_INVERSE=1,
                ROW_LEAF=0, FUSE_LEAF=0)                # leaves by recursion, TRSM beside
INVERTING = dict(CHOLESKY, NB=16)                       # inverted leaves, apply_inverse
FUSED = dict(INVERTING, ROW_LEAF=1, FUSE_LEAF=1)        # with GEMM_TILED: syrk_leaf.cl


def _gemm(queue, tile):
    buf = _small(queue)
    for ta, tb in ((False, False), (True, True)):
        blas.gemm(queue, 40, 40, 24, -1.0, View(buf, BIG, 64), View(buf, BIG + 8, 64), 1.0,
                  View(buf, BIG + 16, 64), dtype=F32, trans_a=ta, trans_b=tb, tile=tile)


def _trsm(queue, inverse):
    buf = _small(queue)
    for left in (True, False):
        blas.trsm(queue, 40, 5, View(buf, BIG, 64), View(buf, BIG + 4096, 64), dtype=F32,
                  left=left, block=16, inverse=inverse)


def _cholesky(queue, packed, blocked, chol=CHOLESKY):
    oclla._params.override("chol", chol)
    if chol is FUSED:
        oclla._params.override("gemm", GEMM_TILED)
    buf, info = _small(queue), int_zeros(queue)
    if packed and blocked:
        rfp._pftrf_blocked(queue, buf, BIG, rfp.layout(101, True), dtype=F32, info=info,
                           block=None)
        rfp.solve_packed(queue, buf, BIG, rfp.layout(101, True), View(buf, BIG, 1), 1,
                         dtype=F32)
    elif blocked:
        factor_blocked(queue, View(buf, BIG, 128), 100, lower=True, dtype=F32, info=info)
    else:
        factor_pivot(queue, buf, BIG, 8, 8, lower=True, dtype=F32, info=info, packed=packed)
    zero_other_triangle(queue, SimpleNamespace(shape=(8, 8), dtype=F32, data=buf,
                                               offset=4 * BIG), lower=True)


def _ad2at(queue, blocked, gemm=None):
    if gemm is not None:          # the product's kernel decides whether W is transposed
        _params.override("gemm", gemm)
        _params.override("gemm_thin", dict(MAX_K=0))      # also for the inner dimension 12
    buf = _small(queue)
    d2, c = cl_array.empty(queue, 12, F32), cl_array.empty(queue, (6, 6), F32)
    assemble = ad2at._assemble_blocked if blocked else ad2at._assemble_pivot
    assemble(queue, View(buf, BIG, 16), d2, c, 6, 12, lower=True, packed=False, dtype=F32)


def _count(queue):
    x = SimpleNamespace(size=BIG, dtype=F32, data=_small(queue))
    _validate.count_nonfinite(queue, x, int_zeros(queue))


ROUTINES = {
    "gemm direct": (lambda q: _gemm(q, GEMM_DIRECT), {"gemm_direct", "pack_b"}),
    "gemm tiled": (lambda q: _gemm(q, GEMM_TILED), {"gemm_tiled"}),
    "trsm by substitution": (lambda q: _trsm(q, False), {"trsm_block"}),
    "trsm by inverses": (lambda q: _trsm(q, True), {"trtri_blocks", "copy_block"}),
    "laswp": (lambda q: blas.laswp(q, View(_small(q), BIG, 64), 0, 40, int_zeros(q, 40).data,
                                   0, 40, dtype=F32, gap=(8, 4)), {"laswp"}),
    "permute_rows": (lambda q: (_params.override("laswp", dict(FEW_COLS=3)),
                                blas.permute_rows(q, View(_small(q), BIG, 64), 40, 3,
                                                  int_zeros(q, 40).data, dtype=F32)),
                     {"permute_rows"}),
    "cholesky per pivot": (lambda q: _cholesky(q, False, False),
                           {"sqrt_pivot", "normalize_column", "outer_product",
                            "zero_other_triangle"}),
    "cholesky blocked": (lambda q: _cholesky(q, False, True), {"potf2_block"}),
    "cholesky blocked, inverted leaves": (lambda q: _cholesky(q, False, True, INVERTING),
                                          {"potf2_block", "apply_inverse"}),
    "cholesky blocked, fused": (lambda q: _cholesky(q, False, True, FUSED),
                                {"apply_inverse", "syrk_leaf"}),
    "rfp per pivot": (lambda q: _cholesky(q, True, False),
                      {"sqrt_pivot", "normalize_column", "outer_product"}),
    "rfp blocked and solve": (lambda q: _cholesky(q, True, True, INVERTING),
                              {"potf2_block", "apply_inverse", "trtri_blocks"}),
    "ad2at per column": (lambda q: _ad2at(q, False), {"scale_column", "outer_product_add"}),
    "ad2at blocked, W": (lambda q: _ad2at(q, True, dict(KERNEL="direct", RM=3, VW=4, NV=1,
                                                         LX=4)), {"scale_columns"}),
    "ad2at blocked, Wᵀ": (lambda q: _ad2at(q, True, GEMM_TILED), {"scale_transpose"}),
    "count_nonfinite": (_count, {"count_nonfinite"}),
}


@pytest.mark.parametrize("name", ROUTINES)
def test_offsets_past_2_31_reach_the_kernels(queue, arguments, name):
    run, kernels = ROUTINES[name]
    run(queue)
    queue.finish()
    missing = {k for k in kernels if not arguments.get(k)}
    assert not missing, f"{name}: no offset past 2^31 reached {sorted(missing)}"


# ---- a matrix of order 47000 where the device holds one -------------------------------------

def _large_order():
    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "large_order.py"
    spec = importlib.util.spec_from_file_location("large_order", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_lu_factor_of_order_47000(queue):
    n = 47000
    info = oclla.device_info(queue)
    need = n * n * 4
    if info.kind != "GPU" or info.max_alloc_size < need or info.global_mem_size < 1.5 * need:
        pytest.skip(f"needs a GPU with a {need / 2**30:.1f} GiB buffer")
    large_order = _large_order()
    row = large_order.factor_and_check(queue, n, dtype=np.float32, rows=16)
    assert max(row["rows"]) * n >= 2 ** 31 and large_order.first_row_past_limit(n) in row["rows"]
    assert accuracy.passes(row["error"]), f"sampled backward error {row['error']:.3g}"
