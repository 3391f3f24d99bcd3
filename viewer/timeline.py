"""Where the time goes: the kernel timeline and the time of each step.

The timeline draws every kernel of a run from its OpenCL profiling events:
a "device" lane with the execution (start → end) and a "launch" lane with
the overhead before it (queued → submit light, submit → start dark), so host
and driver cost are seen apart from device time.  A run whose commands ran on
several devices gets a lane per device, labelled with its name, and recorded
host work (the hybrid Cholesky's POTRF on the host's LAPACK) a "host" lane,
so their overlap, or its absence, is seen.  Kernels of the current
step are opaque, the others faded; the selected kernel is outlined.

The step plot shows each step's device time against its index, coloured by
phase: for a per-pivot run the shrinking active submatrix is the falling
curve.  A compared run is drawn on the same axes (second lanes, dashed curve).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from oclla.trace import HOST

from . import analysis, registry
from . import theme as themes

FADED_ALPHA = 110


def _brush(color: str, alpha: int = 255) -> QtGui.QBrush:
    c = QtGui.QColor(color)
    c.setAlpha(alpha)
    return QtGui.QBrush(c)


def time_unit(largest_ns: float) -> tuple[str, float]:
    """("ns" | "µs" | "ms", ns per unit) so that the largest time reads between 1 and 1000."""
    if largest_ns < 1e3:
        return "ns", 1.0
    if largest_ns < 1e6:
        return "µs", 1e3
    return "ms", 1e6


def integer_tick(count: int) -> int:
    """A whole-step tick spacing (1, 2, 5, 10, 20, ...) giving at most about 10 ticks."""
    step = 1
    while count / step > 10:
        for factor in (2, 2.5, 2):
            step = int(step * factor)
            if count / step <= 10:
                break
    return max(step, 1)


LANE_LABEL_CHARS = 14
"""A device lane's label is its device's name, cut to this many characters."""


def lane_keys(run) -> list:
    """The device lanes of ``run``, one per who ran its commands: "" (the run's own
    device) first, then any other device, the host's work (``"host"``) last."""
    keys = [""]
    for k in (run.kernels if run is not None else []):
        if k.device not in keys:
            keys.append(k.device)
    if HOST in keys:
        keys.remove(HOST)
        keys.append(HOST)
    return keys


def lane_label(run, key: str, several: bool) -> str:
    """"device" for a run on one device; else the device's name ("host" for host work)."""
    if not several:
        return "device"
    name = key or (run.device if run is not None else "") or "device"
    return name if len(name) <= LANE_LABEL_CHARS else name[:LANE_LABEL_CHARS - 1] + "…"


class _Lanes:
    """The bars of one run from ``y`` down: one device lane per :func:`lane_keys` entry
    (a kernel's bar in the lane of the device that ran it), then the launch lane."""

    def __init__(self, plot, y: float):
        self.y = y
        self.device = pg.BarGraphItem(x0=[], width=[], y0=[], height=[])
        self.queued = pg.BarGraphItem(x0=[], width=[], y0=[], height=[])
        self.submitted = pg.BarGraphItem(x0=[], width=[], y0=[], height=[])
        for item in (self.queued, self.submitted, self.device):
            plot.addItem(item)
        self.starts = self.ends = self.queue_t = np.zeros(0)
        self.lane = np.zeros(0, dtype=np.int64)
        self.keys: list = [""]
        self.kernels: list = []

    @property
    def rows(self) -> int:
        """Lanes drawn: the device lanes and the launch lane."""
        return len(self.keys) + 1

    def ticks(self, run, prefix: str = "") -> list:
        several = len(self.keys) > 1
        out = [(self.y + i + 0.5, prefix + lane_label(run, key, several))
               for i, key in enumerate(self.keys)]
        return out + [(self.y + len(self.keys) + 0.5, prefix + "launch")]

    def set_run(self, run, y: float | None = None) -> None:
        if y is not None:
            self.y = y
        self.kernels = run.kernels if run is not None else []
        self.keys = lane_keys(run)
        t0 = analysis.kernel_origin(run) if run is not None else 0
        ks = self.kernels
        us = lambda xs: np.array(xs, dtype=np.float64) / 1e3   # noqa: E731
        self.queue_t = us([k.queued - t0 for k in ks])
        submit = us([k.submit - t0 for k in ks])
        self.starts = us([k.start - t0 for k in ks])
        self.ends = us([k.end - t0 for k in ks])
        self.lane = np.array([self.keys.index(k.device) for k in ks], dtype=np.int64)
        n = len(ks)
        launch_y = np.full(n, self.y + len(self.keys) + 0.25)
        self.queued.setOpts(x0=self.queue_t, width=np.maximum(submit - self.queue_t, 0),
                            y0=launch_y, height=np.full(n, 0.5),
                            brush=_brush("#B0B0B0"), pen=None)
        self.submitted.setOpts(x0=submit, width=np.maximum(self.starts - submit, 0),
                               y0=launch_y, height=np.full(n, 0.5),
                               brush=_brush("#606060"), pen=None)
        self.device.setOpts(x0=self.starts, width=np.maximum(self.ends - self.starts, 0),
                            y0=self.y + self.lane + 0.1, height=np.full(n, 0.8))

    def highlight(self, lit: set, selected, pen_scale: float) -> None:
        brushes, pens = [], []
        outline = QtGui.QPen(QtGui.QColor(themes.OVERLAYS["kernel"]))
        outline.setWidthF(3 * pen_scale)
        outline.setCosmetic(True)
        for i, k in enumerate(self.kernels):
            brush = _brush(themes.kernel_color(k.name),
                           255 if (not lit or i in lit) else FADED_ALPHA)
            brushes.append(brush)
            if i == selected:
                pens.append(outline)
            else:     # a one-pixel edge keeps a kernel far shorter than a pixel visible
                edge = QtGui.QPen(brush.color())
                edge.setCosmetic(True)
                pens.append(edge)
        if self.kernels:
            self.device.setOpts(brushes=brushes, pens=pens)

    def kernel_at(self, x: float, lane_y: float) -> int | None:
        """Index of the kernel drawn at time x (µs) in a device lane or the launch lane."""
        if not self.kernels:
            return None
        row = int(np.floor(lane_y - self.y))
        if 0 <= row < len(self.keys):
            lo, hi = self.starts, self.ends
            here = self.lane == row
        elif row == len(self.keys):
            lo, hi = self.queue_t, self.starts
            here = np.ones(len(self.kernels), dtype=bool)
        else:
            return None
        hits = np.flatnonzero(here & (lo <= x) & (x <= hi))
        if hits.size:
            return int(hits[0])
        if not here.any():
            return None
        # nothing under the cursor: the nearest kernel of the lane if it is close on screen
        mid = np.where(here, (lo + hi) / 2, np.inf)
        i = int(np.argmin(np.abs(mid - x)))
        span = max(float(self.ends.max() - self.queue_t.min()), 1e-9)
        return i if abs(mid[i] - x) < 0.01 * span else None


class TimelineView(QtWidgets.QWidget):
    """Kernel timeline above, time per step below."""

    kernel_clicked = QtCore.Signal(int)     # index into run.kernels
    position_clicked = QtCore.Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.theme = themes.LIGHT
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        layout.addWidget(split)
        self.kernels_plot = pg.PlotWidget()
        self.kernels_plot.setMouseEnabled(x=True, y=False)
        self.kernels_plot.setMenuEnabled(False)
        self.kernels_plot.invertY(True)
        self.kernels_plot.setLabel("bottom", "time since the run's first launch (µs)")
        self.kernels_plot.getAxis("left").setWidth(70)
        self.steps_plot = pg.PlotWidget()
        self.steps_plot.setMouseEnabled(x=True, y=False)
        self.steps_plot.setMenuEnabled(False)
        self.steps_plot.setLabel("bottom", "step (device time of each step)")
        for name in ("left", "bottom"):       # units named in the label, never a "(×0.001)"
            self.steps_plot.getAxis(name).enableAutoSIPrefix(False)
        self.steps_plot.getAxis("left").setWidth(80)
        split.addWidget(self.kernels_plot)
        split.addWidget(self.steps_plot)
        self.lanes = [_Lanes(self.kernels_plot, 0.0), _Lanes(self.kernels_plot, 2.5)]
        self.span = pg.LinearRegionItem(movable=False, brush=_brush(themes.OVERLAYS["active"], 40),
                                        pen=pg.mkPen(themes.OVERLAYS["active"]))
        self.span.setZValue(-10)
        self.span.setVisible(False)
        self.kernels_plot.addItem(self.span)
        self.curve = pg.PlotDataItem(pen=pg.mkPen("#808080", width=1))
        self.scatter = pg.ScatterPlotItem(size=7, pen=None)
        self.compare_curve = pg.PlotDataItem(pen=pg.mkPen("#808080", width=1.5,
                                                          style=QtCore.Qt.PenStyle.DashLine))
        self.cursor = pg.InfiniteLine(angle=90, movable=False,
                                      pen=pg.mkPen(themes.OVERLAYS["active"], width=2))
        for item in (self.curve, self.compare_curve, self.scatter, self.cursor):
            self.steps_plot.addItem(item)
        self.legend = pg.LegendItem(offset=(-10, 10))
        self.legend.setParentItem(self.steps_plot.getPlotItem().getViewBox())
        self.runs = [None, None]
        self.kernels_plot.scene().sigMouseClicked.connect(self._kernels_click)
        self.steps_plot.scene().sigMouseClicked.connect(self._steps_click)
        self.apply_theme(self.theme)

    def apply_theme(self, theme: themes.Theme) -> None:
        self.theme = theme
        font = QtGui.QFont()
        font.setPointSizeF(9 * theme.font_scale)
        for w in (self.kernels_plot, self.steps_plot):
            w.setBackground(theme.background)
            for name in ("left", "bottom"):
                ax = w.getAxis(name)
                ax.setPen(theme.foreground)
                ax.setTextPen(theme.foreground)
                ax.setTickFont(font)
        self.scatter.setSize(7 * theme.pen_scale)
        self.legend.setLabelTextColor(theme.foreground)

    def set_runs(self, run, compare=None) -> None:
        """Draw ``run`` (and ``compare`` in the second lanes)."""
        self.runs = [run, compare]
        first, second = self.lanes
        first.set_run(run, 0.0)
        second.set_run(compare, first.rows + 0.5)
        ticks = first.ticks(run, "A " if compare is not None else "")
        if compare is not None:
            ticks += second.ticks(compare, "B ")
        axis = self.kernels_plot.getAxis("left")
        axis.setTicks([ticks, []])
        metrics = QtGui.QFontMetrics(axis.style.get("tickFont") or QtGui.QFont())
        widest = max(metrics.horizontalAdvance(label) for _, label in ticks)
        axis.setWidth(max(70, widest + 24))             # device names in full
        bottom = second.y + second.rows + 0.2 if compare is not None else first.rows
        self.kernels_plot.setYRange(-0.2, bottom, padding=0)
        ends = [lan.ends.max() for lan in self.lanes if lan.kernels]
        if ends:
            self.kernels_plot.setXRange(0, max(ends), padding=0.02)
        self._draw_steps()

    def _draw_steps(self) -> None:
        run, other = self.runs
        if run is None or not run.steps:
            for item in (self.curve, self.scatter, self.compare_curve):
                item.setData([], [])
            return
        x = np.arange(1, len(run.steps) + 1)
        times = [analysis.step_times_ns(r) for r in self.runs if r is not None and r.steps]
        unit, scale = time_unit(max(float(t.max()) for t in times if t.size))
        self.steps_plot.setLabel("left", unit)
        y = analysis.step_times_ns(run) / scale
        self.curve.setData(x, y)
        self.scatter.setData(x, y, brush=[_brush(themes.phase_color(s.phase))
                                          for s in run.steps])
        self.legend.clear()
        if other is not None and other.steps:
            self.compare_curve.setData(np.arange(1, len(other.steps) + 1),
                                       analysis.step_times_ns(other) / scale)
            names = registry.difference_titles(run, other)
            self.legend.addItem(self.curve, f"A: {names[0]}")
            self.legend.addItem(self.compare_curve, f"B: {names[1]}")
        else:
            self.compare_curve.setData([], [])
        self.legend.setVisible(other is not None)
        last = max(len(run.steps), len(other.steps) if other is not None else 0)
        self.steps_plot.setXRange(0, last + 1, padding=0.02)
        every = integer_tick(last)
        self.steps_plot.getAxis("bottom").setTickSpacing(every, every)

    def set_position(self, position: int, lit: list, selected, compare_position=None) -> None:
        """Light the current step's kernels (``lit``), outline ``selected``."""
        lanes = self.lanes[0]
        lanes.highlight(set(lit), selected, self.theme.pen_scale)
        if lit:
            self.span.setRegion((float(lanes.queue_t[lit].min()), float(lanes.ends[lit].max())))
        self.span.setVisible(bool(lit))
        other = self.runs[1]
        if other is not None:
            idx = compare_position - 1 if compare_position else None
            lit_b = {i for i, k in enumerate(other.kernels) if k.step == idx}
            self.lanes[1].highlight(lit_b, None, self.theme.pen_scale)
        self.cursor.setValue(position)

    # ---- clicks ----
    def _kernels_click(self, event) -> None:
        vb = self.kernels_plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        p = vb.mapSceneToView(event.scenePos())
        hit = self.lanes[0].kernel_at(p.x(), p.y())
        if hit is not None:
            self.kernel_clicked.emit(hit)

    def _steps_click(self, event) -> None:
        vb = self.steps_plot.getPlotItem().getViewBox()
        run = self.runs[0]
        if run is None or not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        x = vb.mapSceneToView(event.scenePos()).x()
        self.position_clicked.emit(int(min(max(round(x), 0), len(run.steps))))

    # ---- geometry (also for tests) ----
    def kernel_point(self, index: int) -> QtCore.QPoint:
        """Widget pixel (in ``kernels_plot``) at the middle of kernel ``index``'s bar."""
        lanes = self.lanes[0]
        x = (lanes.starts[index] + lanes.ends[index]) / 2
        vb = self.kernels_plot.getPlotItem().getViewBox()
        scene = vb.mapViewToScene(QtCore.QPointF(x, lanes.y + lanes.lane[index] + 0.5))
        return self.kernels_plot.mapFromScene(scene)
