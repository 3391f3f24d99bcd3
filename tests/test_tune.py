"""oclla tune: the search runs, keeps only correct candidates, and stores what it found."""

import json

import numpy as np
import pytest

import oclla
from oclla import _knobs, _params, tune


@pytest.fixture
def small_problems(monkeypatch):
    """Tuning problems small enough for a test (the search itself is unchanged)."""
    monkeypatch.setitem(tune.LU_N, "CPU", 160)
    monkeypatch.setitem(tune.LU_N, "GPU", 160)
    monkeypatch.setattr(tune, "SMALL_SIZES", (32, 64))
    monkeypatch.setattr(tune, "CHOL_SMALL_SIZES", {"CPU": (48, 96), "GPU": (48, 96)})
    monkeypatch.setitem(tune.PIVOT_N, "CPU", 96)
    monkeypatch.setitem(tune.PIVOT_N, "GPU", 96)


def test_chol_search_stores_a_correct_set(queue, tmp_path, small_problems):
    lines = []
    found = tune.tune(queue, np.float32, {"chol"}, quick=True, log=lines.append)
    chol = found["chol"]
    info = oclla.device_info(queue)
    assert _params.check("chol", chol, info, 4) is None
    assert any(line.startswith("chol NB ->") for line in lines)
    assert any(line.startswith("chol LEAF ->") for line in lines)
    assert chol["SMALL_N"] in (0, 48, 96)
    assert any(line == f"chol SMALL_N -> {chol['SMALL_N']}" for line in lines)
    _params.override("chol", chol)
    assert tune.check_chol(queue, np.float32) is None

    path = tmp_path / "tuned.json"
    tune.store(str(path), info, "float32", found, dict(seconds=1.0))
    entry = json.loads(path.read_text())["entries"][0]
    assert entry["device"] == info.name and entry["params"]["chol"] == chol


def test_a_wrong_candidate_is_rejected(queue, monkeypatch, small_problems):
    """A candidate that computes wrong factors is logged as rejected, never chosen."""
    lines = []
    real_check = tune.check_chol

    def check_refusing_leaf_16(q, dtype):
        if _params.params(q, "chol", dtype)["LEAF"] == 16:
            return "backward error 1e9 at n=37"
        return real_check(q, dtype)

    monkeypatch.setattr(tune, "check_chol", check_refusing_leaf_16)
    found = tune.tune(queue, np.float32, {"chol"}, quick=True, log=lines.append)
    assert found["chol"]["LEAF"] != 16
    assert any("LEAF=16: rejected (backward error" in line for line in lines)


def test_lu_search_gives_pivots_like_scipy(queue, small_problems):
    lines = []
    found = tune.tune(queue, np.float32, {"lu"}, quick=True, log=lines.append)
    assert set(found) == {"lu", "trsm", "laswp", "gemm_thin"}
    assert any(line.startswith("lu SMALL_N ->") for line in lines)
    for fam, p in found.items():
        _params.override(fam, p)
    assert tune.check_lu(queue, np.float32) is None


def test_thin_gemm_axes_keep_a_correct_shape(queue, small_problems, monkeypatch):
    """The LU search's gemm_thin axes (here alone, from a tiled starting shape): every
    candidate that runs is logged, and the kept shape is a valid, correct one."""
    monkeypatch.setitem(tune.SPACE, "lu", lambda kind, quick: [
        ("gemm_thin", "MAX_K", (0, 16)), ("gemm_thin", "TILE_M", (8, 16))])
    start = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=4,
                 MAX_K=8)
    monkeypatch.setattr(_params, "_defaults", lambda q, info, family, size, real=_params._defaults:
                        start if family == "gemm_thin" else real(q, info, family, size))
    _params.reload()
    lines = []
    found = tune.tune(queue, np.float32, {"lu"}, quick=True, log=lines.append)
    thin = found["gemm_thin"]
    assert _params.check("gemm_thin", thin, oclla.device_info(queue), 4) is None
    assert any(line.startswith("gemm_thin MAX_K ->") for line in lines)
    assert any(line.startswith("  gemm_thin TILE_M=8: ") for line in lines)
    _params.override("gemm_thin", thin)
    assert tune.check_lu(queue, np.float32) is None


TILED = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=4)


@pytest.fixture
def one_tiled_shape(monkeypatch):
    """The gemm search reduced to one small tiled shape at n = 48."""
    monkeypatch.setitem(tune.SPACE, "gemm", lambda kind, native, quick: [dict(TILED)])
    monkeypatch.setitem(tune.GEMM_N, "CPU", 48)
    monkeypatch.setitem(tune.GEMM_N, "GPU", 48)


@pytest.mark.parametrize("per_shape, copy_k", [(0, 256), (1, 0)])
def test_gemm_search_keeps_the_faster_shapes(queue, one_tiled_shape, monkeypatch, per_shape,
                                             copy_k):
    """After the tile search, PER_SHAPE and TN_COPY_K take the value whose measured time
    is lower (the timings replaced here by ones that favour the parametrized values)."""
    monkeypatch.setattr(tune, "_products_seconds",
                        lambda q, p, a, c, n, dt: 1.0 if p["PER_SHAPE"] == per_shape else 2.0)
    monkeypatch.setattr(tune, "_syrk_seconds",
                        lambda q, p, a, c, n, dt: 1.0 if p["TN_COPY_K"] == copy_k else 2.0)
    lines = []
    found = tune.tune(queue, np.float32, {"gemm"}, quick=True, log=lines.append)
    assert found["gemm"]["PER_SHAPE"] == per_shape and found["gemm"]["TN_COPY_K"] == copy_k
    assert f"gemm PER_SHAPE -> {per_shape}" in lines and f"gemm TN_COPY_K -> {copy_k}" in lines
    assert "  gemm PER_SHAPE=1: 2000.00 ms" in lines or "  gemm PER_SHAPE=0: 2000.00 ms" in lines


def test_gemm_search_rejects_a_wrong_route(queue, one_tiled_shape, monkeypatch):
    """Both routes are timed for real and checked first; a route whose SYRK is wrong is
    logged as rejected and not kept, and what is kept computes right."""
    real = tune.check_syrk
    monkeypatch.setattr(tune, "check_syrk", lambda q, p, dt: "error 1e9 at n=37, k=13"
                        if p["TN_COPY_K"] else real(q, p, dt))
    lines = []
    found = tune.tune(queue, np.float32, {"gemm"}, quick=True, log=lines.append)
    gemm = found["gemm"]
    assert gemm["TN_COPY_K"] == 0 and gemm["PER_SHAPE"] in (0, 1)
    assert "  gemm TN_COPY_K=256: rejected (error 1e9 at n=37, k=13)" in lines
    assert any(line.startswith("  gemm PER_SHAPE=1: ") and line.endswith(" ms") for line in lines)
    assert real(queue, dict(gemm, TN_COPY_K=256), np.float32) is None
    assert tune.check_gemm(queue, gemm, np.float32) is None


def test_syrk_check_finds_a_wrong_route(queue, monkeypatch):
    """check_syrk fails where the transposed copy is wrong (its first row zeroed)."""
    import pyopencl as cl
    from oclla import blas
    assert tune.check_syrk(queue, dict(TILED, TN_COPY_K=256), np.float32) is None
    real_copy = blas._transposed_copy

    def first_row_zeroed(q, a, rows, cols, dtype):
        copy = real_copy(q, a, rows, cols, dtype)
        cl.enqueue_fill_buffer(q, copy.buf, np.zeros(1, dtype), 0, rows * np.dtype(dtype).itemsize)
        return copy

    monkeypatch.setattr(blas, "_transposed_copy", first_row_zeroed)
    assert "error" in tune.check_syrk(queue, dict(TILED, TN_COPY_K=256), np.float32)
    assert tune.check_syrk(queue, dict(TILED, TN_COPY_K=0), np.float32) is None


@pytest.mark.parametrize("family", ["crout", "window"])
def test_per_pivot_search_keeps_a_correct_shape(queue, small_problems, family):
    lines = []
    found = tune.tune(queue, np.float32, {family}, quick=True, log=lines.append)
    best = found[family]
    assert _params.check(family, best, oclla.device_info(queue), 4) is None
    timed = [line for line in lines if line.startswith(f"  {family} {{") and line.endswith(" ms")]
    assert len(timed) == len(tune.SPACE[family]("CPU" if oclla.device_info(queue).kind
                                                 != "GPU" else "GPU", 1, True))
    assert lines[-1].startswith(f"{family} best:")
    _params.override(family, best)
    assert tune.check_lu(queue, np.float32, method="pivot", variant=family) is None


@pytest.mark.parametrize("kind", ("GPU", "CPU"))
def test_descent_visits_every_knob_with_values_to_try(kind):
    """Every knob of the families the LU's and the Cholesky's coordinate descents search
    that declares more than one value to try is one of their axes (a knob left out would
    keep its derived value on every tuned device)."""
    searched = tune._lu_axes(kind, False) + tune._chol_axes(kind, False)
    axes = {(fam, key) for fam, key, _ in searched}
    for fam in {fam for fam, _ in axes}:
        for knob in _knobs.FAMILIES[fam].knobs:
            if len(_knobs.tuned_values(fam, knob.name, kind)) > 1:
                assert (fam, knob.name) in axes, (fam, knob.name)


def test_cli_refuses_unknown_families(capsys):
    with pytest.raises(SystemExit) as exc:
        tune.main(["--families", "gemm,nonsense"])
    assert exc.value.code == 2
    assert "nonsense" in capsys.readouterr().err


def test_shipped_parameters_are_usable_sets(queue):
    """Every family stored in oclla/data/tuned.json, over this device's defaults, passes
    the same check the stored sets must pass where they are used: against the device's
    own limits (stored sets are not used under a profile, whose smaller limits an
    NVIDIA set's work-groups may pass)."""
    shipped = _params._stored_entries()[1]
    assert len({(e["device"], e["dtype"]) for e in shipped}) == len(shipped) >= 8
    previous = oclla.set_profile(None)
    try:
        info = oclla.device_info(queue)
        for entry in shipped:
            if info.kind == "GPU" and entry["device"].startswith("pthread-"):
                continue      # a CPU's set (PoCL names its CPU devices pthread-...) is used
                              # on that CPU alone: its work-groups and leaves may not fit here
            itemsize = np.dtype(entry["dtype"]).itemsize
            for family, p in entry["params"].items():
                merged = _params._merge(family, _params._defaults(queue, info, family,
                                                                  itemsize), p)
                assert _params.check(family, merged, info, itemsize) is None, \
                    (entry["device"], entry["dtype"], family)
    finally:
        oclla.set_profile(previous)
