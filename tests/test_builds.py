"""Programs are built per dtype, device parameters and variant, never per matrix order."""

import itertools
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest

import oclla
from oclla import _knobs, _params, _programs, _warmup, accuracy

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
    monkeypatch.setattr(_warmup, "warmup_orders", lambda q, dt, family=None: orders)
    monkeypatch.setattr(_warmup, "update_ranks", lambda q, dt: (2,))   # one rank class
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


def test_warmup_orders_past_small_n_only_for_the_families_that_route_by_it(queue):
    """One past each SMALL_N (the largest orders: their operands cost the most) only for
    the families whose blocked factorizations change route there; the union over the
    families is the warm-up's orders."""
    every = set(_warmup.warmup_orders(queue, np.float32))
    per = {f: set(_warmup.warmup_orders(queue, np.float32, f)) for f in _warmup.FAMILIES}
    assert set().union(*per.values()) == every
    lu, chol = (_params.params(queue, f, np.float32) for f in ("lu", "chol"))
    assert lu["SMALL_N"] + 1 in per["lu"]
    assert all(chol["SMALL_N"] + 1 in per[f] for f in ("cholesky", "inverse", "rfp"))
    common = per["ad2at"]
    assert common == per["update"] and all(common <= orders for orders in per.values())
    assert every - common <= {lu["SMALL_N"] + 1, chol["SMALL_N"] + 1}


def test_warmup_calls_each_family_at_its_own_orders(queue, monkeypatch):
    """The serial warm-up calls the families together at the orders they share and only
    those of :data:`PAST_SMALL_N` past each SMALL_N."""
    calls = []
    monkeypatch.setattr(_warmup, "warmup_orders",
                        lambda q, dt, family=None: (1, 5) if family in (None, "lu") else (1,))
    monkeypatch.setattr(_warmup, "call_every_routine",
                        lambda q, dt, n, rng, **kw: calls.append((n, kw["families"])))
    assert _warmup._warm(queue, np.dtype(np.float32), np.random.default_rng(0)) == (1, 5)
    assert calls == [(1, _warmup.FAMILIES), (5, ("lu",))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_warmup_ranks_cover_every_update_program(queue, dtype):
    """Every rank k (beyond KF too) and sign takes the update programs of one of the
    warm-up's ranks: the same options and the same route (rotations or reflectors)."""
    from oclla import update
    ranks = _warmup.update_ranks(queue, dtype)
    most = _params.params(queue, "update", dtype)["KF"]
    assert ranks[0] == 1 and ranks[-1] == most

    def programs(k, sign):
        reflect = update.reflects(queue, np.dtype(dtype), k, sign)
        options = update._options(queue, np.dtype(dtype), k, False, False, reflect)
        return tuple(sorted(options.items()))

    warm = {programs(k, sign) for k in ranks for sign in (1, -1)}
    for k in range(1, 2 * most + 3):
        for sign in (1, -1):
            assert programs(k, sign) in warm, (k, sign)


def test_warmup_workers_take_every_task_once(queue, monkeypatch):
    """jobs workers: one process per task, the device's index, every family of each
    dtype once and the update once per rank class, at most jobs at a time."""
    lock, started, running = threading.Lock(), [], [0, 0]

    def fake_run(args, **_):
        with lock:
            started.append(args)
            running[0] += 1
            running[1] = max(running)
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return subprocess.CompletedProcess(args, 0, None, "")

    monkeypatch.setattr(_warmup.subprocess, "run", fake_run)
    dtypes = (np.dtype(np.float32), np.dtype(np.float64))
    _warmup._build_in_workers(queue, dtypes, 3)
    assert 1 < running[1] <= 3
    heads = {tuple(args[:4]) for args in started}
    assert len(heads) == 1
    python, flag, module, index = heads.pop()
    assert (flag, module) == ("-m", "oclla._warmup")
    assert oclla.get_queue(int(index)).device == queue.device
    tasks = [task for args in started for task in args[4:]]
    expected = [f"{dt.name}:{f}" for dt in dtypes for f in _warmup.FAMILIES if f != "update"]
    expected += [f"{dt.name}:update:{k}" for dt in dtypes
                 for k in _warmup.update_ranks(queue, dt)]
    assert sorted(tasks) == sorted(expected) == sorted(_warmup.worker_tasks(queue, dtypes))


def test_a_warmup_worker_runs_its_tasks_at_every_order(queue, monkeypatch):
    calls = []
    monkeypatch.setattr(_warmup, "warmup_orders", lambda q, dt, family=None: (1, 5))
    monkeypatch.setattr(_warmup, "update_ranks", lambda q, dt: (1, 2))
    monkeypatch.setattr(_warmup, "call_every_routine",
                        lambda q, dt, n, rng, **kw: calls.append((q, dt, n, kw)))
    index = _warmup._device_index(queue)
    assert _warmup._worker([str(index), "float32:update:4", "float64:ad2at"]) == 0
    assert [(dt, n, kw["families"], kw["ranks"]) for _, dt, n, kw in calls] == [
        (np.float32, 1, ("update",), (4,)), (np.float32, 5, ("update",), (4,)),
        (np.float64, 1, ("ad2at",), (2,)), (np.float64, 5, ("ad2at",), (1, 2))]
    assert all(q is queue for q, *_ in calls)


@pytest.mark.parametrize("jobs, error", [(0, ValueError), (-2, ValueError),
                                         (1.5, TypeError), (True, TypeError)])
def test_warmup_refuses_bad_jobs(queue, jobs, error):
    with pytest.raises(error, match="jobs"):
        oclla.warmup(np.float32, queue=queue, jobs=jobs)


def test_warmup_refuses_other_dtypes(queue):
    with pytest.raises(TypeError, match="float32 or float64"):
        oclla.warmup(np.int32, queue=queue)


def _names(queue, source, dtype, **defines) -> set:
    """The kernel names of the program ``get_kernel`` builds for these options."""
    options = _programs.build_options(dtype, {**defines, "INDEX64": 1})
    return set(_programs._program(queue.context, source, options)
               .get_info(cl.program_info.KERNEL_NAMES).split(";"))


def test_cholesky_programs_hold_what_their_route_launches(queue):
    """cholesky.cl builds as two programs: the per-pivot kernels (no LEAF), and the leaf
    with apply_inverse (LEAF): neither compiles the other's kernels, and the leaf serves
    the inverting and the plain use."""
    pivot = _names(queue, "cholesky.cl", np.float32)
    assert pivot == {"sqrt_pivot", "normalize_column", "outer_product"}
    for rows, leaf in ((0, "potf2_block"), (1, "potf2_rows")):
        names = _names(queue, "cholesky.cl", np.float32, WG=32, LEAF=16, LOWER=1,
                       ROW_LEAF=rows, APPLY_ROWS=4)
        assert names == {leaf, "apply_inverse"}


def test_flat_tail_programs_hold_what_their_route_launches(queue):
    """lu_flat.cl builds as two programs: flat_update (with its tile's macros), which a
    tail whose leaves apply every update (FLAT_AHEAD) never launches, and the solve and
    gather every tail launches (LW alone)."""
    assert _names(queue, "lu_flat.cl", np.float32, LW=4, UPDATE=0) == {"flat_solve",
                                                                        "gather_rows"}
    assert _names(queue, "lu_flat.cl", np.float32, LW=4, UPDATE=1, TILE_M=8, TILE_N=8,
                  WPT_M=2, WPT_N=2) == {"flat_update"}


def test_trsm_programs_hold_the_few_column_route_of_their_device(queue):
    """trsm.cl holds the few-column kernel of one FEW_ROUTE (FEW, in the order of
    FEW_ROUTES), and the device's program that of its route; trsm_block is a program of
    its own (BLOCK_SOLVE), which the others' program leaves out."""
    from oclla._knobs import FEW_ROUTES
    from oclla.blas import trsm_kernel
    common = dict(TRSM_NB=16, ROWS_WIDTH=4)
    always = {"trtri_blocks", "copy_block"}
    for few, route in enumerate(FEW_ROUTES):
        assert _names(queue, "trsm.cl", np.float32, FEW=few, **common) == \
            always | {f"trsm_{route}"}
    assert _names(queue, "trsm.cl", np.float32, TRSM_NB=16, TRSM_REG=0,
                  BLOCK_SOLVE=1) == {"trsm_block"}
    route = _params.params(queue, "trsm", np.float32)["FEW_ROUTE"]
    programs = {name: trsm_kernel(queue, name, np.float32).program
                for name in ("copy_block", "trsm_block")}
    assert set(programs["copy_block"].get_info(cl.program_info.KERNEL_NAMES).split(";")) \
        == always | {f"trsm_{route}"}
    assert programs["trsm_block"].get_info(cl.program_info.KERNEL_NAMES) == "trsm_block"


def test_blocked_cholesky_builds_one_leaf_program(queue):
    """Blocked factorizations whose leaves invert (below SMALL_N) and ones whose leaves
    do not (recursive diagonal blocks, TRSM beside them), of either triangle, share one
    cholesky.cl program for their leaf and apply_inverse (the triangle is an argument);
    the results are right every way."""
    chol = dict(NB=16, LEAF=8, WG=16, ROW_LEAF=1, FUSE_LEAF=0, TRSM_INVERSE=0,
                RFP_TRSM_INVERSE=0, SMALL_N=20)
    _params.override("chol", chol)
    try:
        rng = np.random.default_rng(3)
        for n, lower in ((19, True), (41, True), (19, False), (41, False)):
            # 19: inverting leaves; 41 > SMALL_N: plain ones
            x = rng.standard_normal((n, n))
            a = x @ x.T + n * np.eye(n)
            a = a.astype(np.float32)
            c = oclla.cholesky(a, lower=lower, method="blocked", queue=queue)
            assert accuracy.cholesky_backward_error(a, c, lower) < 30
        # (a fused device's cholesky.cl, LEAF_KERNEL=0, is another family: test_syrk_leaf)
        leaves = [b for b in _programs.builds() if b.source == "cholesky.cl"
                  and {"-DLEAF=8", "-DWG=16", "-DPRECISION=32"} <= set(b.options)
                  and "-DLEAF_KERNEL=0" not in b.options]
        assert len(leaves) == 1, leaves
    finally:
        _params.override("chol", None)


GRID = dict(NB=16, PANEL="grid", GRID_WX=4, GRID_WY=2, GRID_RPI=4, SMALL_N=0, LOOKAHEAD=0,
            REG_SLOTS=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_grid_panels_build_one_program_for_every_order(queue, dtype):
    """getrf_grid is built once for every order and panel width up to the panels that
    the work-groups hold in GRID_RPI register rows per item: those rows (1 to GRID_RPI,
    by the order) and narrow last panels are run-time values; taller panels take one
    program with twice and one with four times GRID_RPI, whatever their order."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("no fp64")
    _params.override("lu", GRID)
    start = _programs.build_count()       # earlier tests of this process built their own
    try:
        rng = np.random.default_rng(4)
        # blocks of 2 rows: up to 4 register rows per item on every work-group (one per
        # compute unit), then 8, then 16; panels 3 to 16 wide
        for n in (3, 7, 12, 16, 23, 40, 61, 64, 90, 130):
            a = rng.standard_normal((n, n)).astype(dtype)
            lu, piv = oclla.lu_factor(a, method="blocked", queue=queue)
            assert accuracy.lu_backward_error(a, lu, piv) < 30
        grids = {b.options for b in _programs.builds()[start:] if b.source == "lu_grid.cl"
                 and {"-DWX=4", "-DWY=2", _programs.build_options(dtype, {})[1]}
                 <= set(b.options)}
        rows = {o for options in grids for o in options if o.startswith("-DRPI=")}
        # none where an earlier test built the same ones
        assert rows <= {"-DRPI=4", "-DRPI=8", "-DRPI=16"} and len(grids) == len(rows), grids
    finally:
        _params.override("lu", None)


def test_taller_grid_panels_take_more_register_rows(queue, monkeypatch):
    """A grid panel whose row blocks the work-groups that run at once cannot hold in
    GRID_RPI register rows per item takes the program with twice, then four times as
    many (the fewest that hold it), never more than the knob's largest; shorter panels
    of the same factorization go back to GRID_RPI's."""
    from oclla import lu_blocked
    groups = oclla.device_info(queue).compute_units              # GRID_PER_CU 1
    seen = []

    def recording(queue_, source, name, dtype, **defines):
        if name == "getrf_grid":
            seen.append(defines["RPI"])
        return get_kernel(queue_, source, name, dtype, **defines)

    get_kernel = lu_blocked.get_kernel
    monkeypatch.setattr(lu_blocked, "get_kernel", recording)
    _params.override("lu", GRID)
    rng = np.random.default_rng(6)
    # the first panel's blocks of 2 rows: 4 / 8 / 16 / 64 per work-group (orders up to
    # 4096: the larger cases only on devices of few compute units)
    cases = [(per_group, rows) for per_group, rows in
             ((4, {4}), (8, {4, 8}), (16, {4, 8, 16}), (64, {4, 8, 16}))
             if 2 * per_group * groups <= 4096]
    assert len(cases) >= 2
    for per_group, rows in cases:
        seen.clear()
        n = 2 * per_group * groups
        a = rng.standard_normal((n, n)).astype(np.float32)
        lu, piv = oclla.lu_factor(a, method="blocked", queue=queue)
        assert accuracy.lu_backward_error(a, lu, piv) < 30
        assert set(seen) == rows and seen[0] == max(rows), (n, seen)
        assert seen == sorted(seen, reverse=True), seen      # panels shorten
    assert GRID["GRID_RPI"] * 4 <= max(_knobs.GRID_RPIS)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_split_panels_take_no_register_leaves(queue, dtype):
    """Panels split by PANEL_SPLIT keep their strategy in both parts: at n = 12 the
    first panel's 8 rows below its first part fit the register leaves (2 rows of 4
    items), but only the flat tail, a whole panel, runs them (lu_rows.cl MAP = 1); no
    program of the register leaves for panels (MAP = 0) is built for that one order."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("no fp64")
    _params.override("lu", dict(GRID, NB=8, PANEL_SPLIT=4, LEAF_W=4, PANEL_WG=4, LEAF_WG=4,
                                REG_SLOTS=8, FLAT_N=8, FLAT_AHEAD=0))
    start = _programs.build_count()
    try:
        a = np.random.default_rng(8).standard_normal((12, 12)).astype(dtype)
        lu, piv = oclla.lu_factor(a, method="blocked", queue=queue)
        assert accuracy.lu_backward_error(a, lu, piv) < 30
        leaves = [b for b in _programs.builds()[start:] if b.source == "lu_rows.cl"]
        assert all("-DMAP=1" in b.options for b in leaves), leaves
    finally:
        _params.override("lu", None)


def test_a_solve_builds_nothing_for_a_narrow_last_block(queue, profile):
    """The GEMMs of a TRSM take the device's gemm shape, the last block's too where it is
    within gemm_thin's MAX_K: solving at order 2·TRSM_NB + 1 (a last block one wide)
    after 2·TRSM_NB builds nothing, by substitution and by inverted blocks."""
    nb = _params.params(queue, "trsm", np.float32)["TRSM_NB"]
    rng = np.random.default_rng(9)
    for n in (2 * nb, 2 * nb + 1):
        x = rng.standard_normal((n, n))
        a = (x @ x.T / n + np.eye(n)).astype(np.float32)
        b = rng.standard_normal((n, 3)).astype(np.float32)
        factors = oclla.lu_factor(a, queue=queue), oclla.cho_factor(a, queue=queue)
        for inverse in (0, 1):
            _params.override("trsm", dict(_params.params(queue, "trsm", np.float32),
                                          INVERSE=inverse))
            try:
                built = _programs.build_count()
                x_lu = oclla.lu_solve(factors[0], b, queue=queue)
                x_cho = oclla.cho_solve(factors[1], b, queue=queue)
            finally:
                _params.override("trsm", None)
            assert accuracy.solve_backward_error(a, x_lu, b) < 30
            assert accuracy.solve_backward_error(a, x_cho, b) < 30
            if n == 2 * nb + 1:
                assert _programs.build_count() == built, _programs.builds()[built:]


#: the flat tail in register leaves of LEAF_WG = 4 up to PANEL_WG = 8 items, up to 4 rows
#: (REG_SLOTS / LEAF_W) each: leaves of 1..16 rows on 4 items, 17..32 on 8
FLAT = dict(NB=8, LEAF_W=4, PANEL_WG=8, LEAF_WG=4, REG_SLOTS=16, PANEL="leaf", SMALL_N=0,
            LOOKAHEAD=0, FLAT_N=64, FLAT_AHEAD=1)


@pytest.mark.parametrize("ahead", [1, 0])
def test_flat_tail_builds_one_leaf_program_per_work_group_size(queue, ahead):
    """The register leaf (lu_rows.cl) is one program per work-group size: the rows each
    item holds (1, 2 or 4 here, by the order) are a run-time count, and with FLAT_AHEAD
    the tail's first leaf (nothing to apply yet) runs the program that applies the
    previous leaf's update in the others (prev = 0); the factors are right."""
    _params.override("lu", dict(FLAT, FLAT_AHEAD=ahead))
    _params.override("gemm_thin", dict(KERNEL="tiled", TILE_M=8, TILE_N=8, TILE_K=8,
                                       WPT_M=2, WPT_N=2, VEC=1, MAX_K=8))
    start = _programs.build_count()
    try:
        rng = np.random.default_rng(5)
        for n in (3, 6, 9, 16, 21, 32):
            a = rng.standard_normal((n, n)).astype(np.float32)
            lu, piv = oclla.lu_factor(a, method="blocked", queue=queue)
            assert accuracy.lu_backward_error(a, lu, piv) < 30
        leaves = [b for b in _programs.builds()[start:] if b.source == "lu_rows.cl"]
        assert {o for b in leaves for o in b.options if o.startswith("-DROWS=")} <= {"-DROWS=4"}
        assert len(leaves) <= 2, leaves   # WG = 4 and 8 (fewer: built by an earlier test)
    finally:
        _params.override("lu", None)
        _params.override("gemm_thin", None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_small_problems_build_no_64_bit_index_programs(queue, dtype, monkeypatch):
    """gemm, trsm and laswp take 32-bit element indices wherever their operands' buffers
    hold fewer than 2³¹ elements, in every routine: the factorizations and solves share
    their programs, and no 64-bit twin is built for them.  Every kernel lookup of the
    BLAS layer is recorded with the index width in force."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("no fp64")
    from oclla import blas
    seen = []

    def recording(queue, source, name, dtype, **defines):
        seen.append((source, name, _programs._index64.get()))
        return _programs.get_kernel(queue, source, name, dtype, **defines)

    monkeypatch.setattr(blas, "get_kernel", recording)
    rng = np.random.default_rng(6)
    n = 70
    x = rng.standard_normal((n, n))
    a, spd = x.astype(dtype), (x @ x.T + n * np.eye(n)).astype(dtype)
    b = rng.standard_normal((n, 2)).astype(dtype)
    lu_piv = oclla.lu_factor(a, queue=queue)
    oclla.lu_solve(lu_piv, b, queue=queue)
    for lower in (True, False):
        c = oclla.cho_factor(spd, lower=lower, method="blocked", queue=queue)
        oclla.cho_solve(c, b, queue=queue)
    # the solves' trsm.cl everywhere; gemm.cl where the device's factorizations of order
    # 70 take GEMMs (CPUs: not the GPUs' fused leaves and flat LU)
    assert "trsm.cl" in {source for source, _, _ in seen}
    assert [s for s in seen if s[2]] == []
    blas.gemm(queue, 9, 9, 9, 1.0, blas.View(cl_array.zeros(queue, 81, dtype).data, 0, 9),
              blas.View(cl_array.zeros(queue, 81, dtype).data, 0, 9), 0.0,
              blas.View(cl_array.zeros(queue, 81, dtype).data, 0, 9), dtype=dtype)
    assert seen[-1][0] == "gemm.cl" and not seen[-1][2]


def test_different_programs_build_at_once_and_one_program_once(queue, monkeypatch):
    """Two threads asking for two new programs build them at the same time: each build
    waits until the other has started (a lock around every build would never let the
    second start, and the wait would time out).  Four threads asking for one new program
    at once get it from one build, each its own kernel object."""
    real = _programs._build
    both = threading.Barrier(2, timeout=30)

    def build(ctx, source, options):
        if "-DOCLLA_TEST_OVERLAP=1" in options or "-DOCLLA_TEST_OVERLAP=2" in options:
            both.wait()
        elif "-DOCLLA_TEST_OVERLAP=3" in options:
            time.sleep(0.3)              # the other threads ask while it is under way
        return real(ctx, source, options)

    monkeypatch.setattr(_programs, "_build", build)

    def kernel(tag):
        return _programs.get_kernel(queue, "util.cl", "set_identity", np.float32,
                                    OCLLA_TEST_OVERLAP=tag)

    count = _programs.build_count()
    with ThreadPoolExecutor(4) as pool:
        assert len(list(pool.map(kernel, (1, 2)))) == 2
        assert _programs.build_count() == count + 2
        kernels = list(pool.map(lambda _: kernel(3), range(4)))
    assert _programs.build_count() == count + 3 and not _programs._pending
    assert len({id(k) for k in kernels}) == len(kernels)
    assert [b.options for b in _programs.builds()[count:]].count(
        _programs.builds()[-1].options) == 1


#: parameters of the tests below that no other test uses: their programs are new
CONCURRENT_CHOL = dict(NB=12, LEAF=6, WG=36, ROW_LEAF=0, FUSE_LEAF=0, TRSM_INVERSE=0,
                       RFP_TRSM_INVERSE=0, SMALL_N=14)


def _spd_matrix(rng, n, dtype):
    x = rng.standard_normal((n, n))
    return (x @ x.T + n * np.eye(n)).astype(dtype)


def test_concurrent_first_calls_build_each_program_once(queue):
    """First calls of the Cholesky and the LU from four threads at once, each at its own
    orders and triangle: every program is built once, and every result is right."""
    _params.override("chol", CONCURRENT_CHOL)
    start = _programs.build_count()
    try:
        def work(i):
            rng = np.random.default_rng(10 + i)
            errors = []
            for n in (13 + i, 29 + 2 * i):
                a = _spd_matrix(rng, n, np.float32)
                c = oclla.cholesky(a, lower=bool(i % 2), queue=queue)
                errors.append(accuracy.cholesky_backward_error(a, c, bool(i % 2)))
                g = rng.standard_normal((n, n)).astype(np.float32)
                lu, piv = oclla.lu_factor(g, queue=queue)
                errors.append(accuracy.lu_backward_error(g, lu, piv))
            return errors

        with ThreadPoolExecutor(4) as pool:
            errors = [e for errs in pool.map(work, range(4)) for e in errs]
        assert max(errors) < 30
        built = [(b.source, b.options) for b in _programs.builds()[start:]]
        assert any(s == "cholesky.cl" and "-DLEAF=6" in o for s, o in built)
        assert len(built) == len(set(built)), built
    finally:
        _params.override("chol", None)


def test_a_failed_build_reaches_every_waiting_thread_and_is_tried_again(queue, monkeypatch):
    """A build that fails raises its DeviceError in the thread that built and in those
    that waited for it; nothing is left pending, and a later request builds again."""
    real = _programs._build

    def failing(ctx, source, options):
        time.sleep(0.3)                  # the other threads ask while it is under way
        raise oclla.DeviceError("no compiler today")

    monkeypatch.setattr(_programs, "_build", failing)

    def ask(_):
        try:
            _programs.get_kernel(queue, "util.cl", "set_identity", np.float32,
                                 OCLLA_TEST_OVERLAP=4)
        except oclla.DeviceError as exc:
            return str(exc)
        return None

    with ThreadPoolExecutor(3) as pool:
        assert list(pool.map(ask, range(3))) == ["no compiler today"] * 3
    assert not _programs._pending
    monkeypatch.setattr(_programs, "_build", real)
    assert ask(0) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_both_triangles_share_the_packing_and_zeroing_programs(queue, dtype):
    """The RFP conversions and the zeroing of the other triangle take the triangle as an
    argument: lower and upper (each result checked) build no program of their own."""
    from oclla import rfp
    from oclla.cholesky import zero_other_triangle
    rng = np.random.default_rng(5)
    a = rng.standard_normal((7, 7)).astype(dtype)
    for lower in (True, False):          # the first pass builds what the second reuses
        before = _programs.build_count()
        arf = rfp.pack(a, lower=lower, queue=queue)
        keep = np.tril(a) if lower else np.triu(a)
        np.testing.assert_array_equal(rfp.unpack(arf, 7, lower=lower, queue=queue), keep)
        work = cl_array.to_device(queue, a)
        zero_other_triangle(queue, work, lower=lower)
        np.testing.assert_array_equal(work.get(), keep)
        if not lower:
            assert _programs.build_count() == before


@pytest.mark.parametrize("kernel", ("tiled", "direct"))
def test_one_gemm_program_serves_every_triangle(queue, kernel):
    """The triangle of C a GEMM writes is a kernel argument: after SYRK's lower triangle,
    its upper one and the plain product of the same shape (A·Bᵀ) build no gemm.cl
    program, and each writes its own part of C only."""
    from oclla.blas import gemm, syrk, view_of
    tile = (dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=1)
            if kernel == "tiled" else dict(KERNEL="direct", RM=3, VW=4, NV=1, LX=4))
    rng = np.random.default_rng(11)
    n, k = 37, 9
    a = rng.standard_normal((n, k)).astype(np.float32)
    da = cl_array.to_device(queue, a)
    start = None
    for triangle in ("lower", "upper", None):
        c0 = rng.standard_normal((n, n)).astype(np.float32)
        dc = cl_array.to_device(queue, c0)
        if triangle is None:
            gemm(queue, n, n, k, 1.0, view_of(da), view_of(da), 0.0, view_of(dc),
                 dtype=np.float32, trans_b=True, tile=tile)
        else:
            syrk(queue, n, k, 1.0, view_of(da), 0.0, view_of(dc), dtype=np.float32,
                 lower=triangle == "lower", tile=tile)
        written = {"lower": np.tril(np.ones((n, n), bool)),
                   "upper": np.triu(np.ones((n, n), bool)), None: np.ones((n, n), bool)}
        c = dc.get()
        np.testing.assert_array_equal(c[~written[triangle]], c0[~written[triangle]])
        np.testing.assert_allclose(c[written[triangle]], (a @ a.T)[written[triangle]],
                                   rtol=1e-5, atol=1e-5)
        start = _programs.build_count() if start is None else start
    assert not [b for b in _programs.builds()[start:] if b.source == "gemm.cl"]


def _assert_product_right(queue, rng, m, n, k, trans_a, trans_b, tile):
    """One float32 gemm of random operands with the given tile set, checked on the host."""
    from oclla.blas import gemm, view_of
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    da, db = cl_array.to_device(queue, a), cl_array.to_device(queue, b)
    dc = cl_array.zeros(queue, (m, n), np.float32)
    gemm(queue, m, n, k, 1.0, view_of(da), view_of(db), 0.0, view_of(dc),
         dtype=np.float32, trans_a=trans_a, trans_b=trans_b, tile=tile)
    want = (a.T if trans_a else a) @ (b.T if trans_b else b)
    np.testing.assert_allclose(dc.get(), want, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_the_four_tiled_products_share_one_program(queue):
    """gemm_tiled takes both transposes as arguments: AB, AᵀB, ABᵀ and AᵀBᵀ of one tile
    set build at most one gemm.cl program between them, and each is right, on both sides
    of the tile's edges."""
    tile = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=4)
    rng = np.random.default_rng(13)
    start = _programs.build_count()
    for trans_a, trans_b in ((False, False), (True, False), (False, True), (True, True)):
        _assert_product_right(queue, rng, 37, 21, 19, trans_a, trans_b, tile)
    built = [b.options for b in _programs.builds()[start:] if b.source == "gemm.cl"]
    assert len(built) <= 1, built


def test_per_shape_tiles_build_a_program_per_product_shape(queue):
    """With PER_SHAPE the transposes are build options: AB, AᵀB, ABᵀ and AᵀBᵀ have a
    program each (and each is right), a second product of a shape builds nothing, and a
    launch that passes no transposes (the fused Cholesky leaf's tiles) takes no such
    option."""
    from oclla.blas import tile_launch
    tile = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=4,
                PER_SHAPE=1)
    rng = np.random.default_rng(17)
    shapes = ((False, False), (True, False), (False, True), (True, True))
    for trans_a, trans_b in shapes:
        _assert_product_right(queue, rng, 37, 21, 19, trans_a, trans_b, tile)
    start = _programs.build_count()
    for trans_a, trans_b in shapes:
        _assert_product_right(queue, rng, 23, 40, 9, trans_a, trans_b, tile)
    assert _programs.build_count() == start
    defines = {tile_launch(tile, 16, 16, shape)[0]["TRANS_A"] * 2
               + tile_launch(tile, 16, 16, shape)[0]["TRANS_B"] for shape in shapes}
    assert defines == {0, 1, 2, 3}
    programs = [b.options for b in _programs.builds() if b.source == "gemm.cl"
                and "-DTILE_M=16" in b.options and "-DTILE_N=16" in b.options
                and "-DTILE_K=8" in b.options and "-DWPT_M=2" in b.options
                and "-DPRECISION=32" in b.options]
    shapes_built = sorted((o for o in programs if any(x.startswith("-DTRANS_A") for x in o)),
                          key=str)
    assert len(shapes_built) == 4 and len({tuple(o) for o in shapes_built}) == 4, programs
    assert "TRANS_A" not in tile_launch(tile, 16, 16)[0]


def test_per_shape_sets_take_one_product_shape_for_lu_syrk_and_ad2at(queue, monkeypatch):
    """Where each product shape has a program of its own (PER_SHAPE), the SYRK AᵀA of the
    upper and the packed Cholesky (through TN_COPY_K, in slabs and in one) and AD²Aᵀ (full
    and packed, both triangles) take the blocked LU's shape, AB: all of them together
    launch one gemm.cl program; and each result is right."""
    from oclla import blas
    from oclla.blas import syrk, view_of
    shapes = set()

    def get_kernel(queue, source, name, dtype, **defines):
        if name == "gemm_tiled":
            shapes.add((defines.get("TRANS_A"), defines.get("TRANS_B")))
        return _programs.get_kernel(queue, source, name, dtype, **defines)

    monkeypatch.setattr(blas, "get_kernel", get_kernel)
    tile = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=4,
                PER_SHAPE=1, TN_COPY_K=16)
    _params.override("gemm", tile)
    _params.override("gemm_thin", dict(tile, MAX_K=0))
    _params.override("lu", dict(SMALL_N=8, NB=16, FLAT_N=0, LOOKAHEAD=0))
    try:
        rng = np.random.default_rng(23)
        # one slab and three; rows of A 29 apart (copied for the vector loads) and 32
        for k, n, lower in itertools.product((12, 40), (29, 32), (True, False)):
            a = rng.standard_normal((k, n)).astype(np.float32)
            c0 = rng.standard_normal((n, n)).astype(np.float32)
            dc = cl_array.to_device(queue, c0)
            syrk(queue, n, k, -1.0, view_of(cl_array.to_device(queue, a)), 1.0,
                 view_of(dc), dtype=np.float32, lower=lower, trans=True)
            part = np.tril if lower else np.triu
            np.testing.assert_allclose(part(dc.get()), part(c0 - a.T @ a),
                                       rtol=1e-4, atol=1e-4)
        a = rng.standard_normal((23, 41)).astype(np.float32)
        d2 = rng.uniform(0.5, 2.0, 41).astype(np.float32)
        want = (a * d2) @ a.T
        for packed in (False, True):
            for lower in (True, False):
                c = oclla.assemble_ad2at(a, d2, packed=packed, lower=lower, queue=queue)
                full = oclla.rfp.unpack(c, 23, lower=lower) if packed else c
                part = np.tril if lower else np.triu
                np.testing.assert_allclose(full, part(want), rtol=1e-4, atol=1e-4)
        x = rng.standard_normal((50, 50)).astype(np.float32)
        lu, piv = oclla.lu_factor(x, queue=queue)
        assert accuracy.lu_backward_error(x, lu, piv) < 30
    finally:
        for family in ("gemm", "gemm_thin", "lu"):
            _params.override(family, None)
    assert shapes == {(0, 0)}, shapes


def test_packed_and_in_place_operands_share_the_direct_gemm_program(queue, monkeypatch):
    """gemm_direct reads op(B) in place or packed by pack_b (B transposed, or K >=
    PACK_MIN_K), and pack_b takes the transpose as an argument: pack_b is looked up
    with gemm_direct's own options, the products with B in place, transposed and deep
    (A as it is and transposed) build no gemm.cl program beyond one per TRANS_A, and
    all are right."""
    from oclla import blas
    from oclla.blas import PACK_MIN_K
    looked_up = []

    def recording(queue, source, name, dtype, **defines):
        looked_up.append((name, tuple(sorted(defines.items()))))
        return _programs.get_kernel(queue, source, name, dtype, **defines)

    monkeypatch.setattr(blas, "get_kernel", recording)
    tile = dict(KERNEL="direct", RM=3, VW=4, NV=1, LX=4)
    rng = np.random.default_rng(12)
    m, n = 19, 13
    seen = set()
    for trans_a in (False, True):
        start = _programs.build_count()
        for trans_b, k in ((False, 7), (True, 7), (False, PACK_MIN_K + 3), (True, PACK_MIN_K)):
            _assert_product_right(queue, rng, m, n, k, trans_a, trans_b, tile)
        built = [b.options for b in _programs.builds()[start:] if b.source == "gemm.cl"]
        assert len(built) <= 1 and not set(built) & seen, built
        seen |= set(built)
    options = {name: set() for name, _ in looked_up}
    for name, defines in looked_up:
        options[name].add(defines)
    assert options["pack_b"] and options["pack_b"] <= options["gemm_direct"], options
