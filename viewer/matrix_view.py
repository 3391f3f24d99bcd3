"""The matrix heat map: diverging colours, a colour bar, numbers in small matrices, overlays.

Cell (i, j) covers x ∈ [j, j+1], y ∈ [i, i+1] with y pointing down (row 0 on
top), so overlays are rectangles in cell units.  Blank cells (outside a packed
triangle) show the theme's background; other cells holding Inf or NaN show
:data:`~viewer.theme.NON_FINITE`.  Any finite float64 values draw: colours are
computed on values scaled by a power of ten (the colour bar says which), so
no level or difference handed to pyqtgraph overflows.

The title never widens the plot (:class:`FittedTitle`): a long one breaks at its
" · " onto a second line, and what still does not fit is elided, so that the
map, its colour bar and the title fit whatever width the view is given.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from . import theme as themes
from .analysis import Overlays

NUMBERS_MAX_N = 12
"""Largest order whose cells carry their values as text."""

STAIRCASE_MAX_N = 1024
"""Largest order whose staircases are drawn cell by cell (beyond, as straight lines)."""

SAFE_RANGE = (1e-100, 1e100)
"""Colour ranges within this are drawn in the values' own units, others rescaled."""

DECIMALS = 2
"""Default digits after the point of the numbers in cells (a setting)."""

FIXED_MAX = 1e4
"""Numbers at least this large, or nonzero but too small for the decimals, are written
as a power of ten ("3e-09") instead of in fixed point."""

MIN_TEXT_PX = 7
"""Below this font size (pixels) the cells carry no numbers."""

EDGE_PADDING = 0.01
"""Margin around the matrix, a fraction of its size: room for the outlines on its edges."""
CELL_FILL = 0.92
"""The widest number takes at most this fraction of a cell's width."""


def cell_text(value: float, decimals: int = DECIMALS) -> str:
    """A cell's number: fixed point with ``decimals`` digits (``-0.45``), a power of ten for
    the very large and the nonzero too small to show (``3e-09``), ``inf``/``nan``."""
    if not np.isfinite(value):
        return "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    magnitude = abs(value)
    if magnitude >= FIXED_MAX or (0 < magnitude < 0.5 * 10.0 ** -decimals):
        return f"{value:.0e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def text_pixels(texts, cell: float, cap: float | None) -> int:
    """Font pixel size for ``texts`` in a square cell of ``cell`` pixels: as large as the
    cell allows (the widest text within :data:`CELL_FILL` of its width, at most 0.42 of
    its height), no larger than ``cap`` (None: no limit); 0 when below :data:`MIN_TEXT_PX`."""
    ref = QtGui.QFont()
    ref.setPixelSize(100)
    metrics = QtGui.QFontMetricsF(ref)
    widest = max((metrics.horizontalAdvance(t) for t in texts), default=0.0)
    size = 0.42 * cell
    if widest > 0:
        size = min(size, CELL_FILL * cell * 100.0 / widest)
    if cap is not None:
        size = min(size, cap)
    return int(size) if size >= MIN_TEXT_PX else 0


def _pen(color: str, width: float, style=QtCore.Qt.PenStyle.SolidLine) -> QtGui.QPen:
    pen = QtGui.QPen(QtGui.QColor(color))
    pen.setWidthF(width)
    pen.setCosmetic(True)
    pen.setStyle(style)
    pen.setJoinStyle(QtCore.Qt.PenJoinStyle.MiterJoin)
    return pen


def _rect_item(z: float) -> QtWidgets.QGraphicsRectItem:
    item = QtWidgets.QGraphicsRectItem()
    item.setZValue(z)
    item.setBrush(QtCore.Qt.BrushStyle.NoBrush)
    item.setVisible(False)
    return item


def _set_rect(item, region) -> None:
    """Show ``item`` over (row0, row1, col0, col1), hide it for None or an empty region."""
    if region is None or region[1] <= region[0] or region[3] <= region[2]:
        item.setVisible(False)
        return
    r0, r1, c0, c1 = region
    item.setRect(QtCore.QRectF(c0, r0, c1 - c0, r1 - r0))
    item.setVisible(True)


def fit_lines(text: str, metrics: QtGui.QFontMetricsF, width: float,
              max_lines: int = 2) -> list:
    """``text`` as at most ``max_lines`` lines no wider than ``width`` pixels: whole if
    it fits, else broken at its " · " separators (the last line takes the rest), each
    line still too wide elided at its end."""
    if width <= 0 or metrics.horizontalAdvance(text) <= width:
        return [text]
    parts = text.split(" · ")
    lines, line = [], parts[0]
    for part in parts[1:]:
        joined = f"{line} · {part}"
        if metrics.horizontalAdvance(joined) <= width or len(lines) == max_lines - 1:
            line = joined
        else:
            lines.append(line)
            line = part
    lines.append(line)
    return [metrics.elidedText(t, QtCore.Qt.TextElideMode.ElideRight, width) for t in lines]


class FittedTitle(pg.LabelItem):
    """A plot's title that asks for no width: it is fitted (:func:`fit_lines`) to the
    width its plot gives it, and its row of the plot's layout grows to the lines'
    height.  :attr:`text` is the whole title, as set."""

    def __init__(self, plot: pg.PlotItem):
        self._plot = plot
        self._shown = ""           # the fitted lines, as drawn
        self._fitted_to = -1.0     # the width they were fitted to
        self._height = -1.0        # the height of the plot's title row
        super().__init__(" ", parent=plot, size="11pt")

    def setText(self, text, **args) -> None:
        self.opts.update(args)
        self._fitted_to = self._height = -1.0      # PlotItem.setTitle set the row's height
        self._fit(text)

    def _metrics(self) -> QtGui.QFontMetricsF:
        font = QtGui.QFont(self.item.font())
        size = str(self.opts.get("size", "11pt"))
        if size.endswith("pt"):
            font.setPointSizeF(float(size[:-2]))
        return QtGui.QFontMetricsF(font)

    def _fit(self, text: str) -> None:
        width = self.width()
        shown = "<br>".join(fit_lines(text, self._metrics(), width - 2))
        self._fitted_to = width
        if shown != self._shown or self.text != text:
            self._shown = shown
            super().setText(shown)          # draws the lines, then updateMin below
        self.text = text
        height = self.itemRect().height()
        if height != self._height:          # the title row as tall as the lines
            self._height = height
            self.setMaximumHeight(height)
            self._plot.layout.setRowFixedHeight(0, height)

    def resizeEvent(self, ev) -> None:
        super().resizeEvent(ev)
        if ev is not None and self.width() != self._fitted_to:
            self._fit(self.text)

    def updateMin(self) -> None:
        super().updateMin()
        self.setMinimumWidth(0)
        self._sizeHint[QtCore.Qt.SizeHint.MinimumSize] = (0, self.itemRect().height())


class MatrixView(pg.GraphicsLayoutWidget):
    """One heat map with overlays; emits the cell under the mouse."""

    hovered = QtCore.Signal(int, int)     # (row, col), (-1, -1) outside
    clicked = QtCore.Signal(int, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.theme = themes.LIGHT
        self.colormap_name = themes.COLORMAPS[0]
        self.numbers_max_n = NUMBERS_MAX_N
        self.decimals = DECIMALS
        self.text_px = 0                          # font size of the numbers now (0: none)
        self.array: np.ndarray | None = None      # None: no values (regions only)
        self.blank: np.ndarray | None = None      # cells outside a packed triangle
        self.shape: tuple | None = None           # (rows, cols) shown, None: nothing
        self.vmax = 1.0
        self.overlays: Overlays | None = None
        self.plot = self.addPlot()
        self.plot.layout.removeItem(self.plot.titleLabel)      # a title that asks no width
        self.plot.titleLabel.hide()          # pyqtgraph's, left to the plot (which owns it)
        self.plot.titleLabel = FittedTitle(self.plot)
        self.plot.layout.addItem(self.plot.titleLabel, 0, 1)
        self.plot.setTitle(None)
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.plot.hideButtons()
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.showAxis("top")
        self.plot.hideAxis("bottom")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.non_finite = pg.ImageItem(axisOrder="row-major")
        self.non_finite.setZValue(2)
        self.plot.addItem(self.non_finite)
        self.mask = pg.ImageItem(axisOrder="row-major")
        self.mask.setZValue(5)
        self.plot.addItem(self.mask)
        self.colorbar = pg.ColorBarItem(values=(-1, 1), interactive=False, colorMapMenu=False,
                                        width=18)
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        self.colorbar.axis.enableAutoSIPrefix(False)     # "1e+08", never an unnamed scale
        self.unused = QtWidgets.QGraphicsPathItem()
        self.unused.setZValue(6)
        self.boundary = QtWidgets.QGraphicsPathItem()
        self.boundary.setZValue(7)
        self.swaps = QtWidgets.QGraphicsPathItem()
        self.swaps.setZValue(4)
        self.reads = QtWidgets.QGraphicsPathItem()       # blocks read, dotted
        self.reads.setZValue(9.5)
        self.cells = QtWidgets.QGraphicsPathItem()       # single cells read (a diagonal)
        self.cells.setZValue(10)
        self.multipliers = _rect_item(8)
        self.active = _rect_item(10)
        self.kernel = _rect_item(11)
        self.pivot = _rect_item(12)
        self.twin = _rect_item(13)
        for item in (self.unused, self.boundary, self.swaps, self.multipliers, self.active,
                     self.kernel, self.pivot, self.twin, self.reads, self.cells):
            self.plot.addItem(item)
        self.labels = [pg.TextItem("L", anchor=(0.5, 0.5), fill="#FFFFFFC0"),
                       pg.TextItem("U", anchor=(0.5, 0.5), fill="#FFFFFFC0")]
        for lab in self.labels:
            lab.setZValue(9)
            lab.setVisible(False)
            self.plot.addItem(lab)
        self.numbers: list = []
        self.plot.getViewBox().sigResized.connect(self._resized)
        self.scene().sigMouseMoved.connect(self._mouse_moved)
        self.scene().sigMouseClicked.connect(self._mouse_clicked)
        self.apply_theme(self.theme, self.colormap_name)

    # ---- look ----
    def apply_theme(self, theme: themes.Theme, colormap_name: str | None = None) -> None:
        self.theme = theme
        if colormap_name:
            self.colormap_name = colormap_name
        self.setBackground(theme.background)
        self.plot.getViewBox().setBackgroundColor(theme.nan)
        fg = QtGui.QColor(theme.foreground)
        font = QtGui.QFont()
        font.setPointSizeF(9 * theme.font_scale)
        for name in ("top", "left"):
            ax = self.plot.getAxis(name)
            ax.setPen(fg)
            ax.setTextPen(fg)
            ax.setTickFont(font)
        self.colorbar.axis.setPen(fg)
        self.colorbar.axis.setTextPen(fg)
        self.colorbar.axis.setTickFont(font)
        self.colorbar.axis.setWidth(int(QtGui.QFontMetrics(font).horizontalAdvance("-8e+08")) + 12)
        cmap = pg.colormap.get(self.colormap_name)
        self.colorbar.setColorMap(cmap)
        w = theme.pen_scale
        self.active.setPen(_pen(themes.OVERLAYS["active"], 3 * w))
        self.pivot.setPen(_pen(themes.OVERLAYS["pivot"], 3 * w))
        self.kernel.setPen(_pen(themes.OVERLAYS["kernel"], 2 * w, QtCore.Qt.PenStyle.DashLine))
        self.twin.setPen(_pen(themes.OVERLAYS["twin"], 3 * w))
        self.multipliers.setPen(_pen(themes.OVERLAYS["multipliers"], 3 * w,
                                     QtCore.Qt.PenStyle.DashLine))
        self.swaps.setPen(_pen(themes.OVERLAYS["swap"], 3 * w))
        self.swaps.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        self.reads.setPen(_pen(themes.OVERLAYS["read"], 3 * w, QtCore.Qt.PenStyle.DotLine))
        self.reads.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        self.cells.setPen(_pen(themes.OVERLAYS["active"], 3 * w))
        self.cells.setBrush(QtCore.Qt.BrushStyle.NoBrush)
        self.boundary.setPen(_pen(theme.boundary, 1.5 * w))
        self.unused.setPen(QtGui.QPen(QtCore.Qt.PenStyle.NoPen))
        self.unused.setBrush(_rgba(theme.unused))
        lab_font = QtGui.QFont()
        lab_font.setPointSizeF(14 * theme.font_scale)
        lab_font.setBold(True)
        for lab in self.labels:
            lab.setColor("#000000")
            lab.setFont(lab_font)
        if self.shape is not None:
            self._refresh()

    def show_colorbar(self, visible: bool) -> None:
        self.colorbar.setVisible(visible)

    def set_title(self, text: str) -> None:
        self.plot.setTitle(text, color=self.theme.foreground,
                           size=f"{11 * self.theme.font_scale:.0f}pt")

    # ---- content ----
    def show_matrix(self, array, vmax: float, overlays: Overlays | None = None,
                    title: str = "", blank=None) -> None:
        """Draw ``array`` (2-D) with colours in [−vmax, vmax].

        ``blank`` marks the cells that hold no entry (outside a packed
        triangle): they show the background.  Any other Inf or NaN cell shows
        the non-finite colour.
        """
        if array is None:
            self.shape = self.array = self.blank = None
        else:
            self.array = np.asarray(array, dtype=np.float64)
            self.shape = self.array.shape
            self.blank = None if blank is None else np.asarray(blank, dtype=bool)
        self.vmax = float(vmax) if vmax and np.isfinite(vmax) and vmax > 0 else 1.0
        self.overlays = overlays
        self.set_title(title)
        self._refresh()

    def show_regions(self, shape, overlays: Overlays | None = None, title: str = "") -> None:
        """No values (a run recorded without snapshots): an empty grid of ``shape`` (rows,
        cols) with the overlays.  Nothing of the grid's size is allocated."""
        self.array = self.blank = None
        self.shape = (int(shape[0]), int(shape[1]))
        self.vmax = 1.0
        self.overlays = overlays
        self.set_title(title)
        self._refresh()

    def _refresh(self) -> None:
        if self.shape is None:
            for item in (self.image, self.non_finite):
                item.clear()
            return
        rows, cols = self.shape
        scaled, vmax, exponent = colour_values(self.array, self.vmax)
        if scaled is None:
            self.image.clear()
        else:
            self.image.setImage(scaled, autoLevels=False)
        self.colorbar.setLevels((-vmax, vmax))
        self.colorbar.axis.setLabel(f"× 1e{exponent}" if exponent else None)
        self._draw_non_finite()
        rect = QtCore.QRectF(0, 0, cols, rows)
        for item in (self.image, self.non_finite):
            item.setRect(rect)
        # a margin of a few pixels: outlines on the matrix's edges are drawn whole, not
        # under the axes' lines
        self.plot.setRange(xRange=(0, cols), yRange=(0, rows), padding=EDGE_PADDING)
        self._ticks(rows, cols)
        self._draw_overlays(rows, cols)
        self._draw_numbers()

    def _draw_non_finite(self) -> None:
        """Tint the cells that hold Inf or NaN (blank cells excepted)."""
        a = self.array
        bad = None if a is None else ~np.isfinite(a)
        if bad is not None and self.blank is not None and self.blank.shape == bad.shape:
            bad &= ~self.blank
        if bad is None or not bad.any():
            self.non_finite.clear()
            return
        rgba = np.zeros(bad.shape + (4,), dtype=np.uint8)
        rgba[bad] = (*QtGui.QColor(themes.NON_FINITE).getRgb()[:3], 255)
        self.non_finite.setImage(rgba, levels=None)

    def _ticks(self, rows: int, cols: int) -> None:
        for name, count in (("left", rows), ("top", cols)):
            every = max(1, int(np.ceil(count / 10)))
            major = [(i + 0.5, str(i)) for i in range(0, count, every)]
            self.plot.getAxis(name).setTicks([major, []])

    def _draw_overlays(self, rows: int, cols: int) -> None:
        ov = self.overlays or Overlays()
        _set_rect(self.active, ov.active)
        _set_rect(self.multipliers, ov.multipliers)
        _set_rect(self.pivot, None if ov.pivot is None else
                  (ov.pivot[0], ov.pivot[0] + 1, ov.pivot[1], ov.pivot[1] + 1))
        colour = themes.MARKERS["fail"] if ov.failed else themes.OVERLAYS["pivot"]
        self.pivot.setPen(_pen(colour, (4 if ov.failed else 3) * self.theme.pen_scale))
        self.swaps.setPath(_row_bands(ov.swapped_rows, rows, cols))
        unused = _unused_path(ov.storage, min(rows, cols)) if rows == cols \
            else QtGui.QPainterPath()
        if ov.consumed > 0:              # an operand's rows already used up: greyed
            unused.addRect(QtCore.QRectF(0, 0, cols, min(ov.consumed, rows)))
        self.unused.setPath(unused)
        self.reads.setPath(_boxes(ov.reads))
        self.cells.setPath(_boxes([(r, r + 1, c, c + 1) for r, c in ov.cells]))
        t = min(ov.finished, rows) if ov.storage == "lu" and rows == cols else 0
        self.boundary.setPath(_lu_boundary(t, rows))
        self.boundary.setVisible(t > 0)
        numbers = self.array is not None and max(rows, cols) <= self.numbers_max_n
        show_labels = t > 0 and rows >= 3 and not numbers     # never over a number
        self.labels[0].setPos(0.5 + (t - 1) / 3.0, rows - 0.5 - (rows - t) / 3.0)
        self.labels[1].setPos(cols - 0.5 - (cols - t) / 3.0, 0.5 + (t - 1) / 3.0)
        for lab in self.labels:
            lab.setVisible(show_labels)

    def _cell_pixels(self) -> float:
        """On-screen size of one cell (pixels), from the view's current scale."""
        try:
            px = self.plot.getViewBox().viewPixelSize()[0]
        except (ZeroDivisionError, TypeError):
            return 40.0
        return 1.0 / px if px > 0 else 40.0

    def _draw_numbers(self) -> None:
        a = self.array
        show = a is not None and max(a.shape) <= self.numbers_max_n
        if not show:
            for item in self.numbers:
                item.setVisible(False)
            return
        rows, cols = a.shape
        while len(self.numbers) < rows * cols:      # items are reused, never removed
            item = pg.TextItem("", anchor=(0.5, 0.5))
            item.setZValue(3)
            self.plot.addItem(item)
            self.numbers.append(item)
        for k, item in enumerate(self.numbers):
            if k < rows * cols:
                item.setPos(k % cols + 0.5, k // cols + 0.5)
            else:
                item.setVisible(False)
        blank = self.blank.ravel() if self.blank is not None and self.blank.shape == a.shape \
            else np.zeros(a.size, dtype=bool)
        texts = ["" if empty else cell_text(v, self.decimals) for v, empty in zip(a.ravel(), blank)]
        cap = None if self.theme.name == "presentation" else 26 * self.theme.font_scale
        self.text_px = text_pixels(texts, self._cell_pixels(), cap)
        font = QtGui.QFont()
        font.setPixelSize(max(self.text_px, 1))
        for item, v, text in zip(self.numbers[:rows * cols], a.ravel(), texts):
            item.setVisible(self.text_px > 0)
            if item.textItem.font().pixelSize() != font.pixelSize():
                item.setFont(font)
            if item.textItem.toPlainText() != text:
                item.setText(text)
            if not text:
                continue
            item.setColor("#FFFFFF" if not np.isfinite(v) or abs(v) > 0.55 * self.vmax
                          else "#000000")

    def _resized(self, *_args) -> None:
        if self.array is not None:
            self._draw_numbers()

    # ---- overlays set from outside ----
    def set_kernel_region(self, region) -> None:
        _set_rect(self.kernel, region)

    def set_twin(self, cell) -> None:
        _set_rect(self.twin, None if cell is None else (cell[0], cell[0] + 1,
                                                         cell[1], cell[1] + 1))

    def set_mask(self, mask) -> None:
        """Tint the cells where ``mask`` is True with the active-region colour."""
        if mask is None or not np.any(mask):
            self.mask.clear()
            return
        rgba = np.zeros(mask.shape + (4,), dtype=np.uint8)
        rgba[mask] = (*QtGui.QColor(themes.OVERLAYS["active"]).getRgb()[:3], 90)
        self.mask.setImage(rgba, levels=None)
        self.mask.setRect(QtCore.QRectF(0, 0, mask.shape[1], mask.shape[0]))

    # ---- geometry (also for tests) ----
    def cell_at(self, scene_pos) -> tuple[int, int]:
        if self.shape is None:
            return -1, -1
        p = self.plot.getViewBox().mapSceneToView(scene_pos)
        r, c = int(np.floor(p.y())), int(np.floor(p.x()))
        if 0 <= r < self.shape[0] and 0 <= c < self.shape[1]:
            return r, c
        return -1, -1

    def view_to_widget(self, x: float, y: float) -> QtCore.QPoint:
        """Widget pixel of the view point (x, y) in cell units."""
        scene = self.plot.getViewBox().mapViewToScene(QtCore.QPointF(x, y))
        return self.mapFromScene(scene)

    def _mouse_moved(self, pos) -> None:
        self.hovered.emit(*self.cell_at(pos))

    def _mouse_clicked(self, event) -> None:
        r, c = self.cell_at(event.scenePos())
        if r >= 0:
            self.clicked.emit(r, c)


def _rgba(text: str) -> QtGui.QColor:
    """'#RRGGBBAA' -> QColor."""
    c = QtGui.QColor(text[:7])
    c.setAlpha(int(text[7:9], 16))
    return c


def colour_values(array, vmax: float) -> tuple:
    """(values, v, e): what the image draws, with colour levels [−v, v] in units of 10**e.

    ``e`` is 0 when ``vmax`` lies in :data:`SAFE_RANGE`, else the power of ten that
    brings it to [1, 10); ``values`` is ``array`` in those units with every
    non-finite entry NaN (transparent), or None for no array.  Every level and
    every difference of levels and values is then a moderate finite number.
    """
    exponent = 0
    if not SAFE_RANGE[0] <= vmax <= SAFE_RANGE[1]:
        exponent = int(np.floor(np.log10(vmax)))
    v = _times_pow10(vmax, -exponent)
    if array is None:
        return None, v, exponent
    with np.errstate(invalid="ignore", over="ignore"):
        values = np.where(np.isfinite(array), _times_pow10(array, -exponent), np.nan)
        np.clip(values, -v, v, out=values)
    return values, v, exponent


def _times_pow10(x, k: int):
    """x · 10**k in two factors, so that neither overflows for |k| up to 630."""
    half = k // 2
    return (x * 10.0 ** half) * 10.0 ** (k - half)


def _boxes(regions) -> QtGui.QPainterPath:
    """One rectangle per non-empty (row0, row1, col0, col1) region."""
    path = QtGui.QPainterPath()
    for r0, r1, c0, c1 in regions:
        if r1 > r0 and c1 > c0:
            path.addRect(QtCore.QRectF(c0, r0, c1 - c0, r1 - r0))
    return path


def _row_bands(rows, n_rows: int, cols: int) -> QtGui.QPainterPath:
    """One rectangle per run of consecutive rows (those inside the matrix) across ``cols``."""
    path = QtGui.QPainterPath()
    inside = sorted({int(r) for r in rows if 0 <= r < n_rows})
    start = None
    for k, r in enumerate(inside):
        if start is None:
            start = r
        if k + 1 == len(inside) or inside[k + 1] != r + 1:
            path.addRect(QtCore.QRectF(0, start, cols, r + 1 - start))
            start = None
    return path


def _unused_path(storage: str, n: int) -> QtGui.QPainterPath:
    """The triangle a one-triangle algorithm never touches (strictly upper for "lower").

    Cell by cell up to :data:`STAIRCASE_MAX_N`, beyond that its straight hull.
    """
    path = QtGui.QPainterPath()
    if storage not in ("lower", "upper") or n < 2:
        return path
    pts = [(n, 0), (1, 0)]
    if n <= STAIRCASE_MAX_N:
        for i in range(n - 1):
            pts += [(i + 1, i + 1), (i + 2, i + 1)]
    else:
        pts.append((n, n - 1))
    if storage == "upper":
        pts = [(y, x) for x, y in pts]
    path.moveTo(*pts[0])
    for p in pts[1:]:
        path.lineTo(*p)
    path.closeSubpath()
    return path


def _lu_boundary(t: int, n: int) -> QtGui.QPainterPath:
    """The staircase below the diagonal of the first t columns, then down: L | U and trailing.

    Cell by cell up to :data:`STAIRCASE_MAX_N` columns, beyond that a straight line.
    """
    path = QtGui.QPainterPath()
    if t <= 0:
        return path
    path.moveTo(0, 1)
    if t <= STAIRCASE_MAX_N:
        for j in range(t):
            path.lineTo(j, j + 1)
            path.lineTo(j + 1, j + 1)
    else:
        path.lineTo(t - 1, t)
        path.lineTo(t, t)
    path.lineTo(t, n)
    return path
