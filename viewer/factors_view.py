"""L, U and P beside an LU's working matrix, growing step by step, with the PA = LU check.

Entries not known yet (columns of L and rows of U still to come) are blank;
the check under them is ‖PA − L·Ũ‖∞ / (n‖A‖∞ε), Ũ being U with the trailing
matrix still to factor below it, so it holds (a few units) at every step.
"""

from __future__ import annotations

import numpy as np
from PySide6 import QtWidgets

from oclla import accuracy

from .matrix_view import MatrixView


class FactorsPanel(QtWidgets.QWidget):
    """Three small maps (L, U, P) and the check line."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        maps = QtWidgets.QHBoxLayout()
        self.views = {name: MatrixView() for name in ("L", "U", "P")}
        for view in self.views.values():
            view.show_colorbar(False)
            maps.addWidget(view, 1)
        self.views["P"].decimals = 0
        layout.addLayout(maps, 1)
        self.check = QtWidgets.QLabel("")
        self.check.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored,     # never widens
                                 QtWidgets.QSizePolicy.Policy.Preferred)   # its side
        layout.addWidget(self.check)
        self.factors = None

    def apply_theme(self, theme, colormap_name=None, numbers_max_n=None, decimals=None):
        for name, view in self.views.items():
            if numbers_max_n is not None:
                view.numbers_max_n = numbers_max_n
            if decimals is not None and name != "P":
                view.decimals = decimals
            view.apply_theme(theme, colormap_name)

    def show_factors(self, factors, vmax: float) -> None:
        """Draw ``factors`` (:class:`viewer.lu_steps.Factors`); colours as the main map's."""
        self.factors = factors
        lower, upper = factors.lower, factors.upper
        blank_l, blank_u = np.isnan(lower), np.isnan(upper)
        self.views["L"].show_matrix(lower, vmax, title="L", blank=blank_l)
        self.views["U"].show_matrix(upper, vmax, title="U", blank=blank_u)
        self.views["P"].show_matrix(factors.p_matrix, 1.0, title="P")
        ok = accuracy.passes(factors.check)
        self.check.setText(f"PA = L·Ũ: ‖PA − L·Ũ‖∞/(n‖A‖∞ε) = {factors.check:.2g} "
                           f"{'✓' if ok else '✗'}\n"
                           f"(Ũ: U with the matrix still to factor below it)")
