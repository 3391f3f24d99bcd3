"""The tile-task view: a tiled Cholesky's tiles, task graph and tasks in time.

The model on a hand-made run of two lanes (tile states at chosen times, the DAG's
depths, the lanes), runs refused when they are not the DAG's tasks, a real run in
this process (every task, the factor's backward error), and the widget: its
panels' state at a time and a screenshot in which the tile grid, the graph and
the lanes' bars are found by their colours.
"""

import numpy as np
import pytest

from oclla.distributed import KINDS, TaskRun, TileTask, task_graph
from oclla.viewer import tiles
from oclla.viewer.export import qimage_to_rgb
from oclla.viewer.tiles_view import (KIND_COLOURS, RUNNING, UNTOUCHED, TilesView, grid_rgb,
                                     step_colours)


def synthetic(n=50, tile=20, lanes=("w0", "w1")):
    """Every task of the DAG 1 ms long, in DAG order, alternating between the lanes."""
    return [TaskRun(task, lanes[p % len(lanes)], 10.0 + p * 1e-3, 10.0 + (p + 1) * 1e-3)
            for p, task in enumerate(task_graph(-(-n // tile)))]


def test_tile_state_follows_the_tasks():
    run = tiles.from_runs(50, 20, synthetic())
    assert run.t == 3 and run.start[0] == 0 and run.duration == pytest.approx(10e-3)
    kind, step, running = run.tile_state(-1.0)
    assert (kind == tiles.UNTOUCHED).all() and (step == -1).all() and running == []
    # order: potrf0, trsm0 (1,0), trsm0 (2,0), syrk0 (1,1), syrk0 (2,2), gemm0 (2,1), potrf1...
    kind, step, running = run.tile_state(5.5e-3)
    assert [run.tasks[p] for p in running] == [TileTask("gemm", 0, 2, 1)]
    assert kind[1, 1] == KINDS.index("syrk") and kind[2, 1] == tiles.UNTOUCHED
    kind, step, running = run.tile_state(6.5e-3)
    assert [run.tasks[p] for p in running] == [TileTask("potrf", 1, 1, 1)]
    assert kind[2, 1] == KINDS.index("gemm") and step[2, 1] == 0
    assert kind[1, 0] == KINDS.index("trsm") and kind[0, 1] == tiles.UNTOUCHED
    kind, step, running = run.tile_state(run.duration)
    lower = np.tril(np.ones((3, 3), bool))
    assert (kind[np.eye(3, dtype=bool)] == KINDS.index("potrf")).all()
    assert (kind[lower & ~np.eye(3, dtype=bool)] == KINDS.index("trsm")).all()
    assert (kind[~lower] == tiles.UNTOUCHED).all() and running == []
    np.testing.assert_array_equal(step[lower], np.indices((3, 3))[1][lower])


def test_lanes_and_dag_layout():
    run = tiles.from_runs(50, 20, synthetic())
    lanes = run.lanes()
    assert list(lanes) == ["w0", "w1"] and sum(map(len, lanes.values())) == len(run.tasks)
    tasks, column, row, edges = tiles.dag_layout(4)
    assert tasks == list(task_graph(4))
    for a, b in edges:
        assert column[b] > column[a]
    assert column[0] == 0 and column[tasks.index(TileTask("potrf", 3, 3, 3))] == column.max()
    assert len({(c, r) for c, r in zip(column, row)}) == len(tasks)   # no two nodes overlap
    # the critical path of a t-tile Cholesky: potrf, trsm, syrk per step, then the last potrf
    assert column.max() == 3 * 3


def test_runs_that_are_not_the_dag_are_refused():
    runs = synthetic()
    with pytest.raises(ValueError, match="missing"):
        tiles.from_runs(50, 20, runs[:-1])
    with pytest.raises(ValueError, match="twice"):
        tiles.from_runs(50, 20, runs + runs[:1])
    with pytest.raises(ValueError, match="stops before"):
        tiles.from_runs(50, 20, [runs[0]._replace(stop=0.0)] + runs[1:])
    with pytest.raises(ValueError, match="not in its DAG"):
        tiles.from_runs(50, 25, runs)
    with pytest.raises(ValueError):
        tiles.from_runs(50, 0, runs)


def test_local_run_factors_and_records_every_task():
    pytest.importorskip("dask")
    run, error = tiles.local_run(70, 20, np.float32)
    assert error < 30
    assert set(run.tasks) == set(task_graph(4)) and set(run.lane) == {"local"}
    assert (run.stop >= run.start).all() and run.start.min() == 0
    order = np.argsort(run.start)                # one lane: tasks never overlap
    assert (run.start[order][1:] >= run.stop[order][:-1] - 1e-9).all()


def _has(image, colour, at_least=4):
    return int((image == np.array(colour, np.uint8)).all(axis=-1).sum()) >= at_least


def _shown(qtbot, run):
    """A TilesView of ``run``, 1200 x 420, shown."""
    view = TilesView()
    qtbot.addWidget(view)
    view.resize(1200, 420)
    view.set_run(run)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_view_draws_the_tiles_graph_and_lanes(qtbot):
    run = tiles.from_runs(50, 20, synthetic())
    view = _shown(qtbot, run)
    middle = 6.5e-3
    view.slider.setValue(int(middle / run.duration * 1000))
    assert view.time == pytest.approx(middle, abs=2e-5)
    rgb = grid_rgb(run, view.time)
    assert tuple(rgb[1, 1]) == RUNNING and tuple(rgb[0, 2]) == UNTOUCHED
    assert view.cursor.value() == pytest.approx(view.time)
    view.set_time(run.duration)
    grid, dag, chart = (qimage_to_rgb(p.grab().toImage())
                        for p in (view.grid_plot, view.dag_plot, view.time_plot))
    assert _has(grid, UNTOUCHED, 100)                        # the upper triangle
    assert not _has(grid, RUNNING, 1)                        # nothing runs at the end
    for kind in KINDS:                                       # every finished node's colour
        assert _has(dag, KIND_COLOURS[kind]), kind
    colours = step_colours(run)
    for k in (0, run.t - 1):                                 # bars of the first and last step
        first = next(p for p, t in enumerate(run.tasks) if t.k == k)
        assert _has(chart, colours[first][:3], 20), k
    assert "2 lane(s)" in view.legend.text()


def test_a_task_of_microseconds_keeps_a_visible_bar(qtbot):
    """In a run of 10 tasks of 0.1 s, a last task of 1 µs is drawn MIN_BAR of the run
    wide (not thinner than its outline), in its step's colour."""
    from oclla.viewer.tiles_view import MIN_BAR
    runs = synthetic()
    runs = [r._replace(start=10.0 + p * 0.1, stop=10.0 + (p + 1) * 0.1)
            for p, r in enumerate(runs)]
    last = runs[-1]._replace(stop=runs[-1].start + 1e-6)
    run = tiles.from_runs(50, 20, runs[:-1] + [last])
    view = _shown(qtbot, run)
    widths = view.bars.opts["x1"] - view.bars.opts["x0"]
    assert widths.min() == pytest.approx(MIN_BAR * run.duration)
    assert widths[:-1] == pytest.approx(np.diff(run.start)[:len(widths) - 1], rel=1e-6)
    chart = qimage_to_rgb(view.time_plot.grab().toImage())
    assert _has(chart, step_colours(run)[-1][:3], 20)


def test_main_factors_and_shows_a_run(qtbot, monkeypatch):
    pytest.importorskip("dask")
    from PySide6 import QtWidgets

    from oclla.viewer import tiles_view
    shown = []
    monkeypatch.setattr(QtWidgets.QApplication, "exec", lambda self: 0)
    monkeypatch.setattr(tiles_view.TilesView, "show", lambda self: shown.append(self))
    assert tiles_view.main(["--n", "40", "--tile", "16"]) == 0
    (view,) = shown
    qtbot.addWidget(view)
    assert view.run.t == 3 and "backward error" in view.windowTitle()
    assert view.time == view.run.duration
