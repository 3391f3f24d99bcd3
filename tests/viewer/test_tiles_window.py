"""The tile-task view in the main window, from runs of the library's tiled code.

Real runs through the Run dialog's runner (made once per module, after the
untimed warm-up run, so kernel builds do not stretch the first tasks): the tile
Cholesky and LU on one device and the Cholesky on two (PoCL: two sub-devices, or
two queues of one device), and a recorded LU on two devices, read back as tile
runs (every tile factored, the lanes, the recorded order as the task graph); the window
showing them instead of the heat map, moving with the steps, and a screenshot
inspected for the kinds' colours and the lanes' bars; the recording round trip;
damaged recordings refused as they load.
"""

import numpy as np
import pytest

import oclla
from oclla.distributed import TaskRun, task_graph
from oclla.trace import Recording
from oclla.viewer import analysis, registry, runner, theme, tiles
from oclla.viewer.export import qimage_to_rgb
from oclla.viewer.run_dialog import RunDialog
from oclla.viewer.runner import RunRequest
from oclla.viewer.tiles_view import RUNNING, UNTOUCHED, grid_rgb, kind_colour, step_colours
from viewer_testdata import save_tampered

N, TILE = 40, 10           # 4 x 4 tiles


def _run(algorithm, variant, family, dtype):
    out = runner.execute(RunRequest(algorithm=algorithm, variant=variant, n=N, block=TILE,
                                    family=family, dtype=dtype, seed=2))
    assert out.error is None, out.error
    return out, analysis.viewable_runs(out.recording)[-1]


@pytest.fixture(scope="module")
def made():
    return {"cholesky": _run("tiled_cholesky", "tiled", "spd", "float64"),
            "lu": _run("tiled_lu", "tiled", "random", "float32"),
            "multi": _run("multi_device", "multi_device", "spd", "float32")}


def _lower(t):
    return np.tril(np.ones((t, t), bool))


@pytest.mark.parametrize("name", ["cholesky", "lu", "multi"])
def test_runs_are_tile_runs(made, name):
    out, run = made[name]
    assert run.variant in tiles.TILED_VARIANTS and run.params["tile"] == TILE
    assert run.metrics["backward_error"] < 30
    tr = tiles.tile_run(run)
    assert tr is tiles.tile_run(run) and (tr.n, tr.t) == (N, 4)
    assert (tr.stop >= tr.start).all() and tr.start.min() == 0
    assert (tr.cover[:, 0] < tr.cover[:, 1]).all() and tr.cover.max() <= tr.t
    for a, b in tr.edges:                         # the recorded order, forward only
        assert a < b
    column = tr.graph()[1]
    assert column.max() >= 2 * tr.t - 1           # a chain through the panels and steps
    for p, task in enumerate(tr.tasks):           # each step's tasks after its panel
        if task.kind in ("trsm", "gemm"):
            panel = max(q for q, x in enumerate(tr.tasks[:p]) if x.kind == "panel")
            assert tr.tasks[panel].k == task.k and column[p] > column[panel]
    kind, step, running = tr.tile_state(tr.duration)
    must = _lower(tr.t) if name != "lu" else np.ones((tr.t, tr.t), bool)
    assert (kind[must] >= 0).all() and running == []
    assert tr.kinds[kind[-1, -1]] == "panel"      # not the copies, clearings and swaps
    assert not {tr.kinds[x] for x in kind[must].ravel()} & set(tiles.PASSIVE)
    assert [t.k for t in tr.tasks if t.kind == "panel"] == list(range(tr.t))
    times = [tr.time_at(p) for p in range(len(run.steps) + 1)]
    assert times[0] == 0 and times == sorted(times) and times[-1] == tr.duration
    lanes = tr.lanes()
    if name == "multi":        # one lane per device, each the diagonal of alternate panels
        assert len(lanes) == 2 and all(lane.endswith(("[0]", "[1]")) for lane in lanes)
        panels = [tr.lane[p] for p, t in enumerate(tr.tasks) if t.kind == "panel"]
        assert panels[0] != panels[1] and panels[0] == panels[2]
    else:
        assert list(lanes) == [run.device]


def test_a_recorded_lu_on_two_devices():
    a = np.random.default_rng(4).standard_normal((30, 30)).astype(np.float32)
    with oclla.record() as rec:
        oclla.multi_device_lu.lu_factor(a, queues=registry.device_queues(oclla.get_queue()),
                                        tile=8)
    run = analysis.viewable_runs(rec)[-1]
    tr = tiles.tile_run(run)
    assert (run.algorithm, run.variant, tr.t) == ("lu", "multi_device", 4)
    assert len(tr.lanes()) == 2 and {"panel", "send", "gemm"} <= set(tr.kinds)
    kind, _, _ = tr.tile_state(tr.duration)
    assert (kind >= 0).all() and tr.kinds[kind[-1, -1]] == "panel"


def _has(image, colour, at_least=4):
    return int((image == np.array(colour, np.uint8)).all(axis=-1).sum()) >= at_least


def test_window_shows_the_tile_view(made, window):
    out, run = made["multi"]
    window.model.set_recording(out.recording)
    shown = {name for name, page in window._sides.items() if page.is_built}
    assert shown == {"tiles_main"}                   # the heat map: when first shown
    view = window.tiles_main
    assert view.isVisibleTo(window) and not window.main_view.isVisibleTo(window)
    tr = tiles.tile_run(window.model.run)
    assert view.run is tr and window.view_widget("matrix") is view
    window.model.go_to(0)
    assert view.time == 0 and (grid_rgb(tr, 0.0) == UNTOUCHED).all(axis=-1).sum() >= 10
    third = next(s.index for s in window.model.run.steps if s.phase == "send") + 1
    window.model.go_to(third)
    assert view.time == pytest.approx(tr.time_at(third)) and 0 < view.time < tr.duration
    kind, _, _ = tr.tile_state(view.time)
    assert (kind[:, 0] >= 0).all() and (kind[1:, 1:] == tiles.UNTOUCHED).any()
    image = qimage_to_rgb(window.render_position(window.model.n_positions - 1, "matrix"))
    assert view.time == tr.duration
    for name in ("panel", "trsm", "send"):          # nodes of the graph, tiles of the grid
        assert _has(image, kind_colour(name)), name
    assert _has(image, RUNNING, 20)                  # the time cursor, at the end
    grid = qimage_to_rgb(view.grid_plot.grab().toImage())
    assert not _has(grid, RUNNING, 1) and _has(grid, UNTOUCHED, 100)   # the upper triangle
    assert _has(grid, kind_colour("panel"), 20)      # the last diagonal tile, step t - 1
    colours = step_colours(tr)
    for k in (0, tr.t - 1):                          # bars of the first and last step
        first = next(p for p, t in enumerate(tr.tasks) if t.k == k)
        assert _has(image, colours[first][:3], 20), k
    assert "2 lane(s)" in view.legend.text() and "send" in view.legend.text()
    view.apply_theme(theme.DARK)                     # the window's dark look
    assert view.time_plot.backgroundBrush().color().name().upper() == theme.DARK.background
    window.model.set_recording(made["cholesky"][0].recording)    # one lane, its own run
    assert view.run is tiles.tile_run(window.model.run) and "1 lane(s)" in view.legend.text()


def test_run_dialog_offers_the_tile_runs(qtbot):
    dialog = RunDialog(initial=RunRequest(algorithm="tiled_lu", variant="tiled", n=64,
                                          block=16), device_lister=lambda: [])
    qtbot.addWidget(dialog)
    assert dialog._form.labelForField(dialog.block).text() == "Tile order"
    req = dialog.request()
    assert (req.algorithm, req.variant, req.block) == ("tiled_lu", "tiled", 16)
    for key in registry.TILE_ALGORITHMS:
        assert dialog.algorithm.findData(key) >= 0 and registry.algorithm(key).missing() is None
    dialog.algorithm.setCurrentIndex(dialog.algorithm.findData("lu"))
    assert dialog._form.labelForField(dialog.block).text() == "Block size"
    assert registry.tile_of(40, {}) == 10 and registry.tile_of(40, {"block": 7}) == 7


def _tiled_run(header_runs):
    return next(r for r in header_runs if r["variant"] in tiles.TILED_VARIANTS)


def test_recording_round_trip(made, tmp_path, window):
    out, run = made["multi"]
    path = tmp_path / "tiles.oclrec"
    out.recording.save(path)
    back = tiles.tile_run(analysis.viewable_runs(oclla.load_recording(path))[-1])
    tr = tiles.tile_run(run)
    assert back.tasks == tr.tasks and back.lane == tr.lane and back.edges == tr.edges
    np.testing.assert_array_equal(back.start, tr.start)
    np.testing.assert_array_equal(back.cover, tr.cover)
    assert window.open_recording(path) and window.tiles_main.run.tasks == tr.tasks


def test_a_tile_task_run_kept_in_a_recording(tmp_path, window):
    runs = [TaskRun(task, ("w0", "w1")[p % 2], 5.0 + p * 1e-3, 5.0 + (p + 1) * 1e-3)
            for p, task in enumerate(task_graph(3))]
    run = tiles.from_runs(50, 20, runs)
    rec = Recording()
    rec.runs.append(tiles.as_trace_run(run, "float32"))
    path = tmp_path / "dask.oclrec"
    rec.save(path)
    back = tiles.tile_run(analysis.viewable_runs(oclla.load_recording(path))[-1])
    assert back.tasks == run.tasks and back.lane == run.lane
    np.testing.assert_allclose(back.stop, run.stop, atol=1e-9)
    for mine, theirs in ((2.5e-3, 2.5e-3), (back.duration, run.duration)):
        for a, b in zip(back.tile_state(mine), run.tile_state(theirs)):
            np.testing.assert_array_equal(a, b)
    tasks, column, _, edges = tiles.dag_layout(3)
    assert set(edges) <= set(back.edges)            # every edge of the DAG, and more
    assert window.open_recording(path) and window.tiles_main.run.tasks == run.tasks
    save_tampered(rec, path, lambda r: r["steps"][3]["info"].update(k=3),  # k beyond the tiles
                  lambda header_runs: header_runs[0])
    with pytest.raises(oclla.RecordingError, match="k must be"):
        analysis.viewable_runs(oclla.load_recording(path))


def test_the_standalone_view_saves_its_run(tmp_path, qtbot, monkeypatch):
    pytest.importorskip("dask")
    from PySide6 import QtWidgets

    from oclla.viewer import tiles_view
    shown = []
    monkeypatch.setattr(QtWidgets.QApplication, "exec", lambda self: 0)
    monkeypatch.setattr(tiles_view.TilesView, "show", lambda self: shown.append(self))
    path = tmp_path / "local.oclrec"
    assert tiles_view.main(["--n", "40", "--tile", "16", "--save", str(path)]) == 0
    qtbot.addWidget(shown[0])
    back = tiles.tile_run(analysis.viewable_runs(oclla.load_recording(path))[-1])
    run = shown[0].run                            # the same tasks, in order of start
    assert sorted(back.tasks) == sorted(run.tasks) and set(back.lane) == {"local"}
    stops = dict(zip(run.tasks, run.stop))
    np.testing.assert_allclose(back.stop, [stops[t] for t in back.tasks], atol=1e-8)


def _kernel_backwards(r):
    k = r["steps"][0]["kernels"][0]
    k["end"] = k["start"] - 1


DAMAGE = [
    (lambda r: r["params"].update(tile="10"), "tile must be an integer"),
    (lambda r: r["params"].update(tile=0), "tile must be an integer"),
    (lambda r: r["params"].pop("tile"), "tile must be an integer"),
    (lambda r: r.update(shape=[10 ** 7, 10 ** 7]), "tiles a side"),   # before any grid
    (lambda r: r.update(shape=[N, N + 1]), "square"),
    (lambda r: r["steps"][1].update(region=[0, N + 1, 0, 10]), "outside"),
    (lambda r: r["steps"][1].update(region=[0, 10, 35, N + 5]), "outside"),
    (_kernel_backwards, "ends before"),
]


def test_damaged_recordings_are_refused(made, tmp_path, window):
    for p, (change, words) in enumerate(DAMAGE):
        path = tmp_path / f"bad{p}.oclrec"
        save_tampered(made["multi"][0].recording, path, change, _tiled_run)
        with pytest.raises(oclla.RecordingError, match=words):
            analysis.viewable_runs(oclla.load_recording(path))
        assert not window.open_recording(path)
        assert "Could not open" in window.message.text() and window.model.run is None
