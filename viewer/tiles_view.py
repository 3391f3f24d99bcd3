"""The tile-task view: a tiled Cholesky's tile grid, its task graph and its tasks in time.

Three panels of one :class:`~viewer.tiles.TileRun`, at a time chosen on the
slider below them:

* **Tiles** — the t x t grid, each tile in the colour of the last task that wrote
  it (:data:`KIND_COLOURS`), darker for earlier steps k, grey while untouched,
  amber while a task writes it;
* **Task graph** — the DAG, one column per depth (the longest chain before a
  task), nodes in their kind's colour once finished, faded before, amber while
  running;
* **Tasks in time** — StarVZ's iteration-against-time chart: one lane per device
  (a Dask worker, or ``local``), each task a bar from its start to its stop (at
  least :data:`MIN_BAR` of the run wide, so that no task is thinner than its
  outline) in the colour of its step k (:data:`STEP_MAP`, early steps dark), the
  slider's time a vertical line.

``python -m oclla.viewer.tiles_view --n 512 --tile 128`` factors a seeded matrix
in this process and shows its run (``--save run.oclrec`` keeps it for the viewer).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from . import tiles

KIND_COLOURS = {"potrf": (86, 180, 233), "trsm": (0, 158, 115), "syrk": (213, 94, 0),
                "gemm": (230, 159, 0), "panel": (86, 180, 233), "laswp": (0, 114, 178),
                "zero": (120, 120, 120), "send": (204, 121, 167)}
"""Each task kind's colour (the phase colours of :mod:`viewer.theme`, potrf the panel's);
a recorded run's other phases: :data:`OTHER`."""

OTHER = (90, 90, 160)


def kind_colour(kind: str) -> tuple:
    return KIND_COLOURS.get(kind, OTHER)

UNTOUCHED = (200, 200, 200)
RUNNING = (255, 176, 0)
STEP_MAP = "viridis"
"""The colour map of the step k in the time chart (k = 0 at its dark end)."""

MIN_BAR = 0.01
"""The narrowest bar of the time chart, as a fraction of the run's duration: a task of
a few microseconds in a run of a second still shows its step's colour."""

SLIDER_STEPS = 1000


def grid_rgb(run: tiles.TileRun, time: float) -> np.ndarray:
    """(t, t, 3) uint8 colours of the tile grid at ``time`` (row i, column j)."""
    kind, step, running = run.tile_state(time)
    rgb = np.empty(kind.shape + (3,), np.uint8)
    rgb[:] = UNTOUCHED
    palette = np.array([kind_colour(k) for k in run.kinds], float).reshape(-1, 3)
    touched = kind >= 0
    shade = 0.55 + 0.45 * (step + 1) / max(run.t, 1)     # later steps brighter
    rgb[touched] = (palette[kind[touched]] * shade[touched, None]).astype(np.uint8)
    for idx in running:
        task = run.tasks[idx]
        rgb[task.i, task.j] = RUNNING
    return rgb


def step_colours(run: tiles.TileRun) -> np.ndarray:
    """(tasks, 4) uint8 RGBA of each task's step on :data:`STEP_MAP`."""
    cmap = pg.colormap.get(STEP_MAP)
    k = np.array([task.k for task in run.tasks], float) / max(run.t - 1, 1)
    return cmap.map(k, mode="byte")


class TilesView(QtWidgets.QWidget):
    """One tiled run at one time (module docstring)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.run: tiles.TileRun | None = None
        self.time = 0.0
        layout = QtWidgets.QVBoxLayout(self)
        plots = QtWidgets.QHBoxLayout()
        self.grid_plot = pg.PlotWidget(title="Tiles")
        self.dag_plot = pg.PlotWidget(title="Task graph")
        self.time_plot = pg.PlotWidget(title="Tasks in time")
        for plot, stretch in ((self.grid_plot, 2), (self.dag_plot, 3), (self.time_plot, 4)):
            plot.setBackground("w")
            plots.addWidget(plot, stretch)
        self.grid_plot.setAspectLocked(True)
        self.grid_plot.invertY(True)
        self.grid_plot.hideAxis("bottom")
        self.grid_plot.hideAxis("left")
        self.grid_image = pg.ImageItem(axisOrder="row-major")
        self.grid_plot.addItem(self.grid_image)
        self.edges = pg.PlotDataItem(pen=pg.mkPen(160, 160, 160, 120))
        self.nodes = pg.ScatterPlotItem(size=9, pen=pg.mkPen(None))
        self.dag_plot.addItem(self.edges)
        self.dag_plot.addItem(self.nodes)
        self.dag_plot.invertY(True)
        self.dag_plot.setLabel("bottom", "depth")
        self.bars = None
        self.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen(RUNNING, width=2))
        self.time_plot.addItem(self.cursor)
        self.time_plot.setLabel("bottom", "time (s)")
        layout.addLayout(plots)
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.valueChanged.connect(
            lambda v: self.set_time(v / SLIDER_STEPS * (self.run.duration if self.run else 0)))
        self.legend = QtWidgets.QLabel()
        layout.addWidget(self.slider)
        layout.addWidget(self.legend)
        self._layout = None

    def apply_theme(self, theme) -> None:
        """The window's light or dark look (:mod:`viewer.theme`): background and axes."""
        for plot in (self.grid_plot, self.dag_plot, self.time_plot):
            plot.setBackground(theme.background)
            for name in ("bottom", "left"):
                plot.getAxis(name).setPen(theme.foreground)
                plot.getAxis(name).setTextPen(theme.foreground)

    def set_run(self, run: tiles.TileRun) -> None:
        """Show ``run`` at its end (every tile factored)."""
        self.run = run
        tasks, column, row, edges = run.graph()
        self._layout = (column.astype(float), row.astype(float))
        x, y = self._layout
        if edges:
            pairs = np.array(edges).ravel()
            self.edges.setData(x[pairs], y[pairs], connect="pairs")
        else:
            self.edges.setData([], [])
        if self.bars is not None:
            self.time_plot.removeItem(self.bars)
        lanes = run.lanes()
        lane_of = {name: p for p, name in enumerate(lanes)}
        y0 = np.array([lane_of[name] for name in run.lane], float)
        colours = step_colours(run)
        stop = np.maximum(run.stop, run.start + MIN_BAR * run.duration)
        self.bars = pg.BarGraphItem(x0=run.start, x1=stop, y0=y0 + 0.1, height=0.8,
                                    brushes=[pg.mkBrush(*c) for c in colours],
                                    pen=pg.mkPen("w", width=1))
        self.time_plot.addItem(self.bars)
        short = {name: name if len(name) <= 8 else f"#{p}" for name, p in lane_of.items()}
        axis = self.time_plot.getAxis("left")
        axis.setTicks([[(p + 0.5, short[name]) for name, p in lane_of.items()]])
        self.time_plot.setYRange(0, max(len(lanes), 1))
        self.time_plot.setXRange(0, max(run.duration, 1e-9))
        self.legend.setText(
            f"n = {run.n}, tile {run.tile} ({run.t} x {run.t} tiles), {len(run.tasks)} tasks "
            f"on {len(lanes)} lane(s), {run.duration * 1e3:.1f} ms · "
            + " ".join(f'<span style="color: rgb{kind_colour(k)}">■ {k}</span>'
                       for k in run.kinds)
            + "".join(f" · {short[name]} = {name}" for name in lanes if short[name] != name))
        self.slider.blockSignals(True)
        self.slider.setValue(SLIDER_STEPS)
        self.slider.blockSignals(False)
        self.set_time(run.duration)

    def set_time(self, time: float) -> None:
        """Draw the run as it stood at ``time`` seconds after its first task began."""
        if self.run is None:
            return
        self.time = float(time)
        self.grid_image.setImage(grid_rgb(self.run, self.time), levels=(0, 255))
        done = self.run.stop <= self.time
        running = (self.run.start <= self.time) & ~done
        palette = np.array([kind_colour(t.kind) for t in self.run.tasks]).reshape(-1, 3)
        alpha = np.where(done, 255, 60)
        brushes = [pg.mkBrush(*RUNNING) if r else pg.mkBrush(*c, a)
                   for c, a, r in zip(palette.tolist(), alpha.tolist(), running.tolist())]
        x, y = self._layout
        self.nodes.setData(x, y, brush=brushes)
        self.cursor.setValue(self.time)


def main(argv=None) -> int:
    """``python -m oclla.viewer.tiles_view``: factor a seeded matrix and show the run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--tile", type=int, default=128)
    parser.add_argument("--save", metavar="PATH",
                        help="also keep the run in a recording that oclla-viewer opens")
    args = parser.parse_args(argv)
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    run, error = tiles.local_run(args.n, args.tile)
    if args.save:
        from oclla.trace import Recording
        rec = Recording()
        rec.runs.append(tiles.as_trace_run(run))
        rec.save(args.save)
    view = TilesView()
    view.set_run(run)
    view.setWindowTitle(f"Tile Cholesky, backward error {error:.2g} nε")
    view.resize(1400, 500)
    view.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
