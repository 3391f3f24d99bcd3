"""Blocked LU kernels over a grid of parameter sets (the tuner may pick any of them).

Recursive leaves, register leaves, per-column panels and a panel per launch
across work-groups, with and without look-ahead, and the one-launch path
for small n.  Each factorization must pass the backward-error threshold and
choose SciPy's pivots (random matrices have no ties).
"""

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.linalg as sl
import scipy.linalg.lapack as lapack
from hypothesis import given, settings, strategies as st

import oclla
from oclla import _params
from oclla._programs import get_kernel, int_zeros, side_queue
from oclla.lu_blocked import GRID_SLOT_WORDS, Panels, _pieces, grid_shared_ints
from oclla.accuracy import lu_backward_error, passes

from linalg_helpers import buildable, check_lu_sizes

DTYPES = (np.float32, np.float64)
PANEL_PIVOT_SET = dict(VW=1, NV=1, WX=8, WY=2, RB=7, UNR=4)   # per-column panels
BLOCKED_SETS = [
    dict(NB=16, LEAF_W=4, PANEL_WG=8, PANEL="leaf", SMALL_N=0, LOOKAHEAD=1),
    dict(NB=24, LEAF_W=8, PANEL_WG=1, PANEL="leaf", SMALL_N=0, LOOKAHEAD=0),
    dict(NB=16, LEAF_W=16, PANEL_WG=4, PANEL="columns", PANEL_RB=8, PANEL_WY=4, SMALL_N=0,
         LOOKAHEAD=1),
    dict(NB=40, LEAF_W=1, PANEL_WG=2, PANEL="columns", SMALL_N=50, LOOKAHEAD=0),
    dict(NB=48, LEAF_W=8, PANEL="columns", PANEL_SPLIT=8, SMALL_N=0, LOOKAHEAD=1),
    dict(NB=32, LEAF_W=8, PANEL="columns", PANEL_SPLIT=5, SMALL_N=0, LOOKAHEAD=0),
    # register leaves where m x w fits, the other leaves or per-column launches elsewhere
    dict(NB=32, LEAF_W=8, PANEL_WG=16, REG_SLOTS=8, PANEL="leaf", SMALL_N=0, LOOKAHEAD=0),
    dict(NB=64, LEAF_W=16, PANEL_WG=32, REG_SLOTS=16, PANEL="columns", PANEL_SPLIT=8,
         SMALL_N=0, LOOKAHEAD=1),
    dict(NB=16, LEAF_W=4, PANEL_WG=4, REG_SLOTS=64, PANEL="leaf", SMALL_N=20, LOOKAHEAD=0),
    # the trailing matrix as one panel of register leaves once its rows fit (FLAT_N),
    # after panels of one-work-group leaves or of per-column launches
    dict(NB=16, LEAF_W=8, PANEL_WG=16, REG_SLOTS=16, PANEL="leaf", SMALL_N=0, LOOKAHEAD=1,
         FLAT_N=1000),
    dict(NB=8, LEAF_W=4, PANEL_WG=8, REG_SLOTS=64, PANEL="columns", SMALL_N=0, LOOKAHEAD=0,
         FLAT_N=1000),
    # leaves of 4 items up to 32 as their rows need, moved 8 rows at a time at most; the
    # flat tail's leaves launched with the previous leaf's update
    dict(NB=16, LEAF_W=8, PANEL_WG=32, REG_SLOTS=32, LEAF_WG=4, LEAF_STAGE=8,
         PANEL="leaf", SMALL_N=0, LOOKAHEAD=0, FLAT_N=1000),
    dict(NB=16, LEAF_W=4, PANEL_WG=8, REG_SLOTS=16, PANEL="leaf", SMALL_N=0,
         LOOKAHEAD=0, FLAT_N=40, FLAT_AHEAD=1),
    dict(NB=16, LEAF_W=8, PANEL_WG=16, REG_SLOTS=16, LEAF_WG=8, PANEL="leaf", SMALL_N=0,
         LOOKAHEAD=0, FLAT_N=1000, FLAT_AHEAD=1),
    # 256 items: their candidates folded to LEAF_SCAN, then scanned; 64 items: folded to
    # LEAF_SCAN² first
    dict(NB=32, LEAF_W=4, PANEL_WG=256, REG_SLOTS=4, PANEL="leaf", SMALL_N=0, LOOKAHEAD=1),
    dict(NB=32, LEAF_W=4, PANEL_WG=64, REG_SLOTS=16, PANEL="leaf", SMALL_N=0, LOOKAHEAD=0,
         LEAF_SCAN=4),
    # a panel per launch across work-groups: rows in registers and in memory; all rows in
    # memory with more work-groups launched than run at once; registers only, recursive
    # halves of 8 columns, register leaves for the short panels
    dict(NB=16, PANEL="grid", GRID_WX=4, GRID_WY=2, GRID_RPI=2, SMALL_N=0,
         LOOKAHEAD=1),
    dict(NB=24, PANEL="grid", GRID_WX=8, GRID_WY=1, GRID_RPI=0, GRID_PER_CU=8,
         SMALL_N=0, LOOKAHEAD=0),
    dict(NB=48, PANEL="grid", GRID_WX=16, GRID_WY=4, GRID_RPI=32, PANEL_SPLIT=8, LEAF_W=8,
         PANEL_WG=16, REG_SLOTS=8, SMALL_N=0, LOOKAHEAD=1),
    # each panel on the fewest work-groups that hold its rows in registers, beside the
    # look-ahead's update
    dict(NB=16, PANEL="grid", GRID_WX=4, GRID_WY=2, GRID_RPI=2, GRID_PER_CU=8,
         GRID_FEWEST=1, SMALL_N=0, LOOKAHEAD=1),
    # the look-ahead's far update as GEMMs of at most about 24 columns (pieces of 32)
    dict(NB=16, LEAF_W=4, PANEL_WG=8, PANEL="leaf", SMALL_N=0, LOOKAHEAD=1, FAR_COLS=24),
]
GRID_SET = BLOCKED_SETS[-5]
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("p", BLOCKED_SETS, ids=lambda p: "-".join(map(str, p.values())))
def test_blocked_parameter_sets(queue, p, dtype):
    _params.override("lu", buildable(queue, dtype, p, key="LEAF_W"))
    _params.override("pivot", PANEL_PIVOT_SET)
    check_lu_sizes(queue, dtype, method="blocked")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_thin_updates_in_the_blocked_lu(queue, dtype):
    """The leaves' rank-LEAF_W updates through the ``gemm_thin`` shape (a GPU's choice)
    with register leaves and with one-work-group leaves."""
    _params.override("gemm_thin", dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8,
                                       WPT_M=2, WPT_N=2, VEC=4, MAX_K=8))
    for p in (BLOCKED_SETS[6], BLOCKED_SETS[0]):
        _params.override("lu", buildable(queue, dtype, p, key="LEAF_W"))
        check_lu_sizes(queue, dtype, method="blocked")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("pivoting", ("partial", "none"))
def test_register_leaves_factor_the_panels(queue, dtype, pivoting):
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    _params.override("lu", dict(NB=16, LEAF_W=8, PANEL_WG=16, REG_SLOTS=16, PANEL="leaf",
                                SMALL_N=0, LOOKAHEAD=0))
    n = 29                               # at most 2 rows of 8 per item: 32 rows fit
    a = np.random.default_rng(4).standard_normal((n, n)).astype(dtype)
    if pivoting == "none":
        a += n * np.eye(n, dtype=dtype)
    with oclla.record() as rec:
        lu, piv = oclla.lu_factor(a, pivoting=pivoting, queue=queue)
    names = {k.name for k in rec.runs[-1].kernels}
    assert "getf2_rows" in names and "getf2_leaf" not in names
    assert passes(lu_backward_error(a, lu, piv))
    if pivoting == "partial":
        np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
    else:
        np.testing.assert_array_equal(piv, np.arange(n))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("panel", ("registers", "grid-registers", "grid-memory"))
def test_panel_interchanges_repeated_and_inner_rows(queue, dtype, panel):
    """Pivot rows 20, 20, 3 in one panel: the rest of the panel sees row 20
    interchanged twice and row 3, a row of the panel's top block, once."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    if panel == "registers":
        p = dict(NB=16, LEAF_W=8, PANEL_WG=16, REG_SLOTS=16)    # m <= 32: the leaves fit
    else:
        p = dict(NB=16, PANEL="grid", GRID_WX=4, GRID_WY=2,
                 GRID_RPI=4 if panel == "grid-registers" else 0)
    _params.override("lu", dict(p, SMALL_N=0, LOOKAHEAD=0))
    n = 24
    a = 0.01 * np.random.default_rng(5).standard_normal((n, n))
    a[0, :2] = 1.0, 100.0
    a[20, :2] = 10.0, 0.0                # pivot of column 0; after the swap, of column 1
    a[3, 2] = 50.0                       # pivot of column 2, inside the leaf
    a = a.astype(dtype)
    expected = sl.lu_factor(a)[1]
    assert list(expected[:3]) == [20, 20, 3]
    lu, piv = oclla.lu_factor(a, queue=queue)
    np.testing.assert_array_equal(piv, expected)
    assert passes(lu_backward_error(a, lu, piv))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("pivoting", ("partial", "none"))
def test_grid_panels_one_launch_per_panel(queue, dtype, pivoting, monkeypatch):
    """Each panel is one getrf_grid launch; every participant published its candidate
    for the panel's last column (the slot of that column's parity carries its tag)."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    launches = []
    factor = Panels._grid

    def grid(self, c0, w):
        tag0 = self._grid_tag
        factor(self, c0, w)
        joins, shared = (b.get() for b in self._grid_buffers)
        launches.append((int(joins[c0]), shared, tag0 + w - 1, (w - 1) % 2, self.grid_groups))

    monkeypatch.setattr(Panels, "_grid", grid)
    _params.override("lu", dict(GRID_SET, GRID_PER_CU=3))
    n = 45
    a = np.random.default_rng(6).standard_normal((n, n)).astype(dtype)
    if pivoting == "none":
        a += n * np.eye(n, dtype=dtype)
    with oclla.record() as rec:
        lu, piv = oclla.lu_factor(a, pivoting=pivoting, queue=queue)
    names = [k.name for k in rec.runs[-1].kernels]
    assert names.count("getrf_grid") == len(launches) == 3
    assert "pivot_step" not in names and "getf2_leaf" not in names
    assert passes(lu_backward_error(a, lu, piv))
    expected = sl.lu_factor(a)[1] if pivoting == "partial" else np.arange(n)
    np.testing.assert_array_equal(piv, expected)
    closed = 0x40000000
    for state, shared, last_tag, par, launched in launches:
        joined = state & ~closed
        assert state & closed and 1 <= joined <= launched
        slots = shared[:2 * 2 * launched * GRID_SLOT_WORDS].reshape(2, launched, -1)
        value_tags, row_tags = slots[par, :, 1], slots[par, :, 5]      # words 0 and 2
        np.testing.assert_array_equal(value_tags[:joined], last_tag)
        np.testing.assert_array_equal(row_tags[:joined], last_tag)
        assert (value_tags[joined:] != last_tag).all()        # those that took no part


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rows", (0, 4))
@pytest.mark.parametrize("wx, cpi", ((8, 3), (1, 24)), ids=("8-items", "1-item"))
def test_grid_panel_with_work_groups_that_wait_for_each_other(queue, dtype, rows, wx, cpi):
    """getrf_grid with every launched work-group taking part (GRID_WAIT long enough
    for all to join), repeated: each launch gives LAPACK's factors and pivots.  The
    work-groups drift apart by up to a column and read each other's words as they
    come; a protocol or compiler fault shows as a wrong factor now and then (PoCL
    with two threads, before the words were read as below: 84 of 300 launches).
    Work-groups of one item gather the participants' candidates one at a time (more
    participants than items that gather them)."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    m, w, groups = 25, 24, 2
    kernel = get_kernel(queue, "lu_grid.cl", "getrf_grid", dtype, WX=wx, WY=1, CPI=cpi,
                        RPI=rows, SLOT_WORDS=GRID_SLOT_WORDS, NO_PIVOT=0,
                        GRID_WAIT=1 << 22)
    a = np.random.default_rng(0).standard_normal((m, m)).astype(dtype)
    getrf = lapack.sgetrf if dtype == np.float32 else lapack.dgetrf
    lu_ref, piv_ref, _ = getrf(a[:, :w].copy())
    tol = 1e-4 if dtype == np.float32 else 1e-12
    wrong = []
    for launch in range(40):
        panel = cl_array.to_device(queue, a)
        piv, info, joins = int_zeros(queue, m), int_zeros(queue, 1), int_zeros(queue, 1)
        shared = int_zeros(queue, grid_shared_ints(groups, cpi * wx, dtype))
        kernel(queue, (groups * wx, 1), (wx, 1), panel.data, np.int32(m), np.int32(m),
               np.int32(0), np.int32(w), piv.data, info.data, joins.data, np.int32(0),
               shared.data, np.int32(1), np.int32(-(-m // groups)))
        lu = panel.get()[:, :w]
        if not (np.allclose(lu, lu_ref, rtol=tol, atol=tol)
                and np.array_equal(piv.get()[:w], piv_ref)):
            wrong.append(launch)
    assert not wrong, wrong


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_grid_panels_divide_by_subnormal_pivots(queue, dtype):
    """Where a grid panel's pivot is subnormal its multipliers are quotients, as
    LAPACK's (1 / pivot overflows): columns scaled into the subnormal range, on rows
    in registers and in memory, give the factors and pivots of an unblocked
    elimination in float64 (IEEE subnormals; the float32 BLAS behind SciPy loses
    them and pivots otherwise)."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    n = 40
    a = np.random.default_rng(9).standard_normal((n, n))
    a[:, [0, 3, 17]] *= 1e-39 if dtype == np.float32 else 1e-310
    a = a.astype(dtype)
    assert 0 < np.abs(a[:, 0]).max() < np.finfo(dtype).tiny
    ref, piv_ref = a.astype(np.float64), np.zeros(n, np.int64)
    for j in range(n):                   # partial pivoting, one column at a time
        p = piv_ref[j] = j + np.argmax(np.abs(ref[j:, j]))
        ref[[j, p]] = ref[[p, j]]
        ref[j + 1:, j] /= ref[j, j]
        ref[j + 1:, j + 1:] -= np.outer(ref[j + 1:, j], ref[j, j + 1:])
    _params.override("lu", GRID_SET)
    lu, piv = oclla.lu_factor(a, queue=queue)
    np.testing.assert_array_equal(piv, piv_ref)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.tril(lu, -1), np.tril(ref, -1), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fewest, tall", ((1, 0), (5, 0), (99, 0), (1, 40), (5, 40), (1, 30)))
def test_grid_panels_on_the_fewest_work_groups(queue, dtype, fewest, tall):
    """GRID_FEWEST = g: each panel's launch takes the fewest work-groups whose register
    rows hold its row blocks, at least g and at most compute units x GRID_PER_CU (a
    panel that all of them cannot hold in GRID_RPI rows per item takes twice or four
    times as many: the first one on two compute units; with GRID_TALL = t a panel of
    more than t rows starts from twice GRID_RPI, of more than 2t from four times); the
    factors and pivots are those of every work-group."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    p = dict(GRID_SET, GRID_PER_CU=8, GRID_FEWEST=fewest, GRID_TALL=tall)
    most = oclla.device_info(queue).compute_units * 8
    n = 77
    a = np.random.default_rng(8).standard_normal((n, n)).astype(dtype)
    _params.override("lu", p)
    with oclla.record() as rec:
        lu, piv = oclla.lu_factor(a, queue=queue)
    launched = [k.global_size[0] // p["GRID_WX"] for k in rec.runs[-1].kernels
                if k.name == "getrf_grid"]
    blocks = [-(-(n - c0) // p["GRID_WY"]) for c0 in range(0, n, p["NB"])]

    def rows(b):                         # twice, then four times GRID_RPI for taller panels
        r, t = p["GRID_RPI"], p["GRID_TALL"]
        while t and b * p["GRID_WY"] > t:
            r, t = r * 2, t * 2
        for _ in range(2):
            r *= 2 if b > most * r else 1
        return r

    assert launched == [min(most, max(fewest, -(-b // rows(b)))) for b in blocks]
    assert len(set(launched)) > 1 or fewest == 99
    if tall:                             # the second panel (62 rows) on half as many or fewer
        p["GRID_TALL"] = 0
        assert launched[1] * 2 <= min(most, max(fewest, -(-blocks[1] // rows(blocks[1]))))
    assert passes(lu_backward_error(a, lu, piv))
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])


@pytest.mark.parametrize("panel", ("grid", "columns"))
def test_blocked_zero_column_warns_like_scipy(queue, panel):
    p = GRID_SET if panel == "grid" else BLOCKED_SETS[2]
    _params.override("lu", p)
    _params.override("pivot", PANEL_PIVOT_SET)
    a = np.random.default_rng(7).standard_normal((40, 40)).astype(np.float32)
    a[:, 5] = 0.0
    with pytest.warns(sl.LinAlgWarning, match="Diagonal number 6 is exactly zero"):
        lu, piv = oclla.lu_factor(a, queue=queue)
    with pytest.warns(sl.LinAlgWarning):
        ref_lu, ref_piv = sl.lu_factor(a)
    np.testing.assert_array_equal(piv, ref_piv)
    np.testing.assert_allclose(lu, ref_lu, atol=1e-4)


def test_grid_shapes_that_cannot_run_are_refused(queue):
    info = oclla.device_info(queue)
    base = dict(_params.params(queue, "lu", np.float32))
    for bad in (dict(GRID_WX=3), dict(GRID_WY=0), dict(GRID_RPI=3), dict(GRID_PER_CU=0),
                dict(GRID_WX=info.max_work_group_size, GRID_WY=2), dict(GRID_FEWEST=-1),
                dict(GRID_FEWEST=4, GRID_RPI=0), dict(GRID_TALL=-1)):
        assert "GRID" in _params.check("lu", dict(base, **bad), info, 4), bad
    assert "PANEL" in _params.check("lu", dict(base, PANEL="rows"), info, 4)
    assert _params.check("lu", dict(base, PANEL="grid"), info, 4) is None


def test_register_leaf_needs_room(queue):
    """Rows per item (a power of two) for m rows of LEAF_W columns, or 0 where they
    would take more than REG_SLOTS registers or 16 rows per item."""
    _params.override("lu", dict(LEAF_W=8, PANEL_WG=16, REG_SLOTS=32, PANEL="leaf"))
    panels = Panels(queue, None, 0, None, None, _params.params(queue, "lu", np.float32),
                     dtype=np.float32, no_pivot=False)
    assert [panels._reg_shape(m) for m in (1, 16, 17, 33, 64, 65)] == \
        [(16, 1), (16, 1), (16, 2), (16, 4), (16, 4), None]
    _params.override("lu", dict(LEAF_W=4, PANEL_WG=2, REG_SLOTS=64, PANEL="leaf"))
    panels.p = _params.params(queue, "lu", np.float32)
    assert panels._reg_shape(32) == (2, 16) and panels._reg_shape(33) is None  # 16 rows at most
    _params.override("lu", dict(LEAF_W=16, PANEL_WG=8, REG_SLOTS=0, PANEL="leaf"))
    panels.p = _params.params(queue, "lu", np.float32)
    assert panels._reg_shape(1) is None


def test_register_leaf_takes_the_fewest_items_that_hold_its_rows(queue):
    """From LEAF_WG items up to PANEL_WG, by powers of two: as few as hold the rows at
    REG_SLOTS / LEAF_W rows per item."""
    _params.override("lu", dict(LEAF_W=8, PANEL_WG=64, REG_SLOTS=32, LEAF_WG=4,
                                PANEL="leaf"))
    panels = Panels(queue, None, 0, None, None, _params.params(queue, "lu", np.float32),
                     dtype=np.float32, no_pivot=False)
    assert [panels._reg_shape(m) for m in (1, 5, 16, 17, 33, 256, 257)] == \
        [(4, 1), (4, 2), (4, 4), (8, 4), (16, 4), (64, 4), None]


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 70), seed=st.integers(0, 2**32 - 1),
       shape=st.sampled_from([(4, 4, 16), (8, 8, 16), (16, 4, 64), (8, 16, 32)]),
       flat=st.sampled_from([0, 24, 1000]), scan=st.sampled_from([2, 4, 32]),
       leaf_wg=st.sampled_from([0, 1, 4]), ahead=st.sampled_from([0, 1]),
       double=st.booleans())
def test_property_register_leaves(queue, n, seed, shape, flat, scan, leaf_wg, ahead, double):
    """Register leaves of any shape (LEAF_W, PANEL_WG, REG_SLOTS, LEAF_WG), with or
    without the flat tail (and its look-ahead) and any candidate fold, on random
    orders: LAPACK's pivots, small backward error; the input is left alone."""
    dtype = np.float64 if double and oclla.device_info(queue).fp64 else np.float32
    lw, wg, slots = shape
    _params.override("lu", buildable(queue, dtype, dict(
        NB=8, LEAF_W=lw, PANEL_WG=wg, REG_SLOTS=slots, PANEL="leaf", SMALL_N=0, LOOKAHEAD=0,
        FLAT_N=flat, LEAF_SCAN=scan, LEAF_WG=leaf_wg, FLAT_AHEAD=ahead), key="LEAF_W"))
    a = np.random.default_rng(seed).uniform(-1, 1, (n, n)).astype(dtype)
    before = a.copy()
    lu, piv = oclla.lu_factor(a, queue=queue)
    np.testing.assert_array_equal(a, before)
    assert passes(lu_backward_error(a, lu, piv))
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, scan, flat", [
    ((8, 64, 16), 4, 0), ((8, 64, 16), 32, 1000), ((4, 16, 64), 2, 1000), ((16, 32, 32), 8, 0)])
def test_register_leaves_break_ties_by_the_lowest_row(queue, dtype, shape, scan, flat):
    """A = L U with every multiplier of magnitude 1 (L's entries below the diagonal
    +-1, U's small integers: elimination is exact): every pivot column's candidates
    tie, spread over the leaf's items (shape: LEAF_W, PANEL_WG, REG_SLOTS) and the folds
    of their candidates, and LAPACK takes the lowest row each time (no interchange)."""
    if np.dtype(dtype) == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("no float64 on this device")
    lw, wg, slots = shape
    _params.override("lu", buildable(queue, dtype, dict(
        NB=8, LEAF_W=lw, PANEL_WG=wg, REG_SLOTS=slots, PANEL="leaf", SMALL_N=0, LOOKAHEAD=0,
        FLAT_N=flat, LEAF_SCAN=scan), key="LEAF_W"))
    rng = np.random.default_rng(lw * wg + scan)
    n = 61
    lower = np.tril(rng.choice([-1.0, 1.0], (n, n)), -1) + np.eye(n)
    upper = np.triu(rng.integers(1, 4, (n, n)).astype(float))
    a = (lower @ upper).astype(dtype)
    lu, piv = oclla.lu_factor(a, queue=queue)
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
    np.testing.assert_array_equal(piv, np.arange(n))
    np.testing.assert_array_equal(np.triu(lu), upper.astype(dtype))
    np.testing.assert_array_equal(np.tril(lu, -1), np.tril(lower, -1).astype(dtype))


def factor_recorded(queue, lu_params: dict, n: int, seed: int):
    """(a, run) of a recorded blocked LU of a random float32 matrix under ``lu_params``,
    its factors checked against LAPACK's pivots and the backward error bar."""
    _params.override("lu", lu_params)
    a = np.random.default_rng(seed).standard_normal((n, n)).astype(np.float32)
    with oclla.record() as rec:
        lu, piv = oclla.lu_factor(a, queue=queue)
    assert passes(lu_backward_error(a, lu, piv))
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
    return a, rec.runs[-1]


@pytest.mark.parametrize("flat", (0, 26, 25))
def test_flat_tail_is_one_panel(queue, flat):
    """The trailing matrix becomes one panel once its order is at most FLAT_N and its
    rows fit the register leaves (here 32 rows): each leaf then updates all of it, with
    no TRSM or interchange launches between leaves; before, panels are NB wide.  The
    last panel defers its interchanges: leaf and flat_update per leaf, then the U12
    blocks solved and the rows gathered once."""
    _, run = factor_recorded(queue, dict(NB=8, LEAF_W=8, PANEL_WG=16, REG_SLOTS=16,
                                         PANEL="leaf", SMALL_N=0, LOOKAHEAD=0, FLAT_N=flat),
                             50, 8)
    panels = [s for s in run.steps if s.phase == "panel"]
    widths = [s.region[3] - s.region[2] for s in panels]
    assert widths == {0: [8] * 6 + [2], 26: [8, 8, 8, 26], 25: [8] * 4 + [18]}[flat]
    names = [k.name for k in panels[-1].kernels]
    leaves = -(-widths[-1] // 8)
    assert names == ["getf2_rows", "flat_update"] * (leaves - 1) + ["getf2_rows"] \
        + ["flat_solve"] * (leaves > 1) + ["gather_rows", "gather_rows copy"]
    # no interchange launch after the last panel: its rows are in place in every column
    assert run.steps[-1].phase == "panel"


def test_flat_tail_look_ahead_in_one_launch(queue):
    """With FLAT_AHEAD each leaf but the first also applies the previous leaf's
    update (its own columns as it loads them, the rest in the launch's other
    work-groups): one launch per leaf, no flat_update, the same factors; where the
    update's tile does not fit the leaf's items, or the leaves are one column wide,
    the leaf and its update go apart."""
    p = dict(NB=8, LEAF_W=8, PANEL_WG=16, REG_SLOTS=64, PANEL="leaf", SMALL_N=0,
             LOOKAHEAD=0, FLAT_N=64, FLAT_AHEAD=1)
    _params.override("gemm_thin", dict(KERNEL="tiled", TILE_M=8, TILE_N=8, TILE_K=8,
                                       WPT_M=2, WPT_N=2, VEC=1, MAX_K=8))
    a, run = factor_recorded(queue, p, 50, 11)
    names = [k.name for k in run.steps[-1].kernels]
    assert names == ["getf2_rows"] * 7 + ["flat_solve", "gather_rows", "gather_rows copy"]
    launches = [k for k in run.steps[-1].kernels if k.name == "getf2_rows"]
    # leaves of 16 items; tiles of 4 x 4 items, 8 x 8 entries: rows [8, 50) x columns
    # [16, 50), then rows [16, 50) x columns [24, 50)
    assert [k.global_size[0] // 16 for k in launches[:3]] == [1, 1 + 6 * 5, 1 + 5 * 4]
    fused = oclla.lu_factor(a, queue=queue)[0]
    _params.override("lu", dict(p, FLAT_AHEAD=0))
    np.testing.assert_allclose(fused, oclla.lu_factor(a, queue=queue)[0], rtol=1e-5,
                               atol=1e-5)
    _params.override("gemm_thin", dict(KERNEL="tiled", TILE_M=16, TILE_N=64, TILE_K=8,
                                       WPT_M=2, WPT_N=2, VEC=1, MAX_K=8))   # 32 items
    _, run = factor_recorded(queue, p, 50, 11)
    names = [k.name for k in run.steps[-1].kernels]
    assert names.count("getf2_rows") == 7 and names.count("flat_update") == 6
    _, run = factor_recorded(queue, dict(p, LEAF_W=1), 20, 12)   # one-column leaves: apart
    names = [k.name for k in run.steps[-1].kernels]
    assert names.count("getf2_rows") == 20 and names.count("flat_update") == 19


def test_register_panels_before_the_last_take_their_other_columns_in_a_launch(queue):
    """A register panel that is not the last one interchanges its other columns and
    forms U12 itself, across work-groups (``leaf_columns``) where they are more than
    the leaf's items."""
    _, run = factor_recorded(queue, dict(NB=16, LEAF_W=4, PANEL_WG=4, REG_SLOTS=64,
                                         PANEL="leaf", SMALL_N=0, LOOKAHEAD=0, FLAT_N=0),
                             40, 9)
    first = [k.name for k in run.steps[0].kernels]
    assert first[:2] == ["getf2_rows", "leaf_columns"] and first[2].startswith("gemm")


def test_register_leaf_stage_fits_local_memory(queue):
    """The register leaf moves the most rows through local memory at once that fit
    beside its other arrays: a power of two from PANEL_WG / LEAF_W up to PANEL_WG, 0 if
    not even the fewest fit."""
    _params.override("lu", dict(LEAF_W=16, PANEL_WG=64, REG_SLOTS=64, PANEL="leaf"))
    panels = Panels(queue, None, 0, None, None, _params.params(queue, "lu", np.float32),
                     dtype=np.float32, no_pivot=False)
    fixed = (64 + 3 * 16 + 16 * 16) * 4 + (64 + 5 * 16 + 4) * 4   # candidates, rows, L11, ...
    panels.local_mem = fixed + 64 * (17 * 4 + 4)                    # a row: entries, its place
    assert panels._stage_rows(64) == 64 and panels._reg_shape(100) == (64, 2)
    panels.local_mem -= 1
    assert panels._stage_rows(64) == 32
    panels.local_mem = fixed + 4 * (17 * 4 + 4)
    assert panels._stage_rows(64) == 4
    panels.local_mem -= 1
    assert panels._stage_rows(64) == 0 and panels._reg_shape(100) is None
    panels.local_mem = 1 << 20
    panels.p = dict(panels.p, LEAF_STAGE=16)                  # at most LEAF_STAGE rows
    assert panels._stage_rows(64) == 16 and panels._stage_rows(8) == 8


@pytest.mark.parametrize("stage", (2, 4))
def test_register_leaves_through_a_small_stage(queue, stage, monkeypatch):
    """Leaves moved through local memory fewer rows at a time than the work-group has
    items (a device with little local memory) factor the same."""
    monkeypatch.setattr(Panels, "_stage_rows", lambda self, wg, tile=None: stage)
    n = 29
    a = np.random.default_rng(6).standard_normal((n, n)).astype(np.float32)
    for ahead in (0, 1):             # also the previous leaf's update through the stage
        _params.override("lu", dict(NB=16, LEAF_W=8, PANEL_WG=16, REG_SLOTS=16,
                                    PANEL="leaf", SMALL_N=0, LOOKAHEAD=0, FLAT_N=64,
                                    FLAT_AHEAD=ahead))
        with oclla.record() as rec:
            lu, piv = oclla.lu_factor(a, queue=queue)
        names = [k.name for k in rec.runs[-1].kernels]
        assert "getf2_rows" in names and ("flat_update" in names) == (ahead == 0)
        assert passes(lu_backward_error(a, lu, piv))
        np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])


def test_register_leaves_wider_than_the_work_group(queue):
    """Rows j >= PANEL_WG of a leaf live in later slots of their work-items."""
    _params.override("lu", dict(NB=32, LEAF_W=8, PANEL_WG=4, REG_SLOTS=16, PANEL="leaf",
                                SMALL_N=0, LOOKAHEAD=0))
    check_lu_sizes(queue, np.float32)


def test_leaf_width_two_is_refused(queue):
    info = oclla.device_info(queue)
    p = dict(_params.params(queue, "lu", np.float32), LEAF_W=2)
    assert "LEAF_W" in _params.check("lu", p, info, 4)


def test_small_path_is_one_launch(queue):
    _params.override("lu", dict(SMALL_N=64))
    a = np.random.default_rng(1).standard_normal((50, 50)).astype(np.float32)
    with oclla.record() as rec:
        oclla.lu_factor(a, queue=queue)
    run = rec.runs[-1]
    assert [s.phase for s in run.steps] == ["panel"]
    assert [k.name for k in run.steps[0].kernels] == ["getf2_leaf"]


def test_lookahead_recording_keeps_the_step_order(queue):
    _params.override("lu", dict(NB=16, LOOKAHEAD=1, SMALL_N=0, PANEL="leaf"))
    n = 70
    a = np.random.default_rng(2).standard_normal((n, n)).astype(np.float32)
    with oclla.record(snapshots=True) as rec:
        lu, piv = oclla.lu_factor(a, queue=queue)
    run = rec.runs[-1]
    phases = [s.phase for s in run.steps]
    assert phases[:5] == ["panel", "laswp", "trsm", "gemm", "panel"]
    assert phases.count("panel") == -(-n // 16)
    np.testing.assert_array_equal(run.snapshot_at(len(run.steps) - 1), lu)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("route", ("chain", "columns"))
@pytest.mark.parametrize("once", (1, 0), ids=("invert-once", "invert-per-queue"))
def test_lookahead_inverts_each_diagonal_block_once(queue, dtype, route, once):
    """With look-ahead, solves by inverses and INVERT_ONCE, each panel's L11 is inverted
    once, in the panel's step (on the second queue), for both queues' solves: one
    trtri_blocks per panel that has a far update, none in the trsm steps (the solve of
    the last panel's right columns, on one queue, inverts its own where its route
    inverts); without INVERT_ONCE each queue's solve inverts them (the far one always,
    the near one where its route inverts).  SciPy's pivots and a small backward error
    with look-ahead and without."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    if side_queue(queue) is None:
        pytest.skip("the device refuses a second queue: no look-ahead")
    _params.override("trsm", dict(TRSM_NB=8, INVERSE=1, REGISTER=0, FEW_RHS=16,
                                  FEW_ROUTE=route))
    n, nb = 101, 24
    a = np.random.default_rng(9).standard_normal((n, n)).astype(dtype)
    out = {}
    try:
        for ahead in (0, 1):
            _params.override("lu", dict(NB=nb, LEAF_W=8, PANEL_WG=8, PANEL="leaf", SMALL_N=0,
                                        LOOKAHEAD=ahead, INVERT_ONCE=once))
            with oclla.record() as rec:
                out[ahead] = oclla.lu_factor(a, queue=queue)
            steps = rec.runs[-1].steps
            panels = [[k.name for k in s.kernels] for s in steps if s.phase == "panel"]
            solves = [k.name for s in steps if s.phase == "trsm" for k in s.kernels]
            if ahead:
                far = n // nb - 1            # panels followed by more than the next panel
                assert [p.count("trtri_blocks") for p in panels] == [once] * far + [0] * 2
                # per queue: the near solves (24 columns, the GEMMs) 3, the far ones of 53
                # and 29 columns 2, of 5 (few) and the last panel's 5 by the route: chain 2
                assert solves.count("trtri_blocks") == {
                    (1, "chain"): 1, (1, "columns"): 0, (0, "chain"): 7,
                    (0, "columns"): 5}[once, route]
    finally:
        _params.override("trsm", None)
    for lu, piv in out.values():
        np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
        assert passes(lu_backward_error(a, lu, piv))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_far_update_in_pieces_is_the_same_factor(queue, dtype):
    """FAR_COLS splits the look-ahead's far trailing update into GEMMs of consecutive
    column blocks: more GEMM launches, and the same factor bit for bit (each entry's sum
    in the same order)."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no float64")
    if side_queue(queue) is None:
        pytest.skip("the device refuses a second queue: no look-ahead")
    n = 150
    a = np.random.default_rng(8).standard_normal((n, n)).astype(dtype)
    out = {}
    for cols in (0, 40):
        _params.override("lu", dict(NB=16, LEAF_W=4, PANEL_WG=8, PANEL="leaf", SMALL_N=0,
                                    LOOKAHEAD=1, FAR_COLS=cols))
        with oclla.record() as rec:
            lu, piv = oclla.lu_factor(a, queue=queue)
        gemms = [k for s in rec.runs[-1].steps if s.phase == "gemm" for k in s.kernels]
        out[cols] = lu, piv, len(gemms)
    np.testing.assert_array_equal(out[40][0], out[0][0])
    np.testing.assert_array_equal(out[40][1], out[0][1])
    # step 0: 118 far columns in 3 GEMMs of 48, 48, 22 instead of 1
    assert out[40][2] > out[0][2]
    assert passes(lu_backward_error(a, *out[40][:2]))


@settings(max_examples=60, deadline=None)
@given(width=st.integers(0, 5000), cols=st.integers(0, 3000), unit=st.integers(1, 300))
def test_property_far_pieces_cover_the_columns(width, cols, unit):
    """The pieces cover [0, width) in order, each a multiple of unit but the last, as
    few as have at most about cols columns each (cols rounded up to the unit)."""
    pieces = _pieces(width, cols, unit)
    assert [c for c, _ in pieces] == list(np.cumsum([0] + [w for _, w in pieces])[:-1])
    assert sum(w for _, w in pieces) == width
    assert all(w > 0 for _, w in pieces) or width == 0
    assert all(w % unit == 0 for _, w in pieces[:-1])
    if cols <= 0 or width <= cols:
        assert pieces == [(0, width)]
    else:
        assert len(pieces) <= -(-width // cols)
        assert max(w for _, w in pieces) <= -(-cols // unit) * unit


