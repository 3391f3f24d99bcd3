"""The sparse Cholesky in the viewer: the run, its patterns, the tree, the animation.

Real runs on the device (made once per module, no warm-up run), then what the
views draw: A's pattern and L's fill-in, the supernode partition, the
supernodal elimination tree and its layout, the supernodes of each step and
their route, two orderings side by side, and recordings whose sparse
structure is damaged refused as they load.
"""

import json

import numpy as np
import pytest
import scipy.sparse as sp

import oclla
from oclla.viewer import analysis, registry, runner, sparse
from oclla.viewer.export import qimage_to_rgb
from oclla.viewer.run_dialog import RunDialog
from oclla.viewer.runner import RunRequest
from oclla.viewer.sparse_view import COLOURS, spy_image, tree_layout
from viewer_testdata import save_tampered


def _run(**kwargs):
    req = RunRequest(algorithm="sparse_cholesky", warmup=False, seed=3, **kwargs)
    out = runner.execute(req)
    assert out.error is None, out.error
    return out, analysis.viewable_runs(out.recording)[-1]


@pytest.fixture(scope="module")
def made():
    return {
        "metis": _run(variant="rl", n=144, family="laplace2d", ordering="metis"),
        "natural": _run(variant="rl", n=144, family="laplace2d", ordering="natural"),
        "mixed": _run(variant="rlb", n=216, family="laplace3d", ordering="amd", large=2e3,
                      dtype="float32"),
        "random": _run(variant="rl", n=90, family="sparse_spd", ordering="rcm"),
    }


# ---- the recorded structure ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["metis", "natural", "mixed", "random"])
def test_structure_matches_the_library(made, name):
    out, run = made[name]
    s = sparse.structure(run)
    req = {"metis": ("laplace2d", 144, "metis"), "natural": ("laplace2d", 144, "natural"),
           "mixed": ("laplace3d", 216, "amd"), "random": ("sparse_spd", 90, "rcm")}[name]
    a = registry.sparse_matrix(req[0], req[1], 3)
    f = oclla.sparse.cholesky(a.astype(np.float64), ordering=req[2])
    assert s.n == a.shape[0] and s.ordering == req[2]
    assert s.nnz_l == f.nnz == run.metrics["sparse"]["nnz_l"]
    rows, cols = s.l_pattern()
    pattern = sp.csc_array((np.ones(rows.size), (rows, cols)), shape=(s.n, s.n))
    assert (pattern != (f.symbolic.pattern() != 0)).nnz == 0
    p = f.P()                                     # A's lower triangle, permuted
    low = sp.tril(sp.csc_array(a)[p][:, p]).tocoo()
    assert sorted(zip(low.row.tolist(), low.col.tolist())) == \
        sorted(zip(s.a_rows.tolist(), s.a_cols.tolist()))
    fr, fc = s.fill()                             # fill: L's entries that A lacks
    assert fr.size == s.nnz_l - low.nnz
    assert not np.any(np.isin(fr * (s.n + 1) + fc, s.a_rows * (s.n + 1) + s.a_cols))
    assert run.metrics["backward_error"] < 30


def test_orderings_change_the_fill(made):
    natural = sparse.structure(made["natural"][1])
    metis = sparse.structure(made["metis"][1])
    # natural order of a 12 x 12 grid: a band of width 12, every band entry filled
    # (and more where supernodes were merged: their explicit zeros count in nnz(L))
    assert natural.nnz_l >= sum(min(12, 143 - j) + 1 for j in range(144))
    assert metis.nnz_l < natural.nnz_l


def test_every_supernode_factored_once_in_tree_order(made):
    for name in made:
        run = made[name][1]
        s = sparse.structure(run)
        first = np.full(s.ns, -1)
        batched = np.zeros(s.ns, int)
        for k, step in enumerate(run.steps):
            ss = sparse.step_supernodes(step)
            first[ss[first[ss] < 0]] = k
            if step.phase == "potrf" and step.info.get("route") == "batched":
                batched[ss] += 1
        assert np.all(first >= 0) and batched.max() <= 1   # each in one batched potrf at most
        kids = np.flatnonzero(s.parent >= 0)
        assert np.all(first[kids] < first[s.parent[kids]])   # children first
        final = sparse.progress(run, s, len(run.steps))
        assert final.done.all() and (final.route >= 0).all()
        assert not sparse.progress(run, s, 0).done.any()


def test_both_routes_when_the_threshold_splits_them(made):
    run = made["mixed"][1]
    s = sparse.structure(run)
    route = sparse.progress(run, s, len(run.steps)).route
    nc = np.diff(s.super_ptr)
    m = np.diff(s.row_ptr) - nc
    flops = nc ** 3 / 3 + nc ** 2 * m + nc * m * (m + 1.0)
    assert set(route.tolist()) == {0, 1}
    np.testing.assert_array_equal(route == 1, flops >= 2e3)
    for step in run.steps:                        # large supernodes one at a time
        if step.info.get("route") == "large":
            assert sparse.step_supernodes(step).size == 1


def test_tree_layout_and_spy_image():
    s = sparse.parse({"n": 5, "ordering": "natural", "a_rows": [0, 1, 2, 3, 4, 2, 4, 4],
                      "a_cols": [0, 1, 2, 3, 4, 0, 1, 3], "super_ptr": [0, 1, 2, 3, 5],
                      "row_ptr": [0, 2, 4, 6, 8], "row_idx": [0, 2, 1, 4, 2, 3, 3, 4],
                      "parent": [2, 3, 3, -1]})
    x, y = tree_layout(s)
    np.testing.assert_array_equal(y, [0, 0, 1, 2])          # height above the leaves
    assert x[0] == 0 and x[1] == 1 and x[2] == 0 and x[3] == 0.5
    fr, fc = s.fill()
    assert sorted(zip(fr.tolist(), fc.tolist())) == [(3, 2)]
    cat, side = spy_image(s)
    assert side == 5 and cat[3, 2] == 2 and cat[0, 2] == 1 and cat[2, 0] == 1
    assert cat[1, 0] == 0 and cat[0, 1] == 0
    small, side = spy_image(s, pixels=2)                   # binned: 2 x 2
    assert side == 2 and small[1, 0] == 2 and small[0, 0] == 1 and small[0, 1] == 1


# ---- bad recordings -----------------------------------------------------------------------

def _tampered(run, change):
    meta = json.loads(json.dumps(run.metrics["sparse"]))
    change(meta)
    return meta


@pytest.mark.parametrize("change, words", [
    (lambda m: m.update(n="5"), "n must be"),
    (lambda m: m["a_rows"].append(10 ** 6), "outside"),
    (lambda m: m.update(a_cols=m["a_cols"][:-1]), "pair up"),
    (lambda m: m["super_ptr"].__setitem__(1, 0), "rise strictly"),
    (lambda m: m["parent"].__setitem__(0, 0), "later one"),
    (lambda m: m["row_idx"].__setitem__(0, 5), "own columns"),
    (lambda m: m.update(row_ptr=m["row_ptr"][:-1]), "row_ptr"),
    (lambda m: m.update(row_idx=[1.5] * len(m["row_idx"])), "integers"),
    (lambda m: m.update(ordering=["metis"]), "ordering"),
])
def test_bad_structure_is_refused(made, change, words):
    run = made["metis"][1]
    with pytest.raises(oclla.RecordingError, match=words):
        sparse.parse(_tampered(run, change))


def test_recording_round_trip_and_bad_files(made, tmp_path, window):
    out, run = made["mixed"]
    good = tmp_path / "sparse.oclrec"
    out.recording.save(good)
    back = analysis.viewable_runs(oclla.load_recording(good))[-1]
    assert sparse.structure(back).nnz_l == sparse.structure(run).nnz_l
    assert [sparse.step_supernodes(s).tolist() for s in back.steps] == \
        [sparse.step_supernodes(s).tolist() for s in run.steps]

    def bad_step(r):
        step = next(s for s in r["steps"] if "supernodes" in s["info"])
        step["info"]["supernodes"] = [10 ** 6]

    def bad_route(r):
        r["steps"][-1]["info"]["route"] = "gpu"

    def bad_tree(r):
        r["metrics"]["sparse"]["parent"] = [5] * len(r["metrics"]["sparse"]["parent"])

    for k, change in enumerate((bad_step, bad_route, bad_tree)):
        path = tmp_path / f"bad{k}.oclrec"
        save_tampered(out.recording, path, change)
        with pytest.raises(oclla.RecordingError):
            analysis.viewable_runs(oclla.load_recording(path))
        assert not window.open_recording(path)
        assert "Could not open" in window.message.text()
    assert window.model.run is None


# ---- the window ---------------------------------------------------------------------------

def _colour_present(image, rgb, tol=30) -> bool:
    px = qimage_to_rgb(image).reshape(-1, 3).astype(int)
    return bool(np.any(np.abs(px - np.asarray(rgb)).max(axis=1) < tol))


def test_window_animates_supernodes(made, window, qtbot):
    out, run = made["mixed"]
    window.model.set_recording(out.recording)
    assert window.sparse_main.isVisibleTo(window) and not window.main_view.isVisibleTo(window)
    view = window.sparse_main
    s = sparse.structure(window.model.run)
    window.model.go_to(0)
    assert not view.progress.done.any() and view.progress.current.size == 0
    k = next(i for i, st in enumerate(run.steps) if st.info.get("route") == "large")
    window.model.go_to(k + 1)
    np.testing.assert_array_equal(view.progress.current, sparse.step_supernodes(run.steps[k]))
    big = int(view.progress.current[0])
    pens = view.nodes.data["pen"]
    assert pens[big].color().getRgb()[:3] == COLOURS["current"]
    assert view.nodes.data["brush"][big].color().getRgb()[:3] == COLOURS["large"]
    assert "Sparse Cholesky" in view.title.text() and "nnz(L)" in view.title.text()
    window.model.go_to(window.model.n_positions - 1)
    assert view.progress.done.all()
    brushes = {b.color().getRgb()[:3] for b in view.nodes.data["brush"]}
    assert brushes == {COLOURS["batched"], COLOURS["large"]}
    image = window.render_position(window.model.n_positions - 1, "compare")
    assert _colour_present(image, COLOURS["fill"]) and _colour_present(image, COLOURS["a"])
    assert _colour_present(image, COLOURS["large"]) and _colour_present(image, COLOURS["batched"])
    assert len(window.timeline.runs) >= 1 and window.timeline.runs[0] is window.model.run
    assert s.ns == len(view.nodes.data)


def test_compare_orderings_side_by_side(made, window):
    window.model.set_recording(made["metis"][0].recording)
    shown = {name for name, page in window._sides.items() if page.is_built}
    assert shown == {"sparse_main"}                  # B and the heat maps: when first shown
    window.model.set_compare(made["natural"][1])
    assert window.sparse_compare.isVisibleTo(window)
    assert not window.compare_view.isVisibleTo(window)
    a, title_b = window.sparse_main.title.text(), window.sparse_compare.title.text()
    assert a.startswith("A: metis ordering") and title_b.startswith("B: natural ordering")
    for title, name in ((a, "metis"), (title_b, "natural")):
        s = sparse.structure(made[name][1])
        assert f"nnz(L) {s.nnz_l} " in title and " ms" in title
    window.model.set_compare(None)
    assert not window.sparse_compare.isVisibleTo(window)
    b = window.sparse_compare
    window.model.set_compare(made["natural"][1])
    assert window.sparse_compare is b and b.title.text() == title_b


def test_run_dialog_sparse_rows(qtbot):
    dialog = RunDialog(initial=RunRequest(algorithm="sparse_cholesky", variant="rlb",
                                          family="laplace3d", n=1000, ordering="amd"),
                       device_lister=lambda: [])
    qtbot.addWidget(dialog)
    form = dialog._form
    assert form.isRowVisible(dialog.ordering) and form.isRowVisible(dialog.sparse_family)
    assert not form.isRowVisible(dialog.family) and not form.isRowVisible(dialog.pivoting)
    dialog.large.setValue(5e4)
    req = dialog.request()
    assert (req.family, req.ordering, req.variant, req.n, req.large) == \
        ("laplace3d", "amd", "rlb", 1000, 5e4)
    assert runner.build_matrix(req).shape == (1000, 1000)
    dialog.algorithm.setCurrentIndex(dialog.algorithm.findData("lu"))
    assert not form.isRowVisible(dialog.ordering) and form.isRowVisible(dialog.family)
    assert dialog.request().ordering is None


def test_bad_sparse_requests():
    out = runner.execute(RunRequest(algorithm="sparse_cholesky", variant="rl",
                                    family="laplace2d", n=16, ordering="spectral"))
    assert "orderings" in out.error and out.recording is None
    out = runner.execute(RunRequest(algorithm="sparse_cholesky", variant="rl",
                                    family="spd", n=16))
    assert "takes the matrices" in out.error
    out = runner.execute(RunRequest(algorithm="sparse_cholesky", variant="rl",
                                    family="laplace2d", n=0))
    assert "n must be" in out.error
    with pytest.raises(ValueError):
        registry.sparse_matrix("banded", 10)


def test_compare_keeps_the_columns_factored_level(made):
    from oclla.viewer.model import ViewerModel
    m = ViewerModel()
    m.set_recording(made["metis"][0].recording)
    m.set_compare(made["natural"][1])
    mine = sparse.columns_by_position(m.run, sparse.structure(m.run))
    theirs = sparse.columns_by_position(m.compare_run, sparse.structure(m.compare_run))
    assert mine[0] == theirs[0] == 0 and mine[-1] == theirs[-1] == 144
    assert np.all(np.diff(mine) >= 0)
    for p in range(m.n_positions):
        m.go_to(p)
        assert theirs[m.compare_position] >= mine[p]
        assert m.compare_position == 0 or theirs[m.compare_position - 1] < mine[p]


def test_a_kernel_clicked_on_the_timeline_shows_its_supernodes(made, window):
    out, run = made["mixed"]
    window.model.set_recording(out.recording)
    shown = window.model.run
    for route in ("large", "batched"):
        index = next(i for i, k in enumerate(shown.kernels)
                     if shown.steps[k.step].info.get("route") == route)
        window.timeline.kernel_clicked.emit(index)
        step = shown.steps[shown.kernels[index].step]
        assert window.model.position == step.index + 1
        np.testing.assert_array_equal(window.sparse_main.progress.current,
                                      sparse.step_supernodes(step))


def test_headless_export_of_the_sparse_view(tmp_path):
    from PIL import Image

    from oclla.viewer.app import main
    gif = tmp_path / "sparse.gif"
    code = main(["--algorithm", "sparse_cholesky", "--variant", "rlb", "--family", "laplace2d",
                 "--n", "49", "--ordering", "amd", "--no-warmup", "--steps", "1-3",
                 "--view", "matrix", "--size", "600x400", "--export", str(gif)])
    assert code == 0
    with Image.open(gif) as img:
        assert img.n_frames == 3 and img.size[0] > 200 and img.size[1] > 100
    png = tmp_path / "sparse.png"
    assert main(["--algorithm", "sparse_cholesky", "--family", "laplace2d", "--n", "49",
                 "--no-warmup", "--step", "3", "--view", "matrix", "--export", str(png)]) == 0
    with Image.open(png) as img:
        px = np.asarray(img.convert("RGB")).reshape(-1, 3).astype(int)
    assert np.any(np.abs(px - np.asarray(COLOURS["batched"])).max(axis=1) < 30)
    with pytest.raises(SystemExit) as exc:
        main(["--algorithm", "sparse_cholesky", "--ordering", "nested",
              "--export", str(tmp_path / "x.png")])
    assert exc.value.code == 2
