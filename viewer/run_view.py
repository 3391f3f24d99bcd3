"""One run at one position: the heat map, or for packed storage the triangle and its RFP buffer.

For a packed run the left map is the triangle (unpacked, the other half
blank) with the step's overlays, the right map the RFP buffer in LAPACK's
``lda × cols`` picture, with the twins of the active region tinted.
Hovering an entry on either side outlines its twin on the other and shows
the index formula below.
"""

from __future__ import annotations

import numpy as np
from PySide6 import QtCore, QtWidgets

from . import analysis, lu_steps, packed, registry, substitution
from .factors_view import FactorsPanel
from .lazy import LazyPage
from .matrix_view import MatrixView


def position_title(run, position: int, name: str = "", frame=None) -> str:
    """"LU, per pivot, in place · step 3/7 · elimination · swap", and where a run failed,
    the failing pivot's value."""
    step = analysis.step_at(run, position)
    last = analysis.n_positions(run) - 1
    what = f"step {position}/{last} · " + (registry.phase_name(step.phase)
                                           if step is not None else "start")
    if frame is not None:
        what += f" · {frame.name}"
    head = name or registry.run_title(run)
    text = f"{head} · {what}"
    disp = registry.display(run.algorithm)
    if run.error and position == analysis.failed_position(run):
        pv = analysis.pivot_value(run, position)
        if disp.failure_text is not None and disp.failure is not None \
                and disp.failure(run) is not None:
            text += " · " + disp.failure_text(run)
        elif pv is not None:
            text += f" · FAILED: pivot {pv[0]:.3g} at {pv[1]}"
    value = run.metrics.get("logdet") if isinstance(run.metrics, dict) else None
    if isinstance(value, (int, float)) and position == last and last > 0:
        text += f" · log det A = {value:.10g}"
    return text


def run_summary(run) -> str:
    """One line of what a comparison asks: growth, smallest pivot, backward error."""
    parts = []
    growth = analysis.growth_by_position(run)
    if growth is not None:
        parts.append(f"growth {growth[-1]:.3g}")
    small = analysis.smallest_pivot(run)
    if small is not None:
        parts.append(f"smallest |pivot| {small:.3g}")
    err = analysis.backward_error(run)
    if err is not None:
        parts.append(f"backward error {err:.3g} nε" if np.isfinite(err) else
                     "backward error ∞")
    if run.error:
        parts.append("failed")
    return " · ".join(parts)


class RunView(QtWidgets.QWidget):
    """Shows one run at one position (full or packed storage)."""

    def __init__(self, label: str = "", parent=None):
        super().__init__(parent)
        self.label = label
        self.name = ""                   # the run's title ("" : its usual name)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        maps = QtWidgets.QHBoxLayout()
        self.matrix = MatrixView()
        self.maps = maps
        self.inputs: dict = {}                 # operand name -> MatrixView (AD²Aᵀ: A, d2)
        # the RFP buffer, the solve's vectors and the factors: built when first shown
        self._buffer = LazyPage(self._make_buffer)
        self._vectors = LazyPage(self._make_map)          # P·b, y, x of a solve after the LU
        self._factors = LazyPage(self._make_factors)
        maps.addWidget(self.matrix, 3)
        maps.addWidget(self._buffer, 2)
        maps.addWidget(self._vectors, 1)
        layout.addLayout(maps, 3)
        self.formula = QtWidgets.QLabel("")
        self.formula.setVisible(False)
        self.formula.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.formula)
        self.caption = QtWidgets.QLabel("")          # the sub-step's formula
        self.caption.setWordWrap(True)
        self.caption.setVisible(False)
        layout.addWidget(self.caption)
        self.summary = QtWidgets.QLabel("")          # growth, smallest pivot, backward error
        self.summary.setWordWrap(True)
        self.summary.setVisible(False)
        layout.addWidget(self.summary)
        layout.addWidget(self._factors, 2)
        for page in (self._buffer, self._vectors, self._factors):
            page.setVisible(False)
        self.show_factors = False
        self.layout_rfp: packed.Layout | None = None
        self.transposed = False
        self.matrix.hovered.connect(self._hover_full)

    # ---- the maps shown only by some runs, built on first use ----
    @property
    def buffer(self) -> MatrixView:
        """The RFP buffer beside a packed run's triangle."""
        return self._buffer.widget()

    @property
    def vectors(self) -> MatrixView:
        """P·b, y and x of a solve after the LU."""
        return self._vectors.widget()

    @property
    def factors(self) -> FactorsPanel:
        """L, U and P under an LU's sub-steps."""
        return self._factors.widget()

    def _make_map(self) -> MatrixView:
        """A map without colour bar, in the main map's look."""
        view = MatrixView()
        view.show_colorbar(False)
        view.numbers_max_n, view.decimals = self.matrix.numbers_max_n, self.matrix.decimals
        view.apply_theme(self.matrix.theme, self.matrix.colormap_name)
        return view

    def _make_buffer(self) -> MatrixView:
        view = self._make_map()
        view.hovered.connect(self._hover_rfp)
        return view

    def _make_factors(self) -> FactorsPanel:
        panel = FactorsPanel()
        m = self.matrix
        panel.apply_theme(m.theme, m.colormap_name, m.numbers_max_n, m.decimals)
        return panel

    @property
    def is_packed(self) -> bool:
        return self.layout_rfp is not None

    def apply_theme(self, theme, colormap_name=None, numbers_max_n=None,
                    decimals=None) -> None:
        built = [p.built_widget() for p in (self._buffer, self._vectors)]
        for m in (self.matrix, *filter(None, built), *self.inputs.values()):
            if numbers_max_n is not None:
                m.numbers_max_n = numbers_max_n
            if decimals is not None:
                m.decimals = decimals
            m.apply_theme(theme, colormap_name)
        if self._factors.is_built:
            self.factors.apply_theme(theme, colormap_name, numbers_max_n, decimals)

    def show_run(self, run, position: int, vmax: float, kernel_region=None, frame=None,
                 summary: bool = False) -> None:
        """Draw ``run`` at ``position`` (its sub-step ``frame`` when given); ``summary``
        adds the line of growth, smallest pivot and backward error under the map."""
        self.summary.setVisible(summary)
        if summary:
            self.summary.setText(self.label + run_summary(run))
        text = frame.formula if frame is not None else \
            substitution.formula(analysis.step_at(run, position))
        self.caption.setVisible(text is not None)
        self.caption.setText(text or "")
        self._show_vectors(run, position, vmax)
        self._show_factors(run, position, vmax, frame)
        self._show_inputs(run, position)
        title = position_title(run, position, self.label + self.name, frame)
        if frame is not None:
            self.layout_rfp = None
            self._buffer.setVisible(False)
            self.formula.setVisible(False)
            self.matrix.show_matrix(frame.matrix, vmax,
                                    lu_steps.frame_overlays(run, position, frame), title)
            self.matrix.set_mask(None)
            self.matrix.set_twin(None)
            self.matrix.set_kernel_region(kernel_region)
            return
        array = analysis.matrix_at(run, position)
        ov = analysis.overlays(run, position)
        self.layout_rfp = analysis.packed_layout(run, array)
        self._buffer.setVisible(self.is_packed)
        self.formula.setVisible(self.is_packed)
        if not self.is_packed:
            if array is None:        # recorded without snapshots: the regions alone
                n = analysis.order(run)
                self.matrix.show_regions((n, n), ov, title + " · regions only (no snapshots)")
            else:
                self.matrix.show_matrix(analysis.as_matrix(array), vmax, ov, title)
            self.matrix.set_mask(None)
            self.matrix.set_twin(None)
            self.matrix.set_kernel_region(kernel_region)
            return
        lay = self.layout_rfp
        rfp, self.transposed = packed.orient(array)
        buf_ov, boxes = analysis.buffer_overlays(run, position)
        buf_mask = np.zeros(rfp.shape, dtype=bool)
        for r0, r1, c0, c1 in boxes:
            buf_mask[r0:r1, c0:c1] = True
        if ov.active is not None:          # the twins of the logical region
            i, j = lay.to_full[..., 0], lay.to_full[..., 1]
            r0, r1, c0, c1 = ov.active
            buf_mask |= (i >= r0) & (i < r1) & (j >= c0) & (j < c1)
        full_mask = None
        if ov.active is None and buf_mask.any():   # no logical region: twins of the boxes
            full_mask = np.zeros((lay.n, lay.n), dtype=bool)
            ij = lay.to_full[buf_mask]
            full_mask[ij[:, 0], ij[:, 1]] = True
        self.matrix.show_matrix(lay.unpack(rfp), vmax, ov, title, blank=lay.to_rfp[..., 0] < 0)
        self.matrix.set_mask(full_mask)
        self.buffer.set_kernel_region(kernel_region)
        self.buffer.show_matrix(rfp, vmax, buf_ov,
                                f"RFP buffer {rfp.shape[0]}×{rfp.shape[1]} (LAPACK's picture)")
        self.buffer.set_mask(buf_mask)
        if not self.formula.text():
            self.formula.setText("hover an entry to see where it is stored")

    def _show_vectors(self, run, position: int, vmax: float) -> None:
        shown = substitution.vectors_at(run, position)
        self._vectors.setVisible(shown is not None)
        if shown is None:
            return
        values, cell = shown
        active = None if cell is None else (cell[0], cell[0] + 1, cell[1], cell[1] + 1)
        self.vectors.show_matrix(values, vmax, analysis.Overlays(active=active),
                                 "P·b | y | x", blank=np.isnan(values))

    INPUT_TITLES = {"A": "A (input)", "d2": "D² (diagonal)",
                    "V": "V as given (rows used up greyed)"}

    def _show_inputs(self, run, position: int) -> None:
        """The run's operands left of its result, the step's part outlined."""
        kept = analysis.inputs(run)
        for name, view in self.inputs.items():
            view.setVisible(name in kept)
        for i, (name, arr) in enumerate(kept.items()):
            view = self.inputs.get(name)
            if view is None:
                view = self.inputs[name] = self._make_map()
                narrow = arr.shape[1] == 1 or 2 * arr.shape[1] <= arr.shape[0]   # d2, V
                self.maps.insertWidget(i, view, 1 if narrow else 2)
            vmax = float(np.abs(arr).max()) or 1.0
            view.show_matrix(arr, vmax, analysis.input_overlays(run, position, name, arr.shape),
                             self.INPUT_TITLES.get(name, name))

    def _show_factors(self, run, position: int, vmax: float, frame) -> None:
        factors = None
        if self.show_factors and analysis.order(run) <= self.matrix.numbers_max_n:
            if frame is not None:
                factors = lu_steps.factors(run, frame.matrix, frame.finished, frame.perm,
                                           frame.check)
            else:
                factors = lu_steps.factors_at(run, position)
        self._factors.setVisible(factors is not None)
        if factors is not None:
            self.factors.show_factors(factors, vmax)

    # ---- hover twins ----
    def _hover_full(self, i: int, j: int) -> None:
        if not self.is_packed:
            return
        twin = self.layout_rfp.twin_of_full(i, j) if i >= 0 else None
        self.buffer.set_twin(twin)
        self.matrix.set_twin(None if twin is None else (i, j))
        if twin is not None:
            self.formula.setText(self._formula(*twin))

    def _hover_rfp(self, r: int, c: int) -> None:
        if not self.is_packed:
            return
        twin = self.layout_rfp.twin_of_rfp(r, c) if r >= 0 else None
        self.matrix.set_twin(twin)
        self.buffer.set_twin(None if twin is None else (r, c))
        if twin is not None:
            self.formula.setText(self._formula(r, c))

    def _formula(self, r: int, c: int) -> str:
        text = packed.formula(r, c, self.layout_rfp.n, self.layout_rfp.lower)
        if self.transposed:
            text += f"; the recorded row-major array holds it at [{c}, {r}]"
        return text

    def hover_twin(self, side: str, cell) -> None:
        """Act as if the mouse were over ``cell`` of ``side`` ("full" or "rfp")."""
        (self._hover_full if side == "full" else self._hover_rfp)(*cell)
