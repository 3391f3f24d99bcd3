"""What the window shows before anything is loaded: three first runs and *Open*."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets


class WelcomePage(QtWidgets.QWidget):
    """One button per first run (:mod:`viewer.first_runs`) and one to open a recording."""

    chosen = QtCore.Signal(int)          # index into the first runs
    open_requested = QtCore.Signal()

    def __init__(self, first_runs, parent=None):
        super().__init__(parent)
        outer = QtWidgets.QVBoxLayout(self)
        outer.addStretch(1)
        self.heading = QtWidgets.QLabel("Watch a factorization step by step")
        self.heading.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        outer.addWidget(self.heading)
        self.buttons = []
        for i, first in enumerate(first_runs):
            button = QtWidgets.QPushButton(f"{first.title}\n{first.text}")
            button.setMinimumHeight(64)
            button.setMaximumWidth(640)
            button.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored,    # never widens the
                                 QtWidgets.QSizePolicy.Policy.Fixed)      # window
            button.setMinimumWidth(min(480, button.sizeHint().width()))
            button.clicked.connect(lambda _c=False, k=i: self.chosen.emit(k))
            outer.addWidget(button, 0, QtCore.Qt.AlignmentFlag.AlignHCenter)
            self.buttons.append(button)
        opener = QtWidgets.QPushButton("Open a recording… (oclla demo writes one)")
        opener.clicked.connect(self.open_requested.emit)
        outer.addWidget(opener, 0, QtCore.Qt.AlignmentFlag.AlignHCenter)
        self.buttons.append(opener)
        more = QtWidgets.QLabel("or Run ▸ New run… for any algorithm, size and matrix")
        more.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        outer.addWidget(more)
        outer.addStretch(2)

    def apply_theme(self, theme) -> None:
        self.heading.setStyleSheet(f"font-size: {16 * theme.font_scale:.0f}pt; "
                                   f"color: {theme.foreground}")
