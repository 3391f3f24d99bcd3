"""The sparse view: L's pattern with its fill-in, the supernodes, and the elimination tree.

Left, the permuted matrix P·A·Pᵀ as a spy image: above the diagonal A's
pattern (mirrored), on and below it L's pattern, entries of A in one colour
and the fill-in in another; each supernode's diagonal block is outlined (the
partition). Right, the supernodal elimination tree: a supernode's height above
the leaves is its level in the schedule (the batched steps go level by level),
the leaves in postorder, a node's size growing with its columns.

Animated with the run's steps: the supernodes of the current step are
outlined (amber) in L and in the tree, columns of supernodes not yet factored
are faded, factored ones take their route's colour in the tree and in the strip
above the matrix (batched small supernodes, or large ones on the BLAS-3 layer;
the device's name in the legend).  The spy image bins entries into at most
:data:`MAX_PIXELS` pixels a side, so its cost is the pixels', whatever nnz(L).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from . import sparse

MAX_PIXELS = 800
"""Largest side of the spy image (larger matrices are binned)."""

COLOURS = {"a": (40, 90, 180), "fill": (220, 70, 50), "pending": (180, 180, 180),
           "batched": (60, 160, 90), "large": (150, 70, 190), "current": (245, 170, 0)}
"""Entries of A, fill-in, supernodes not yet factored, the two routes, the current step."""

PENDING_ALPHA = 70
"""Opacity (of 255) of L's entries in columns not yet factored."""


def tree_layout(s: sparse.Structure) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of each supernode: y its height above the leaves (its schedule level), x
    consecutive for the leaves in supernode order (a postorder: parent[s] > s) and the
    mean of its children's for the others."""
    ns = s.ns
    height = np.zeros(ns, np.int64)
    x = np.zeros(ns)
    total = np.zeros(ns)
    count = np.zeros(ns, np.int64)
    leaf = 0
    for v in range(ns):                     # children come before their parent
        if count[v]:
            x[v] = total[v] / count[v]
        else:
            x[v] = leaf
            leaf += 1
        p = s.parent[v]
        if p >= 0:
            total[p] += x[v]
            count[p] += 1
            height[p] = max(height[p], height[v] + 1)
    return x, height.astype(float)


def spy_image(s: sparse.Structure, pixels: int = MAX_PIXELS) -> tuple[np.ndarray, int]:
    """(categories, side): a side × side int8 grid, 0 empty, 1 an entry of A, 2 fill-in
    (a bin holding both shows the fill); A's pattern mirrored above the diagonal."""
    side = max(min(s.n, pixels), 1)
    cat = np.zeros((side, side), np.int8)
    scale = side / max(s.n, 1)
    rows, cols = s.l_pattern()
    cat[(rows * scale).astype(np.int64), (cols * scale).astype(np.int64)] = 1
    ar, ac = (s.a_rows * scale).astype(np.int64), (s.a_cols * scale).astype(np.int64)
    cat[ac, ar] = 1
    fr, fc = s.fill()
    cat[(fr * scale).astype(np.int64), (fc * scale).astype(np.int64)] = 2
    return cat, side


class SparseView(QtWidgets.QWidget):
    """A sparse Cholesky run at one position (see the module docstring)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.title = QtWidgets.QLabel("")
        self.title.setWordWrap(True)
        layout.addWidget(self.title)
        self.graphics = pg.GraphicsLayoutWidget()
        layout.addWidget(self.graphics, 1)
        self.legend = QtWidgets.QLabel("")
        self.legend.setWordWrap(True)
        layout.addWidget(self.legend)
        self.pattern = self.graphics.addPlot(row=0, col=0)
        self.tree = self.graphics.addPlot(row=0, col=1)
        self.graphics.ci.layout.setColumnStretchFactor(0, 3)
        self.graphics.ci.layout.setColumnStretchFactor(1, 2)
        for plot in (self.pattern, self.tree):
            plot.invertY(True)
            plot.hideButtons()
            plot.setMenuEnabled(False)
        self.pattern.setAspectLocked(True)
        self.pattern.showAxis("top")
        self.pattern.hideAxis("bottom")
        self.tree.invertY(False)
        self.tree.hideAxis("bottom")
        self.tree.setLabel("left", "level")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.pattern.addItem(self.image)
        self.strip = pg.ImageItem(axisOrder="row-major")
        self.pattern.addItem(self.strip)
        self.blocks = pg.PlotCurveItem(connect="pairs", pen=pg.mkPen((110, 110, 110), width=1))
        self.pattern.addItem(self.blocks)
        self.current_box = pg.PlotCurveItem(connect="pairs",
                                            pen=pg.mkPen(COLOURS["current"], width=2))
        self.pattern.addItem(self.current_box)
        self.edges = pg.PlotCurveItem(connect="pairs", pen=pg.mkPen((150, 150, 150), width=1))
        self.tree.addItem(self.edges)
        self.nodes = pg.ScatterPlotItem(pxMode=True)
        self.tree.addItem(self.nodes)
        self.run = None
        self.structure: sparse.Structure | None = None
        self.progress: sparse.Progress | None = None
        self._cat = None
        self._side = 1
        self._xy = None

    def apply_theme(self, theme, *_args) -> None:
        self.graphics.setBackground(theme.background)
        fg = QtGui.QColor(theme.foreground)
        for plot in (self.pattern, self.tree):
            for name in ("top", "left"):
                plot.getAxis(name).setPen(fg)
                plot.getAxis(name).setTextPen(fg)

    # ---- one run, once ----
    def _set_run(self, run, s: sparse.Structure) -> None:
        self.run, self.structure = run, s
        self._cat, self._side = spy_image(s)
        n = max(s.n, 1)
        c0, c1 = s.super_ptr[:-1].astype(float), s.super_ptr[1:].astype(float)
        # each supernode's diagonal block: four sides as pairs of points
        xs = np.stack([c0, c1, c1, c1, c1, c0, c0, c0], axis=1).ravel()
        ys = np.stack([c0, c0, c0, c1, c1, c1, c1, c0], axis=1).ravel()
        self.blocks.setData(xs, ys)
        self._rects = (QtCore.QRectF(0, 0, n, n), QtCore.QRectF(0, -0.04 * n, n, 0.03 * n))
        self.pattern.setRange(xRange=(0, n), yRange=(-0.05 * n, n), padding=0.02)
        x, y = tree_layout(s)
        self._xy = (x, y)
        kids = np.flatnonzero(s.parent >= 0)
        ex = np.stack([x[kids], x[s.parent[kids]]], axis=1).ravel()
        ey = np.stack([y[kids], y[s.parent[kids]]], axis=1).ravel()
        self.edges.setData(ex, ey)
        ncols = np.diff(s.super_ptr)
        # four sizes, so the scatter renders a handful of symbols however many nodes
        self._sizes = 6 + 3 * np.round(3 * np.sqrt(ncols / max(ncols.max(initial=1), 1)))
        self.tree.setRange(xRange=(x.min(initial=0) - 1, x.max(initial=0) + 1),
                           yRange=(-0.5, y.max(initial=0) + 0.5), padding=0.02)

    def show_run(self, run, position: int, title: str = "") -> None:
        """Draw ``run`` (a sparse Cholesky with its structure) after ``position`` steps."""
        s = sparse.structure(run)
        if s is None:
            return
        if run is not self.run:
            self._set_run(run, s)
        self.progress = p = sparse.progress(run, s, position)
        self.title.setText(f"{title} · {sparse.summary(run, s)}" if title
                           else sparse.summary(run, s))
        self._draw_pattern(s, p)
        self._draw_tree(s, p)
        devices = sorted({k.device for k in run.kernels if k.device}) or [run.device or "device"]
        self.legend.setText(
            "<span style='color:rgb{a}'>■</span> entry of A &nbsp; "
            "<span style='color:rgb{f}'>■</span> fill-in &nbsp; "
            "<span style='color:rgb{b}'>●</span> batched (small supernodes, many a launch) "
            "&nbsp; <span style='color:rgb{g}'>●</span> large (one at a time, BLAS-3) "
            "&nbsp; <span style='color:rgb{c}'>□</span> this step &nbsp; on {d}".format(
                a=COLOURS["a"], f=COLOURS["fill"], b=COLOURS["batched"],
                g=COLOURS["large"], c=COLOURS["current"], d=", ".join(devices)))

    def column_state(self, s: sparse.Structure, p: sparse.Progress) -> np.ndarray:
        """Per permuted column: -1 not factored, 0 batched, 1 large (its supernode's)."""
        owner = np.repeat(np.arange(s.ns), np.diff(s.super_ptr))
        return p.route[owner]

    def _draw_pattern(self, s: sparse.Structure, p: sparse.Progress) -> None:
        side = self._side
        rgba = np.zeros((side, side, 4), np.uint8)
        cat = self._cat
        for k, name in ((1, "a"), (2, "fill")):
            rgba[cat == k, :3] = COLOURS[name]
            rgba[cat == k, 3] = 255
        state = self.column_state(s, p)
        cols = (np.arange(s.n) * side / max(s.n, 1)).astype(np.int64)
        done = np.ones(side, bool)                  # a bin is done once all its columns are
        np.logical_and.at(done, cols, state >= 0)
        route = np.full(side, -1, np.int64)
        route[cols] = state
        route[~done] = -1
        lower = np.tril(np.ones((side, side), bool))
        rgba[lower & ~done[None, :] & (rgba[..., 3] > 0), 3] = PENDING_ALPHA
        self.image.setImage(rgba, autoLevels=False)
        self.image.setRect(self._rects[0])
        strip = np.zeros((1, side, 4), np.uint8)
        for code, name in ((-1, "pending"), (0, "batched"), (1, "large")):
            strip[0, route == code, :3] = COLOURS[name]
            strip[0, route == code, 3] = 255
        self.strip.setImage(strip, autoLevels=False)
        self.strip.setRect(self._rects[1])
        xs, ys = [], []
        n = float(s.n)
        for v in p.current.tolist():
            c0, c1 = float(s.super_ptr[v]), float(s.super_ptr[v + 1])
            xs += [c0, c0, c1, c1, c0, c1, c0, c1]
            ys += [c0, n, c0, n, c0, c0, n, n]
        self.current_box.setData(np.asarray(xs, float), np.asarray(ys, float))

    _BRUSHES = None

    def _draw_tree(self, s: sparse.Structure, p: sparse.Progress) -> None:
        x, y = self._xy
        if self._BRUSHES is None:      # shared objects: one symbol per (size, brush, pen)
            SparseView._BRUSHES = np.array([pg.mkBrush(*COLOURS[k])
                                            for k in ("pending", "batched", "large")])
            SparseView._PENS = np.array([pg.mkPen(None), pg.mkPen(COLOURS["current"], width=3)])
        current = np.zeros(s.ns, np.int64)
        current[p.current] = 1
        self.nodes.setData(x=x, y=y, size=self._sizes, brush=self._BRUSHES[p.route + 1],
                           pen=self._PENS[current])
