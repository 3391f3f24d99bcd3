"""Programs are built per dtype, device parameters and variant, never per matrix order."""

import numpy as np
import pyopencl as cl
import pytest

import oclla
from oclla import _params, _programs, _warmup, accuracy

# the CPU code path (the device's own parameters) and a GPU one (gemm tiles with vector
# loads, row leaves, one SMALL_N route) on the same device
PROFILES = (None, "amd-gcn")


@pytest.fixture(params=PROFILES, ids=lambda p: p or "device")
def profile(request):
    checking = _params.selfcheck[0]
    _params.selfcheck[0] = False        # the derived parameters as they are: no fallback
    previous = oclla.set_profile(request.param)
    try:
        yield request.param
    finally:
        oclla.set_profile(previous)
        _params.selfcheck[0] = checking


#: One order of each class a program may depend on: the divisibility of the order by a
#: vector width up to 16 (the per-pivot LU kernels' widths follow it), and the largest
#: order of the test, which takes every route (leaf, blocks, SMALL_N) that orders up to
#: 70 take.  Only one large order: the programs of the blocked methods' routes must
#: serve every alignment of the views into the matrix.
CLASSES = (1, 2, 3, 4, 8, 16, 70)


def _every_routine(queue, dtype, orders, rng) -> None:
    """Every public routine (default methods, both transposes) at each order, the lower
    triangle at orders 0..3 mod 8 and the upper one at 4..7 (each triangle meets every
    residue mod 4); the per-pivot variants at every seventh order (every residue mod 4
    again)."""
    for n in orders:
        _warmup.call_every_routine(queue, dtype, n, rng, teaching=n % 7 == 0,
                                   triangles=((n // 4) % 2 == 0,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_builds_do_not_grow_with_the_orders(queue, profile, dtype):
    """After one order of each class, orders 1..70 build nothing."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("no fp64")
    rng = np.random.default_rng(0)
    for n in CLASSES:
        _warmup.call_every_routine(queue, dtype, n, rng)
    classes = _programs.build_count()
    _every_routine(queue, dtype, range(1, 71), rng)
    new = _programs.builds()[classes:]
    assert not new, (f"orders 1..70 built {len(new)} programs beyond those of the orders "
                     f"{CLASSES}:\n"
                     + "\n".join(f"{b.source} {' '.join(b.options)}" for b in new))


def test_build_count_and_seconds(queue):
    """A new (source, options) pair is counted once, with its seconds; a second lookup
    of the same kernel builds nothing."""
    count, seconds = _programs.build_count(), _programs.build_seconds()
    # a define no other call uses: a program of its own
    kernel = _programs.get_kernel(queue, "util.cl", "set_identity", np.float32, OCLLA_TEST_BUILD=1)
    assert _programs.build_count() == count + 1
    last = _programs.builds()[-1]
    assert last.source == "util.cl" and "-DOCLLA_TEST_BUILD=1" in last.options
    assert last.seconds > 0 and _programs.build_seconds() == pytest.approx(seconds
                                                                          + last.seconds)
    assert _programs.get_kernel(queue, "util.cl", "set_identity", np.float32,
                                OCLLA_TEST_BUILD=1) is kernel
    assert _programs.build_count() == count + 1


def test_warmup_leaves_nothing_to_build(queue, monkeypatch):
    """After warmup, calls at orders it did not use build nothing (the device's own
    parameters; a smaller set of warm-up orders keeps the test short)."""
    orders = (1, 2, 3, 4, 8, 16, 65, 131)
    monkeypatch.setattr(_warmup, "warmup_orders", lambda q, dt: orders)
    done = oclla.warmup(np.float32, queue=queue)
    assert done.dtypes == ("float32",) and done.orders == orders
    count = _programs.build_count()
    assert done.programs <= count and done.seconds <= _programs.build_seconds()
    rng = np.random.default_rng(1)
    for n in (5, 7, 30, 67, 100):
        _warmup.call_every_routine(queue, np.float32, n, rng, teaching=n < 10,
                                   triangles=(n % 2 == 0,))
    assert _programs.builds()[count:] == []
    again = oclla.warmup(np.float32, queue=queue)
    assert again.programs == 0


def test_warmup_orders_straddle_the_block_sizes(queue):
    orders = _warmup.warmup_orders(queue, np.float32)
    lu, chol = (_params.params(queue, f, np.float32) for f in ("lu", "chol"))
    assert {1, 2, 3, 4, 8, 16} <= set(orders)
    assert max(orders) > max(2 * lu["NB"], 2 * chol["NB"], lu["SMALL_N"], chol["SMALL_N"])
    assert chol["LEAF"] + 1 in orders


def test_warmup_refuses_other_dtypes(queue):
    with pytest.raises(TypeError, match="float32 or float64"):
        oclla.warmup(np.int32, queue=queue)


def _names(queue, source, dtype, **defines) -> set:
    """The kernel names of the program ``get_kernel`` builds for these options."""
    options = _programs.build_options(dtype, {**defines, "INDEX64": 1})
    return set(_programs._program(queue.context, source, options)
               .get_info(cl.program_info.KERNEL_NAMES).split(";"))


def test_cholesky_programs_hold_what_their_route_launches(queue):
    """cholesky.cl builds as two programs: the per-pivot kernels with zero_other_triangle
    (no LEAF), and the leaf with apply_inverse (LEAF): neither compiles the other's
    kernels, and the leaf serves the inverting and the plain use."""
    pivot = _names(queue, "cholesky.cl", np.float32, LOWER=1, PACKED=0)
    assert pivot == {"sqrt_pivot", "normalize_column", "outer_product", "zero_other_triangle"}
    for rows, leaf in ((0, "potf2_block"), (1, "potf2_rows")):
        names = _names(queue, "cholesky.cl", np.float32, WG=32, LEAF=16, LOWER=1,
                       ROW_LEAF=rows, APPLY_ROWS=4)
        assert names == {leaf, "apply_inverse"}


def test_blocked_cholesky_builds_one_leaf_program(queue):
    """A blocked factorization whose leaves invert (below SMALL_N) and one whose leaves
    do not (recursive diagonal blocks, TRSM beside them) share one cholesky.cl program
    for their leaf and apply_inverse; the results are right both ways (the upper
    triangle: test_cholesky's parameter sets)."""
    lower = True
    from oclla.cholesky import factor_device
    chol = dict(NB=16, LEAF=8, WG=16, ROW_LEAF=1, FUSE_LEAF=0, TRSM_INVERSE=0,
                RFP_TRSM_INVERSE=0, SMALL_N=20)
    _params.override("chol", chol)
    try:
        rng = np.random.default_rng(3)
        for n in (19, 41):                 # 19: inverting leaves; 41 > SMALL_N: plain ones
            x = rng.standard_normal((n, n))
            a = x @ x.T + n * np.eye(n)
            a = a.astype(np.float32)
            c = oclla.cholesky(a, lower=lower, method="blocked", queue=queue)
            assert accuracy.cholesky_backward_error(a, c, lower) < 30
        leaves = [b for b in _programs.builds() if b.source == "cholesky.cl"
                  and {"-DLEAF=8", "-DWG=16", "-DLOWER=1", "-DPRECISION=32"} <= set(b.options)]
        assert len(leaves) == 1, leaves
    finally:
        _params.override("chol", None)


GRID = dict(NB=16, PANEL="grid", GRID_WX=4, GRID_WY=2, GRID_RPI=4, SMALL_N=0, LOOKAHEAD=0,
            REG_SLOTS=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_grid_panels_build_one_program_for_every_order(queue, dtype):
    """getrf_grid is built once for every order and panel width: its register rows per
    item (1 to GRID_RPI, by the order) and narrow last panels are run-time values."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("no fp64")
    _params.override("lu", GRID)
    start = _programs.build_count()       # earlier tests of this process built their own
    try:
        rng = np.random.default_rng(4)
        # 2 work-groups of 2 rows on PoCL: 1, 2, 3, 4 and more register rows per item;
        # panels 3 to 16 wide
        for n in (3, 7, 12, 16, 23, 40):
            a = rng.standard_normal((n, n)).astype(dtype)
            lu, piv = oclla.lu_factor(a, method="blocked", queue=queue)
            assert accuracy.lu_backward_error(a, lu, piv) < 30
        grids = [b for b in _programs.builds()[start:] if b.source == "lu_grid.cl"
                 and {"-DWX=4", "-DWY=2", _programs.build_options(dtype, {})[1]}
                 <= set(b.options)]
        assert len(grids) <= 1, grids     # none where an earlier test built the same one
    finally:
        _params.override("lu", None)
