"""The side panel: the current step in numbers, its kernels, and the colour legend."""

from __future__ import annotations

import html

import numpy as np
from PySide6 import QtCore, QtGui, QtWidgets

from oclla.trace import HOST

from . import analysis, registry
from . import theme as themes

KERNEL_COLUMNS = ("kernel", "launch µs", "device µs", "global", "local")


ERROR_CHARS = 2000
"""The panel shows this much of a run's error message (a build log can be long)."""


def _clip(text: str, limit: int = ERROR_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def _fmt_us(ns: float) -> str:
    return f"{ns / 1e3:.1f}"


def step_summary(run, position: int) -> str:
    """Rich text describing the step at ``position``: region, flops, times, work-items."""
    step = analysis.step_at(run, position)
    times = analysis.step_times_ns(run)
    done = float(times[:position].sum())
    total = float(times.sum())
    lines = [f"<b>{html.escape(registry.run_title(run))}</b> · "
             f"{'×'.join(map(str, run.shape))} {html.escape(run.dtype)}"]
    if step is None:
        lines.append("the matrix before the first step")
    else:
        r0, r1, c0, c1 = step.region
        packed = analysis.is_packed(analysis.matrix_at(run, position))
        where = "in " + step.info["matrix"] if "matrix" in step.info else (
            "of the RFP buffer" if packed else "")
        lines.append(f"phase <b>{html.escape(registry.phase_name(step.phase))}</b> · "
                     f"rows {r0}:{r1}, "
                     f"cols {c0}:{c1} {where}".rstrip())
        if "logical_region" in step.info:
            q0, q1, p0, p1 = step.info["logical_region"]
            lines.append(f"in the matrix: rows {q0}:{q1}, cols {p0}:{p1}")
        pv = analysis.pivot_value(run, position)
        if pv is not None:
            stored = f" (stored at {tuple(step.pivot)})" if packed else ""
            lines.append(f"pivot {pv[0]:.4g} at {pv[1]}{stored}")
        if step.info.get("swaps"):
            swaps = ", ".join(f"{a}↔{b}" for a, b in step.info["swaps"])
            lines.append(f"row swaps {swaps}")
        disp = registry.display(run.algorithm)
        if disp.reads is not None:
            reads = disp.reads(run, step)
            if reads:
                lines.append("reads " + "; ".join(f"rows {a}:{b}, cols {c}:{d}"
                                                 for a, b, c, d in reads))
        if disp.operand_rows is not None:
            rows = disp.operand_rows(run, step)
            if rows is not None:
                lines.append(f"rows {rows[0]}:{rows[1]} of V; rows :"
                             f"{analysis.consumed_rows(run, position)} used up")
        host = sum(k.duration_ns for k in step.kernels if k.device == HOST)
        if host:
            lines.append(f"host {_fmt_us(host)} µs (the host's LAPACK, beside the device)")
        gf = step.flops / step.device_ns if step.device_ns else float("nan")
        lines.append(f"{step.flops:.0f} flops · device {_fmt_us(step.device_ns)} µs · "
                     f"{gf:.3g} GFLOP/s")
        items = sum(analysis.kernel_items(k) for k in step.kernels)
        cells = analysis.region_cells(step.region)
        if items and cells:
            lines.append(f"work-items launched {items} for {cells} cells of the region "
                         f"({100.0 * min(cells / items, 1.0):.0f}% busy at most)")
    lines.append(f"cumulative device time {done / 1e6:.3f} of {total / 1e6:.3f} ms")
    gf_run = analysis.run_gflops(run)
    if gf_run is not None:
        lines.append(f"whole run {gf_run:.3g} GFLOP/s (device time)")
    if run.error:
        lines.append(f"<span style='color:{themes.MARKERS['fail']}'>"
                     f"{html.escape(_clip(run.error))}</span>")
    return "<br>".join(lines)


class DetailsPanel(QtWidgets.QWidget):
    """Step text, a table of the step's kernels (click to select), and the legend."""

    kernel_selected = QtCore.Signal(int)     # index into run.kernels

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QtWidgets.QVBoxLayout(self)
        self.summary = QtWidgets.QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.summary.setAlignment(QtCore.Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.summary)
        self.table = QtWidgets.QTableWidget(0, len(KERNEL_COLUMNS))
        self.table.setHorizontalHeaderLabels(KERNEL_COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QtWidgets.QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setFocusPolicy(QtCore.Qt.FocusPolicy.NoFocus)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.cellClicked.connect(self._row_clicked)
        layout.addWidget(self.table, 1)
        self.legend = QtWidgets.QLabel()
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        layout.addWidget(self.legend)
        self._rows: list = []

    def _fit_text(self) -> None:
        """Wrapped labels keep the height their text needs (the panel scrolls instead)."""
        for label in (self.summary, self.legend):
            label.setMinimumHeight(max(label.heightForWidth(max(label.width(), 1)), 0))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_text()

    def changeEvent(self, event) -> None:       # a bigger font wraps into more lines
        super().changeEvent(event)
        if event.type() == QtCore.QEvent.Type.FontChange:
            self._fit_text()

    def show_position(self, run, position: int, kernel_indices: list, selected) -> None:
        self.summary.setText(step_summary(run, position))
        self._fit_text()
        kernels = run.kernels
        self._rows = list(kernel_indices)
        self.table.setRowCount(len(self._rows))
        for row, i in enumerate(self._rows):
            k = kernels[i]
            values = (k.name, _fmt_us(k.launch_ns), _fmt_us(k.duration_ns),
                      "×".join(map(str, k.global_size or ())) or
                      ("host" if k.device == HOST else "copy"),
                      "×".join(map(str, k.local_size or ())))
            for col, v in enumerate(values):
                item = QtWidgets.QTableWidgetItem(v)
                item.setToolTip(v)
                if col == 0:
                    item.setForeground(QtGui.QColor(themes.kernel_color(k.name)))
                self.table.setItem(row, col, item)
        self.table.resizeColumnToContents(0)        # kernel names in full
        self.table.clearSelection()
        if selected in self._rows:
            self.table.selectRow(self._rows.index(selected))

    def show_legend(self, run, theme=themes.LIGHT) -> None:
        """The colours this run uses: its phases, its kernels, the outlines that its
        algorithm draws, and what the lines and grey cells mean in this theme."""
        self.legend.setText(legend_html(run, theme))
        self._fit_text()

    def _row_clicked(self, row: int, _col: int) -> None:
        if 0 <= row < len(self._rows):
            self.kernel_selected.emit(self._rows[row])


OVERLAY_WORDS = {"active": "active submatrix", "pivot": "pivot", "multipliers": "multipliers",
                 "swap": "swapped rows", "kernel": "selected kernel's step",
                 "read": "blocks read (dotted)"}


def legend_html(run, theme) -> str:
    """Rich text legend of ``run`` in ``theme`` (see :meth:`DetailsPanel.show_legend`)."""
    disp = registry.display(run.algorithm)
    phases = list(dict.fromkeys(s.phase for s in run.steps))
    names = list(dict.fromkeys(k.name for k in run.kernels))
    swatch = "<span style='color:{c}'>■</span>&nbsp;{t}"
    outlines = ["active", "pivot", "kernel"]
    if disp.storage in ("lu", "triangle", "lower", "upper") and disp.multipliers:
        outlines.insert(2, "multipliers")
    if disp.reads is not None:
        outlines.insert(1, "read")
    if any(s.info.get("swaps") for s in run.steps):
        outlines.insert(2, "swap")
    parts = ["<b>phases</b> " + " ".join(swatch.format(c=themes.phase_color(p),
                                                     t=html.escape(registry.phase_name(p)))
                                         for p in phases),
             "<b>kernels</b> " + " ".join(swatch.format(c=themes.kernel_color(k),
                                                      t=html.escape(k)) for k in names),
             "<b>outlines</b> " + " ".join(swatch.format(c=themes.OVERLAYS[k],
                                                       t=OVERLAY_WORDS[k]) for k in outlines)
             + " " + swatch.format(c=themes.NON_FINITE, t="Inf&nbsp;or&nbsp;NaN")]
    line = "white" if theme.boundary.upper() == "#FFFFFF" else "black"
    if disp.storage == "lu":
        parts.append(f"the {line} staircase parts L (below) from U and the matrix still to "
                     f"factor")
    elif disp.storage in ("triangle", "lower", "upper"):
        parts.append("the grey triangle is never read: the algorithm works in one triangle")
    if disp.operand_rows is not None:
        parts.append("V's grey rows are used up: their rotations are formed and folded "
                     "into the factor; green: the rows of V the step reads")
    if disp.reads is not None:
        parts.append("green: the block the step writes; dotted: the blocks it reads")
    if any(k.device for k in run.kernels):
        parts.append("the timeline has a lane per device that ran the run's commands"
                     + (", and one for the host's work" if any(k.device == HOST
                                                               for k in run.kernels) else ""))
    return "<br>".join(parts)


def status_text(model) -> str:
    """The status bar: step k/N, phase, pivot, growth, backward error, device, seed."""
    run = model.run
    if run is None:
        return "nothing loaded: pick a first run, Run ▸ New run… or File ▸ Open…"
    position, last = model.position, model.last_position
    parts = [f"step {position}/{last}"]
    step = model.step
    parts.append(f"phase {registry.phase_name(step.phase)}" if step is not None
                 else "initial matrix")
    if model.frame is not None:
        parts.append(f"sub-step {model.frame.name}")
    pv = analysis.pivot_value(run, position)
    if pv is not None:
        parts.append(f"pivot {pv[0]:.4g} at ({pv[1][0]}, {pv[1][1]})")
    growth = model.cached("growth", lambda: analysis.growth_by_position(run))
    if growth is not None:
        parts.append(f"growth {growth[position]:.3g}")
    if position == last:
        err = model.cached("berr", lambda: analysis.backward_error(run))
        if err is not None:
            parts.append(f"backward error {err:.3g} nε" if np.isfinite(err)
                         else "backward error ∞")
        if run.error:
            parts.append("FAILED")
    if run.device:
        parts.append(run.device)
    src = run.metrics.get("source") if isinstance(run.metrics, dict) else None
    if isinstance(src, dict):
        desc = src.get("family", "")
        if "seed" in src and desc not in ("sycl4", "typed", "file"):
            desc += f" seed {src['seed']}"
        if "file" in src:
            desc += f" {src['file']}"
        parts.append(desc)
    return " · ".join(parts)
